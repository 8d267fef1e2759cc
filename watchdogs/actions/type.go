package actions

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/keys"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// specialInputs are the input types whose value is set, not typed:
// browsers show pickers for them and ignore typed characters.
var specialInputs = map[string]string{
	"date":           "YYYY-MM-DD",
	"time":           "HH:MM or HH:MM:SS",
	"month":          "YYYY-MM",
	"week":           "YYYY-Www",
	"datetime-local": "YYYY-MM-DDTHH:MM",
	"color":          "#rrggbb",
	"range":          "a number within the range",
}

// notTextInputs are input types that take no text.
var notTextInputs = map[string]bool{
	"checkbox": true, "radio": true, "button": true, "submit": true, "reset": true, "image": true, "hidden": true,
}

// editableJS returns the element to type into: the element itself, or
// the single text field inside it (a wrapper the model indexed).
//
//go:embed js/editable.js
var editableJS string

// setValueJS sets a value through the native setter (so frameworks
// that track the value, like React, see the change) and fires input and
// change if the value changed. It returns the value before and the value
// the element accepted.
//
//go:embed js/set_value.js
var setValueJS string

// clearJS empties a field in a way frameworks notice, then leaves the
// caret where typing continues.
//
//go:embed js/clear.js
var clearJS string

// caretEndJS puts the caret at the end so typed text appends.
//
//go:embed js/caret_end.js
var caretEndJS string

// valueJS reads an element's value or text.
//
//go:embed js/value.js
var valueJS string

// activeValueJS reads the focused element's value.
//
//go:embed js/active_value.js
var activeValueJS string

// mask hides a secret value, keeping only its length.
func mask(v string) string {
	return strings.Repeat("•", utf8.RuneCountInString(v))
}

// typeText handles TypeText. The text is never logged nor put in an
// error; for sensitive text and password fields ActualValue is masked.
func (a *Watchdog) typeText(ctx context.Context, s *session.Session, ev events.TypeTextEvent) (events.TypeResult, error) {
	var res events.TypeResult
	if ev.Element == nil && ev.Index == 0 {
		return a.typeFocused(ctx, s, ev)
	}
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	name := targetName(ev.Target)
	switch {
	case el.info.Tag == "select":
		err = fmt.Errorf("actions: %s is a <select> dropdown: use select_dropdown with the option's text", name)
	case el.info.Tag == "input" && el.info.Type == "file":
		err = fmt.Errorf("actions: %s is a file input: use upload_file with the file's path", name)
	case el.info.Tag == "input" && notTextInputs[el.info.Type]:
		err = fmt.Errorf("actions: %s is an <input type=%s>, which takes no text; click it instead", name, el.info.Type)
	}
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	if el.info.Tag != "input" && el.info.Tag != "textarea" && !el.info.Editable {
		id, ok, err := objectNode(ctx, el.sess, el.obj, editableJS)
		if err != nil {
			res.Outcome = failedOutcome(err)
			return res, err
		}
		if !ok {
			err = fmt.Errorf("actions: %s (%s) is not a text field and holds no single text field; pick an input, textarea or editable element", name, el.info.Desc)
			res.Outcome = failedOutcome(err)
			return res, err
		}
		if el, err = resolveNode(ctx, el.sess, id, name); err != nil {
			res.Outcome = failedOutcome(err)
			return res, err
		}
	}
	run := a.begin(ctx, s, el.sess)
	err = a.typeInto(ctx, el, ev, &res, run)
	// Never the text: its length and whether it was secret.
	a.logger(s).Debug("typed", zap.String("element", el.info.Desc), zap.Int("chars", utf8.RuneCountInString(ev.Text)),
		zap.Bool("sensitive", ev.Sensitive), zap.Bool("failed", err != nil))
	res.Outcome = run.end(ctx, err)
	return res, err
}

