package screenshot

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"math"
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
	if b := decodePNG(t, res.Data); b.Dx() != scale(vw) || b.Dy() != scale(vh) {
		t.Fatalf("viewport shot %v, want %dx%d", b, scale(vw), scale(vh))
	}

	full, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{FullPage: true})
	if err != nil {
		t.Fatal(err)
	}
	var docH int
	wdtest.Eval(t, ctx, s, "document.documentElement.scrollHeight", &docH)
	if b := decodePNG(t, full.Data); b.Dy() <= scale(vh) || b.Dy() != scale(docH) || b.Dx() != scale(vw) {
		t.Fatalf("full page shot %v, page height %d, viewport %dx%d", b, docH, vw, vh)
	}

	clip, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{Clip: &events.Rect{X: 10, Y: 1200, Width: 120, Height: 70}})
	if err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, clip.Data); b.Dx() != scale(120) || b.Dy() != scale(70) {
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
	decodePNG(t, res.Data)
	if _, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{TargetID: "NO-SUCH-TAB"}); !errors.Is(err, session.ErrTabNotFound) {
		t.Fatalf("unknown tab: %v, want ErrTabNotFound", err)
	}
}

// The event's ImageOptions reach Chrome: JPEG and WebP at a quality, and a
// size bound that Chrome meets by scaling the capture (the result says the
// media type, the size read from the image and the scale applied). The
// zero options stay a full-size PNG.
func TestScreenshotFormatQualityAndSize(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/vision-shop.html"))
	var vp struct{ W, H, DPR float64 }
	wdtest.Eval(t, ctx, s, "({W: document.documentElement.clientWidth, H: document.documentElement.clientHeight, DPR: devicePixelRatio})", &vp)
	shot := func(o events.ImageOptions) events.ScreenshotResult {
		t.Helper()
		res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: o})
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		t.Logf("%+v: %s", o, res.Summary())
		return res
	}

	def := shot(events.ImageOptions{})
	if def.MediaType != "image/png" || def.Scale != 0 {
		t.Fatalf("default shot: %s scale %v", def.MediaType, def.Scale)
	}
	if b := decodePNG(t, def.Data); b.Dx() != def.Width || b.Dy() != def.Height {
		t.Fatalf("default shot %v, result says %dx%d", b, def.Width, def.Height)
	}

	// JPEG, bounded by width: Chrome scales, Go decodes what it sent.
	j := shot(events.ImageOptions{Format: events.ImageJPEG, Quality: 60, MaxWidth: 640})
	img, err := jpeg.Decode(bytes.NewReader(j.Data))
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	wantW := 640
	wantH := int(math.Round(vp.H * 640 / vp.W))
	if b := img.Bounds(); j.MediaType != "image/jpeg" || b.Dx() != wantW || b.Dy() < wantH-1 || b.Dy() > wantH+1 || j.Width != b.Dx() || j.Height != b.Dy() {
		t.Fatalf("jpeg %s %v (result %dx%d), want %dx%d", j.MediaType, b, j.Width, j.Height, wantW, wantH)
	}
	if math.Abs(j.Scale-640/vp.W) > 0.002 {
		t.Fatalf("scale %v, want %v", j.Scale, 640/vp.W)
	}
	// Quality changes the bytes.
	if hi := shot(events.ImageOptions{Format: events.ImageJPEG, Quality: 95, MaxWidth: 640}); len(hi.Data) <= len(j.Data) {
		t.Fatalf("jpeg q95 %d bytes, q60 %d bytes", len(hi.Data), len(j.Data))
	}

	// WebP, bounded by height: the height decides.
	wp := shot(events.ImageOptions{Format: events.ImageWebP, Quality: 70, MaxHeight: 300})
	if wp.MediaType != "image/webp" || string(wp.Data[:4]) != "RIFF" || string(wp.Data[8:12]) != "WEBP" || wp.Height != 300 {
		t.Fatalf("webp %s %q %dx%d", wp.MediaType, wp.Data[:12], wp.Width, wp.Height)
	}
	if math.Abs(wp.Scale-300/vp.H) > 0.01 {
		t.Fatalf("webp scale %v, want %v", wp.Scale, 300/vp.H)
	}

	// A bound larger than the capture never enlarges it.
	big := shot(events.ImageOptions{Format: events.ImagePNG, MaxWidth: 5000, MaxHeight: 5000})
	if b := decodePNG(t, big.Data); b.Dx() != int(vp.W*vp.DPR) || math.Abs(big.Scale-vp.DPR) > 0.001 {
		t.Fatalf("unbounded by a large bound: %v scale %v", b, big.Scale)
	}

	// A clip is scaled the same way.
	c, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{Clip: &events.Rect{X: 0, Y: 0, Width: 400, Height: 200}, ImageOptions: events.ImageOptions{Format: events.ImageJPEG, MaxWidth: 200}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Width != 200 || c.Height != 100 || c.Scale != 0.5 {
		t.Fatalf("clip %dx%d scale %v", c.Width, c.Height, c.Scale)
	}

	for _, bad := range []events.ImageOptions{{Format: "gif"}, {Format: events.ImageJPEG, Quality: 101}, {MaxWidth: -1}} {
		if _, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: bad}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("bad options %+v: %v", bad, err)
		}
	}
}

