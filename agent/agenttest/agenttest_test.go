package agenttest_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ agent.Browser = (*agenttest.Browser)(nil)

func form() []agenttest.Page {
	return []agenttest.Page{{
		URL:   "https://form.test/1",
		Title: "Sign up",
		Text:  "Sign up (1 of 2)",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "name": "fullname", "placeholder": "Full name"}},
			{Index: 2, Tag: "select", Attrs: map[string]string{"name": "plan"}, Options: []string{"Basic", "Pro"}},
			{Index: 3, Attrs: map[string]string{"type": "submit"}, Text: "Next", Href: "https://form.test/2"},
			{Index: 4, Text: "Reload list", Rerender: true},
			{Index: 5, Text: "Help", NewTab: "https://help.test/"},
			{Index: 6, Text: "Delete", Dialog: "Are you sure?"},
			{Index: 7, Text: "Broken", Rerender: true, Fail: errors.New("element is detached")},
		},
	}, {URL: "https://form.test/2", Title: "Step 2", Text: "Thank you"}}
}

func call[E, R any](t *testing.T, b *agenttest.Browser, k bus.Kind[E, R], ev E) (R, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, b.Bus(), k, ev)
}

func observe(t *testing.T, b *agenttest.Browser) events.BrowserState {
	t.Helper()
	st, err := call(t, b, events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func click(t *testing.T, b *agenttest.Browser, index int) (events.ClickResult, error) {
	t.Helper()
	return call(t, b, events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: index}})
}

// The DOM text is the serializer's format: the scripted model finds
// elements in it by label, as on a real page.
func TestObservation(t *testing.T) {
	b := agenttest.New(t, form()...)
	st := observe(t, b)
	if !strings.HasPrefix(st.DOMText, "Sign up (1 of 2)\n[1]<input type=text name=fullname placeholder=Full name />\n") ||
		!strings.Contains(st.DOMText, "[3]<button type=submit />\n\tNext\n") {
		t.Fatalf("DOM text:\n%s", st.DOMText)
	}
	elems := scripted.ParseElements(st.DOMText)
	for label, want := range map[string]int{"Next": 3, "Full name": 1, "plan": 2} {
		if e, err := scripted.Find(elems, label, ""); err != nil || e.Index != want {
			t.Errorf("find %q: %+v %v", label, e, err)
		}
	}
	if len(st.Elements) != 7 || st.Elements[3].Tag != "button" || st.Elements[3].Name != "Next" {
		t.Errorf("elements %+v", st.Elements[3])
	}
	fp, err := b.Fingerprint(context.Background(), "")
	if err != nil || fp.String() != st.Fingerprint || st.URL != "https://form.test/1" || st.FocusedTarget != b.FocusedTab() {
		t.Fatalf("fingerprint %v %v, state %+v", fp, err, st)
	}
	// The agent renders it with the page's sections.
	txt := agent.BrowserStateText(&st, 0)
	if !strings.Contains(txt, "Current URL: https://form.test/1") || !strings.Contains(txt, "[Start of page]") {
		t.Fatalf("state text:\n%s", txt)
	}
}

// AddBlocked reaches the next observation only, as the DOM watchdog's
// summary does; a failed DOM build still carries it.
func TestAddBlocked(t *testing.T) {
	b := agenttest.New(t, form()...)
	types := []string{"script"}
	b.AddBlocked(events.BlockedRequests{Host: "tracker.example", Count: 3, Types: types})
	b.AddBlocked(events.BlockedRequests{Host: "evil.test", Count: 1, Types: []string{"websocket"}})
	types[0] = "changed" // the fake keeps its own copy
	b.SetDOMError("DOM build failed: test")
	st := observe(t, b)
	want := []events.BlockedRequests{
		{Host: "tracker.example", Count: 3, Types: []string{"script"}},
		{Host: "evil.test", Count: 1, Types: []string{"websocket"}},
	}
	if !reflect.DeepEqual(st.Blocked, want) {
		t.Fatalf("Blocked %+v, want %+v", st.Blocked, want)
	}
	b.SetDOMError("")
	if st := observe(t, b); st.Blocked != nil {
		t.Fatalf("the next observation repeats them: %+v", st.Blocked)
	}
}

