package session_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// contexts returns the browser contexts the browser lists
// (Target.getBrowserContexts: those made over CDP).
func (u *userBrowser) contexts(t *testing.T) []string {
	t.Helper()
	res, err := cdpproto.Call(ctxT(t), u.conn.Browser(), target.GetBrowserContexts, cdpproto.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range res.BrowserContextIDs {
		out = append(out, string(id))
	}
	return out
}

// contextOf returns the browser context of every page target.
func (u *userBrowser) contextOf(t *testing.T) map[string]string {
	t.Helper()
	res, err := cdpproto.Call(ctxT(t), u.conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" {
			out[string(ti.TargetID)] = string(ti.BrowserContextID)
		}
	}
	return out
}

// evalFocused evaluates expr in the focused tab of s.
func evalFocused(t *testing.T, s *session.Session, expr string, out any) {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, expr, out); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
}

// Two sessions with IsolatedContext on one browser (beside the user's own
// tab): each works in a context of its own, lists only its tabs (its
// popups included), cannot reach the other's, and shares no cookie or
// localStorage with it nor with the user's tab; Stop of one disposes its
// context and tabs and leaves the other session and the browser working.
func TestIsolatedSessionsShareOneBrowser(t *testing.T) {
	u := newUserBrowser(t)
	user := u.open(t, "/index.html")
	a := u.connect(t, session.Profile{IsolatedContext: true})
	b := u.connect(t, session.Profile{IsolatedContext: true})

	actx, bctx := a.BrowserContextID(), b.BrowserContextID()
	if actx == "" || bctx == "" || actx == bctx {
		t.Fatalf("contexts A %q, B %q: want two distinct ones", actx, bctx)
	}
	if got := u.contexts(t); !slices.Contains(got, actx) || !slices.Contains(got, bctx) {
		t.Fatalf("browser contexts %v lack A's %s or B's %s", got, actx, bctx)
	}
	ctxOf := u.contextOf(t)
	aTab, bTab := a.FocusedTab(), b.FocusedTab()
	if ctxOf[aTab] != actx || ctxOf[bTab] != bctx {
		t.Fatalf("A's tab in context %q (want %s), B's in %q (want %s)", ctxOf[aTab], actx, ctxOf[bTab], bctx)
	}
	wantTabs(t, "A", a, aTab)
	wantTabs(t, "B", b, bTab)
	for _, c := range []struct {
		who string
		s   *session.Session
		ref string
	}{{"A", a, bTab}, {"B", b, aTab}, {"A", a, string(user)}} {
		if _, err := c.s.ResolveTab(c.ref); !errors.Is(err, session.ErrTabNotFound) {
			t.Fatalf("%s.ResolveTab(%s) = %v, want ErrTabNotFound: it never sees another context's tab", c.who, c.ref, err)
		}
		if c.s.Owns(c.ref) {
			t.Fatalf("%s owns %s", c.who, c.ref)
		}
	}

	// Cookies and localStorage of one origin stay in their context.
	navigate(t, a, u.env.URL("/links.html"), false)
	navigate(t, b, u.env.URL("/links.html"), false)
	var ignored any
	evalFocused(t, a, `document.cookie = "who=a; path=/"; localStorage.setItem("who", "a")`, &ignored)
	var bSees []string
	evalFocused(t, b, `[document.cookie, String(localStorage.getItem("who"))]`, &bSees)
	if bSees[0] != "" || bSees[1] != "null" {
		t.Fatalf("B sees A's cookie %q / localStorage %q", bSees[0], bSees[1])
	}
	var userSees []string
	if err := testbrowser.Eval(u.pages[user], `[document.cookie, String(localStorage.getItem("who"))]`, &userSees); err != nil {
		t.Fatal(err)
	}
	if userSees[0] != "" || userSees[1] != "null" {
		t.Fatalf("the user's tab sees A's cookie %q / localStorage %q", userSees[0], userSees[1])
	}
	var aSees []string
	evalFocused(t, a, `[document.cookie, String(localStorage.getItem("who"))]`, &aSees)
	if aSees[0] != "who=a" || aSees[1] != "a" {
		t.Fatalf("A lost its own cookie %q / localStorage %q", aSees[0], aSees[1])
	}

	// A popup of A's tab is A's, in A's context, unseen by B.
	evalFocused(t, a, `void window.open('/other.html?from=popup')`, &ignored)
	poll(t, "A lists its popup", func() bool { return len(a.Tabs()) == 2 })
	var popup string
	for _, id := range tabIDs(a) {
		if id != aTab {
			popup = id
		}
	}
	if got := u.contextOf(t)[popup]; got != actx {
		t.Fatalf("A's popup is in context %q, want %s", got, actx)
	}
	wantTabs(t, "B after A's popup", b, bTab)
	if b.Owns(popup) {
		t.Fatal("B owns A's popup")
	}

	// Stop A: its context and tabs go, B and the user's tab stay.
	stop(t, a)
	if got := u.contexts(t); slices.Contains(got, actx) || !slices.Contains(got, bctx) {
		t.Fatalf("after A stopped, contexts %v: want B's %s without A's %s", got, bctx, actx)
	}
	left := u.contextOf(t)
	for _, id := range []string{aTab, popup} {
		if _, open := left[id]; open {
			t.Fatalf("A's tab %s still open after Stop", id)
		}
	}
	if _, open := left[bTab]; !open {
		t.Fatal("B's tab closed with A")
	}
	if _, open := left[string(user)]; !open {
		t.Fatal("the user's tab closed with A")
	}
	if r := navigate(t, b, u.env.URL("/other.html"), false); r.URL != u.env.URL("/other.html") {
		t.Fatalf("B after A stopped: navigation result %+v", r)
	}
	if a.BrowserContextID() != "" {
		t.Fatalf("A's context id %q after Stop, want \"\"", a.BrowserContextID())
	}
}

