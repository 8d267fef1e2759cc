package actions

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strings"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// scrollAtJS reads the scroll positions of what can scroll under a point.
//
//go:embed js/scroll_at.js
var scrollAtJSSrc string

var scrollAtJS = withDescribe(scrollAtJSSrc)

// wheelSettle bounds how long a wheel's scroll is awaited: the compositor
// scrolls after the input is acknowledged, and a wheel the page handles
// itself (a map's zoom) scrolls nothing.
const wheelSettle = 600 * time.Millisecond

// wheelParams are Input.dispatchMouseEvent's for a wheel: Chrome requires
// both deltas, which cdproto's params leave out when zero.
type wheelParams struct {
	Type   input.DispatchMouseEventType `json:"type"`
	X      float64                      `json:"x"`
	Y      float64                      `json:"y"`
	DeltaX float64                      `json:"deltaX"`
	DeltaY float64                      `json:"deltaY"`
}

var dispatchWheel = cdpproto.Command[wheelParams, cdpproto.Empty]{Method: input.CommandDispatchMouseEvent}

type scrollPos struct {
	Desc string  `json:"desc"`
	L    float64 `json:"left"`
	T    float64 `json:"top"`
}

// scrollCoordinate handles ScrollCoordinate: a mouse wheel at a point of
// the focused tab's viewport, so whatever scrolls under it (an inner box,
// a canvas list, a map that handles the wheel itself, else the page) gets
// the wheel a person's would. The detail names what scrolled and by how
// much; a wheel nothing scrolled for is no error (the page may have used
// it: the verdict says whether anything changed).
func (a *Watchdog) scrollCoordinate(ctx context.Context, s *session.Session, ev events.ScrollCoordinateEvent) (events.ScrollResult, error) {
	var res events.ScrollResult
	fail := func(err error) (events.ScrollResult, error) {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	if !finite(ev.X) || !finite(ev.Y) || !finite(ev.DX) || !finite(ev.DY) {
		return fail(fmt.Errorf("actions: scroll at (%v, %v) by (%v, %v): not a point and offset", ev.X, ev.Y, ev.DX, ev.DY))
	}
	if ev.DX == 0 && ev.DY == 0 {
		return fail(fmt.Errorf("actions: scroll at (%.0f, %.0f) needs a non-zero amount", ev.X, ev.Y))
	}
	ps, err := s.PageSession("")
	if err != nil {
		return fail(err)
	}
	lm, err := cdpproto.Call(ctx, ps, page.GetLayoutMetrics, cdpproto.Empty{})
	if err != nil {
		return fail(err)
	}
	vw, vh := lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
	if ev.X < 0 || ev.Y < 0 || ev.X >= vw || ev.Y >= vh {
		return fail(fmt.Errorf("actions: scroll at (%.0f, %.0f) is outside the %.0f×%.0f viewport", ev.X, ev.Y, vw, vh))
	}
	run := a.begin(ctx, s, ps)
	err = func() error {
		before, err := scrollPositions(ctx, ps, ev.X, ev.Y)
		if err != nil {
			return err
		}
		if _, err := cdpproto.Call(ctx, ps, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: ev.X, Y: ev.Y}); err != nil {
			return err
		}
		if _, err := cdpproto.Call(ctx, ps, dispatchWheel, wheelParams{Type: input.DispatchMouseEventTypeMouseWheel, X: ev.X, Y: ev.Y, DeltaX: ev.DX, DeltaY: ev.DY}); err != nil {
			return err
		}
		// Poll until something under the point moved, or the bound.
		deadline := time.Now().Add(wheelSettle)
		for {
			after, err := scrollPositions(ctx, ps, ev.X, ev.Y)
			if err != nil {
				return err
			}
			if d := movedScroll(before, after); d != "" {
				run.addDetail(d)
				return nil
			}
			if !time.Now().Before(deadline) || ctx.Err() != nil {
				run.addDetail(fmt.Sprintf("nothing under (%.0f, %.0f) scrolled (%s cannot scroll that way, or the page used the wheel itself)", ev.X, ev.Y, describeScrollers(before)))
				return ctx.Err()
			}
			sleep(ctx, 25*time.Millisecond)
		}
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}

func scrollPositions(ctx context.Context, cs *cdp.Session, x, y float64) ([]scrollPos, error) {
	var out []scrollPos
	err := pagejs.Evaluate(ctx, cs, fmt.Sprintf("(%s)(%g, %g)", scrollAtJS, x, y), &out)
	return out, err
}

// movedScroll describes the first scroller whose position changed ("" if
// none did). The lists are of the same point, so they match by position
// unless the element under the point changed: then by description.
func movedScroll(before, after []scrollPos) string {
	for _, b := range before {
		for _, a := range after {
			if a.Desc != b.Desc {
				continue
			}
			dx, dy := a.L-b.L, a.T-b.T
			if math.Abs(dx) < 0.5 && math.Abs(dy) < 0.5 {
				break
			}
			var parts []string
			if math.Abs(dy) >= 0.5 {
				parts = append(parts, fmt.Sprintf("%.0f px %s (now at %.0f)", math.Abs(dy), map[bool]string{true: "down", false: "up"}[dy > 0], a.T))
			}
			if math.Abs(dx) >= 0.5 {
				parts = append(parts, fmt.Sprintf("%.0f px %s (now at %.0f)", math.Abs(dx), map[bool]string{true: "right", false: "left"}[dx > 0], a.L))
			}
			return "scrolled " + a.Desc + " " + strings.Join(parts, " and ")
		}
	}
	return ""
}

func describeScrollers(ps []scrollPos) string {
	var d []string
	for _, p := range ps {
		d = append(d, p.Desc)
	}
	return strings.Join(d, ", ")
}
