package dom

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// MediaCoverage is the share of the viewport under the largest visible
// canvas/video/embed/object: a page drawn on a full-window canvas is
// (nearly) all media, a text page with images none, a small canvas on a
// text page its own share.
func TestDOMWMediaCoverage(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	for _, c := range []struct {
		page     string
		min, max float64
	}{
		{"/vision-canvas.html", 0.99, 1},
		{"/vision-shop.html", 0, 0},
		{"/agent-queries.html", 0.05, 0.07}, // a 302×202 canvas in 1280×800
	} {
		wdtest.Navigate(t, ctx, s, env.URL(c.page))
		st := wdtest.State(t, ctx, s)
		if got := st.Stats.MediaCoverage; got < c.min || got > c.max || math.IsNaN(got) {
			t.Errorf("%s: media coverage %v, want %v..%v (%d elements)", c.page, got, c.min, c.max, len(st.Elements))
		}
	}
	// Scrolled out of view, the canvas covers nothing.
	wdtest.Navigate(t, ctx, s, env.URL("/agent-queries.html"))
	var y float64
	wdtest.Eval(t, ctx, s, "scrollTo(0, 2000), scrollY", &y)
	if st := wdtest.State(t, ctx, s); y != 2000 || st.Stats.MediaCoverage != 0 {
		t.Errorf("scrolled to %v: media coverage %v, want 0", y, st.Stats.MediaCoverage)
	}
}

// A media element counts only where it shows: a large canvas in a small
// iframe, or in a small box that hides its overflow, covers that box's
// share of the viewport, not the whole screen.
func TestDOMWMediaCoverageClipped(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	var vp [2]float64
	for _, c := range []struct {
		name, js string
	}{
		{"iframe", `new Promise(r => { const f = document.createElement('iframe');
			f.style.cssText = 'position:absolute;left:0;top:0;width:200px;height:150px;border:0';
			f.srcdoc = '<body style="margin:0"><canvas width="3000" height="3000" style="width:3000px;height:3000px;background:#000"></canvas></body>';
			f.onload = () => r(true); document.body.appendChild(f); })`},
		{"overflow hidden", `(() => { const d = document.createElement('div');
			d.style.cssText = 'position:absolute;left:0;top:0;width:200px;height:150px;overflow:hidden';
			d.innerHTML = '<canvas width="3000" height="3000" style="width:3000px;height:3000px;background:#000"></canvas>';
			document.body.appendChild(d); return true; })()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			wdtest.Navigate(t, ctx, s, env.URL("/index.html"))
			var ok bool
			wdtest.Eval(t, ctx, s, c.js, &ok)
			wdtest.Eval(t, ctx, s, "[innerWidth, innerHeight]", &vp)
			want := 200 * 150 / (vp[0] * vp[1])
			st := wdtest.State(t, ctx, s)
			if got := st.Stats.MediaCoverage; !ok || math.Abs(got-want) > 0.01 {
				t.Fatalf("media coverage %v, want %v (a 200×150 box in %v×%v)", got, want, vp[0], vp[1])
			}
		})
	}
}

// The state request's ImageOptions reach whoever answers Screenshot, and
// the answer's media type, size and scale reach the state.
func TestDOMWScreenshotOptionsPassedOn(t *testing.T) {
	var (
		mu  sync.Mutex
		got []events.ImageOptions
	)
	shooter := session.NewWatchdog("screenshot", func(s *session.Session) error {
		return session.Handle(s, events.Screenshot, "screenshot", func(_ context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
			mu.Lock()
			got = append(got, ev.ImageOptions)
			mu.Unlock()
			return events.ScreenshotResult{Data: []byte("jpeg bytes"), MediaType: "image/jpeg", Width: 1024, Height: 640, Scale: 0.8}, nil
		})
	})
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}), shooter)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	want := events.ImageOptions{Format: events.ImageJPEG, Quality: 75, MaxWidth: 1024, MaxHeight: 768}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true, Screenshot: want})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != want {
		t.Fatalf("screenshot asked with %+v, want [%+v]", got, want)
	}
	if string(st.Screenshot) != "jpeg bytes" || st.ScreenshotType != "image/jpeg" || st.ScreenshotWidth != 1024 || st.ScreenshotHeight != 640 || st.ScreenshotScale != 0.8 {
		t.Fatalf("state screenshot %q %s %dx%d scale %v", st.Screenshot, st.ScreenshotType, st.ScreenshotWidth, st.ScreenshotHeight, st.ScreenshotScale)
	}
}
