package session_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

const timeout = testbrowser.Timeout

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// start starts a session on the package's shared browser (connected mode),
// stopped by the test's cleanup.
func start(t *testing.T, p session.Profile, opts ...session.Option) (*session.Session, *testbrowser.Env) {
	t.Helper()
	env := testbrowser.Start(t)
	if p.CDPURL == "" {
		p.CDPURL = env.Browser.WebSocketURL()
	}
	if p.ConnectTab == "" {
		p.ConnectTab = session.ConnectTabNew // the shared browser's tabs belong to no test
	}
	s := session.New(p, opts...)
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s, env
}

func navigate(t *testing.T, s *session.Session, url string, newTab bool) events.NavigateResult {
	t.Helper()
	res, err := bus.Call(ctxT(t), s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: url, NewTab: newTab})
	if err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
	return res
}

func TestLaunchStopRestartLeavesNothing(t *testing.T) {
	env := testbrowser.Start(t)
	s := session.New(session.Profile{})
	for round := 1; round <= 2; round++ { // the second round is a restart after Stop
		if err := s.Start(ctxT(t)); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		b := s.Browser()
		if b == nil {
			t.Fatal("launched session has no browser process")
		}
		pid, dir := b.PID(), b.UserDataDir()
		res := navigate(t, s, env.URL("/form.html"), false)
		if !strings.HasSuffix(res.URL, "/form.html") {
			t.Fatalf("round %d: navigated to %q", round, res.URL)
		}
		if res.Outcome.Verdict != events.VerdictNavigated {
			t.Fatalf("round %d: verdict %q, want navigated", round, res.Outcome.Verdict)
		}
		if err := s.Stop(ctxT(t)); err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		if testbrowser.ProcessExists(pid) {
			t.Fatalf("round %d: browser pid %d still alive after Stop", round, pid)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("round %d: profile dir %s still exists after Stop (err %v)", round, dir, err)
		}
		if s.Running() {
			t.Fatalf("round %d: still running after Stop", round)
		}
	}
	if err := s.Stop(ctxT(t)); err != nil {
		t.Fatalf("Stop on a stopped session: %v", err)
	}
}

func TestStartTwice(t *testing.T) {
	s, _ := start(t, session.Profile{})
	if err := s.Start(ctxT(t)); !errors.Is(err, session.ErrAlreadyStarted) {
		t.Fatalf("second Start = %v, want ErrAlreadyStarted", err)
	}
}

func TestConnectedStopLeavesBrowserAndForeignTabs(t *testing.T) {
	env := testbrowser.Start(t)
	foreign := env.NewPage(t, "/other.html") // a tab the session did not create
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew})
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if s.Browser() != nil {
		t.Fatal("connected session claims to own the browser process")
	}
	res := navigate(t, s, env.URL("/form.html"), true)
	created := res.TargetID
	if created == string(foreign.TargetID) {
		t.Fatal("new-tab navigation reused the foreign tab")
	}
	if err := s.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !testbrowser.ProcessExists(env.Browser.PID()) {
		t.Fatal("shared browser died on Stop of a connected session")
	}
	var href string
	foreign.Eval(t, "location.href", &href)
	if !strings.HasSuffix(href, "/other.html") {
		t.Fatalf("foreign tab changed: %s", href)
	}
	targets := listTargets(t, env)
	if targets[created] {
		t.Fatalf("tab %s created by the session is still open after Stop", created)
	}
	if !targets[string(foreign.TargetID)] {
		t.Fatal("foreign tab was closed")
	}
}

