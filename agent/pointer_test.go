package agent_test

import (
	"context"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// With vision and coordinate clicks, on a page shown at a device scale
// factor of 2 and scrolled down, the model's points are in the pixels of
// the (shrunk) screenshot it saw: a click reaches the canvas pixel under
// that point, and a scroll at a point turns the wheel over the box there
// (the box scrolls, the page does not).
func TestCoordinateClickAndScrollUnderDeviceScale(t *testing.T) {
	env, s := newSession(t)
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cdpproto.Call(ctx, cs, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 800, DeviceScaleFactor: 2}); err != nil {
		t.Fatal(err)
	}
	// The page opens scrolled to 500: the canvas (document 100, 700, CSS
	// 400×200, 800×400 pixels) is at viewport (100, 200); its pixel
	// (600, 200) is viewport (400, 300), (320, 240) in a 1024-px-wide
	// image of the 1280-px viewport. The box (document 600, 650) is under
	// viewport (750, 250): (600, 200) in the image.
	model := scripted.New([]scripted.Step{
		{Action: "click", Params: map[string]any{"coordinate_x": 320, "coordinate_y": 240}},
		{Action: "scroll", Params: map[string]any{"coordinate_x": 600, "coordinate_y": 200, "pages": 0.25}},
		doneOK,
	}, scripted.WithName("anthropic:claude-sonnet-4-5"))
	set := settings(t)
	set.Vision = agent.VisionOn
	on := true
	set.CoordinateClicks = &on
	run(t, newAgent(t, "Mark the board on "+env.URL("/actions-canvas.html"), model, s, set), model)
	var hits [][]float64
	evalPage(t, s, "window.hits", &hits)
	if len(hits) != 1 || hits[0][0] < 597 || hits[0][0] > 603 || hits[0][1] < 197 || hits[0][1] > 203 {
		t.Fatalf("canvas hits %v, want one at (600, 200)", hits)
	}
	var boxTop, pageY float64
	evalPage(t, s, "document.getElementById('box').scrollTop", &boxTop)
	evalPage(t, s, "scrollY", &pageY)
	if boxTop <= 0 || pageY != 500 {
		t.Fatalf("box at %v, page at %v: want the box scrolled and the page still at 500", boxTop, pageY)
	}
}
