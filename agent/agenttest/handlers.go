package agenttest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/browseragent/browseragent/events"
)

// register installs the fake's handlers on its bus.
func (b *Browser) register() {
	handle(b, events.BrowserStateRequest, b.observe, nil)
	handle(b, events.PageText, b.pageText, nil)
	handle(b, events.Screenshot, b.screenshot, nil)
	handle(b, events.ClickElement, b.click, func(r *events.ClickResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.TypeText, b.typeText, func(r *events.TypeResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.Scroll, b.scroll, func(r *events.ScrollResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.ScrollToText, b.scrollToText, func(r *events.ScrollResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.SendKeys, b.sendKeys, func(r *events.SendKeysResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.UploadFile, b.upload, func(r *events.UploadResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.GetDropdownOptions, b.dropdownOptions, nil)
	handle(b, events.SelectDropdownOption, b.selectOption, func(r *events.SelectDropdownResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.Hover, b.hover, func(r *events.HoverResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.Evaluate, b.evaluate, func(r *events.EvaluateResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.NavigateToURL, b.navigate, func(r *events.NavigateResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.GoBack, b.goBack, func(r *events.HistoryResult) *events.ActionOutcome { return &r.Outcome })
	handle(b, events.SwitchTab, b.switchTab, nil)
	handle(b, events.CloseTab, b.closeTab, nil)
	handle(b, events.Wait, func(context.Context, events.WaitEvent) (events.None, error) { return events.None{}, nil }, nil)
}

// noElementError is an action's error for an index the page does not have;
// its text is the session's.
type noElementError struct{ index, n int }

func (e *noElementError) Error() string {
	return fmt.Sprintf("element index %d is not in the current page state (%d indexed elements); the page may have changed, request the browser state again", e.index, e.n)
}

func (e *noElementError) Unwrap() error { return ErrNoElement }

// act runs do on the focused page under the lock and decides the outcome
// from the evidence before and after it; do may override the verdict and
// give a detail. do's error is returned with the outcome.
func (b *Browser) act(do func(t *tab) (events.Verdict, string, error)) (events.ActionOutcome, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.evidenceLocked()
	t, err := b.tabLocked("")
	var v events.Verdict
	var detail string
	if err == nil {
		v, detail, err = do(t)
	}
	after := b.evidenceLocked()
	o := events.ActionOutcome{Verdict: verdict(before, after), Before: before, After: after, Detail: detail}
	if v != "" {
		o.Verdict = v
	}
	return o, err
}

// elementLocked resolves an event's target on t's page (Target.Element's
// BackendNodeID is the index: observations report it so).
func elementLocked(t *tab, target events.Target) (*Element, error) {
	idx := target.Index
	if target.Element != nil {
		idx = int(target.Element.BackendNodeID)
	}
	if e, ok := t.doc.element(idx); ok {
		return e, nil
	}
	return nil, &noElementError{index: idx, n: len(t.doc.elems)}
}

func (b *Browser) observe(_ context.Context, ev events.BrowserStateRequestEvent) (events.BrowserState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabLocked("")
	if err != nil {
		return events.BrowserState{}, err
	}
	d := t.doc
	st := events.BrowserState{
		URL:           d.url,
		Title:         d.title,
		Tabs:          b.tabsLocked(),
		FocusedTarget: t.id,
		Page:          events.PageInfo{ViewportWidth: 1280, ViewportHeight: 720, PageWidth: 1280, PageHeight: 720},
		ClosedDialogs: b.dialogs,
		Blocked:       b.blocked,
		Fingerprint:   d.fingerprint().String(),
	}
	b.dialogs, b.blocked = nil, nil
	if ev.IncludeScreenshot {
		st.Screenshot = slices.Clone(screenshotPNG)
	}
	if b.domErr != "" {
		st.Error = b.domErr
		return st, nil
	}
	if ev.IncludeDOM {
		st.DOMText = d.domText()
		st.Stats = d.stats()
		st.Elements = make(map[int]events.ElementInfo, len(d.elems))
		for i := range d.elems {
			e := &d.elems[i]
			name := collapse(e.Text)
			if name == "" {
				name = e.Attrs["aria-label"]
			}
			st.Elements[e.Index] = events.ElementInfo{
				Index:      e.Index,
				ElementRef: events.ElementRef{BackendNodeID: int64(e.Index), TargetID: t.id},
				Tag:        e.tag(),
				Name:       name,
				Attributes: cloneMap(e.Attrs),
			}
		}
	}
	return st, nil
}

func (b *Browser) pageText(_ context.Context, ev events.PageTextEvent) (events.PageTextResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabLocked(ev.TargetID)
	if err != nil {
		return events.PageTextResult{}, err
	}
	return events.PageTextResult{URL: t.doc.url, Title: t.doc.title, Text: t.doc.pageText()}, nil
}

func (b *Browser) screenshot(_ context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabLocked(ev.TargetID)
	if err != nil {
		return events.ScreenshotResult{}, err
	}
	return events.ScreenshotResult{Data: slices.Clone(screenshotPNG), MediaType: "image/png", Width: 1, Height: 1, TargetID: t.id}, nil
}

func (b *Browser) click(_ context.Context, ev events.ClickElementEvent) (events.ClickResult, error) {
	var newTabs []string
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		e, err := elementLocked(t, ev.Target)
		if err != nil {
			return "", "", err
		}
		b.focused = e.Index
		if e.Rerender {
			t.doc.mutations++
		}
		switch {
		case e.Href != "":
			b.loadLocked(t, e.Href)
		case e.NewTab != "":
			id := b.openTabLocked(e.NewTab)
			newTabs = append(newTabs, id)
			return events.VerdictNewTab, "opened tab(s) " + id, e.Fail
		case e.Dialog != "":
			b.dialogs = append(b.dialogs, events.DialogInfo{Type: "alert", Message: e.Dialog, URL: t.doc.url, Accepted: true})
			return events.VerdictDialog, "a JavaScript alert opened", e.Fail
		}
		return "", "", e.Fail
	})
	o.NewTabs = newTabs
	return events.ClickResult{Outcome: o, Method: "mouse"}, err
}

func (b *Browser) typeText(_ context.Context, ev events.TypeTextEvent) (events.TypeResult, error) {
	var actual string
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		target := ev.Target
		if target.Index == 0 && target.Element == nil {
			if b.focused == 0 {
				return "", "", errors.New("no element has focus to type into")
			}
			target.Index = b.focused
		}
		e, err := elementLocked(t, target)
		if err != nil {
			return "", "", err
		}
		if tag := e.tag(); (tag != "input" && tag != "textarea") || strings.EqualFold(e.Attrs["type"], "file") {
			return "", "", fmt.Errorf("element %d (<%s>) is not editable", e.Index, tag)
		}
		b.focused = e.Index
		old := t.doc.value(e)
		v := ev.Text
		if !ev.Clear {
			v = old + ev.Text
		}
		t.doc.values[e.Index] = v
		actual = v
		if ev.Sensitive || strings.EqualFold(e.Attrs["type"], "password") {
			actual = strings.Repeat("•", utf8.RuneCountInString(v)) // as the actions watchdog masks it
		}
		if v != old {
			// A new value is a change though the structure is not.
			return events.VerdictChanged, "", e.Fail
		}
		return "", "", e.Fail
	})
	return events.TypeResult{Outcome: o, ActualValue: actual}, err
}

func (b *Browser) scroll(_ context.Context, ev events.ScrollEvent) (events.ScrollResult, error) {
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		if ev.Index == 0 && ev.Element == nil {
			return "", "", nil // the page: the fake has nothing below the fold
		}
		e, err := elementLocked(t, ev.Target)
		if err != nil {
			return "", "", err
		}
		return "", "", e.Fail
	})
	return events.ScrollResult{Outcome: o}, err
}

func (b *Browser) scrollToText(_ context.Context, ev events.ScrollToTextEvent) (events.ScrollResult, error) {
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		if ev.Text == "" || !strings.Contains(strings.ToLower(t.doc.pageText()), strings.ToLower(ev.Text)) {
			return "", "", fmt.Errorf("text %q not found on the page", ev.Text)
		}
		return "", "", nil
	})
	return events.ScrollResult{Outcome: o}, err
}

func (b *Browser) sendKeys(_ context.Context, ev events.SendKeysEvent) (events.SendKeysResult, error) {
	o, err := b.act(func(*tab) (events.Verdict, string, error) {
		if strings.TrimSpace(ev.Keys) == "" {
			return "", "", errors.New("no keys given")
		}
		return "", "", nil
	})
	return events.SendKeysResult{Outcome: o}, err
}

func (b *Browser) hover(_ context.Context, ev events.HoverEvent) (events.HoverResult, error) {
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		e, err := elementLocked(t, ev.Target)
		if err != nil {
			return "", "", err
		}
		return "", "", e.Fail
	})
	return events.HoverResult{Outcome: o}, err
}

