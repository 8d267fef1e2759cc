package actions

import (
	"context"
	_ "embed"
	"fmt"
	"math"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// Click methods reported in events.ClickResult.Method.
const (
	methodMouse = "mouse"
	methodJS    = "js_fallback"
)

// jsClickJS clicks with JavaScript (the fallback).
//
//go:embed js/js_click.js
var jsClickJS string

// checkedJS reads an element's checked state.
//
//go:embed js/checked.js
var checkedJS string

// failedOutcome is the outcome of an action that failed before it touched
// the page (no evidence is read for it).
func failedOutcome(err error) events.ActionOutcome {
	return events.ActionOutcome{Verdict: events.VerdictFailed, Detail: err.Error()}
}

// click handles ClickElement.
func (a *Watchdog) click(ctx context.Context, s *session.Session, ev events.ClickElementEvent) (events.ClickResult, error) {
	var res events.ClickResult
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	name := targetName(ev.Target)
	switch {
	case el.info.Tag == "select":
		err = fmt.Errorf("actions: %s is a <select> dropdown: clicking it does not choose an option; use select_dropdown with the option's text (dropdown_options lists them)", name)
	case el.info.Tag == "input" && el.info.Type == "file":
		err = fmt.Errorf("actions: %s is a file input: clicking it opens a file chooser the agent cannot use; use upload_file with the file's path", name)
	}
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	run := a.begin(ctx, s, el.sess)
	run.mayBeDL = el.info.Link
	err = a.clickElement(ctx, el, ev.Button, &res, run)
	res.Outcome = run.end(ctx, err)
	return res, err
}

// clickElement clicks a resolved element with real mouse events at a
// visible point that a hit test proves reaches it (see reach: a covered
// element is first scrolled out from under its cover). A visually hidden
// checkbox or radio is clicked through its visible label, as a person
// would. It falls back to a JavaScript click only when the element stayed
// covered or is a checkbox the mouse did not toggle, and says so; an
// element nobody can see is refused with ErrNotVisible. Checkboxes and
// radios, and labels of one, are verified.
func (a *Watchdog) clickElement(ctx context.Context, el *element, button events.MouseButton, res *events.ClickResult, run *actionRun) error {
	aim := el
	if el.info.HiddenControl {
		lbl, err := visibleLabel(ctx, el)
		if err != nil {
			return err
		}
		if lbl != nil {
			aim = lbl
			run.addDetail(fmt.Sprintf("the %s %s is visually hidden; clicked its label %s", el.info.Type, el.info.Desc, lbl.info.Desc))
		}
	}
	p, cover, err := reach(ctx, aim, "click")
	if err != nil {
		return err
	}
	res.X, res.Y = p.X, p.Y
	if cover == "" {
		if err := mouseClick(ctx, el.sess, p.X, p.Y, button); err != nil {
			return fmt.Errorf("actions: click: %w", err)
		}
		res.Method = methodMouse
	} else {
		why := "covered by " + cover
		if button != "" && button != events.ButtonLeft {
			return fmt.Errorf("actions: cannot %s-click: %s", button, why)
		}
		if err := pagejs.CallOn(ctx, el.sess, el.obj, jsClickJS, nil); err != nil {
			return fmt.Errorf("actions: click (JavaScript, because %s): %w", why, err)
		}
		res.Method = methodJS
		run.addDetail(why + "; clicked with JavaScript")
		a.logger(run.s).Debug("JavaScript click fallback", zap.String("element", el.info.Desc), zap.String("reason", why))
	}
	if el.info.Checked == nil {
		return nil
	}
	before := *el.info.Checked
	var after bool
	if err := pagejs.CallOn(ctx, el.sess, el.obj, checkedJS, &after); err != nil {
		if pageLeft(err) {
			// The click's own handler left the page (a change handler
			// that submits its form) or removed the element's frame: the
			// outcome says what followed.
			run.addDetail("the page left the element before its checked state could be read")
			return nil
		}
		return fmt.Errorf("actions: reading checked state: %w", err)
	}
	radio := el.info.Type == "radio" || el.info.Role == "radio" || el.info.Control == "radio"
	toggled := after != before || (radio && before)
	if !toggled && res.Method == methodMouse {
		if err := pagejs.CallOn(ctx, el.sess, el.obj, jsClickJS, nil); err != nil {
			if pageLeft(err) {
				run.addDetail("the page left the element after the mouse click, before its checked state changed")
				return nil
			}
			return fmt.Errorf("actions: click (JavaScript, because the mouse click did not toggle it): %w", err)
		}
		if err := pagejs.CallOn(ctx, el.sess, el.obj, checkedJS, &after); err != nil {
			if pageLeft(err) {
				res.Method = methodJS
				run.addDetail("clicked with JavaScript; the page left the element before its checked state could be read")
				return nil
			}
			return fmt.Errorf("actions: reading checked state: %w", err)
		}
		res.Method = methodJS
		run.addDetail("the mouse click did not change the checked state; clicked with JavaScript")
	}
	res.Checked = &after
	if after == before && !(radio && before) {
		run.addDetail(fmt.Sprintf("checked state did not change (still %v)", after))
	} else {
		run.addDetail(fmt.Sprintf("checked is now %v", after))
		run.verdict, run.override = events.VerdictChanged, true
	}
	return nil
}

// clickCoordinate handles ClickCoordinate on the focused tab.
func (a *Watchdog) clickCoordinate(ctx context.Context, s *session.Session, ev events.ClickCoordinateEvent) (events.ClickResult, error) {
	res := events.ClickResult{X: ev.X, Y: ev.Y, Method: methodMouse}
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	if math.IsNaN(ev.X) || math.IsNaN(ev.Y) || math.IsInf(ev.X, 0) || math.IsInf(ev.Y, 0) {
		err := fmt.Errorf("actions: click at (%v, %v): not a point", ev.X, ev.Y)
		res.Outcome = failedOutcome(err)
		return res, err
	}
	var target string
	if !ev.Force {
		lm, err := cdpproto.Call(ctx, ps, page.GetLayoutMetrics, cdpproto.Empty{})
		if err != nil {
			res.Outcome = failedOutcome(err)
			return res, err
		}
		vw, vh := lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
		if ev.X < 0 || ev.Y < 0 || ev.X >= vw || ev.Y >= vh {
			err := fmt.Errorf("actions: click at (%.0f, %.0f) is outside the %.0f×%.0f viewport", ev.X, ev.Y, vw, vh)
			res.Outcome = failedOutcome(err)
			return res, err
		}
		hit, err := cdpproto.Call(ctx, ps, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
			X: int64(math.Round(ev.X)) + lm.CSSLayoutViewport.PageX, Y: int64(math.Round(ev.Y)) + lm.CSSLayoutViewport.PageY,
		})
		if err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("actions: nothing to click at (%.0f, %.0f) (use force to click anyway)", ev.X, ev.Y)
			}
			res.Outcome = failedOutcome(err)
			return res, err
		}
		if ho, err := cdpproto.Call(ctx, ps, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: hit.BackendNodeID, ObjectGroup: objectGroup}); err == nil && ho.Object != nil {
			_ = pagejs.CallOn(ctx, ps, ho.Object.ObjectID, `function(){ return (`+descJS+`)(this); }`, &target)
		}
	}
	run := a.begin(ctx, s, ps)
	if target != "" {
		run.addDetail("clicked " + target)
	}
	err = mouseClick(ctx, ps, ev.X, ev.Y, ev.Button)
	if err != nil {
		err = fmt.Errorf("actions: click: %w", err)
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// hover handles Hover: the pointer moves over the element's visible
// point, so :hover styles and mouseenter/mouseover handlers run. The point
// is found as for a click (reach): uncovered from a sticky header if it
// can be; an element nobody can see is an error wrapping ErrNotVisible.
func (a *Watchdog) hover(ctx context.Context, s *session.Session, ev events.HoverEvent) (events.HoverResult, error) {
	var res events.HoverResult
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	run := a.begin(ctx, s, el.sess)
	err = func() error {
		p, cover, err := reach(ctx, el, "hover")
		if err != nil {
			return err
		}
		res.X, res.Y = p.X, p.Y
		if cover != "" {
			run.addDetail("covered by " + cover + "; the pointer is over the cover")
		}
		_, err = cdpproto.Call(ctx, el.sess, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: p.X, Y: p.Y})
		return err
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}
