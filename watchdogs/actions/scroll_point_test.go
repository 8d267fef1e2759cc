package actions

import (
	"strings"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// canvasPage opens the canvas fixture at a device scale factor of 2 and
// waits until it has scrolled itself to 500.
func canvasPage(t *testing.T) *harness {
	t.Helper()
	at := start(t, "/actions-canvas.html", Config{})
	if _, err := cdpproto.Call(at.ctx, at.page(), emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1200, Height: 800, DeviceScaleFactor: 2}); err != nil {
		t.Fatal(err)
	}
	at.eval(at.page(), "new Promise(r => { const f = () => scrollY >= 500 ? r(true) : (scrollTo(0, 500), requestAnimationFrame(f)); f(); })", nil)
	return at
}

// A wheel at a point scrolls the box under it, not the page; over the
// "map" that takes the wheel itself nothing scrolls and the page's change
// is the verdict; bad points are refused.
func TestScrollCoordinateScrollsWhatIsUnderThePoint(t *testing.T) {
	at := canvasPage(t)
	// The box is at document (600, 650): viewport (750, 250) is inside it.
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ScrollCoordinate, events.ScrollCoordinateEvent{X: 750, Y: 250, DY: 200})
	if err != nil {
		t.Fatalf("scroll: %v", err)
	}
	var boxTop, pageY float64
	at.eval(at.page(), "document.getElementById('box').scrollTop", &boxTop)
	at.eval(at.page(), "scrollY", &pageY)
	if boxTop < 100 || pageY != 500 {
		t.Errorf("box scrolled to %v and the page to %v; want the box down, the page at 500", boxTop, pageY)
	}
	if !strings.Contains(res.Outcome.Detail, "id=box") {
		t.Errorf("detail %q does not name the box", res.Outcome.Detail)
	}
	// The map (document 100..400 × 950..1100: viewport y 450..600).
	res, err = bus.Call(at.ctx, at.s.Bus(), events.ScrollCoordinate, events.ScrollCoordinateEvent{X: 200, Y: 500, DY: 100})
	if err != nil {
		t.Fatalf("scroll the map: %v", err)
	}
	if z := at.str("document.getElementById('zoom').textContent"); z != "0" {
		t.Errorf("map zoom %s, want 0 (one wheel down)", z)
	}
	if res.Outcome.Verdict != events.VerdictChanged || !strings.Contains(res.Outcome.Detail, "nothing under") {
		t.Errorf("map: verdict %q detail %q", res.Outcome.Verdict, res.Outcome.Detail)
	}
	at.eval(at.page(), "scrollY", &pageY)
	if pageY != 500 {
		t.Errorf("the page scrolled to %v under the map", pageY)
	}
	for _, ev := range []events.ScrollCoordinateEvent{{X: -1, Y: 10, DY: 10}, {X: 10, Y: 5000, DY: 10}, {X: 10, Y: 10}} {
		if _, err := bus.Call(at.ctx, at.s.Bus(), events.ScrollCoordinate, ev); err == nil {
			t.Errorf("%+v: no error", ev)
		}
	}
}

// A coordinate click on a canvas drawn at twice its CSS size, on a page
// scrolled down and shown at a device scale factor of 2, lands on the
// canvas pixel under the CSS point: the input is in CSS pixels of the
// viewport whatever the density and the scroll.
func TestClickCoordinateCanvasUnderScaleAndScroll(t *testing.T) {
	at := canvasPage(t)
	// The canvas is at document (100, 700), viewport (100, 200); its CSS
	// point (300, 100) is its pixel (600, 200).
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: 400, Y: 300}); err != nil {
		t.Fatalf("click: %v", err)
	}
	var hits [][]float64
	at.eval(at.page(), "window.hits", &hits)
	if len(hits) != 1 || hits[0][0] < 599 || hits[0][0] > 601 || hits[0][1] < 199 || hits[0][1] > 201 {
		t.Fatalf("canvas hits %v, want one at (600, 200)", hits)
	}
	var dpr float64
	at.eval(at.page(), "devicePixelRatio", &dpr)
	if dpr != 2 {
		t.Errorf("devicePixelRatio %v, want 2", dpr)
	}
	_, err := bus.Call(at.ctx, at.s.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: 1300, Y: 10})
	if err == nil || !strings.Contains(err.Error(), "outside the") {
		t.Errorf("a click outside the viewport: %v", err)
	}
}
