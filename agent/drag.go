package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

type (
	// DragParams are drag's parameters: the element at index is dragged
	// onto the element at to_index, or by dx, dy pixels (right, down).
	DragParams struct {
		Index   int      `json:"index"`
		ToIndex *int     `json:"to_index,omitempty"`
		DX      *float64 `json:"dx,omitempty"`
		DY      *float64 `json:"dy,omitempty"`
	}
	// CoordinateDragParams are drag's parameters when coordinates are
	// offered: the start is an index or a point of the screenshot.
	CoordinateDragParams struct {
		Index       *int     `json:"index,omitempty"`
		CoordinateX *float64 `json:"coordinate_x,omitempty"`
		CoordinateY *float64 `json:"coordinate_y,omitempty"`
		ToIndex     *int     `json:"to_index,omitempty"`
		DX          *float64 `json:"dx,omitempty"`
		DY          *float64 `json:"dy,omitempty"`
	}
	// CoordinateScrollParams are scroll's parameters when coordinates are
	// offered: with a point, the mouse wheel turns there (a map, a canvas
	// list, a box under the pointer); without one, scroll as usual.
	CoordinateScrollParams struct {
		Down        *bool    `json:"down,omitempty"`
		Pages       *float64 `json:"pages,omitempty"`
		Index       *int     `json:"index,omitempty"`
		CoordinateX *float64 `json:"coordinate_x,omitempty"`
		CoordinateY *float64 `json:"coordinate_y,omitempty"`
	}
)

// dragDescription is empty: the parameters say it (every word here is
// sent on every step).
const dragDescription = ""

// registerDrag adds drag.
func registerDrag(r *Registry, must func(error)) {
	must(Register(r, "drag", dragDescription, func(ctx context.Context, ac *ActionContext, p DragParams) (ActionResult, error) {
		return ac.drag(ctx, CoordinateDragParams{Index: &p.Index, ToIndex: p.ToIndex, DX: p.DX, DY: p.DY})
	}, WithRisk(RiskInput), TargetsElement()))
}

// coordinateDragSpec and coordinateScrollSpec replace drag and scroll
// when coordinate clicks are offered (Settings.CoordinateClicks).
var coordinateDragSpec, coordinateScrollSpec = func() (ActionSpec, ActionSpec) {
	r := NewRegistry()
	must := func(err error) {
		if err != nil {
			panic(err) // programming error in the built-ins
		}
	}
	must(Register(r, "drag", "From index or a point, onto to_index or by dx, dy pixels.", func(ctx context.Context, ac *ActionContext, p CoordinateDragParams) (ActionResult, error) {
		return ac.drag(ctx, p)
	}, WithRisk(RiskInput), TargetsElement()))
	must(Register(r, "scroll", "Default: the page, down 1 page; at a point: the mouse wheel there.", coordinateScroll, WithRisk(RiskRead), TargetsElement()))
	d, _ := r.Get("drag")
	s, _ := r.Get("scroll")
	return d, s
}()

// builtinScroll is the built-in scroll, which the coordinate scroll runs
// when it is given no point.
var builtinScroll = sync.OnceValue(func() ActionSpec {
	s, _ := DefaultRegistry().Get("scroll")
	return s
})

// drag performs a drag. Points and offsets are the screenshot's pixels
// when there is a screenshot (scaled to CSS pixels as click's), else CSS
// pixels.
func (ac *ActionContext) drag(ctx context.Context, p CoordinateDragParams) (ActionResult, error) {
	var ev events.DragEvent
	scale := screenshotScale(ac.BrowserState)
	hasPoint := p.CoordinateX != nil || p.CoordinateY != nil
	idx := 0
	switch {
	case p.Index != nil && *p.Index > 0 && hasPoint:
		return ActionResult{}, fmt.Errorf("%w: drag starts at an index or at coordinates, not both", ErrBadParams)
	case p.Index != nil && *p.Index > 0:
		idx = *p.Index
		ev.From = events.Target{Index: idx}
	case p.CoordinateX != nil && p.CoordinateY != nil:
		ev.FromPoint = &events.Point{X: *p.CoordinateX * scale, Y: *p.CoordinateY * scale}
	default:
		return ActionResult{}, fmt.Errorf("%w: drag needs the index of the element to drag", ErrBadParams)
	}
	to := "by an offset"
	if p.ToIndex != nil {
		if p.DX != nil || p.DY != nil {
			return ActionResult{}, fmt.Errorf("%w: drag goes to to_index or by dx, dy, not both", ErrBadParams)
		}
		ev.To = events.Target{Index: *p.ToIndex}
		to = fmt.Sprintf("onto element %d", *p.ToIndex)
	} else {
		if p.DX == nil && p.DY == nil {
			return ActionResult{}, fmt.Errorf("%w: drag needs to_index, or dx and/or dy", ErrBadParams)
		}
		if p.DX != nil {
			ev.DX = *p.DX * scale
		}
		if p.DY != nil {
			ev.DY = *p.DY * scale
		}
		to = fmt.Sprintf("by (%.0f, %.0f)", ev.DX, ev.DY)
	}
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.Drag, ev)
	what := fmt.Sprintf("Dragged element %d %s", idx, to)
	if idx == 0 {
		what = fmt.Sprintf("Dragged from (%.0f, %.0f) %s", *p.CoordinateX, *p.CoordinateY, to)
	}
	r := outcomeResult(what, res.Outcome)
	var pt *[2]float64
	if err == nil {
		pt = &[2]float64{res.From.X, res.From.Y}
	}
	r.Mark = ac.mark(idx, pt)
	return r, err
}

// coordinateScroll scrolls at a point of the screenshot with the mouse
// wheel, or as the built-in scroll does without one.
func coordinateScroll(ctx context.Context, ac *ActionContext, p CoordinateScrollParams) (ActionResult, error) {
	hasPoint := p.CoordinateX != nil || p.CoordinateY != nil
	switch {
	case !hasPoint:
		raw, err := json.Marshal(ScrollParams{Down: p.Down, Pages: p.Pages, Index: p.Index})
		if err != nil {
			return ActionResult{}, err
		}
		return builtinScroll().Run(ctx, ac, raw)
	case p.Index != nil && *p.Index > 0:
		return ActionResult{}, fmt.Errorf("%w: scroll takes an index or coordinates, not both", ErrBadParams)
	case p.CoordinateX == nil || p.CoordinateY == nil:
		return ActionResult{}, fmt.Errorf("%w: scroll at a point needs both coordinate_x and coordinate_y", ErrBadParams)
	}
	down, word := true, "down"
	if p.Down != nil && !*p.Down {
		down, word = false, "up"
	}
	pages := 1.0
	if p.Pages != nil && *p.Pages > 0 {
		pages = *p.Pages
	}
	vh := 1000
	if ac.BrowserState != nil && ac.BrowserState.Page.ViewportHeight > 0 {
		vh = ac.BrowserState.Page.ViewportHeight
	}
	dy := pages * float64(vh)
	if !down {
		dy = -dy
	}
	scale := screenshotScale(ac.BrowserState)
	x, y := *p.CoordinateX*scale, *p.CoordinateY*scale
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.ScrollCoordinate, events.ScrollCoordinateEvent{X: x, Y: y, DY: dy})
	r := outcomeResult(fmt.Sprintf("Scrolled %s %.1f pages at (%.0f, %.0f)", word, pages, *p.CoordinateX, *p.CoordinateY), res.Outcome)
	r.Mark = &ActionMark{Point: &[2]float64{x, y}}
	return r, err
}

// hasParam reports whether a call's parameters name key (with a non-null
// value).
func hasParam(raw json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}
