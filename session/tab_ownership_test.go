package session_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	domwd "github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/popups"
)

// tabIDs returns the target ids of s.Tabs(), in order.
func tabIDs(s *session.Session) []string {
	var out []string
	for _, t := range s.Tabs() {
		out = append(out, t.TargetID)
	}
	return out
}

// wantTabs fails unless s lists exactly the tabs want, in any order.
func wantTabs(t *testing.T, who string, s *session.Session, want ...string) {
	t.Helper()
	got := tabIDs(s)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s lists tabs %v, want %v", who, got, want)
	}
}

// wantForeign fails unless err refuses a tab as not the session's.
func wantForeign(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, session.ErrForeignTab) || !errors.Is(err, session.ErrTabNotFound) {
		t.Fatalf("%s = %v, want an error wrapping ErrForeignTab (and ErrTabNotFound)", what, err)
	}
	if !strings.Contains(err.Error(), "not one of this session's tabs") {
		t.Fatalf("%s: error %q does not say why", what, err)
	}
}

// element names the element selector finds in the focused tab of s.
func element(t *testing.T, s *session.Session, selector string) events.Target {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.querySelector(" + jsString(selector) + ")"})
	if err != nil || res.Result == nil || res.Result.ObjectID == "" {
		t.Fatalf("finding %s: %v", selector, err)
	}
	d, err := cdpproto.Call(ctx, cs, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		t.Fatal(err)
	}
	return events.Target{Element: &events.ElementRef{BackendNodeID: int64(d.Node.BackendNodeID), TargetID: string(cs.TargetID()), SessionID: string(cs.ID())}}
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// Two sessions connected to one user's browser, each in a tab of its own:
// each lists only its own tab — neither the other's nor the user's — and
// can neither resolve, switch to, close nor read the other's; an
// observation lists only its own tab too.
func TestTabOwnershipTwoSessionsShareABrowser(t *testing.T) {
	u := newUserBrowser(t)
	mail := u.open(t, "/index.html")
	bank := u.open(t, "/other.html")
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(domwd.New(domwd.Config{})))
	b := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	aTab, bTab := a.FocusedTab(), b.FocusedTab()
	if aTab == "" || bTab == "" || aTab == bTab {
		t.Fatalf("focused tabs %q and %q, want two tabs", aTab, bTab)
	}
	wantTabs(t, "A", a, aTab)
	wantTabs(t, "B", b, bTab)
	if !a.Owns(aTab) || a.Owns(bTab) || a.Owns(string(mail)) || b.Owns(aTab) {
		t.Fatalf("Owns: A owns its tab %v, B's %v, the user's %v; B owns A's %v", a.Owns(aTab), a.Owns(bTab), a.Owns(string(mail)), b.Owns(aTab))
	}

	for _, ref := range []string{bTab, bTab[len(bTab)-8:], string(mail), string(bank)} {
		_, err := a.ResolveTab(ref)
		wantForeign(t, "A.ResolveTab("+ref+")", err)
	}
	if got, err := a.ResolveTab(aTab[len(aTab)-8:]); err != nil || got != aTab {
		t.Fatalf("A.ResolveTab(its own tab's suffix) = %q, %v", got, err)
	}
	_, err := bus.Call(ctxT(t), a.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: bTab})
	wantForeign(t, "A switching to B's tab", err)
	_, err = bus.Call(ctxT(t), b.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: string(bank)})
	wantForeign(t, "B switching to the user's tab", err)
	if a.FocusedTab() != aTab || b.FocusedTab() != bTab {
		t.Fatalf("focus moved: A on %s (want %s), B on %s (want %s)", a.FocusedTab(), aTab, b.FocusedTab(), bTab)
	}
	// "" is the newest of the session's own tabs, not B's newer one.
	if sw, err := bus.Call(ctxT(t), a.Bus(), events.SwitchTab, events.SwitchTabEvent{}); err != nil || sw.TargetID != aTab {
		t.Fatalf("A switching to its newest tab: %+v, %v", sw, err)
	}
	_, err = bus.Call(ctxT(t), a.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: bTab})
	wantForeign(t, "A closing B's tab", err)
	_, err = bus.Call(ctxT(t), b.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: string(mail)})
	wantForeign(t, "B closing the user's tab", err)
	tabs := u.tabs(t)
	for _, id := range []target.ID{target.ID(bTab), mail, bank} {
		if _, open := tabs[id]; !open {
			t.Fatalf("tab %s was closed", id)
		}
	}
	wantForeign(t, "A.Readable(B's tab)", a.Readable(bTab))

	st, err := bus.Call(ctxT(t), a.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tabs) != 1 || st.Tabs[0].TargetID != aTab {
		t.Fatalf("A's observation lists tabs %+v, want only its own %s", st.Tabs, aTab)
	}
	// Each one's navigation stays in its own tab.
	navigate(t, b, u.env.URL("/form.html"), false)
	if got := u.href(t, mail); !strings.HasSuffix(got, "/index.html") {
		t.Fatalf("the user's tab moved to %s", got)
	}
	wantTabs(t, "A after B navigated", a, aTab)
}