func listTargets(t *testing.T, env *testbrowser.Env) map[string]bool {
	t.Helper()
	res, err := cdpproto.Call(ctxT(t), env.Conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ti := range res.TargetInfos {
		out[string(ti.TargetID)] = true
	}
	return out
}

func TestNavigationErrorsAndHistory(t *testing.T) {
	s, env := start(t, session.Profile{})
	navigate(t, s, env.URL("/links.html"), false)
	navigate(t, s, env.URL("/other.html"), false)

	back, err := bus.Call(ctxT(t), s.Bus(), events.GoBack, events.GoBackEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(back.Outcome.After.URL, "/links.html") || back.Outcome.Verdict != events.VerdictNavigated {
		t.Fatalf("back: %+v", back.Outcome)
	}
	fwd, err := bus.Call(ctxT(t), s.Bus(), events.GoForward, events.GoForwardEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(fwd.Outcome.After.URL, "/other.html") {
		t.Fatalf("forward: %+v", fwd.Outcome)
	}
	if _, err := bus.Call(ctxT(t), s.Bus(), events.GoForward, events.GoForwardEvent{}); !errors.Is(err, session.ErrNavigation) {
		t.Fatalf("forward past the end = %v, want ErrNavigation", err)
	}
	rel, err := bus.Call(ctxT(t), s.Bus(), events.Refresh, events.RefreshEvent{})
	if err != nil || rel.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("refresh: %+v %v", rel.Outcome, err)
	}

	// A refused connection is a NavigationError, reported with its net
	// error, inside an ActionError whose outcome (also the result's) says
	// failed and where the tab is.
	res, err := bus.Call(ctxT(t), s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: "http://127.0.0.1:1/"})
	var ne *session.NavigationError
	if !errors.As(err, &ne) || !strings.Contains(ne.ErrorText, "ERR_") {
		t.Fatalf("navigate to closed port = %v, want *NavigationError", err)
	}
	var ae *events.ActionError
	if !errors.As(err, &ae) || ae.Outcome.Verdict != events.VerdictFailed || res.Outcome.Verdict != events.VerdictFailed ||
		res.Outcome.Before.URL == "" || res.Outcome.After.URL == "" {
		t.Fatalf("failed navigation: error %v, outcome %+v", err, res.Outcome)
	}
	if _, err := bus.Call(ctxT(t), s.Bus(), events.GoForward, events.GoForwardEvent{}); !errors.As(err, &ae) || ae.Action != "GoForward" {
		t.Fatalf("forward past the end = %v, want an ActionError", err)
	}
}

// recorder collects report events from the bus.
type recorder struct {
	mu     sync.Mutex
	events []string
	ch     chan string
}

func record(t *testing.T, s *session.Session) *recorder {
	r := &recorder{ch: make(chan string, 100)}
	add := func(s string) {
		r.mu.Lock()
		r.events = append(r.events, s)
		r.mu.Unlock()
		select {
		case r.ch <- s:
		default:
		}
	}
	b := s.Bus()
	if _, err := bus.Handle(b, events.TabCreated, "test", func(_ context.Context, e events.TabCreatedEvent) (events.None, error) {
		add("created:" + e.TargetID)
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Handle(b, events.TabClosed, "test", func(_ context.Context, e events.TabClosedEvent) (events.None, error) {
		add("closed:" + e.TargetID)
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Handle(b, events.AgentFocusChanged, "test", func(_ context.Context, e events.AgentFocusChangedEvent) (events.None, error) {
		add("focus:" + e.TargetID)
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recorder) wait(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-r.ch:
			if strings.HasPrefix(e, prefix) {
				return strings.TrimPrefix(e, prefix)
			}
		case <-deadline:
			t.Fatalf("no %q event; saw %v", prefix, r.events)
		}
	}
}

func TestTabsOpenedByThePageSwitchAndClose(t *testing.T) {
	s, env := start(t, session.Profile{})
	rec := record(t, s)
	navigate(t, s, env.URL("/links.html"), true)
	first := s.FocusedTab()
	n := len(s.Tabs())
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, `document.getElementById('new-tab').click()`, nil); err != nil {
		t.Fatal(err)
	}
	popup := ""
	for popup == "" || popup == first {
		popup = rec.wait(t, "created:")
	}
	if len(s.Tabs()) != n+1 {
		t.Fatalf("tabs = %v, want %d", s.Tabs(), n+1)
	}
	if s.FocusedTab() != first {
		t.Fatal("a tab the page opened stole the focus")
	}
	if err := s.RefreshTabs(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, tab := range s.Tabs() {
		if tab.TargetID == first && tab.Title != "Links fixture" {
			t.Fatalf("tab title %q after RefreshTabs, want the page's title", tab.Title)
		}
	}

	// The model names tabs by their last four characters.
	sw, err := bus.Call(ctxT(t), s.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: popup[len(popup)-4:]})
	if err != nil || sw.TargetID != popup || s.FocusedTab() != popup {
		t.Fatalf("switch: %+v %v (focus %s)", sw, err, s.FocusedTab())
	}
	if _, err := bus.Call(ctxT(t), s.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: "zzzz"}); !errors.Is(err, session.ErrTabNotFound) {
		t.Fatalf("switch to unknown tab = %v", err)
	}

	// Closing the focused tab moves the focus to the remaining one.
	if _, err := bus.Call(ctxT(t), s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: popup}); err != nil {
		t.Fatal(err)
	}
	if got := rec.wait(t, "closed:"); got != popup {
		t.Fatalf("closed %s, want %s", got, popup)
	}
	if s.FocusedTab() != first || len(s.Tabs()) != n {
		t.Fatalf("after close: focus %s (first %s, popup %s) tabs %v", s.FocusedTab(), first, popup, s.Tabs())
	}
}

func TestStaleIndexIsAnError(t *testing.T) {
	s, _ := start(t, session.Profile{})
	_, err := s.Element(7)
	var nf *session.ElementNotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, session.ErrElementNotFound) || nf.MapSize != 0 {
		t.Fatalf("Element on empty map = %v", err)
	}
	s.SetSelectorMap(&session.SelectorMap{Elements: map[int]events.ElementInfo{3: {Index: 3, ElementRef: events.ElementRef{BackendNodeID: 3}}}})
	if _, err := s.Element(7); !errors.As(err, &nf) || nf.MapSize != 1 || !strings.Contains(err.Error(), "again") {
		t.Fatalf("Element(7) = %v", err)
	}
	if el, err := s.Element(3); err != nil || el.BackendNodeID != 3 {
		t.Fatalf("Element(3) = %+v, %v", el, err)
	}
}

func TestFingerprintSeesStructuralChangesOnly(t *testing.T) {
	s, env := start(t, session.Profile{})
	navigate(t, s, env.URL("/form.html"), false)
	ctx := ctxT(t)
	a, err := s.Fingerprint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := s.PageSession("")
	if err := testbrowser.Eval(cs, `document.title = document.title + ' '; document.body.firstChild && (document.body.firstChild.textContent += '.')`, nil); err != nil {
		t.Fatal(err)
	}
	b, err := s.Fingerprint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Changed(b) {
		t.Fatalf("text-only change moved the fingerprint: %v → %v", a, b)
	}
	if err := testbrowser.Eval(cs, `document.body.appendChild(document.createElement('div'))`, nil); err != nil {
		t.Fatal(err)
	}
	c, err := s.Fingerprint(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !b.Changed(c) {
		t.Fatalf("added element did not move the fingerprint: %v → %v", b, c)
	}
}

func TestViewportFollowsProfile(t *testing.T) {
	s, env := start(t, session.Profile{ViewportWidth: 1000, ViewportHeight: 640})
	navigate(t, s, env.URL("/form.html"), false)
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var size []int
	if err := testbrowser.Eval(cs, `[innerWidth, innerHeight]`, &size); err != nil {
		t.Fatal(err)
	}
	if len(size) != 2 || size[0] != 1000 || size[1] != 640 {
		t.Fatalf("viewport %v, want the profile's 1000x640", size)
	}
}

// NavigateToURLEvent.WaitUntil and Timeout decide how far the page must get
// before the navigation returns; a page that does not get there in time is
// reported as loading, not as an error.
func TestNavigateWaitUntilAndTimeout(t *testing.T) {
	s, env := start(t, session.Profile{})
	ctx := ctxT(t)
	readyState := func() string {
		var st string
		cs, err := s.PageSession("")
		if err != nil {
			t.Fatal(err)
		}
		if err := testbrowser.Eval(cs, "document.readyState", &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	u := env.URL("/slow-load.html")
	for _, until := range []events.WaitUntil{events.WaitCommit, events.WaitDOMContentLoaded} {
		res, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u, WaitUntil: until})
		if err != nil {
			t.Fatalf("%s: %v", until, err)
		}
		if st := readyState(); st == "complete" {
			t.Fatalf("%s: returned after the load event (readyState %s)", until, st)
		}
		if until == events.WaitDOMContentLoaded && readyState() != "interactive" {
			t.Fatalf("%s: readyState %q, want interactive", until, readyState())
		}
		if res.Outcome.Detail != "" {
			t.Fatalf("%s: reached, but detail says %q", until, res.Outcome.Detail)
		}
	}
	res, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Outcome.Detail, "still loading after 300ms") {
		t.Fatalf("a load past the Timeout: detail %q, want it reported as still loading", res.Outcome.Detail)
	}
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u, WaitUntil: "whenever"}); !errors.Is(err, session.ErrNavigation) {
		t.Fatalf("unknown WaitUntil = %v, want ErrNavigation", err)
	}
	// Leave the slow page so that its image request ends with the test.
	navigate(t, s, "about:blank", false)
}

func TestBadEventTimeoutsFailStart(t *testing.T) {
	env := testbrowser.Start(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew, EventTimeouts: map[string]time.Duration{"ClickElemnt": time.Second}})
	err := s.Start(ctxT(t))
	if !errors.Is(err, events.ErrUnknownKind) || !strings.Contains(err.Error(), "ClickElemnt") {
		t.Fatalf("Start with a misspelt timeout = %v, want ErrUnknownKind naming it", err)
	}
	if s.Running() {
		t.Fatal("session runs after a failed Start")
	}
}

func TestStopReportsBrowserStopped(t *testing.T) {
	env := testbrowser.Start(t)
	got := make(chan string, 1)
	w := session.NewWatchdog("stopped-recorder", func(s *session.Session) error {
		_, err := bus.Handle(s.Bus(), events.BrowserStopped, "stopped-recorder", func(_ context.Context, ev events.BrowserStoppedEvent) (events.None, error) {
			got <- ev.Reason
			return events.None{}, nil
		})
		return err
	})
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(w))
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r != "stopped" {
			t.Fatalf("reason %q", r)
		}
	default:
		t.Fatal("BrowserStopped was not dispatched before Stop returned")
	}
}
