package screenshot

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

func decodePNG(t *testing.T, b []byte) image.Rectangle {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG (%d bytes): %v", len(b), err)
	}
	return img.Bounds()
}

func TestScreenshotViewportFullPageClip(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/scroll.html"))
	var dpr float64
	wdtest.Eval(t, ctx, s, "window.devicePixelRatio", &dpr)
	scale := func(v int) int { return int(float64(v) * dpr) }

	res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TargetID != s.FocusedTab() {
		t.Fatalf("target %q, focused %q", res.TargetID, s.FocusedTab())
	}
	var inner [2]int
	wdtest.Eval(t, ctx, s, "[innerWidth, innerHeight]", &inner)
	vw, vh := inner[0], inner[1]
	if b := decodePNG(t, res.PNG); b.Dx() != scale(vw) || b.Dy() != scale(vh) {
		t.Fatalf("viewport shot %v, want %dx%d", b, scale(vw), scale(vh))
	}

	full, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{FullPage: true})
	if err != nil {
		t.Fatal(err)
	}
	var docH int
	wdtest.Eval(t, ctx, s, "document.documentElement.scrollHeight", &docH)
	if b := decodePNG(t, full.PNG); b.Dy() <= scale(vh) || b.Dy() != scale(docH) || b.Dx() != scale(vw) {
		t.Fatalf("full page shot %v, page height %d, viewport %dx%d", b, docH, vw, vh)
	}

	clip, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{Clip: &events.Rect{X: 10, Y: 1200, Width: 120, Height: 70}})
	if err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, clip.PNG); b.Dx() != scale(120) || b.Dy() != scale(70) {
		t.Fatalf("clip shot %v", b)
	}

	for _, bad := range []events.ScreenshotEvent{
		{Clip: &events.Rect{Width: 0, Height: 10}},
		{Clip: &events.Rect{X: -1, Width: 10, Height: 10}},
		{FullPage: true, Clip: &events.Rect{Width: 10, Height: 10}},
	} {
		if _, err := bus.Call(ctx, s.Bus(), events.Screenshot, bad); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("bad request %+v: %v", bad, err)
		}
	}
}

// A screenshot names its tab: the focused one by default, any open tab by
// TargetID, and an unknown tab is an error.
func TestScreenshotOfAnotherTab(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/scroll.html"))
	first := s.FocusedTab()
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/index.html"), NewTab: true}); err != nil {
		t.Fatal(err)
	}
	if s.FocusedTab() == first {
		t.Fatal("the new tab did not take focus")
	}
	res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{TargetID: first})
	if err != nil {
		t.Fatal(err)
	}
	if res.TargetID != first {
		t.Fatalf("shot of %q, asked for %q", res.TargetID, first)
	}
	decodePNG(t, res.PNG)
	if _, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{TargetID: "NO-SUCH-TAB"}); !errors.Is(err, session.ErrTabNotFound) {
		t.Fatalf("unknown tab: %v, want ErrTabNotFound", err)
	}
}
