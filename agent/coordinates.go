package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// CoordinateClickModels are the model-name fragments (lower case) for which
// Settings.CoordinateClicks defaults to on: upstream's list of families
// that point reliably at a screenshot.
var CoordinateClickModels = []string{"claude-sonnet-4", "claude-opus-4", "claude-fable-5", "gemini-3-pro", "browser-use/"}

// ClickParams are click's parameters when coordinate clicks are offered:
// an index, or a point of the screenshot.
type ClickParams struct {
	Index       *int     `json:"index,omitempty"`
	CoordinateX *float64 `json:"coordinate_x,omitempty"`
	CoordinateY *float64 `json:"coordinate_y,omitempty"`
}

// coordinateClickSpec is the built-in click with coordinates, offered in
// place of the index-only click (Settings.CoordinateClicks).
var coordinateClickSpec = func() ActionSpec {
	r := NewRegistry()
	if err := Register(r, "click", "Click an element by index, or a point of the screenshot (its pixels).", coordinateClick, WithRisk(RiskSubmit), TargetsElement()); err != nil {
		panic(err) // programming error in the built-ins
	}
	s, _ := r.Get("click")
	return s
}()

// coordinateClick clicks the index when one is given, else the point. A
// point is in the screenshot's pixels; it is scaled to the page's CSS
// pixels by the screenshot's scale (a screenshot shrunk for the model's
// image tiles is smaller than the viewport, a high-density display's
// larger).
func coordinateClick(ctx context.Context, ac *ActionContext, p ClickParams) (ActionResult, error) {
	switch {
	case p.Index != nil && (p.CoordinateX != nil || p.CoordinateY != nil):
		return ActionResult{}, fmt.Errorf("%w: click takes an index or coordinates, not both", ErrBadParams)
	case p.Index != nil:
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: *p.Index}})
		r := outcomeResult(fmt.Sprintf("Clicked element %d", *p.Index), res.Outcome)
		r.Mark = ac.mark(*p.Index, clickPoint(res))
		return r, err
	case p.CoordinateX == nil || p.CoordinateY == nil:
		return ActionResult{}, fmt.Errorf("%w: click needs an index, or both coordinate_x and coordinate_y", ErrBadParams)
	}
	x, y := *p.CoordinateX, *p.CoordinateY
	if scale := screenshotScale(ac.BrowserState); scale != 1 {
		x, y = x*scale, y*scale
	}
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: x, Y: y})
	r := outcomeResult(fmt.Sprintf("Clicked at (%.0f, %.0f)", *p.CoordinateX, *p.CoordinateY), res.Outcome)
	// The point in CSS pixels, as the page got it (not the screenshot's).
	r.Mark = &ActionMark{Point: &[2]float64{x, y}}
	return r, err
}

// screenshotScale is CSS pixels per screenshot pixel for the observation's
// screenshot: the inverse of the scale its capture reported (a
// screenshot shrunk for the model, or a high-density display), else the
// viewport's width over the image's; 1 when neither is known.
func screenshotScale(st *events.BrowserState) float64 {
	if st == nil || len(st.Screenshot) == 0 {
		return 1
	}
	if sc := st.ScreenshotScale; sc > 0 && !math.IsInf(sc, 0) && !math.IsNaN(sc) {
		// (+Inf from a replacement watchdog would send every click to
		// (0, 0).)
		return 1 / sc
	}
	w, _ := screenshotSize(st)
	if st.Page.ViewportWidth <= 0 || w <= 0 {
		return 1
	}
	return float64(st.Page.ViewportWidth) / float64(w)
}

// hasCoordinates reports whether an action's parameters name a point.
func hasCoordinates(p json.RawMessage) bool {
	var v struct {
		X *float64 `json:"coordinate_x"`
	}
	return json.Unmarshal(p, &v) == nil && v.X != nil
}

// coordinateClicks decides Settings.CoordinateClicks for model.
func (a *Agent) coordinateClicks(model llm.Model) bool {
	if c := a.set.CoordinateClicks; c != nil {
		return *c
	}
	if a.set.Vision == VisionOff || model == nil {
		return false
	}
	name := strings.ToLower(model.Name())
	for _, m := range CoordinateClickModels {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

// offerCoordinateClicks offers the click with coordinates in place of the
// built-in one when Settings.CoordinateClicks says so for model, and takes
// it back otherwise; it runs whenever the model is set (a Driver's RunTask
// sets one for the task).
func (a *Agent) offerCoordinateClicks(model llm.Model) {
	if c, ok := a.tools.Get("click"); !ok || !c.builtin {
		return
	}
	if a.coordinateClicks(model) {
		a.alt("click", coordinateClickSpec)
		// Drag from a point and the wheel at a point come with it (canvas,
		// maps); each only in place of a built-in of its name.
		for name, spec := range map[string]ActionSpec{"drag": coordinateDragSpec, "scroll": coordinateScrollSpec} {
			if s, ok := a.tools.Get(name); ok && s.builtin {
				a.alt(name, spec)
			}
		}
	} else {
		delete(a.alts, "click")
		delete(a.alts, "drag")
		delete(a.alts, "scroll")
	}
}

// alt makes spec replace the registry's action of that name for this agent.
func (a *Agent) alt(name string, spec ActionSpec) {
	if a.alts == nil {
		a.alts = map[string]ActionSpec{}
	}
	a.alts[name] = spec
}