// crashes records the TargetCrashed events of a session.
type crashes struct {
	mu  sync.Mutex
	ids []string
}

func recordCrashes(t *testing.T, s *session.Session) *crashes {
	c := &crashes{}
	if _, err := bus.Handle(s.Bus(), events.TargetCrashed, "test-crashes", func(_ context.Context, e events.TargetCrashedEvent) (events.None, error) {
		c.mu.Lock()
		c.ids = append(c.ids, e.TargetID)
		c.mu.Unlock()
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *crashes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// A renderer crash in one session's context is reported to that session
// only, and the other session — on the very same page URL, so that only
// the context keeps their renderers apart — keeps working. The first
// session launched the browser; the second connected to it.
func TestIsolatedCrashStaysInItsContext(t *testing.T) {
	env := testbrowser.Start(t)
	a := session.New(session.Profile{IsolatedContext: true})
	if err := a.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	b := session.New(session.Profile{IsolatedContext: true, CDPURL: a.Browser().WebSocketURL()})
	if err := b.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	// The launched browser's first tab is in the default context: not A's.
	wantTabs(t, "A", a, a.FocusedTab())
	wantTabs(t, "B", b, b.FocusedTab())

	aCrashes, bCrashes := recordCrashes(t, a), recordCrashes(t, b)
	page := env.URL("/links.html")
	navigate(t, a, page, false)
	navigate(t, b, page, false)
	cs, err := a.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	cs.Send(ctxT(t), "Page.crash", nil) // never answered: the renderer is gone
	aTab := a.FocusedTab()
	poll(t, "A reports its crash", func() bool { return slices.Contains(aCrashes.list(), aTab) })

	var title string
	evalFocused(t, b, `document.title`, &title)
	if r := navigate(t, b, env.URL("/other.html"), false); r.URL != env.URL("/other.html") {
		t.Fatalf("B after A's crash: navigation result %+v", r)
	}
	if got := bCrashes.list(); len(got) != 0 {
		t.Fatalf("B was told of crashes %v: another context's", got)
	}

	// B stops: its context goes, A's stays.
	bctx := b.BrowserContextID()
	if err := b.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	res, err := cdpproto.Call(ctxT(t), a.Conn().Browser(), target.GetBrowserContexts, cdpproto.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.BrowserContextIDs, cdpproto.BrowserContextID(bctx)) || !slices.Contains(res.BrowserContextIDs, cdpproto.BrowserContextID(a.BrowserContextID())) {
		t.Fatalf("contexts after B stopped: %v (B's was %s, A's is %s)", res.BrowserContextIDs, bctx, a.BrowserContextID())
	}
	if !a.Running() {
		t.Fatal("A stopped with B")
	}

	// A closes its crashed tab, its context's last: it works in a new tab
	// of its context (in the browser it launched, which runs on).
	crashed := a.FocusedTab()
	if _, err := bus.Call(ctxT(t), a.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: crashed}); err != nil {
		t.Fatal(err)
	}
	poll(t, "A works in a new tab", func() bool { f := a.FocusedTab(); return f != "" && f != crashed })
	if err := a.Ready(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	infos, err := cdpproto.Call(ctxT(t), a.Conn().Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range infos.TargetInfos {
		if string(ti.TargetID) == a.FocusedTab() && string(ti.BrowserContextID) != a.BrowserContextID() {
			t.Fatalf("A's new tab is in context %s, want %s", ti.BrowserContextID, a.BrowserContextID())
		}
	}
	wantTabs(t, "A after closing its crashed tab", a, a.FocusedTab())
	if r := navigate(t, a, env.URL("/other.html"), false); r.URL != env.URL("/other.html") {
		t.Fatalf("A in its new tab: %+v", r)
	}
}

// A dropped connection does not lose the context: Reconnect finds it, with
// the session's tab and its page's storage. When the context is gone by
// then (disposed meanwhile), Reconnect works in a new one and reports the
// old tab closed.
func TestIsolatedReconnect(t *testing.T) {
	u := newUserBrowser(t)
	a := u.connect(t, session.Profile{IsolatedContext: true})
	rec := record(t, a)
	actx, aTab := a.BrowserContextID(), a.FocusedTab()
	navigate(t, a, u.env.URL("/links.html"), false)
	var ignored any
	evalFocused(t, a, `localStorage.setItem("kept", "yes")`, &ignored)

	a.Conn().Close()
	if err := a.Reconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if a.BrowserContextID() != actx || a.FocusedTab() != aTab {
		t.Fatalf("after Reconnect: context %s tab %s, want %s %s", a.BrowserContextID(), a.FocusedTab(), actx, aTab)
	}
	wantTabs(t, "A after Reconnect", a, aTab)
	var kept string
	evalFocused(t, a, `String(localStorage.getItem("kept"))`, &kept)
	if kept != "yes" {
		t.Fatalf("localStorage after Reconnect: %q", kept)
	}

	// The context is disposed while the session is disconnected.
	a.Conn().Close()
	if _, err := cdpproto.Call(ctxT(t), u.conn.Browser(), target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: cdpproto.BrowserContextID(actx)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Reconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	nctx, nTab := a.BrowserContextID(), a.FocusedTab()
	if nctx == "" || nctx == actx || nTab == "" || nTab == aTab {
		t.Fatalf("after Reconnect to a disposed context: context %q tab %q (old %s %s)", nctx, nTab, actx, aTab)
	}
	if got := u.contextOf(t)[nTab]; got != nctx {
		t.Fatalf("the new tab is in context %q, want %s", got, nctx)
	}
	rec.wait(t, "closed:"+aTab)
	wantTabs(t, "A after Reconnect to a disposed context", a, nTab)
	if r := navigate(t, a, u.env.URL("/other.html"), false); r.URL != u.env.URL("/other.html") {
		t.Fatalf("navigation in the new context: %+v", r)
	}
}

// Another context's new targets never wait for a session: it resumes and
// lets them go before any of its target hooks runs. Session A's hook
// blocks every target it is given; session B, in its own context on the
// same browser, still starts, navigates and opens a popup, and A's hook
// never sees B's targets.
func TestIsolatedOthersTargetsDoNotWait(t *testing.T) {
	u := newUserBrowser(t)
	var (
		mu      sync.Mutex
		hold    bool
		held    []string
		release = make(chan struct{})
	)
	blocker := session.NewWatchdog("blocker", func(s *session.Session) error {
		s.AddTargetHook(func(ctx context.Context, at session.AttachedTarget) error {
			mu.Lock()
			h := hold
			if h {
				held = append(held, string(at.Session.TargetID()))
			}
			mu.Unlock()
			if h {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
		return nil
	})
	a := u.connect(t, session.Profile{IsolatedContext: true}, session.WithWatchdogs(blocker))
	t.Cleanup(func() { close(release) }) // before A's Stop (cleanups run last first)
	mu.Lock()
	hold = true
	mu.Unlock()

	b := u.connect(t, session.Profile{IsolatedContext: true})
	navigate(t, b, u.env.URL("/links.html"), false)
	var ignored any
	evalFocused(t, b, `void window.open('/other.html?from=popup')`, &ignored)
	poll(t, "B lists its popup", func() bool { return len(b.Tabs()) == 2 })
	if r := navigate(t, b, u.env.URL("/other.html"), true); r.URL != u.env.URL("/other.html") {
		t.Fatalf("B's new tab: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(held) != 0 {
		t.Fatalf("A's target hook was given B's targets %v", held)
	}
	if !a.Running() {
		t.Fatal("A stopped")
	}
}