func TestClickVerdicts(t *testing.T) {
	cases := []struct {
		index int
		want  events.Verdict
		url   string
	}{
		{1, events.VerdictNoChange, "https://form.test/1"},
		{4, events.VerdictChanged, "https://form.test/1"},
		{3, events.VerdictNavigated, "https://form.test/2"},
		{5, events.VerdictNewTab, "https://form.test/1"},
		{6, events.VerdictDialog, "https://form.test/1"},
	}
	for _, c := range cases {
		b := agenttest.New(t, form()...)
		res, err := click(t, b, c.index)
		o := res.Outcome
		if err != nil || o.Verdict != c.want || o.After.URL != c.url || o.Before.URL != "https://form.test/1" {
			t.Errorf("click %d: %+v %v", c.index, o, err)
		}
		if changed := o.Before.Fingerprint != o.After.Fingerprint; changed != (c.index == 4 || c.index == 3) {
			t.Errorf("click %d: fingerprint %s -> %s", c.index, o.Before.Fingerprint, o.After.Fingerprint)
		}
		switch c.index {
		case 5: // the new tab opens without focus
			if len(o.NewTabs) != 1 || len(b.Tabs()) != 2 || b.FocusedTab() == o.NewTabs[0] || b.Tabs()[1].URL != "https://help.test/" {
				t.Errorf("new tab: %+v, tabs %+v", o, b.Tabs())
			}
		case 6:
			st := observe(t, b)
			if len(st.ClosedDialogs) != 1 || st.ClosedDialogs[0].Message != "Are you sure?" || !st.ClosedDialogs[0].Accepted {
				t.Errorf("dialogs %+v", st.ClosedDialogs)
			}
			if st = observe(t, b); len(st.ClosedDialogs) != 0 {
				t.Error("a dialog is reported once")
			}
		}
	}
}

// A failed action returns its evidence with an *events.ActionError, as the
// actions watchdog does.
func TestActionErrors(t *testing.T) {
	b := agenttest.New(t, form()...)
	res, err := click(t, b, 99)
	var ae *events.ActionError
	if !errors.As(err, &ae) || !errors.Is(err, agenttest.ErrNoElement) || !strings.Contains(err.Error(), "is not in the current page state") {
		t.Fatalf("missing element: %v", err)
	}
	o := res.Outcome
	if o.Verdict != events.VerdictFailed || o.Before.URL == "" || o.Before != o.After || ae.Outcome.Verdict != events.VerdictFailed {
		t.Fatalf("missing element outcome %+v / %+v", o, ae.Outcome)
	}
	// An effect before the failure shows in the evidence.
	res, err = click(t, b, 7)
	if !errors.As(err, &ae) || ae.Err.Error() != "element is detached" || res.Outcome.Verdict != events.VerdictFailed ||
		res.Outcome.Before.Fingerprint == res.Outcome.After.Fingerprint || res.Outcome.Detail != "element is detached" {
		t.Fatalf("failing element: %+v %v", res.Outcome, err)
	}
	// Removed: the fingerprint changes and the index is gone.
	before, _ := b.Fingerprint(context.Background(), "")
	b.Remove(1)
	after, _ := b.Fingerprint(context.Background(), "")
	if !before.Changed(after) {
		t.Fatal("Remove did not change the fingerprint")
	}
	if _, err := call(t, b, events.TypeText, events.TypeTextEvent{Target: events.Target{Index: 1}, Text: "x"}); !errors.Is(err, agenttest.ErrNoElement) {
		t.Fatalf("typing into a removed element: %v", err)
	}
	if _, err := call(t, b, events.TypeText, events.TypeTextEvent{Target: events.Target{Index: 3}, Text: "x"}); !errors.As(err, &ae) {
		t.Fatalf("typing into a button: %v", err)
	}
}