func (a *Watchdog) typeInto(ctx context.Context, el *element, ev events.TypeTextEvent, res *events.TypeResult, run *actionRun) error {
	secret := ev.Sensitive || el.info.Type == "password"
	p, perr := visiblePoint(ctx, el)
	if perr != nil && !errors.Is(perr, errNoGeometry) {
		return perr
	}
	if perr == nil {
		res.X, res.Y = p.X, p.Y
	}
	if _, err := cdpproto.Call(ctx, el.sess, dom.Focus, dom.FocusParams{BackendNodeID: el.backend}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		if perr != nil {
			return fmt.Errorf("actions: cannot focus %s: %v", el.info.Desc, err)
		}
		// Some widgets only take focus from a pointer. Uncover the field
		// first if something covers it; if it stays covered the click goes
		// to the cover, which may be a floating label that forwards focus.
		if q, cover, err := uncover(ctx, el, el, p, "click"); err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrNotVisible) {
				return err
			}
		} else if cover == "" {
			p = q
			res.X, res.Y = p.X, p.Y
		}
		if err := mouseClick(ctx, el.sess, p.X, p.Y, ""); err != nil {
			return fmt.Errorf("actions: cannot focus %s: %w", el.info.Desc, err)
		}
	}
	if format, ok := specialInputs[el.info.Type]; ok && el.info.Tag == "input" {
		var set struct {
			Old   string `json:"old"`
			Value string `json:"value"`
		}
		if err := pagejs.CallOn(ctx, el.sess, el.obj, setValueJS, &set, ev.Text); err != nil {
			return fmt.Errorf("actions: setting the %s input: %w", el.info.Type, err)
		}
		got := set.Value
		res.ActualValue = got
		if secret {
			res.ActualValue = mask(got)
		}
		if got == "" && ev.Text != "" {
			return fmt.Errorf("actions: the %s input rejected the value; give it as %s", el.info.Type, format)
		}
		if got != ev.Text && el.info.Type != "range" && el.info.Type != "color" {
			run.addDetail(fmt.Sprintf("the %s input normalised the value", el.info.Type))
		}
		if got != set.Old {
			// A new value is a change even though the page's structure is not.
			run.verdict, run.override = events.VerdictChanged, true
		} else {
			run.addDetail(fmt.Sprintf("the %s input already had this value", el.info.Type))
		}
		return nil
	}
	var old, prior string
	if err := pagejs.CallOn(ctx, el.sess, el.obj, valueJS, &prior); err != nil {
		return err
	}
	if !ev.Clear {
		old = prior
	}
	if ev.Clear {
		if err := pagejs.CallOn(ctx, el.sess, el.obj, clearJS, nil); err != nil {
			return fmt.Errorf("actions: clearing %s: %w", el.info.Desc, err)
		}
	} else if err := pagejs.CallOn(ctx, el.sess, el.obj, caretEndJS, nil); err != nil {
		return err
	}
	if ev.Text != "" {
		if _, err := cdpproto.Call(ctx, el.sess, input.InsertText, input.InsertTextParams{Text: ev.Text}); err != nil {
			return fmt.Errorf("actions: typing into %s failed: %w", el.info.Desc, scrub(err, ev.Text))
		}
	}
	var got string
	if err := pagejs.CallOn(ctx, el.sess, el.obj, valueJS, &got); err != nil {
		if pageLeft(err) {
			// The field's own handler left the page (or removed its
			// frame): the text was typed; the outcome says what followed.
			run.addDetail("the page left the field before its value could be read back")
			run.verdict, run.override = events.VerdictChanged, true
			return nil
		}
		return err
	}
	want := old + ev.Text
	if el.info.Editable {
		got = strings.TrimRight(got, "\n")
	}
	if got != want {
		run.addDetail("the field's value differs from the text typed (input mask, maxlength or a script changed it)")
	}
	if got != prior {
		// A new value is a change even though the page's structure is not.
		run.verdict, run.override = events.VerdictChanged, true
	}
	if secret {
		res.ActualValue = mask(got)
	} else {
		res.ActualValue = got
	}
	return nil
}

// scrub removes a secret from an error's text.
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "<redacted>"))
}

// typeFocused types into whatever has focus in the focused tab.
func (a *Watchdog) typeFocused(ctx context.Context, s *session.Session, ev events.TypeTextEvent) (events.TypeResult, error) {
	var res events.TypeResult
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	run := a.begin(ctx, s, ps)
	err = func() error {
		if _, err := cdpproto.Call(ctx, ps, input.InsertText, input.InsertTextParams{Text: ev.Text}); err != nil {
			return fmt.Errorf("actions: typing into the focused element failed: %w", scrub(err, ev.Text))
		}
		var v struct {
			Value    string `json:"value"`
			Password bool   `json:"password"`
		}
		if err := pagejs.Evaluate(ctx, ps, activeValueJS, &v); err != nil {
			return err
		}
		if ev.Sensitive || v.Password {
			res.ActualValue = mask(v.Value)
		} else {
			res.ActualValue = v.Value
		}
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}

// sendKeys handles SendKeys on the focused tab: whatever has focus
// receives the keys.
func (a *Watchdog) sendKeys(ctx context.Context, s *session.Session, ev events.SendKeysEvent) (events.SendKeysResult, error) {
	var res events.SendKeysResult
	if ev.Keys == "" {
		err := errors.New("actions: send_keys needs keys, such as \"Enter\", \"Control+a\" or text")
		res.Outcome = failedOutcome(err)
		return res, err
	}
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	strokes, text := keys.Parse(ev.Keys)
	run := a.begin(ctx, s, ps)
	if text {
		err = keys.Type(ctx, ps, ev.Keys, a.cfg.TypingDelay)
		run.addDetail(fmt.Sprintf("typed %d characters", utf8.RuneCountInString(ev.Keys)))
	} else {
		for i, st := range strokes {
			if i > 0 && a.cfg.TypingDelay > 0 {
				sleep(ctx, a.cfg.TypingDelay)
			}
			if err = keys.Dispatch(ctx, ps, st); err != nil {
				break
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("actions: send keys: %w", err)
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}