// A bounded capture of a scrolled page is the viewport the user sees (a
// clip at the scroll offset), not the top of the document.
func TestScreenshotBoundedScrolled(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/vision-canvas.html"))
	// The canvas page does not scroll; make a tall page with a red band
	// 3000 px down and scroll to it.
	var ok bool
	wdtest.Eval(t, ctx, s, `(() => { document.documentElement.style.overflow = 'auto'; document.body.style.overflow = 'auto'; document.body.style.height = '6000px';
		const d = document.createElement('div'); d.style.cssText = 'position:absolute;left:0;top:3000px;width:100%;height:2000px;background:rgb(255,0,0)';
		document.body.appendChild(d); scrollTo(0, 3100); return scrollY === 3100; })()`, &ok)
	if !ok {
		t.Fatal("the page did not scroll")
	}
	res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: events.ImageOptions{MaxWidth: 320}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(res.Data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Dx()/2, b.Dy()/2).RGBA()
	if r>>8 < 240 || g>>8 > 15 || bl>>8 > 15 {
		t.Fatalf("the middle of the scrolled viewport is rgb(%d,%d,%d), want red", r>>8, g>>8, bl>>8)
	}
}

// On a high-density display the bound is in image pixels all the same:
// Chrome renders the clip at its scale times the device pixel ratio, so
// the scale is chosen with the ratio in, and the result's Scale (image
// pixels per CSS pixel) says what a point of the image is on the page.
func TestScreenshotBoundedHighDensity(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{DeviceScaleFactor: 2}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/vision-shop.html"))
	var vp struct{ W, H, DPR float64 }
	wdtest.Eval(t, ctx, s, "({W: document.documentElement.clientWidth, H: document.documentElement.clientHeight, DPR: devicePixelRatio})", &vp)
	if vp.DPR != 2 {
		t.Fatalf("device pixel ratio %v, want the profile's 2", vp.DPR)
	}
	full, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Width != int(2*vp.W) && full.Width != int(2*vp.W)+1 {
		t.Fatalf("full-size shot %dx%d on a %vx%v viewport at DPR 2", full.Width, full.Height, vp.W, vp.H)
	}
	res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: events.ImageOptions{Format: events.ImageJPEG, MaxWidth: 1024, MaxHeight: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 1024 || math.Abs(res.Scale-1024/vp.W) > 0.002 {
		t.Fatalf("bounded shot %dx%d scale %v, want 1024 wide at %v", res.Width, res.Height, res.Scale, 1024/vp.W)
	}
}

// The size bound does not trust the page: a page that redefines
// devicePixelRatio (too small: the image would be 6 times the bytes; too
// large: a 1×1 image) still gets an image that fits the bound, at the
// scale Chrome rendered it, and the measured ratio is kept for the tab.
func TestScreenshotBoundIgnoresPageRatio(t *testing.T) {
	for _, lie := range []string{"0.25", "1e6"} {
		t.Run(lie, func(t *testing.T) {
			wd := New(Config{})
			s, env, _, ctx := wdtest.Connect(t, session.Profile{DeviceScaleFactor: 2}, wd)
			wdtest.Navigate(t, ctx, s, env.URL("/vision-shop.html"))
			var vp struct{ W, H, DPR float64 }
			wdtest.Eval(t, ctx, s, "({W: document.documentElement.clientWidth, H: document.documentElement.clientHeight, DPR: devicePixelRatio})", &vp)
			if vp.DPR != 2 {
				t.Fatalf("device pixel ratio %v, want the profile's 2", vp.DPR)
			}
			var now float64
			wdtest.Eval(t, ctx, s, "Object.defineProperty(window, 'devicePixelRatio', {get: () => "+lie+"}), devicePixelRatio", &now)
			if now == 2 {
				t.Fatal("the page could not redefine devicePixelRatio")
			}
			o := events.ImageOptions{Format: events.ImageJPEG, MaxWidth: 1024, MaxHeight: 768}
			want := math.Min(1024/(2*vp.W), 768/(2*vp.H)) * 2 // image pixels per CSS pixel
			for i := range 2 {                                // the second from the cached ratio
				res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: o})
				if err != nil {
					t.Fatal(err)
				}
				img, err := jpeg.Decode(bytes.NewReader(res.Data))
				if err != nil {
					t.Fatal(err)
				}
				b := img.Bounds()
				if b.Dx() != res.Width || b.Dy() != res.Height || b.Dx() > 1025 || b.Dy() > 769 {
					t.Fatalf("capture %d: image %v (result %dx%d) breaks the 1024×768 bound", i, b, res.Width, res.Height)
				}
				if math.Abs(float64(b.Dx())-want*vp.W) > 2 || math.Abs(float64(b.Dy())-want*vp.H) > 2 {
					t.Fatalf("capture %d: image %v, want %.0fx%.0f (the bound, at DPR 2)", i, b, want*vp.W, want*vp.H)
				}
				if math.Abs(res.Scale-want) > 0.005 {
					t.Fatalf("capture %d: scale %v, want %v", i, res.Scale, want)
				}
				if r := wd.ratios.get(s.FocusedTab()); math.Abs(r-2) > 0.01 {
					t.Fatalf("capture %d: cached ratio %v, want 2", i, r)
				}
			}
		})
	}
}

