package actions

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// Errors of a drag, usable with errors.Is.
var (
	// ErrCovered is wrapped by the error of a drag whose start or drop
	// element is under something else (a modal, an overlay): the pointer
	// would press or release on the cover, so nothing was dragged.
	ErrCovered = errors.New("actions: element covered")
	// ErrBadDrag is wrapped by the error of a drag that names no start,
	// no end, an end equal to the start, a point outside the viewport, or
	// elements in different frame targets.
	ErrBadDrag = errors.New("actions: bad drag")
)

// Drag methods reported in events.DragResult.Method.
const (
	methodHTML5 = "html5"
)

// maxDragSteps bounds DragEvent.Steps.
const maxDragSteps = 100

// dragInterceptWait bounds the wait for Chrome's Input.dragIntercepted
// after the page's dragstart said a drag began (it follows at once).
const dragInterceptWait = 3 * time.Second

// dragWhereJS reads where the dragged element is and the value it shows.
//
//go:embed js/drag_where.js
var dragWhereJSSrc string

var dragWhereJS = withDescribe(dragWhereJSSrc)

// dragWhere is what dragWhereJS reads.
type dragWhere struct {
	Gone   bool    `json:"gone"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Parent string  `json:"parent"`
	Value  string  `json:"value"`
}

// moved says how the dragged element changed, "" if it did not.
func (b dragWhere) moved(a dragWhere) string {
	switch {
	case a.Gone && !b.Gone:
		return "the dragged element left the page"
	case a.Value != b.Value:
		return fmt.Sprintf("the dragged element's value went from %q to %q", clip(b.Value, 40), clip(a.Value, 40))
	case a.Parent != b.Parent:
		return "the dragged element moved into " + a.Parent
	case math.Abs(a.X-b.X) > 1 || math.Abs(a.Y-b.Y) > 1:
		return fmt.Sprintf("the dragged element moved by (%.0f, %.0f)", a.X-b.X, a.Y-b.Y)
	}
	return ""
}

// dragProbeJS tells whether the page started an HTML5 drag.
//
//go:embed js/drag_probe.js
var dragProbeJS string

// drag handles Drag: real mouse input from the start to the end in steps.
// When the page starts an HTML5 drag (its dragstart fired and was not
// cancelled) Chrome's drag is intercepted and delivered as drag events
// (dragenter, dragover, drop; the source gets dragend), the way a person's
// drag reaches the page; otherwise the moves stay mouse (and pointer)
// events, what sliders and mouse-driven sortables listen to.
func (a *Watchdog) drag(ctx context.Context, s *session.Session, ev events.DragEvent) (events.DragResult, error) {
	var res events.DragResult
	fail := func(err error) (events.DragResult, error) {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	steps := ev.Steps
	if steps <= 0 {
		steps = events.DefaultDragSteps
	}
	steps = min(steps, maxDragSteps)
	hasFrom, hasTo := !isZeroTarget(ev.From), !isZeroTarget(ev.To)
	if !hasFrom && ev.FromPoint == nil {
		return fail(fmt.Errorf("%w: a drag needs a start: an element or a point", ErrBadDrag))
	}
	if hasFrom && ev.FromPoint != nil {
		return fail(fmt.Errorf("%w: a drag starts at an element or at a point, not both", ErrBadDrag))
	}
	if !hasTo && ev.DX == 0 && ev.DY == 0 {
		return fail(fmt.Errorf("%w: a drag needs an end: an element, or an offset (dx, dy) other than 0, 0", ErrBadDrag))
	}
	if hasTo && (ev.DX != 0 || ev.DY != 0) {
		return fail(fmt.Errorf("%w: a drag ends at an element or by an offset, not both", ErrBadDrag))
	}
	if !finite(ev.DX) || !finite(ev.DY) {
		return fail(fmt.Errorf("%w: offset (%v, %v) is not a number", ErrBadDrag, ev.DX, ev.DY))
	}
	var (
		cs     *cdp.Session
		from   point
		fromEl *element
		toEl   *element
		err    error
	)
	if hasFrom {
		if fromEl, err = a.resolve(ctx, s, ev.From); err != nil {
			return fail(err)
		}
		cs = fromEl.sess
	} else {
		if cs, err = s.PageSession(""); err != nil {
			return fail(err)
		}
		if !finite(ev.FromPoint.X) || !finite(ev.FromPoint.Y) {
			return fail(fmt.Errorf("%w: start (%v, %v) is not a point", ErrBadDrag, ev.FromPoint.X, ev.FromPoint.Y))
		}
		from = point{X: ev.FromPoint.X, Y: ev.FromPoint.Y}
	}
	if hasTo {
		if toEl, err = a.resolve(ctx, s, ev.To); err != nil {
			return fail(err)
		}
		if toEl.sess != cs {
			return fail(fmt.Errorf("%w: %s and %s are in different frames (a cross-site iframe is its own page to the browser); drag within one frame", ErrBadDrag, dragName(ev.From, ev.FromPoint), targetName(ev.To)))
		}
	}
	// The drop element first, then the start: the start is then surely in
	// view, and the drop element is read again after (still in view unless
	// the two cannot both be).
	var to point
	if toEl != nil {
		if to, err = dragPoint(ctx, toEl, "drop onto"); err != nil {
			return fail(err)
		}
	}
	if fromEl != nil {
		if from, err = dragPoint(ctx, fromEl, "drag"); err != nil {
			return fail(err)
		}
	}
	if toEl != nil {
		if to, err = dragPoint(ctx, toEl, "drop onto"); err != nil {
			return fail(err)
		}
		if fromEl != nil {
			again, err := visiblePoint(ctx, fromEl)
			if err != nil || math.Abs(again.X-from.X) > 1 || math.Abs(again.Y-from.Y) > 1 {
				return fail(fmt.Errorf("%w: %s and %s cannot both be in view at once; drag by an offset, or in steps", ErrBadDrag, targetName(ev.From), targetName(ev.To)))
			}
		}
	} else {
		to = point{X: from.X + ev.DX, Y: from.Y + ev.DY}
	}
	if err := inViewport(ctx, cs, from, "start"); err != nil {
		return fail(err)
	}
	if err := inViewport(ctx, cs, to, "end"); err != nil {
		return fail(err)
	}
	res.From, res.To = events.Point{X: from.X, Y: from.Y}, events.Point{X: to.X, Y: to.Y}
	probe, err := probeObject(ctx, cs, fromEl)
	if err != nil {
		return fail(err)
	}
	run := a.begin(ctx, s, cs)
	var before dragWhere
	if fromEl != nil {
		if err := pagejs.CallOn(ctx, cs, fromEl.obj, dragWhereJS, &before); err != nil {
			res.Outcome = run.end(ctx, err)
			return res, err
		}
	}
	top, _ := s.PageSession("")
	res.Method, err = dragPath(ctx, cs, top, probe, from, to, steps)
	if err != nil {
		err = fmt.Errorf("actions: drag: %w", err)
	} else {
		if res.Method == methodHTML5 {
			run.addDetail("an HTML5 drag: dragstart fired, dropped with drag events")
		}
		var after dragWhere
		if fromEl != nil && pagejs.CallOn(ctx, cs, fromEl.obj, dragWhereJS, &after) == nil {
			if d := before.moved(after); d != "" {
				// The page's evidence counts structure and what is
				// shown; a thumb that slid or a card that moved is the
				// drag's own.
				run.addDetail(d)
				run.verdict, run.override = events.VerdictChanged, true
			}
		}
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

func isZeroTarget(t events.Target) bool { return t.Index == 0 && t.Element == nil }

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func dragName(t events.Target, p *events.Point) string {
	if p != nil {
		return fmt.Sprintf("(%.0f, %.0f)", p.X, p.Y)
	}
	return targetName(t)
}

// dragPoint is where the pointer presses or releases on el: its reach
// point, which a hit test proved reaches it. Unlike a click there is no
// JavaScript fallback: a covered element is an error wrapping ErrCovered.
func dragPoint(ctx context.Context, el *element, verb string) (point, error) {
	p, cover, err := reach(ctx, el, verb)
	if err != nil {
		return p, err
	}
	if cover != "" {
		return p, fmt.Errorf("%w: %s is covered by %s, so a person could not %s it; close or move what covers it first", ErrCovered, el.info.Desc, cover, verb)
	}
	return p, nil
}

// inViewport checks that p lies in cs's viewport (a frame target without
// Page metrics is not checked).
func inViewport(ctx context.Context, cs *cdp.Session, p point, what string) error {
	lm, err := cdpproto.Call(ctx, cs, page.GetLayoutMetrics, cdpproto.Empty{})
	if err != nil || lm.CSSVisualViewport == nil {
		return nil
	}
	vw, vh := lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
	if p.X < 0 || p.Y < 0 || p.X >= vw || p.Y >= vh {
		return fmt.Errorf("%w: the drag's %s (%.0f, %.0f) is outside the %.0f×%.0f viewport (a drag does not scroll the page as it goes: scroll so both ends show, or drag a shorter way)", ErrBadDrag, what, p.X, p.Y, vw, vh)
	}
	return nil
}

// probeObject is the node whose window the dragstart probe watches: the
// start element's, else the document's.
func probeObject(ctx context.Context, cs *cdp.Session, el *element) (runtime.RemoteObjectID, error) {
	if el != nil {
		return el.obj, nil
	}
	r, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: "document", ObjectGroup: objectGroup})
	if err != nil {
		return "", err
	}
	if r.Result == nil || r.Result.ObjectID == "" {
		return "", errors.New("no document")
	}
	return r.Result.ObjectID, nil
}

// dragPath presses at from, moves to to in steps and releases there. Drags
// are intercepted meanwhile, so that an HTML5 drag the page starts is
// Chrome's data to deliver as drag events rather than an OS drag loop
// that headless input never ends.
func dragPath(ctx context.Context, cs, top *cdp.Session, probe runtime.RemoteObjectID, from, to point, steps int) (method string, err error) {
	sub := cs.SubscribeEvents(input.DragIntercepted.Method)
	defer sub.Cancel()
	var topSub *cdp.Subscription
	if top != nil && top != cs {
		// A cross-site iframe's drag starts in its page's widget, which
		// is where Chrome reports it.
		tsub := top.SubscribeEvents(input.DragIntercepted.Method)
		defer tsub.Cancel()
		if _, err := cdpproto.Call(ctx, top, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
			return "", err
		}
		defer top.Send(context.WithoutCancel(ctx), input.CommandSetInterceptDrags, input.SetInterceptDragsParams{Enabled: false})
		topSub = tsub
	}
	if err := pagejs.CallOn(ctx, cs, probe, dragProbeJS, nil, "arm"); err != nil {
		return "", err
	}
	defer func() {
		// The page may have navigated away: nothing to clean then.
		_ = pagejs.CallOn(context.WithoutCancel(ctx), cs, probe, dragProbeJS, nil, "done")
	}()
	if _, err := cdpproto.Call(ctx, cs, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
		return "", err
	}
	defer cs.Send(context.WithoutCancel(ctx), input.CommandSetInterceptDrags, input.SetInterceptDragsParams{Enabled: false})
	mouse := func(t input.DispatchMouseEventType, p point, buttons int64) error {
		ps := input.DispatchMouseEventParams{Type: t, X: p.X, Y: p.Y, Buttons: buttons}
		if t != input.DispatchMouseEventTypeMouseMoved || buttons != 0 {
			ps.Button = input.MouseButtonLeft
		}
		if t == input.DispatchMouseEventTypeMousePressed || t == input.DispatchMouseEventTypeMouseReleased {
			ps.ClickCount = 1
		}
		_, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, ps)
		return err
	}
	if err := mouse(input.DispatchMouseEventTypeMouseMoved, from, 0); err != nil {
		return "", err
	}
	if err := mouse(input.DispatchMouseEventTypeMousePressed, from, 1); err != nil {
		return "", err
	}
	var data *input.DragData
	entered := false
	drag := func(t input.DispatchDragEventType, p point) error {
		_, err := cdpproto.Call(ctx, cs, input.DispatchDragEvent, input.DispatchDragEventParams{Type: t, X: p.X, Y: p.Y, Data: data})
		return err
	}
	defer func() {
		if err != nil && data != nil {
			// A drag left open would swallow the page's next input.
			_, _ = cdpproto.Call(context.WithoutCancel(ctx), cs, input.DispatchDragEvent, input.DispatchDragEventParams{Type: input.DispatchDragEventTypeDragCancel, X: to.X, Y: to.Y, Data: data})
		}
	}()
	for i := 1; i <= steps; i++ {
		f := float64(i) / float64(steps)
		p := point{X: from.X + (to.X-from.X)*f, Y: from.Y + (to.Y-from.Y)*f}
		if data != nil {
			t := input.DispatchDragEventTypeDragOver
			if !entered {
				t, entered = input.DispatchDragEventTypeDragEnter, true
			}
			if err := drag(t, p); err != nil {
				return methodHTML5, err
			}
			continue
		}
		if err := mouse(input.DispatchMouseEventTypeMouseMoved, p, 1); err != nil {
			return methodMouse, err
		}
		var started bool
		if err := pagejs.CallOn(ctx, cs, probe, dragProbeJS, &started, "read"); err != nil {
			return methodMouse, err
		}
		if !started {
			continue
		}
		if data, err = awaitDragData(ctx, sub, topSub); err != nil {
			return methodHTML5, err
		}
		// The step's own position is where the drag enters.
		if err := drag(input.DispatchDragEventTypeDragEnter, p); err != nil {
			return methodHTML5, err
		}
		entered = true
	}
	if data != nil {
		if err := drag(input.DispatchDragEventTypeDragOver, to); err != nil {
			return methodHTML5, err
		}
		if err := drag(input.DispatchDragEventTypeDrop, to); err != nil {
			return methodHTML5, err
		}
		return methodHTML5, mouse(input.DispatchMouseEventTypeMouseReleased, to, 0)
	}
	return methodMouse, mouse(input.DispatchMouseEventTypeMouseReleased, to, 0)
}

// awaitDragData waits for Chrome's Input.dragIntercepted, which follows a
// dragstart the page did not cancel.
func awaitDragData(ctx context.Context, sub, topSub *cdp.Subscription) (*input.DragData, error) {
	t := time.NewTimer(dragInterceptWait)
	defer t.Stop()
	var topC <-chan cdp.Event // nil: never ready
	if topSub != nil {
		topC = topSub.C()
	}
	for {
		var (
			e  cdp.Event
			ok bool
		)
		select {
		case e, ok = <-sub.C():
		case e, ok = <-topC:
		case <-t.C:
			return nil, fmt.Errorf("the page started an HTML5 drag but Chrome delivered no drag data within %s", dragInterceptWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			return nil, errors.New("the page's connection closed during the drag")
		}
		var d input.EventDragIntercepted
		if err := e.Decode(&d); err != nil {
			return nil, err
		}
		if d.Data != nil {
			return d.Data, nil
		}
	}
}