func (b *Browser) upload(_ context.Context, ev events.UploadFileEvent) (events.UploadResult, error) {
	var names []string
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		e, err := elementLocked(t, ev.Target)
		if err != nil {
			return "", "", err
		}
		if e.tag() != "input" || !strings.EqualFold(e.Attrs["type"], "file") {
			return "", "", fmt.Errorf("element %d is not a file input", e.Index)
		}
		for _, p := range ev.Paths {
			names = append(names, filepath.Base(p))
		}
		t.doc.values[e.Index] = strings.Join(names, ", ")
		return events.VerdictChanged, "", e.Fail
	})
	return events.UploadResult{Outcome: o, Files: names}, err
}

func (b *Browser) dropdownOptions(_ context.Context, ev events.GetDropdownOptionsEvent) (events.DropdownOptionsResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabLocked("")
	if err != nil {
		return events.DropdownOptionsResult{}, err
	}
	e, err := elementLocked(t, ev.Target)
	if err != nil {
		return events.DropdownOptionsResult{}, err
	}
	if len(e.Options) == 0 {
		return events.DropdownOptionsResult{}, fmt.Errorf("element %d is not a dropdown", e.Index)
	}
	cur := t.doc.value(e)
	var res events.DropdownOptionsResult
	for i, text := range e.Options {
		res.Options = append(res.Options, events.DropdownOption{Index: i, Text: text, Value: text, Selected: text == cur})
	}
	return res, nil
}