// A tab one of the session's tabs opens — a target=_blank link clicked
// through ClickElement, window.open — is the session's: listed, and named
// as the click's new tab; the other session does not list it.
func TestTabOwnershipPopupsBelongToTheOpener(t *testing.T) {
	u := newUserBrowser(t)
	u.open(t, "/index.html")
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(actions.New(actions.Config{})))
	b := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	aTab, bTab := a.FocusedTab(), b.FocusedTab()
	navigate(t, a, u.env.URL("/links.html"), false)
	// B's tab, opened last, is in front; the first input event to a hidden
	// page waits about 5 s for its acknowledgement (measured on Chromium
	// 156 headless), so an action brings its own tab to the front first.
	visibility := func() string {
		cs, err := a.PageSession("")
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if err := testbrowser.Eval(cs, `document.visibilityState`, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := visibility(); v != "hidden" {
		t.Fatalf("A's tab is %s before the click, want hidden behind B's", v)
	}
	cs, err := a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var ignored any
	if err := testbrowser.Eval(cs, `void document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') window.__shown = true })`, &ignored); err != nil {
		t.Fatal(err)
	}

	el := element(t, a, "#new-tab")
	clickStart := time.Now()
	res, err := bus.Call(ctxT(t), a.Bus(), events.ClickElement, events.ClickElementEvent{Target: el})
	t.Logf("click took %s", time.Since(clickStart)) // 0.76 s here; 5.5 s when the tab stays behind
	var shown bool
	if err := testbrowser.Eval(cs, `window.__shown === true`, &shown); err != nil || !shown {
		t.Fatalf("A's tab was not brought to the front for its click (%v)", err)
	}
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictNewTab || len(res.Outcome.NewTabs) != 1 {
		t.Fatalf("click outcome %s (%s), NewTabs %v; want one new tab", res.Outcome.Verdict, res.Outcome.Detail, res.Outcome.NewTabs)
	}
	link := res.Outcome.NewTabs[0]
	wantTabs(t, "A after the click", a, aTab, link)
	if a.FocusedTab() != aTab {
		t.Fatal("the popup took the focus")
	}
	if sw, err := bus.Call(ctxT(t), a.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: link[len(link)-8:]}); err != nil || sw.TargetID != link {
		t.Fatalf("A switching to its popup: %+v, %v", sw, err)
	}

	// A popup of the popup (window.open, with an opener) is A's too.
	cs, err = a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, `void window.open('/other.html?from=open')`, &ignored); err != nil {
		t.Fatal(err)
	}
	poll(t, "A lists the window it opened", func() bool { return len(a.Tabs()) == 3 })
	var opened string
	for _, id := range tabIDs(a) {
		if id != aTab && id != link {
			opened = id
		}
	}

	wantTabs(t, "B", b, bTab)
	for _, id := range []string{link, opened} {
		_, err := b.ResolveTab(id)
		wantForeign(t, "B.ResolveTab(A's popup)", err)
		if b.Owns(id) {
			t.Fatalf("B owns A's popup %s", id)
		}
	}

	// A's popups are closed with A; B's tab is left.
	stop(t, a)
	tabs := u.tabs(t)
	for _, id := range []string{aTab, link, opened} {
		if _, open := tabs[target.ID(id)]; open {
			t.Errorf("A's tab %s is open after A stopped", id)
		}
	}
	if _, open := tabs[target.ID(bTab)]; !open {
		t.Error("B's tab closed with A")
	}
}

// holdServer serves a page whose button's click handler waits (a
// synchronous request) until the test releases it: the action's window,
// during which the test opens a tab as the user.
type holdServer struct {
	*httptest.Server
	held    chan struct{} // a click reached the server
	release chan struct{}
	once    sync.Once
}

