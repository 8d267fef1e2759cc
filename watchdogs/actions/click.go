package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"math"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Click methods reported in events.ClickResult.Method.
const (
	actionsMethodMouse = "mouse"
	actionsMethodJS    = "js_fallback"
)

const actionsJSClick = `function(){
  if (typeof this.click === 'function') this.click();
  else this.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, composed: true, view: window}));
}`

const actionsCheckedJS = `function(){
  if (this.localName === 'input') return this.checked;
  return this.getAttribute('aria-checked') === 'true';
}`

// actionsFailed is the outcome of an action that failed before it touched
// the page (no evidence is read for it).
func actionsFailed(err error) events.ActionOutcome {
	return events.ActionOutcome{Verdict: events.VerdictFailed, Detail: err.Error()}
}

// actionsClick handles ClickElement.
func (a *Actions) actionsClick(ctx context.Context, s *session.Session, ev events.ClickElementEvent) (events.ClickResult, error) {
	var res events.ClickResult
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	name := actionsTargetName(ev.Target)
	switch {
	case el.info.Tag == "select":
		err = fmt.Errorf("watchdogs: %s is a <select> dropdown: clicking it does not choose an option; use select_dropdown with the option's text (dropdown_options lists them)", name)
	case el.info.Tag == "input" && el.info.Type == "file":
		err = fmt.Errorf("watchdogs: %s is a file input: clicking it opens a file chooser the agent cannot use; use upload_file with the file's path", name)
	}
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	run := a.actionsBegin(ctx, s, el.sess)
	run.mayBeDL = el.info.Link
	err = a.actionsClickElement(ctx, el, ev.Button, &res, run)
	res.Outcome = run.end(ctx, err)
	return res, err
}

// actionsClickElement clicks a resolved element with real mouse events at
// a visible point that a hit test proves reaches it; it falls back to a
// JavaScript click only when the element is covered or has no box, and says
// so. Checkboxes and radios are verified.
func (a *Actions) actionsClickElement(ctx context.Context, el *actionsElement, button events.MouseButton, res *events.ClickResult, run *actionsRun) error {
	p, err := actionsVisiblePoint(ctx, el)
	var why string
	switch {
	case errors.Is(err, actionsNoGeometry):
		why = "the element has no visible box"
	case err != nil:
		return err
	default:
		ok, cover, err := actionsHitTest(ctx, el, p)
		if err != nil {
			return err
		}
		if !ok {
			why = "covered by " + cover
		}
		res.X, res.Y = p.X, p.Y
	}
	if why == "" {
		if err := actionsMouseClick(ctx, el.sess, p.X, p.Y, button); err != nil {
			return fmt.Errorf("watchdogs: click: %w", err)
		}
		res.Method = actionsMethodMouse
	} else {
		if button != "" && button != events.ButtonLeft {
			return fmt.Errorf("watchdogs: cannot %s-click: %s", button, why)
		}
		if err := callOn(ctx, el.sess, el.obj, actionsJSClick, nil); err != nil {
			return fmt.Errorf("watchdogs: click (JavaScript, because %s): %w", why, err)
		}
		res.Method = actionsMethodJS
		run.addDetail(why + "; clicked with JavaScript")
		a.cfg.Logger.Debug("actions: JavaScript click fallback", zap.String("element", el.info.Desc), zap.String("reason", why))
	}
	if el.info.Checked == nil {
		return nil
	}
	before := *el.info.Checked
	var after bool
	if err := callOn(ctx, el.sess, el.obj, actionsCheckedJS, &after); err != nil {
		return fmt.Errorf("watchdogs: reading checked state: %w", err)
	}
	radio := el.info.Type == "radio" || el.info.Role == "radio"
	toggled := after != before || (radio && before)
	if !toggled && res.Method == actionsMethodMouse {
		if err := callOn(ctx, el.sess, el.obj, actionsJSClick, nil); err != nil {
			return fmt.Errorf("watchdogs: click (JavaScript, because the mouse click did not toggle it): %w", err)
		}
		if err := callOn(ctx, el.sess, el.obj, actionsCheckedJS, &after); err != nil {
			return fmt.Errorf("watchdogs: reading checked state: %w", err)
		}
		res.Method = actionsMethodJS
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

// actionsClickCoordinate handles ClickCoordinate on the focused tab.
func (a *Actions) actionsClickCoordinate(ctx context.Context, s *session.Session, ev events.ClickCoordinateEvent) (events.ClickResult, error) {
	res := events.ClickResult{X: ev.X, Y: ev.Y, Method: actionsMethodMouse}
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	if math.IsNaN(ev.X) || math.IsNaN(ev.Y) || math.IsInf(ev.X, 0) || math.IsInf(ev.Y, 0) {
		err := fmt.Errorf("watchdogs: click at (%v, %v): not a point", ev.X, ev.Y)
		res.Outcome = actionsFailed(err)
		return res, err
	}
	var target string
	if !ev.Force {
		lm, err := cdpproto.Call(ctx, ps, page.GetLayoutMetrics, cdpproto.Empty{})
		if err != nil {
			res.Outcome = actionsFailed(err)
			return res, err
		}
		vw, vh := lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
		if ev.X < 0 || ev.Y < 0 || ev.X >= vw || ev.Y >= vh {
			err := fmt.Errorf("watchdogs: click at (%.0f, %.0f) is outside the %.0f×%.0f viewport", ev.X, ev.Y, vw, vh)
			res.Outcome = actionsFailed(err)
			return res, err
		}
		hit, err := cdpproto.Call(ctx, ps, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
			X: int64(math.Round(ev.X)) + lm.CSSLayoutViewport.PageX, Y: int64(math.Round(ev.Y)) + lm.CSSLayoutViewport.PageY,
		})
		if err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("watchdogs: nothing to click at (%.0f, %.0f) (use force to click anyway)", ev.X, ev.Y)
			}
			res.Outcome = actionsFailed(err)
			return res, err
		}
		if ho, err := cdpproto.Call(ctx, ps, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: hit.BackendNodeID, ObjectGroup: actionsObjectGroup}); err == nil && ho.Object != nil {
			_ = callOn(ctx, ps, ho.Object.ObjectID, `function(){ return (`+actionsDescJS+`)(this); }`, &target)
		}
	}
	run := a.actionsBegin(ctx, s, ps)
	if target != "" {
		run.addDetail("clicked " + target)
	}
	err = actionsMouseClick(ctx, ps, ev.X, ev.Y, ev.Button)
	if err != nil {
		err = fmt.Errorf("watchdogs: click: %w", err)
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// actionsHover handles Hover: the pointer moves over the element's visible
// point, so :hover styles and mouseenter/mouseover handlers run.
func (a *Actions) actionsHover(ctx context.Context, s *session.Session, ev events.HoverEvent) (events.HoverResult, error) {
	var res events.HoverResult
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	run := a.actionsBegin(ctx, s, el.sess)
	err = func() error {
		p, err := actionsVisiblePoint(ctx, el)
		if errors.Is(err, actionsNoGeometry) {
			return fmt.Errorf("watchdogs: cannot hover %s: it has no visible box", actionsTargetName(ev.Target))
		}
		if err != nil {
			return err
		}
		res.X, res.Y = p.X, p.Y
		ok, cover, err := actionsHitTest(ctx, el, p)
		if err != nil {
			return err
		}
		if !ok {
			run.addDetail("covered by " + cover + "; the pointer is over the cover")
		}
		_, err = cdpproto.Call(ctx, el.sess, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: p.X, Y: p.Y})
		return err
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}