func (b *Browser) selectOption(_ context.Context, ev events.SelectDropdownOptionEvent) (events.SelectDropdownResult, error) {
	var sel events.DropdownOption
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		e, err := elementLocked(t, ev.Target)
		if err != nil {
			return "", "", err
		}
		if len(e.Options) == 0 {
			return "", "", fmt.Errorf("element %d is not a dropdown", e.Index)
		}
		i := slices.IndexFunc(e.Options, func(s string) bool { return strings.EqualFold(s, ev.Text) })
		if i < 0 {
			return "", "", fmt.Errorf("no option %q in element %d (options: %s)", ev.Text, e.Index, strings.Join(e.Options, ", "))
		}
		sel = events.DropdownOption{Index: i, Text: e.Options[i], Value: e.Options[i], Selected: true}
		t.doc.values[e.Index] = e.Options[i]
		return events.VerdictChanged, "", e.Fail
	})
	return events.SelectDropdownResult{Outcome: o, Selected: sel}, err
}

func (b *Browser) evaluate(_ context.Context, ev events.EvaluateEvent) (events.EvaluateResult, error) {
	b.mu.Lock()
	before := b.evidenceLocked()
	t, err := b.tabLocked("")
	var eval func(string) (string, error)
	if err == nil {
		eval = t.doc.eval
	}
	b.mu.Unlock()
	var res events.EvaluateResult
	switch {
	case err != nil:
	case eval == nil:
		err = errors.New("agenttest: the page has no Eval function")
	default:
		// Unlocked: Eval may change the page (Rerender, Navigate).
		res.Value, err = eval(ev.Code)
	}
	limit := ev.MaxResultBytes
	if limit <= 0 {
		limit = events.DefaultEvaluateResultBytes
	}
	if len(res.Value) > limit {
		res.Value, res.Truncated = res.Value[:limit], true
	}
	b.mu.Lock()
	after := b.evidenceLocked()
	b.mu.Unlock()
	res.Outcome = events.ActionOutcome{Verdict: verdict(before, after), Before: before, After: after}
	return res, err
}

func (b *Browser) navigate(_ context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
	res := events.NavigateResult{URL: ev.URL}
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		if ev.URL == "" {
			return "", "", errors.New("agenttest: navigation to an empty URL")
		}
		if ev.NewTab {
			res.TargetID = b.openTabLocked(ev.URL)
			b.focus = res.TargetID
		} else {
			res.TargetID = t.id
			b.loadLocked(t, ev.URL)
		}
		res.HTTPStatus = 200
		return "", "", nil
	})
	res.Outcome = o
	return res, err
}

func (b *Browser) goBack(_ context.Context, _ events.GoBackEvent) (events.HistoryResult, error) {
	o, err := b.act(func(t *tab) (events.Verdict, string, error) {
		if len(t.back) == 0 {
			return "", "", errors.New("agenttest: no previous page in this tab")
		}
		url := t.back[len(t.back)-1]
		t.back = t.back[:len(t.back)-1]
		t.doc = b.docLocked(url)
		b.focused = 0
		return "", "", nil
	})
	return events.HistoryResult{Outcome: o}, err
}

func (b *Browser) switchTab(_ context.Context, ev events.SwitchTabEvent) (events.SwitchTabResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t *tab
	if ev.TargetID == "" {
		if len(b.tabs) == 0 {
			return events.SwitchTabResult{}, errors.New("agenttest: no tab is open")
		}
		t = b.tabs[len(b.tabs)-1]
	} else {
		var err error
		if t, err = b.resolveLocked(ev.TargetID); err != nil {
			return events.SwitchTabResult{}, err
		}
	}
	if b.focus != t.id {
		b.focus, b.focused = t.id, 0
	}
	return events.SwitchTabResult{TargetID: t.id, URL: t.doc.url}, nil
}

func (b *Browser) closeTab(_ context.Context, ev events.CloseTabEvent) (events.None, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.resolveLocked(ev.TargetID)
	if err != nil {
		return events.None{}, err
	}
	b.tabs = slices.DeleteFunc(b.tabs, func(x *tab) bool { return x == t })
	if b.focus == t.id {
		b.focus, b.focused = "", 0
		if n := len(b.tabs); n > 0 {
			b.focus = b.tabs[n-1].id
		}
	}
	return events.None{}, nil
}