func TestFormState(t *testing.T) {
	b := agenttest.New(t, form()...)
	res, err := call(t, b, events.TypeText, events.TypeTextEvent{Target: events.Target{Index: 1}, Text: "Ada  L", Clear: true})
	if err != nil || res.Outcome.Verdict != events.VerdictChanged || res.ActualValue != "Ada  L" || res.Outcome.Before.Fingerprint != res.Outcome.After.Fingerprint {
		t.Fatalf("type: %+v %v", res, err)
	}
	res, err = call(t, b, events.TypeText, events.TypeTextEvent{Text: "ace", Sensitive: true, SensitiveKey: "k"}) // the focused field
	if err != nil || res.ActualValue != strings.Repeat("•", 9) {
		t.Fatalf("sensitive type: %+v %v", res, err)
	}
	if _, err := call(t, b, events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: events.Target{Index: 2}, Text: "pro"}); err != nil {
		t.Fatal(err)
	}
	opts, err := call(t, b, events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: events.Target{Index: 2}})
	if err != nil || len(opts.Options) != 2 || !opts.Options[1].Selected || opts.Options[0].Selected {
		t.Fatalf("options %+v %v", opts, err)
	}
	st := observe(t, b)
	if !strings.Contains(st.DOMText, `[1]<input type=text name=fullname value="Ada  Lace" placeholder=Full name />`) || !strings.Contains(st.DOMText, "[2]<select name=plan value=Pro />") {
		t.Fatalf("values not shown:\n%s", st.DOMText)
	}
	pt, err := call(t, b, events.PageText, events.PageTextEvent{})
	if err != nil || pt.Text != "Sign up (1 of 2)\nNext\nReload list\nHelp\nDelete\nBroken" {
		t.Fatalf("page text %q %v", pt.Text, err)
	}
}

func TestTabsAndHistory(t *testing.T) {
	b := agenttest.New(t, form()...)
	first := b.FocusedTab()
	nav, err := call(t, b, events.NavigateToURL, events.NavigateToURLEvent{URL: "https://form.test/2", NewTab: true})
	if err != nil || nav.Outcome.Verdict != events.VerdictNewTab || b.FocusedTab() != nav.TargetID || nav.TargetID == first {
		t.Fatalf("new tab: %+v %v", nav, err)
	}
	if id, err := b.ResolveTab(first[len(first)-4:]); err != nil || id != first {
		t.Fatalf("resolve %q: %q %v", first, id, err)
	}
	if _, err := b.ResolveTab("zzzz"); err == nil {
		t.Fatal("resolved an unknown tab")
	}
	if sw, err := call(t, b, events.SwitchTab, events.SwitchTabEvent{TargetID: first}); err != nil || sw.URL != "https://form.test/1" || b.FocusedTab() != first {
		t.Fatalf("switch: %+v %v", sw, err)
	}
	if _, err := call(t, b, events.CloseTab, events.CloseTabEvent{TargetID: nav.TargetID}); err != nil || len(b.Tabs()) != 1 {
		t.Fatalf("close: %v, tabs %+v", err, b.Tabs())
	}
	if _, err := click(t, b, 3); err != nil {
		t.Fatal(err)
	}
	back, err := call(t, b, events.GoBack, events.GoBackEvent{})
	if err != nil || back.Outcome.Verdict != events.VerdictNavigated || back.Outcome.After.URL != "https://form.test/1" {
		t.Fatalf("back: %+v %v", back, err)
	}
	if _, err := call(t, b, events.GoBack, events.GoBackEvent{}); err == nil {
		t.Fatal("went back past the first page")
	}
}

