package actions

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// readValueJS reads a field's whole value; see js/read_value.js.
//
//go:embed js/read_value.js
var readValueJS string

// readValue handles ReadValue: the whole value of an input, textarea,
// select (its selected options) or editable element, read from the page
// as it is now. A password field, or one a person typed into during a
// hand-off (dom.HumanTypedAttr, on it or an ancestor), is refused with
// events.ErrValueWithheld without reading it, as the observation withholds
// it; any other element is refused with events.ErrNoValue.
func (a *Watchdog) readValue(ctx context.Context, s *session.Session, ev events.ReadValueEvent) (events.ReadValueResult, error) {
	var res events.ReadValueResult
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		return res, err
	}
	// Nothing else of this call needs the object: release it at once.
	defer el.sess.Send(ctx, runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
	var out struct {
		Kind     string                  `json:"kind"`
		Value    string                  `json:"value"`
		Selected []events.DropdownOption `json:"selected"`
		Withheld bool                    `json:"withheld"`
	}
	if err := pagejs.CallOn(ctx, el.sess, el.obj, readValueJS, &out, dom.HumanTypedAttr); err != nil {
		return res, fmt.Errorf("actions: reading the value of %s: %w", targetName(ev.Target), err)
	}
	switch {
	case out.Kind == "":
		return res, fmt.Errorf("%w: %s (%s) is not a form field or editable element", events.ErrNoValue, targetName(ev.Target), el.info.Desc)
	case out.Withheld:
		return res, fmt.Errorf("%w: %s (%s) is a password field or one a person typed into", events.ErrValueWithheld, targetName(ev.Target), el.info.Desc)
	}
	res.Kind, res.Value, res.Selected = out.Kind, out.Value, out.Selected
	return res, nil
}