func newHoldServer(t *testing.T) *holdServer {
	h := &holdServer{held: make(chan struct{}, 1), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>Hold</title>
<button id="hold" onclick="const x = new XMLHttpRequest(); x.open('GET', '/hold', false); x.send(); this.textContent = 'done'">Hold</button>`))
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.held <- struct{}{}:
		default:
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("ok"))
	})
	h.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		h.free()
		h.Close()
	})
	return h
}

func (h *holdServer) free() { h.once.Do(func() { close(h.release) }) }

// A tab the user opens while the session's click is under way is not the
// click's new tab, nor listed, nor switchable.
func TestTabOwnershipUserTabDuringAnActionIsNotNew(t *testing.T) {
	u := newUserBrowser(t)
	h := newHoldServer(t)
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(actions.New(actions.Config{})))
	aTab := a.FocusedTab()
	navigate(t, a, h.URL+"/", false)

	type result struct {
		res events.ClickResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := bus.Call(ctxT(t), a.Bus(), events.ClickElement, events.ClickElementEvent{Target: element(t, a, "#hold")})
		done <- result{res, err}
	}()
	select {
	case <-h.held:
	case r := <-done:
		t.Fatalf("the click ended before its handler ran: %+v, %v", r.res, r.err)
	case <-ctxT(t).Done():
		t.Fatal("the click never reached the server")
	}
	user, err := u.conn.CreateTarget(ctxT(t), u.env.URL("/other.html"))
	if err != nil {
		t.Fatal(err)
	}
	// Attached by the session (as foreign) while the click still waits.
	poll(t, "the session attached the user's new tab", func() bool {
		_, err := a.PageSession(string(user))
		return err == nil
	})
	select {
	case r := <-done:
		t.Fatalf("the click ended before the user's tab opened: %+v, %v", r.res, r.err)
	default:
	}
	h.free()
	r := <-done
	if r.err != nil {
		t.Fatalf("click: %v", r.err)
	}
	if r.res.Outcome.Verdict == events.VerdictNewTab || len(r.res.Outcome.NewTabs) != 0 {
		t.Fatalf("the user's tab was taken for the click's new tab: %s (%s), NewTabs %v", r.res.Outcome.Verdict, r.res.Outcome.Detail, r.res.Outcome.NewTabs)
	}
	if r.res.Outcome.Before.TabCount != 1 || r.res.Outcome.After.TabCount != 1 {
		t.Fatalf("tab counts %d → %d, want the session's one tab", r.res.Outcome.Before.TabCount, r.res.Outcome.After.TabCount)
	}
	wantTabs(t, "A", a, aTab)
	_, err = bus.Call(ctxT(t), a.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: string(user)})
	wantForeign(t, "switching to the user's new tab", err)
}

// With ConnectTab "active" the adopted tab is the session's, and so are
// the tabs it opens from then on; the user's other tabs are not.
func TestTabOwnershipActiveTabIsAdopted(t *testing.T) {
	u := newUserBrowser(t)
	mail := u.open(t, "/index.html")
	active := u.open(t, "/links.html")
	u.activate(t, active)
	a := u.connect(t, session.Profile{})
	if a.FocusedTab() != string(active) {
		t.Fatalf("focused %s, want the active tab %s", a.FocusedTab(), active)
	}
	wantTabs(t, "A", a, string(active))
	_, err := a.ResolveTab(string(mail))
	wantForeign(t, "A.ResolveTab(the user's other tab)", err)

	cs, err := a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var ignored any
	if err := testbrowser.Eval(cs, `void window.open('/other.html?from=adopted')`, &ignored); err != nil {
		t.Fatal(err)
	}
	poll(t, "A lists the adopted tab's popup", func() bool { return len(a.Tabs()) == 2 })
	for _, id := range tabIDs(a) {
		if id == string(mail) {
			t.Fatalf("A lists the user's tab: %v", a.Tabs())
		}
	}
}

// When the last of the session's tabs closes (the user closed it), the
// focus does not move to a foreign tab: the session opens a tab of its own.
func TestTabOwnershipLastTabIsReplaced(t *testing.T) {
	u := newUserBrowser(t)
	mail := u.open(t, "/index.html")
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	b := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	aTab, bTab := a.FocusedTab(), b.FocusedTab()
	if err := u.conn.CloseTarget(ctxT(t), target.ID(aTab)); err != nil {
		t.Fatal(err)
	}
	poll(t, "A focused on another tab", func() bool {
		f := a.FocusedTab()
		return f != "" && f != aTab
	})
	if err := a.Ready(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	focus := a.FocusedTab()
	if focus == bTab || focus == string(mail) || !a.Owns(focus) {
		t.Fatalf("A's focus moved to %s (B's %s, the user's %s), want a tab of its own", focus, bTab, mail)
	}
	wantTabs(t, "A", a, focus)
	navigate(t, a, u.env.URL("/form.html"), false)
	stop(t, a)
	tabs := u.tabs(t)
	if _, open := tabs[target.ID(focus)]; open {
		t.Error("Stop left the replacement tab open")
	}
	if _, open := tabs[target.ID(bTab)]; !open {
		t.Error("B's tab closed")
	}
}

// Which tabs are the session's survives a dropped connection: after
// Reconnect it lists its tab and its popup, not the user's tabs, also one
// the user opened while it was disconnected.
func TestTabOwnershipSurvivesReconnect(t *testing.T) {
	u := newUserBrowser(t)
	u.open(t, "/index.html")
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	aTab := a.FocusedTab()
	navigate(t, a, u.env.URL("/links.html"), false)
	cs, err := a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var ignored any
	if err := testbrowser.Eval(cs, `void window.open('/other.html?from=before')`, &ignored); err != nil {
		t.Fatal(err)
	}
	poll(t, "A lists its popup", func() bool { return len(a.Tabs()) == 2 })
	own := tabIDs(a)

	a.Conn().Close()
	meanwhile := u.open(t, "/form.html")
	if err := a.Reconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	wantTabs(t, "A after Reconnect", a, own...)
	if a.FocusedTab() != aTab {
		t.Fatalf("focus %s after Reconnect, want %s", a.FocusedTab(), aTab)
	}
	_, err = a.ResolveTab(string(meanwhile))
	wantForeign(t, "A.ResolveTab(the tab the user opened meanwhile)", err)

	// Its tab's popups are still its own after the reconnect.
	if cs, err = a.PageSession(""); err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, `void window.open('/other.html?from=after')`, &ignored); err != nil {
		t.Fatal(err)
	}
	poll(t, "A lists its new popup", func() bool { return len(a.Tabs()) == 3 })
}

// The dialogs of a foreign tab are left to its owner: the user's confirm
// stays open for the user to answer, while the session answers its own
// tab's alert.
func TestTabOwnershipForeignDialogsAreLeftAlone(t *testing.T) {
	u := newUserBrowser(t)
	mail := u.open(t, "/index.html")
	rec := &wdtest.Recorder{}
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(rec, popups.New(popups.Config{})))
	ucs := u.pages[mail]
	sub := ucs.SubscribeEvents(page.JavascriptDialogOpening.Method)
	defer sub.Cancel()
	if _, err := cdpproto.Call(ctxT(t), ucs, page.Enable, page.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	pending := ucs.Send(ctxT(t), runtime.CommandEvaluate, runtime.EvaluateParams{Expression: `confirm('the user decides')`})
	select {
	case <-sub.C():
	case <-ctxT(t).Done():
		t.Fatal("the user's confirm did not open")
	}

	cs, err := a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var ignored any
	if err := testbrowser.Eval(cs, `void setTimeout(() => alert('the agent decides'), 0)`, &ignored); err != nil {
		t.Fatal(err)
	}
	wdtest.WaitEvent(t, rec, timeout, func(e events.DialogHandledEvent) bool { return e.Message == "the agent decides" })
	for _, ev := range rec.All() {
		if d, ok := ev.(events.DialogOpenedEvent); ok && d.Message == "the user decides" {
			t.Fatalf("the session saw the user's dialog: %+v", d)
		}
	}
	// Still open: the user answers it.
	if _, err := cdpproto.Call(ctxT(t), ucs, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
		t.Fatalf("answering the user's dialog: %v (the session answered it?)", err)
	}
	var out struct {
		Result *runtime.RemoteObject `json:"result"`
	}
	if err := pending.Wait(ctxT(t), &out); err != nil || out.Result == nil || string(out.Result.Value) != "true" {
		t.Fatalf("the user's confirm returned %+v, %v; want true (the user's answer)", out.Result, err)
	}
}
