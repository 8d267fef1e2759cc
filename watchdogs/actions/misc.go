package actions

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// scrollerJS scrolls the nearest ancestor-or-self of this that can
// scroll in the direction asked (the document's scroller last), by dx/dy
// pixels (0: one client height/width). It reports the positions before and
// after and whether the end was reached.
//
//go:embed js/scroller.js
var scrollerJSSrc string

var scrollerJS = withDescribe(scrollerJSSrc)

type scrollReport struct {
	What string  `json:"what"`
	BX   float64 `json:"bx"`
	BY   float64 `json:"by"`
	AX   float64 `json:"ax"`
	AY   float64 `json:"ay"`
	MaxX float64 `json:"maxX"`
	MaxY float64 `json:"maxY"`
}

// documentObject returns the document object of a session's main frame.
func documentObject(ctx context.Context, cs *cdp.Session) (runtime.RemoteObjectID, error) {
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return "", errors.New("actions: the page has no document")
	}
	return res.Result.ObjectID, nil
}

// scroll handles Scroll: the page (Index 0, no Element) or the
// element's nearest scroll container.
func (a *Watchdog) scroll(ctx context.Context, s *session.Session, ev events.ScrollEvent) (events.ScrollResult, error) {
	var res events.ScrollResult
	dx, dy := 0, 0
	amount := ev.Amount
	if amount < 0 {
		err := fmt.Errorf("actions: scroll amount %d is negative; give a direction instead", amount)
		res.Outcome = failedOutcome(err)
		return res, err
	}
	switch ev.Direction {
	case events.ScrollDown, "":
		dy = 1
	case events.ScrollUp:
		dy = -1
	case events.ScrollRight:
		dx = 1
	case events.ScrollLeft:
		dx = -1
	default:
		err := fmt.Errorf("actions: unknown scroll direction %q (up, down, left, right)", ev.Direction)
		res.Outcome = failedOutcome(err)
		return res, err
	}
	page := ev.Element == nil && ev.Index == 0
	var cs *cdp.Session
	var obj runtime.RemoteObjectID
	if page {
		ps, err := s.PageSession("")
		if err == nil {
			cs = ps
			obj, err = documentObject(ctx, ps)
		}
		if err != nil {
			res.Outcome = failedOutcome(err)
			return res, err
		}
	} else {
		el, err := a.resolve(ctx, s, ev.Target)
		if err != nil {
			res.Outcome = failedOutcome(err)
			return res, err
		}
		cs, obj = el.sess, el.obj
	}
	run := a.begin(ctx, s, cs)
	var rep scrollReport
	err := pagejs.CallOn(ctx, cs, obj, scrollerJS, &rep, dx, dy, amount, page)
	if err == nil {
		dir := ev.Direction
		if dir == "" {
			dir = events.ScrollDown
		}
		moved := rep.AX != rep.BX || rep.AY != rep.BY
		where := rep.What
		if moved {
			run.verdict, run.override = events.VerdictChanged, true
			d := rep.AY - rep.BY
			if dx != 0 {
				d = rep.AX - rep.BX
			}
			if d < 0 {
				d = -d
			}
			run.addDetail(fmt.Sprintf("scrolled %s %.0f px %s (now at %.0f of %.0f)", where, d, dir, max(rep.AY, rep.AX), max(rep.MaxY, rep.MaxX)))
		} else {
			run.verdict, run.override = events.VerdictNoChange, true
			edge := map[events.ScrollDirection]string{events.ScrollDown: "bottom", events.ScrollUp: "top", events.ScrollLeft: "left edge", events.ScrollRight: "right edge"}[dir]
			if (dy != 0 && rep.MaxY == 0) || (dx != 0 && rep.MaxX == 0) {
				run.addDetail(where + " cannot scroll " + string(dir) + ": nothing to scroll")
			} else {
				run.addDetail(where + " is already at the " + edge)
			}
		}
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// findTextJS finds the innermost visible element whose text contains
// the text (exact, then case-insensitive, whitespace-normalised) and
// scrolls it to the centre. The text arrives as an argument, never as code.
//
//go:embed js/find_text.js
var findTextJSSrc string

var findTextJS = withDescribe(findTextJSSrc)

// scrollToText handles ScrollToText on the focused tab.
func (a *Watchdog) scrollToText(ctx context.Context, s *session.Session, ev events.ScrollToTextEvent) (events.ScrollResult, error) {
	var res events.ScrollResult
	if strings.TrimSpace(ev.Text) == "" {
		err := errors.New("actions: scroll to text needs non-empty text")
		res.Outcome = failedOutcome(err)
		return res, err
	}
	ps, err := s.PageSession("")
	var doc runtime.RemoteObjectID
	if err == nil {
		doc, err = documentObject(ctx, ps)
	}
	if err != nil {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	run := a.begin(ctx, s, ps)
	var out struct {
		Found bool   `json:"found"`
		Desc  string `json:"desc"`
		Moved bool   `json:"moved"`
		Count int    `json:"count"`
	}
	err = pagejs.CallOn(ctx, ps, doc, findTextJS, &out, ev.Text, string(ev.Direction))
	if err == nil && !out.Found {
		err = fmt.Errorf("actions: text %q is not visible anywhere on the page", clip(ev.Text, 100))
	}
	if err == nil {
		if out.Moved {
			run.verdict, run.override = events.VerdictChanged, true
			run.addDetail("scrolled to the text in " + out.Desc)
		} else {
			run.addDetail("the text is already in view in " + out.Desc)
		}
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// listJS finds a dropdown's options: a native <select> (the element,
// its label's control, or the single select inside it), or an ARIA
// combobox/listbox (role=option elements in the listbox it controls or
// owns, or inside it). With pick >= 0 it returns that option's element
// instead of the list.
//
//go:embed js/list.js
var listJS string

type option struct {
	Index    int    `json:"index"`
	Text     string `json:"text"`
	Value    string `json:"value"`
	Selected bool   `json:"selected"`
	Disabled bool   `json:"disabled"`
	Visible  bool   `json:"visible"`
}

type optionList struct {
	Kind     string   `json:"kind"`
	Expanded *string  `json:"expanded"`
	Multiple bool     `json:"multiple"`
	Options  []option `json:"options"`
}

func readList(ctx context.Context, el *element) (optionList, error) {
	var l optionList
	err := pagejs.CallOn(ctx, el.sess, el.obj, listJS, &l, -1)
	return l, err
}

func toOptions(l optionList) []events.DropdownOption {
	out := make([]events.DropdownOption, 0, len(l.Options))
	for _, o := range l.Options {
		out = append(out, events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: o.Selected})
	}
	return out
}

// openDropdown clicks a collapsed ARIA combobox so its options render.
func (a *Watchdog) openDropdown(ctx context.Context, el *element, l optionList) (optionList, bool, error) {
	visible := 0
	for _, o := range l.Options {
		if o.Visible {
			visible++
		}
	}
	if l.Kind != "aria" || (visible > 0 && (l.Expanded == nil || *l.Expanded != "false")) {
		return l, false, nil
	}
	var res events.ClickResult
	if err := a.clickElement(ctx, el, "", &res, &actionRun{}); err != nil {
		return l, false, fmt.Errorf("actions: opening the dropdown: %w", err)
	}
	l2, err := readList(ctx, el)
	return l2, true, err
}

// dropdownOptions handles GetDropdownOptions. A collapsed ARIA
// combobox is opened (clicked) to read its options and left open.
func (a *Watchdog) dropdownOptions(ctx context.Context, s *session.Session, ev events.GetDropdownOptionsEvent) (events.DropdownOptionsResult, error) {
	var res events.DropdownOptionsResult
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		return res, err
	}
	l, err := readList(ctx, el)
	if err != nil {
		return res, err
	}
	if l.Kind == "none" {
		return res, fmt.Errorf("actions: %s (%s) is not a dropdown (no <select>, combobox or listbox)", targetName(ev.Target), el.info.Desc)
	}
	if l, _, err = a.openDropdown(ctx, el, l); err != nil {
		return res, err
	}
	res.Options = toOptions(l)
	if len(res.Options) == 0 {
		return res, fmt.Errorf("actions: the dropdown %s has no options", el.info.Desc)
	}
	return res, nil
}

// matchOption finds the option whose text is text: exact, then
// case-insensitive and trimmed, then by value.
func matchOption(opts []option, text string) int {
	for i, o := range opts {
		if o.Text == text {
			return i
		}
	}
	t := strings.ToLower(strings.Join(strings.Fields(text), " "))
	for i, o := range opts {
		if strings.ToLower(o.Text) == t {
			return i
		}
	}
	for i, o := range opts {
		if o.Value != "" && (o.Value == text || strings.ToLower(strings.TrimSpace(o.Value)) == t) {
			return i
		}
	}
	return -1
}

func optionNotFound(name, text string, opts []option) error {
	var names []string
	for _, o := range opts {
		names = append(names, fmt.Sprintf("%q", o.Text))
	}
	if len(names) > 30 {
		names = append(names[:30], fmt.Sprintf("… (%d more)", len(names)-30))
	}
	if len(names) == 0 {
		return fmt.Errorf("actions: option %q not found in %s: it has no options", text, name)
	}
	return fmt.Errorf("actions: option %q not found in %s; available options: %s", text, name, strings.Join(names, ", "))
}

// selectNativeJS selects an option of a native <select>, with clear
// deselecting the others of a multiple select first.
//
//go:embed js/select_native.js
var selectNativeJS string

// ariaSelectedJS reads an ARIA option's aria-selected.
//
//go:embed js/aria_selected.js
var ariaSelectedJS string

// selectOption handles SelectDropdownOption. A native <select> selects the
// option (adding it to a multiple select's selection, or with Clear making
// it the only one) and fires input and change once; an ARIA combobox is
// opened if needed and the option clicked (on a multiselectable listbox
// with Clear, the other selected options are clicked first to deselect
// them; an option already selected there is not clicked again, which
// would deselect it).
func (a *Watchdog) selectOption(ctx context.Context, s *session.Session, ev events.SelectDropdownOptionEvent) (events.SelectDropdownResult, error) {
	var res events.SelectDropdownResult
	fail := func(err error) (events.SelectDropdownResult, error) {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		return fail(err)
	}
	name := targetName(ev.Target)
	l, err := readList(ctx, el)
	if err != nil {
		return fail(err)
	}
	if l.Kind == "none" {
		return fail(fmt.Errorf("actions: %s (%s) is not a dropdown (no <select>, combobox or listbox); click its options instead", name, el.info.Desc))
	}
	run := a.begin(ctx, s, el.sess)
	err = func() error {
		if l.Kind == "native" {
			_, o, opt, err := pickOption(ctx, el, l, ev.Text, name)
			if err != nil {
				return err
			}
			var out struct {
				Selected   bool     `json:"selected"`
				Deselected []string `json:"deselected"`
			}
			if err := pagejs.CallOn(ctx, el.sess, opt.obj, selectNativeJS, &out, ev.Clear); err != nil {
				return err
			}
			res.Selected = events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: out.Selected}
			switch {
			case l.Multiple && ev.Clear:
				if len(out.Deselected) > 0 {
					run.addDetail("deselected " + quoteList(out.Deselected))
				}
				run.addDetail(fmt.Sprintf("selected %q as the only option", o.Text))
			case l.Multiple:
				run.addDetail(fmt.Sprintf("added %q to the selection", o.Text))
			default:
				run.addDetail(fmt.Sprintf("selected %q", o.Text))
			}
			return nil
		}
		l, opened, err := a.openDropdown(ctx, el, l)
		if err != nil {
			return err
		}
		if opened {
			run.addDetail("opened the dropdown")
		}
		i := matchOption(l.Options, ev.Text)
		if i < 0 {
			return optionNotFound(name, ev.Text, l.Options)
		}
		if l.Multiple && ev.Clear && !l.Options[i].Disabled {
			if err := a.deselectOthers(ctx, el, l, i, run); err != nil {
				return err
			}
		}
		_, o, opt, err := pickOption(ctx, el, l, ev.Text, name)
		if err != nil {
			return err
		}
		var sel *bool
		if l.Multiple {
			// Clicking a selected option of a multiselectable listbox
			// deselects it: adding it means leaving it as it is.
			if err := pagejs.CallOn(ctx, opt.sess, opt.obj, ariaSelectedJS, &sel); err != nil {
				return err
			}
		}
		if sel != nil && *sel {
			run.addDetail(fmt.Sprintf("option %q was already selected", o.Text))
		} else {
			var cr events.ClickResult
			if err := a.clickElement(ctx, opt, "", &cr, run); err != nil {
				return fmt.Errorf("actions: clicking option %q: %w", o.Text, err)
			}
			_ = pagejs.CallOn(ctx, opt.sess, opt.obj, ariaSelectedJS, &sel)
			run.addDetail(fmt.Sprintf("clicked option %q", o.Text))
		}
		res.Selected = events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: sel == nil || *sel}
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	if err == nil && res.Outcome.Verdict == events.VerdictNoChange {
		// Choosing an option rarely adds elements; the value did change.
		res.Outcome.Verdict = events.VerdictChanged
	}
	return res, err
}

// deselectOthers clicks every selected option of the ARIA listbox l but
// the i-th, and verifies each is then deselected (aria-selected).
func (a *Watchdog) deselectOthers(ctx context.Context, el *element, l optionList, i int, run *actionRun) error {
	var dropped []string
	for j, x := range l.Options {
		if j == i || !x.Selected {
			continue
		}
		opt, err := optionAt(ctx, el, j, x.Text)
		if err != nil {
			return err
		}
		var cr events.ClickResult
		if err := a.clickElement(ctx, opt, "", &cr, run); err != nil {
			return fmt.Errorf("actions: clicking option %q to deselect it: %w", x.Text, err)
		}
		var sel *bool
		if err := pagejs.CallOn(ctx, opt.sess, opt.obj, ariaSelectedJS, &sel); err != nil {
			return err
		}
		if sel != nil && *sel {
			return fmt.Errorf("actions: clicking option %q did not deselect it (aria-selected is still true); this listbox may need another way to deselect, such as a clear button", x.Text)
		}
		dropped = append(dropped, x.Text)
	}
	if len(dropped) > 0 {
		run.addDetail("deselected " + quoteList(dropped))
	}
	return nil
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// fileInputJS finds the file input an element stands for: itself,
// its label's control, one inside it, one it names (for, aria-controls), or
// the only one in a close ancestor (a styled button next to a hidden input).
//
//go:embed js/file_input.js
var fileInputJS string

// upload handles UploadFile: the upload policy first, then the files
// must exist, then DOM.setFileInputFiles on the file input the target is or
// stands for.
func (a *Watchdog) upload(ctx context.Context, s *session.Session, ev events.UploadFileEvent) (events.UploadResult, error) {
	var res events.UploadResult
	fail := func(err error) (events.UploadResult, error) {
		res.Outcome = failedOutcome(err)
		return res, err
	}
	if len(ev.Paths) == 0 {
		return fail(errors.New("actions: upload needs at least one file path"))
	}
	files := make([]string, 0, len(ev.Paths))
	for _, p := range ev.Paths {
		if err := a.cfg.UploadPolicy.AllowUpload(ctx, p); err != nil {
			return fail(fmt.Errorf("actions: upload of %s refused: %w", p, err))
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fail(fmt.Errorf("actions: upload: %s: %w", p, err))
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return fail(fmt.Errorf("actions: upload: file %s does not exist", p))
		}
		if !fi.Mode().IsRegular() {
			return fail(fmt.Errorf("actions: upload: %s is not a regular file", p))
		}
		files = append(files, abs)
	}
	el, err := a.resolve(ctx, s, ev.Target)
	if err != nil {
		return fail(err)
	}
	name := targetName(ev.Target)
	id, ok, err := objectNode(ctx, el.sess, el.obj, fileInputJS)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(fmt.Errorf("actions: %s (%s) is not a file input and no file input belongs to it", name, el.info.Desc))
	}
	in, err := resolveNode(ctx, el.sess, id, "the file input")
	if err != nil {
		return fail(err)
	}
	var multiple bool
	if err := pagejs.CallOn(ctx, in.sess, in.obj, `function(){ return this.multiple; }`, &multiple); err != nil {
		return fail(err)
	}
	if len(files) > 1 && !multiple {
		return fail(fmt.Errorf("actions: the file input %s takes one file; %d given", in.info.Desc, len(files)))
	}
	run := a.begin(ctx, s, in.sess)
	err = func() error {
		if _, err := cdpproto.Call(ctx, in.sess, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: in.backend}); err != nil {
			return fmt.Errorf("actions: upload: %w", err)
		}
		if err := pagejs.CallOn(ctx, in.sess, in.obj, `function(){ return Array.from(this.files || []).map((f) => f.name); }`, &res.Files); err != nil {
			return err
		}
		if len(res.Files) != len(files) {
			return fmt.Errorf("actions: upload: the input holds %d file(s) after setting %d", len(res.Files), len(files))
		}
		run.verdict, run.override = events.VerdictChanged, true
		run.addDetail("selected " + strings.Join(res.Files, ", "))
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}

// pickOption finds the option of list l matching text, refuses a
// disabled one, and resolves its node.
func pickOption(ctx context.Context, el *element, l optionList, text, name string) (int, option, *element, error) {
	i := matchOption(l.Options, text)
	if i < 0 {
		return i, option{}, nil, optionNotFound(name, text, l.Options)
	}
	o := l.Options[i]
	if o.Disabled {
		return i, o, nil, fmt.Errorf("actions: option %q of %s is disabled", o.Text, name)
	}
	opt, err := optionAt(ctx, el, i, o.Text)
	return i, o, opt, err
}

// optionAt resolves the i-th option of el's list.
func optionAt(ctx context.Context, el *element, i int, text string) (*element, error) {
	optID, ok, err := objectNode(ctx, el.sess, el.obj, listJS, i)
	if err != nil || !ok {
		return nil, fmt.Errorf("actions: option %q vanished: %v", text, err)
	}
	return resolveNode(ctx, el.sess, optID, "the option")
}
