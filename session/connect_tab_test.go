package session_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// userBrowser is a browser of one test's own, standing for the user's
// browser a session connects to (Profile.CDPURL), with a connection of the
// test's, which acts as the user: it opens and activates tabs and reads
// them.
type userBrowser struct {
	env     *testbrowser.Env // the fixture site
	browser *cdp.Browser
	conn    *cdp.Conn
	pages   map[target.ID]*cdp.Session // the user's tabs, attached
}

func newUserBrowser(t *testing.T) *userBrowser {
	t.Helper()
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the user's browser: %v", err)
		}
	})
	conn, err := cdp.Dial(ctx, b.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &userBrowser{env: env, browser: b, conn: conn, pages: map[target.ID]*cdp.Session{}}
}

// open opens a tab in front on the fixture page p (or an absolute URL) and
// waits until it has loaded.
func (u *userBrowser) open(t *testing.T, p string, opts ...cdp.CreateTargetOption) target.ID {
	t.Helper()
	ctx := ctxT(t)
	want := u.env.URL(p)
	id, err := u.conn.CreateTarget(ctx, want, opts...)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := u.conn.AttachToTarget(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	u.pages[id] = cs
	poll(t, "tab "+want+" loaded", func() bool {
		var st struct {
			Href  string `json:"href"`
			Ready string `json:"ready"`
		}
		return testbrowser.Eval(cs, `({href: location.href, ready: document.readyState})`, &st) == nil &&
			st.Href == want && st.Ready == "complete"
	})
	return id
}

// activate brings a tab to the front, as the user clicking on it does, and
// waits until the page knows it.
func (u *userBrowser) activate(t *testing.T, id target.ID) {
	t.Helper()
	if err := u.conn.ActivateTarget(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	poll(t, "tab visible", func() bool { return u.visibility(t, id) == "visible" })
}

func (u *userBrowser) visibility(t *testing.T, id target.ID) string {
	t.Helper()
	var v string
	if err := testbrowser.Eval(u.pages[id], `document.visibilityState`, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (u *userBrowser) href(t *testing.T, id target.ID) string {
	t.Helper()
	var href string
	if err := testbrowser.Eval(u.pages[id], `location.href`, &href); err != nil {
		t.Fatal(err)
	}
	return href
}

// tabs returns the browser's page targets and their URLs.
func (u *userBrowser) tabs(t *testing.T) map[target.ID]string {
	t.Helper()
	res, err := cdpproto.Call(ctxT(t), u.conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[target.ID]string{}
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" {
			out[ti.TargetID] = ti.URL
		}
	}
	return out
}

// connect starts a session on the user's browser; the test's cleanup
// stops it unless the test did.
func (u *userBrowser) connect(t *testing.T, p session.Profile, opts ...session.Option) *session.Session {
	t.Helper()
	if p.CDPURL == "" {
		p.CDPURL = u.browser.WebSocketURL()
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
	return s
}

func stop(t *testing.T, s *session.Session) {
	t.Helper()
	if err := s.Stop(ctxT(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// poll waits until cond holds, failing the test after testbrowser.Timeout.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// By default a session connected to a browser works in the tab the user is
// on — the one activated last, whether or not it was opened last — acts
// on it, leaves its viewport alone, opens no tab, and leaves the tab open
// when it stops.
func TestConnectDrivesActiveTab(t *testing.T) {
	u := newUserBrowser(t)
	first := u.open(t, "/index.html")
	second := u.open(t, "/other.html")
	for _, c := range []struct {
		name          string
		activateFirst bool // the tab opened first, not the one opened last
		liar          bool // a hidden tab whose script claims it is visible and focused
	}{
		{"second tab active", false, false},
		{"first tab active", true, false},
		{"hidden tab lies about its visibility", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			active, bystander := second, first
			if c.activateFirst {
				active, bystander = first, second
			}
			u.activate(t, active)
			if c.liar {
				// Opened behind the active tab after it was activated: the
				// most recent in /json/list, so only what the pages say
				// tells them apart.
				bystander = u.open(t, "/links.html", cdp.InBackground())
				var claims []any
				if err := testbrowser.Eval(u.pages[bystander], `Object.defineProperty(document, 'visibilityState', {get: () => 'visible'});
					Document.prototype.hasFocus = () => true;
					[document.visibilityState, document.hasFocus()]`, &claims); err != nil {
					t.Fatal(err)
				}
				if len(claims) != 2 || claims[0] != "visible" || claims[1] != true {
					t.Fatalf("the hidden tab's script claims %v", claims)
				}
			}
			bystanderURL := u.href(t, bystander)
			var width int
			if err := testbrowser.Eval(u.pages[active], `innerWidth`, &width); err != nil {
				t.Fatal(err)
			}
			before := u.tabs(t)

			s := u.connect(t, session.Profile{ViewportWidth: width / 2})
			if got := s.Profile().ConnectTab; got != session.ConnectTabActive {
				t.Errorf("Profile().ConnectTab = %q, want the default %q", got, session.ConnectTabActive)
			}
			if got := s.FocusedTab(); got != string(active) {
				t.Fatalf("focused tab %s, want the active tab %s (tabs %v)", got, active, s.Tabs())
			}
			if after := u.tabs(t); len(after) != len(before) {
				t.Fatalf("the session opened a tab: %d tabs before Start, %d after", len(before), len(after))
			}
			var w int
			if err := testbrowser.Eval(u.pages[active], `innerWidth`, &w); err != nil {
				t.Fatal(err)
			}
			if w != width {
				t.Errorf("the user's tab is %d px wide after Start, %d before: its viewport was changed", w, width)
			}

			res := navigate(t, s, u.env.URL("/form.html"), false)
			if res.TargetID != string(active) {
				t.Fatalf("navigated tab %s, want the active tab %s", res.TargetID, active)
			}
			if got := u.href(t, active); !strings.HasSuffix(got, "/form.html") {
				t.Fatalf("the active tab is at %s, want /form.html", got)
			}
			if got := u.href(t, bystander); got != bystanderURL {
				t.Fatalf("the other tab moved from %s to %s", bystanderURL, got)
			}

			stop(t, s)
			tabs := u.tabs(t)
			if got, open := tabs[active]; !open || !strings.HasSuffix(got, "/form.html") {
				t.Fatalf("after Stop the tab the session worked in is open=%v at %q; want it left open where the session took it", open, got)
			}
			if len(tabs) != len(before) {
				t.Fatalf("%d tabs after Stop, %d before Start", len(tabs), len(before))
			}
		})
	}
}

// ConnectTab "new" is the old behaviour: a tab of the session's own,
// focused, closed by Stop; the user's tabs are not touched.
func TestConnectTabNewLeavesUserTabsAlone(t *testing.T) {
	u := newUserBrowser(t)
	first := u.open(t, "/index.html")
	second := u.open(t, "/other.html")
	u.activate(t, second)
	before := u.tabs(t)

	s := u.connect(t, session.Profile{ConnectTab: " New "})
	focus := target.ID(s.FocusedTab())
	if _, theirs := before[focus]; theirs || focus == "" {
		t.Fatalf("focused tab %q is not a new tab (the user's: %v)", focus, before)
	}
	res := navigate(t, s, u.env.URL("/form.html"), false)
	if res.TargetID != string(focus) {
		t.Fatalf("navigated tab %s, want the session's %s", res.TargetID, focus)
	}
	for id, want := range map[target.ID]string{first: "/index.html", second: "/other.html"} {
		if got := u.href(t, id); !strings.HasSuffix(got, want) {
			t.Errorf("the user's tab %s moved to %s", want, got)
		}
	}
	stop(t, s)
	tabs := u.tabs(t)
	if _, open := tabs[focus]; open {
		t.Error("Stop left the session's own tab open")
	}
	for id := range before {
		if _, open := tabs[id]; !open {
			t.Errorf("Stop closed the user's tab %s", before[id])
		}
	}
}

// The active tab is a page of the browser (chrome://version): the session
// takes the web page the user was on most recently instead, and brings it
// to the front. The endpoint is given as http://host:port.
func TestConnectActiveTabSkipsBrowserPages(t *testing.T) {
	u := newUserBrowser(t)
	first := u.open(t, "/index.html")
	second := u.open(t, "/other.html")
	u.activate(t, first)
	browserPage := u.open(t, "chrome://version/")
	u.activate(t, browserPage)
	if u.visibility(t, first) != "hidden" {
		t.Fatal("the web page stayed visible behind the browser page")
	}

	ws, err := url.Parse(u.browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	s := u.connect(t, session.Profile{CDPURL: "http://" + ws.Host})
	if got := target.ID(s.FocusedTab()); got != first {
		t.Fatalf("focused %s, want the most recently active web page %s (second %s, browser page %s)", got, first, second, browserPage)
	}
	poll(t, "the adopted tab in front", func() bool { return u.visibility(t, first) == "visible" })
	stop(t, s)
	if _, open := u.tabs(t)[browserPage]; !open {
		t.Fatal("Stop closed the user's browser page")
	}
}

// An active tab on a page the URL policy refuses is concealed: the session
// does not drive it (nor another of the user's tabs) but opens a tab of its
// own, and says so in the log.
func TestConnectActiveTabRefusedByPolicy(t *testing.T) {
	u := newUserBrowser(t)
	allowed := u.open(t, "/index.html")
	refused := u.open(t, u.env.Server.URL2+"/other.html") // http://localhost:PORT2
	u.activate(t, refused)
	refusedURL := u.href(t, refused)
	before := u.tabs(t)

	core, logs := observer.New(zap.InfoLevel)
	s := u.connect(t, session.Profile{ProhibitedDomains: []string{"localhost"}},
		session.WithLogger(zap.New(core)), session.WithWatchdogs(security.New(security.Config{})))
	if s.Concealed(string(refused)) == "" {
		t.Fatal("the refused tab is not concealed")
	}
	focus := target.ID(s.FocusedTab())
	if _, theirs := before[focus]; theirs {
		t.Fatalf("the session works in the user's tab %s, want a tab of its own", before[focus])
	}
	if n := logs.FilterMessageSnippet("working in a new tab instead").FilterField(zap.String("target", string(refused))).Len(); n != 1 {
		t.Errorf("%d log entries explain the new tab, want 1; logs: %v", n, logs.All())
	}
	res := navigate(t, s, u.env.URL("/form.html"), false)
	if res.TargetID != string(focus) {
		t.Fatalf("navigated %s, want the session's tab %s", res.TargetID, focus)
	}
	if got := u.href(t, refused); got != refusedURL {
		t.Fatalf("the refused tab moved from %s to %s", refusedURL, got)
	}
	if got := u.href(t, allowed); !strings.HasSuffix(got, "/index.html") {
		t.Fatalf("the user's other tab moved to %s", got)
	}
	stop(t, s)
	tabs := u.tabs(t)
	if _, open := tabs[focus]; open {
		t.Error("Stop left the session's own tab open")
	}
	for id := range before {
		if _, open := tabs[id]; !open {
			t.Errorf("Stop closed the user's tab %s", before[id])
		}
	}
}

func TestConnectTabValidated(t *testing.T) {
	env := testbrowser.Start(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: "sideways"})
	err := s.Start(ctxT(t))
	if !errors.Is(err, session.ErrUnknownConnectTab) {
		t.Fatalf("Start = %v, want an error wrapping ErrUnknownConnectTab", err)
	}
	if !strings.Contains(err.Error(), `"sideways"`) || !strings.Contains(err.Error(), `"active"`) {
		t.Errorf("error %q does not name the value and the choices", err)
	}
	if s.Running() {
		t.Fatal("running after a failed Start")
	}
	for _, c := range []struct {
		p    session.Profile
		want string
	}{
		{session.Profile{CDPURL: "ws://127.0.0.1:1/x"}, session.ConnectTabActive},
		{session.Profile{CDPURL: "ws://127.0.0.1:1/x", ConnectTab: "NEW"}, session.ConnectTabNew},
		{session.Profile{}, ""}, // launched: no choice to make
	} {
		if got := session.New(c.p).Profile().ConnectTab; got != c.want {
			t.Errorf("Profile{CDPURL: %q, ConnectTab: %q}: ConnectTab %q, want %q", c.p.CDPURL, c.p.ConnectTab, got, c.want)
		}
	}
}

// A browser whose only tab does not attach (its renderer crashed) still
// gets a session: it works in a tab of its own instead of failing Start.
func TestConnectWithNoUsableTabOpensOne(t *testing.T) {
	u := newUserBrowser(t)
	for id := range u.tabs(t) {
		if err := u.conn.CloseTarget(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	crashed := u.open(t, "/index.html")
	poll(t, "only the tab to crash left", func() bool { return len(u.tabs(t)) == 1 })
	u.pages[crashed].Send(ctxT(t), "Page.crash", nil) // never answered: the renderer is gone
	poll(t, "the renderer gone", func() bool {
		return testbrowser.Eval(u.pages[crashed], `1`, nil) != nil
	})

	s := u.connect(t, session.Profile{})
	focus := target.ID(s.FocusedTab())
	if focus == "" || focus == crashed {
		t.Fatalf("focused %q, want a new tab (crashed %s)", focus, crashed)
	}
	navigate(t, s, u.env.URL("/form.html"), false)
	stop(t, s)
	tabs := u.tabs(t)
	if _, open := tabs[focus]; open {
		t.Error("Stop left the session's own tab open")
	}
	if _, open := tabs[crashed]; !open {
		t.Error("Stop closed the user's crashed tab")
	}
}

// A refused tab that another of the user's tabs opened (it has an opener)
// is the user's like any other: concealed at connect, and not driven.
func TestConnectConcealsARefusedTabWithAnOpener(t *testing.T) {
	u := newUserBrowser(t)
	opener := u.open(t, "/index.html")
	refusedURL := u.env.Server.URL2 + "/other.html"
	before := u.tabs(t)
	var ignored any
	if err := testbrowser.Eval(u.pages[opener], `void window.open(`+strconv.Quote(refusedURL)+`)`, &ignored); err != nil {
		t.Fatal(err)
	}
	var popup target.ID
	poll(t, "the popup loaded", func() bool {
		for id, url := range u.tabs(t) {
			if _, old := before[id]; !old && url == refusedURL {
				popup = id
				return true
			}
		}
		return false
	})
	cs, err := u.conn.AttachToTarget(ctxT(t), popup)
	if err != nil {
		t.Fatal(err)
	}
	u.pages[popup] = cs
	u.activate(t, popup)

	s := u.connect(t, session.Profile{ProhibitedDomains: []string{"localhost"}}, session.WithWatchdogs(security.New(security.Config{})))
	if s.Concealed(string(popup)) == "" {
		t.Fatal("the refused tab with an opener is not concealed")
	}
	if focus := target.ID(s.FocusedTab()); focus == popup || focus == opener {
		t.Fatalf("the session works in the user's tab %s", focus)
	}
}