func TestFaults(t *testing.T) {
	b := agenttest.New(t, form()...)
	boom := errors.New("boom")
	b.Fail(events.BrowserStateRequest.Name, boom)
	if _, err := call(t, b, events.BrowserStateRequest, events.BrowserStateRequestEvent{}); !errors.Is(err, boom) {
		t.Fatalf("failed observation: %v", err)
	}
	observe(t, b) // one event only

	b.Fail(events.Hover.Name, boom)
	res, err := call(t, b, events.Hover, events.HoverEvent{Target: events.Target{Index: 1}})
	var ae *events.ActionError
	if !errors.As(err, &ae) || !errors.Is(err, boom) || res.Outcome.Verdict != events.VerdictFailed || res.Outcome.Before.URL == "" {
		t.Fatalf("failed action: %+v %v", res, err)
	}

	b.SetDOMError("DOM build failed")
	if st := observe(t, b); st.Error != "DOM build failed" || st.DOMText != "" || len(st.Elements) != 0 {
		t.Fatalf("DOM error state %+v", st)
	}
	b.SetDOMError("")

	b.Block(events.Wait.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := bus.Call(ctx, b.Bus(), events.Wait, events.WaitEvent{Duration: time.Hour}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked wait: %v", err)
	}
	if _, err := call(t, b, events.Wait, events.WaitEvent{Duration: time.Hour}); err != nil {
		t.Fatalf("unblocked wait: %v", err)
	}

	// After runs between the result and its delivery: the click reports no
	// change, yet the page re-rendered before the caller saw the result.
	b.After(events.ClickElement.Name, b.Rerender)
	cr, err := click(t, b, 1)
	fp, _ := b.Fingerprint(context.Background(), "")
	if err != nil || cr.Outcome.Verdict != events.VerdictNoChange || fp.String() == cr.Outcome.After.Fingerprint {
		t.Fatalf("after hook: %+v %v, now %s", cr.Outcome, err, fp)
	}
	defer func() {
		if recover() == nil {
			t.Error("a kind the fake does not handle was accepted")
		}
	}()
	b.Fail(events.ClickCoordinate.Name, boom)
}

// Close releases a blocked handler and leaves no goroutine (TestMain
// checks); afterwards the browser reads as not started.
func TestCloseAndEvents(t *testing.T) {
	b := agenttest.New(nil, form()...)
	click(t, b, 3)
	call(t, b, events.ScrollToText, events.ScrollToTextEvent{Text: "nowhere"})
	b.Block(events.Wait.Name)
	p := bus.Dispatch(context.Background(), b.Bus(), events.Wait, events.WaitEvent{}, bus.WithTimeout(time.Hour))
	for len(b.Events(events.Wait.Name)) == 0 { // the handler has started
		select {
		case <-p.Done():
			t.Fatal("the blocked wait returned")
		case <-time.After(time.Millisecond):
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if _, err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.Bus() != nil {
		t.Fatal("Bus after Close")
	}
	if _, err := b.Fingerprint(context.Background(), ""); !errors.Is(err, agenttest.ErrClosed) {
		t.Fatalf("fingerprint after close: %v", err)
	}
	evs := b.Events()
	kinds := make([]string, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
	}
	if !slices.Equal(kinds, []string{"ClickElement", "ScrollToText", "Wait"}) || evs[1].Err == nil || !errors.Is(evs[2].Err, agenttest.ErrClosed) {
		t.Fatalf("events %+v", evs)
	}
	if c := evs[0].Payload.(events.ClickElementEvent); c.Index != 3 {
		t.Fatalf("payload %+v", c)
	}
	if got := b.Events(events.ScrollToText.Name); len(got) != 1 {
		t.Fatalf("filtered events %+v", got)
	}
}

// Every kind a built-in action dispatches has the fake's handler.
func TestHandlesTheCatalogKinds(t *testing.T) {
	b := agenttest.New(t)
	for _, k := range []string{"BrowserStateRequest", "ClickElement", "TypeText", "Scroll", "ScrollToText", "SendKeys", "UploadFile",
		"GetDropdownOptions", "SelectDropdownOption", "Hover", "Evaluate", "PageText", "Screenshot", "NavigateToURL",
		"GoBack", "SwitchTab", "CloseTab", "Wait"} {
		if !slices.Equal(b.Bus().Handlers(k), []string{agenttest.HandlerName}) {
			t.Errorf("%s: handlers %v", k, b.Bus().Handlers(k))
		}
	}
	if st := observe(t, b); st.URL != "about:blank" || len(st.Tabs) != 1 {
		t.Fatalf("empty browser %+v", st)
	}
}