// A bounded capture of a page scrolled both ways on a high-density display
// is the region the user sees.
func TestScreenshotBoundedScrolledHighDensity(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{DeviceScaleFactor: 2}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/vision-canvas.html"))
	// Red only at x and y in [3000, 5000] of a 6000×6000 page.
	var ok bool
	wdtest.Eval(t, ctx, s, `(() => { document.documentElement.style.overflow = 'auto'; document.body.style.overflow = 'auto';
		document.body.style.width = '6000px'; document.body.style.height = '6000px';
		const d = document.createElement('div'); d.style.cssText = 'position:absolute;left:3000px;top:3000px;width:2000px;height:2000px;background:rgb(255,0,0)';
		document.body.appendChild(d); scrollTo(3100, 3100); return scrollX === 3100 && scrollY === 3100; })()`, &ok)
	if !ok {
		t.Fatal("the page did not scroll both ways")
	}
	res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: events.ImageOptions{MaxWidth: 640, MaxHeight: 640}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(res.Data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() > 641 || b.Dy() > 641 {
		t.Fatalf("image %v breaks the 640×640 bound", b)
	}
	for _, p := range []image.Point{{b.Dx() / 2, b.Dy() / 2}, {2, 2}, {b.Dx() - 3, b.Dy() - 3}} {
		r, g, bl, _ := img.At(p.X, p.Y).RGBA()
		if r>>8 < 240 || g>>8 > 15 || bl>>8 > 15 {
			t.Fatalf("pixel %v of the scrolled viewport is rgb(%d,%d,%d), want red", p, r>>8, g>>8, bl>>8)
		}
	}
}
