package security

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/urlmatch"
)

// harness is a started session with the security watchdog and a recorder
// of the events it emits.
type harness struct {
	t   *testing.T
	env *testbrowser.Env
	s   *session.Session
	w   *Watchdog
	rec *wdtest.Recorder
	ctx context.Context
}

func start(t *testing.T, prof session.Profile, policy URLPolicy) *harness {
	t.Helper()
	w := New(Config{Policy: policy})
	s, env, rec, ctx := wdtest.Connect(t, prof, w)
	return &harness{t: t, env: env, s: s, w: w, rec: rec, ctx: ctx}
}

func (h *harness) navigate(u string) (events.NavigateResult, error) {
	return bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u})
}

// waitBlock waits for a NavigationBlocked report whose url contains sub.
func (h *harness) waitBlock(sub string) events.BrowserErrorEvent {
	h.t.Helper()
	return wdtest.WaitEvent(h.t, h.rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "NavigationBlocked" && strings.Contains(e.Details["url"], sub)
	})
}

// blocks returns the NavigationBlocked reports recorded so far.
func (h *harness) blocks() []events.BrowserErrorEvent {
	var out []events.BrowserErrorEvent
	for _, ev := range h.rec.All() {
		if e, ok := ev.(events.BrowserErrorEvent); ok && e.Type == "NavigationBlocked" {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond (bounded generously; no timing assertions).
func waitFor(t *testing.T, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, d := range detail {
				what += "; " + d()
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) eval(expr string, out any) {
	h.t.Helper()
	wdtest.Eval(h.t, h.ctx, h.s, expr, out)
}

// href returns the location of a tab, or "" while it cannot be read.
func (h *harness) href(tab string) string {
	cs, err := h.s.PageSession(tab)
	if err != nil {
		return ""
	}
	var href string
	if pagejs.Evaluate(h.ctx, cs, "location.href", &href) != nil {
		return "" // navigating
	}
	return href
}

func host(raw string) string {
	u, _ := url.Parse(raw)
	return u.Hostname()
}

func TestSecurityAllowedNavigation(t *testing.T) {
	h := start(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
	res, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=allowed")
	if err != nil {
		t.Fatalf("allowed navigation failed: %v", err)
	}
	if !strings.HasPrefix(res.URL, h.env.Server.URL1+"/other.html") {
		t.Fatalf("final URL %q", res.URL)
	}
	var title string
	h.eval("document.title", &title)
	if title != "Other page" {
		t.Fatalf("title %q", title)
	}
	if got := h.env.Server.Hits(testbrowser.Site1, "/other.html"); got == 0 {
		t.Fatal("the allowed page was not requested")
	}
}

func TestSecurityProhibitedRefusedBeforeRequest(t *testing.T) {
	h := start(t, session.Profile{ProhibitedDomains: []string{"localhost"}}, nil)
	const p = "/security-prohibited.html"
	_, err := h.navigate(h.env.Server.URL2 + p)
	if !errors.Is(err, ErrURLBlocked) {
		t.Fatalf("err = %v, want ErrURLBlocked", err)
	}
	var be *BlockedURLError
	if !errors.As(err, &be) || be.Kind != KindNavigate || !strings.Contains(be.Reason, "prohibited") {
		t.Fatalf("blocked error %+v", be)
	}
	e := h.waitBlock(p)
	if e.Details["kind"] != string(KindNavigate) {
		t.Fatalf("report %+v", e)
	}
	if n := h.env.Server.Hits(testbrowser.Site2, p); n != 0 {
		t.Fatalf("blocked site got %d requests", n)
	}
	// The tab is still usable and on an allowed page.
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html"); err != nil {
		t.Fatalf("allowed navigation after a block: %v", err)
	}
}

func TestSecurityRedirectToBlockedDomain(t *testing.T) {
	h := start(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
	const p = "/security-redirect-target.html"
	target := h.env.Server.URL2 + p
	_, err := h.navigate(h.env.Server.URL1 + "/redirect?to=" + url.QueryEscape(target))
	var ne *session.NavigationError
	if !errors.As(err, &ne) || !strings.Contains(ne.ErrorText, "ERR_BLOCKED_BY_CLIENT") {
		t.Fatalf("err = %v, want a NavigationError with ERR_BLOCKED_BY_CLIENT", err)
	}
	if h.env.Server.Hits(testbrowser.Site1, "/redirect") == 0 {
		t.Fatal("the allowed redirecting page was not requested")
	}
	if n := h.env.Server.Hits(testbrowser.Site2, p); n != 0 {
		t.Fatalf("blocked site got %d requests", n)
	}
	e := h.waitBlock(p)
	if e.Details["kind"] != string(KindRedirect) {
		t.Fatalf("kind = %q, want redirect (%+v)", e.Details["kind"], e)
	}
	tab := h.s.FocusedTab()
	if b := h.w.LastBlock(tab); b == nil || b.Kind != KindRedirect || b.URL != target {
		t.Fatalf("LastBlock = %+v", b)
	}
	// The tab is not on the blocked site.
	waitFor(t, "tab off the blocked URL", func() bool {
		var href string
		h.eval("location.href", &href)
		return host(href) != "localhost"
	})
}

func TestSecurityPopupToBlockedDomain(t *testing.T) {
	h := start(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=opener"); err != nil {
		t.Fatal(err)
	}
	const p = "/security-popup-target.html"
	h.eval(`window.open(`+jsString(h.env.Server.URL2+p)+`, "_blank"), true`, nil)
	e := h.waitBlock(p)
	if e.Details["kind"] != string(KindNewTab) {
		t.Fatalf("kind = %q, want new_tab", e.Details["kind"])
	}
	popup := e.Details["target"]
	if popup == "" || popup == h.s.FocusedTab() {
		t.Fatalf("block reported for target %q", popup)
	}
	waitFor(t, "popup closed", func() bool {
		for _, tab := range h.s.Tabs() {
			if tab.TargetID == popup {
				return false
			}
		}
		return true
	})
	if n := h.env.Server.Hits(testbrowser.Site2, p); n != 0 {
		t.Fatalf("blocked site got %d requests", n)
	}
	for _, tab := range h.s.Tabs() {
		if host(tab.URL) == "localhost" {
			t.Fatalf("a tab is on the blocked site: %+v", h.s.Tabs())
		}
	}
}

func TestSecurityCrossSiteIframeBlocked(t *testing.T) {
	h := start(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
	_, err := h.navigate(h.env.Server.URL1 + "/security-iframe.html")
	if err != nil {
		t.Fatalf("page with a blocked iframe must still load: %v", err)
	}
	var text string
	h.eval(`document.getElementById("main").textContent`, &text)
	if text != "Main page loaded" {
		t.Fatalf("main page text %q", text)
	}
	e := h.waitBlock("/security-frame.html")
	if e.Details["kind"] != string(KindSubframe) {
		t.Fatalf("kind = %q, want subframe", e.Details["kind"])
	}
	if n := h.env.Server.Hits(testbrowser.Site2, "/security-frame.html"); n != 0 {
		t.Fatalf("blocked iframe site got %d requests", n)
	}
	// The same-site iframe loaded normally.
	waitFor(t, "same-site iframe", func() bool {
		for _, r := range h.env.Server.Requests(testbrowser.Site1) {
			if strings.HasPrefix(r, "/other.html?sec=same") {
				return true
			}
		}
		return false
	})
}

func TestSecurityDataURLs(t *testing.T) {
	t.Run("refused by default", func(t *testing.T) {
		h := start(t, session.Profile{}, nil)
		_, err := h.navigate("data:text/html,<h1>hi</h1>")
		if !errors.Is(err, ErrURLBlocked) {
			t.Fatalf("err = %v, want ErrURLBlocked", err)
		}
		var href string
		h.eval("location.href", &href)
		if strings.HasPrefix(href, "data:") {
			t.Fatalf("tab is on %q", href)
		}
	})
	t.Run("allowed by a custom policy", func(t *testing.T) {
		allowAll := URLPolicyFunc(func(context.Context, URLRequest) error { return nil })
		h := start(t, session.Profile{}, allowAll)
		if _, err := h.navigate("data:text/html,<h1 id=x>hi</h1>"); err != nil {
			t.Fatalf("data: URL with a permissive policy: %v", err)
		}
		var text string
		h.eval(`document.getElementById("x").textContent`, &text)
		if text != "hi" {
			t.Fatalf("text %q", text)
		}
	})
	t.Run("window.open data refused", func(t *testing.T) {
		h := start(t, session.Profile{}, nil)
		if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=data-opener"); err != nil {
			t.Fatal(err)
		}
		opener := h.s.FocusedTab()
		h.eval(`window.open("data:text/html,<title>evil</title><h1>evil</h1>", "_blank"), true`, nil)
		popup := wdtest.WaitEvent(t, h.rec, 30*time.Second, func(e events.TabCreatedEvent) bool { return e.OpenerID == opener }).TargetID
		// Chromium refuses renderer-initiated top-level data: navigations
		// itself, and the after-commit check would leave one; the popup must
		// be closed or on a blank page, never on the data: URL.
		cs, err := h.s.PageSession(popup)
		if err == nil {
			var href string
			if err := pagejs.Evaluate(h.ctx, cs, "location.href", &href); err == nil && strings.HasPrefix(href, "data:") {
				t.Fatalf("popup is on %q", href)
			}
		}
		for _, tab := range h.s.Tabs() {
			if strings.HasPrefix(tab.URL, "data:") {
				t.Fatalf("tab on a data: URL: %+v", tab)
			}
		}
	})
}

func TestSecurityCustomPolicyPerDeployment(t *testing.T) {
	veto := URLPolicyFunc(func(_ context.Context, r URLRequest) error {
		if strings.Contains(r.URL, "/security-secret") {
			return &BlockedURLError{URL: r.URL, Kind: r.Kind, Reason: "secret area"}
		}
		return nil
	})
	h := start(t, session.Profile{}, veto)
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=custom"); err != nil {
		t.Fatalf("allowed by the custom policy: %v", err)
	}
	_, err := h.navigate(h.env.Server.URL1 + "/security-secret.html")
	var be *BlockedURLError
	if !errors.As(err, &be) || be.Reason != "secret area" {
		t.Fatalf("err = %v, want the custom veto", err)
	}
	// A link the page follows itself is intercepted too.
	h.eval(`location.href = "/redirect?to=" + encodeURIComponent("/security-secret-2.html"), true`, nil)
	e := h.waitBlock("/security-secret-2.html")
	if e.Details["kind"] != string(KindRedirect) {
		t.Fatalf("kind %q", e.Details["kind"])
	}
	for _, p := range []string{"/security-secret.html", "/security-secret-2.html"} {
		if n := h.env.Server.Hits(testbrowser.Site1, p); n != 0 {
			t.Fatalf("%s got %d requests", p, n)
		}
	}
}

func TestSecurityBlockIPAddresses(t *testing.T) {
	h := start(t, session.Profile{BlockIPAddresses: true}, nil)
	if _, err := h.navigate(h.env.Server.URL2 + "/other.html?sec=ip-allowed"); err != nil {
		t.Fatalf("localhost (a name) must be allowed: %v", err)
	}
	const p = "/security-ip.html"
	_, err := h.navigate(h.env.Server.URL1 + p)
	var be *BlockedURLError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "ip") {
		t.Fatalf("err = %v, want an IP block", err)
	}
	// A page link to the IP site is intercepted before the request.
	h.eval(`location.href = `+jsString(h.env.Server.URL1+p+"?via=link")+`, true`, nil)
	e := h.waitBlock(p + "?via=link")
	if e.Details["kind"] != string(KindNavigate) {
		t.Fatalf("kind %q", e.Details["kind"])
	}
	if n := h.env.Server.Hits(testbrowser.Site1, p); n != 0 {
		t.Fatalf("IP site got %d requests", n)
	}
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// A blob: document never passes request interception; the after-commit
// check leaves it for about:blank.
func TestSecurityBlobCheckedAfterCommit(t *testing.T) {
	noBlob := URLPolicyFunc(func(_ context.Context, r URLRequest) error {
		if strings.HasPrefix(r.URL, "blob:") {
			return &BlockedURLError{URL: r.URL, Kind: r.Kind, Reason: "no blob documents"}
		}
		return nil
	})
	h := start(t, session.Profile{}, noBlob)
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=blob"); err != nil {
		t.Fatal(err)
	}
	h.eval(`location.href = URL.createObjectURL(new Blob(["<title>blob</title><h1>blob page</h1>"], {type: "text/html"})), true`, nil)
	e := h.waitBlock("blob:")
	t.Logf("blob report: %+v", e.Details)
	if e.Details["kind"] != string(KindNavigate) {
		t.Fatalf("kind %q", e.Details["kind"])
	}
	waitFor(t, "tab off the blob: page", func() bool { return h.href("") == "about:blank" })
}

// A data: iframe never reaches Fetch: it is refused after it committed and
// replaced by about:blank, and the refusal is reported as a sub-frame one.
func TestSecurityDataIframeReplaced(t *testing.T) {
	h := start(t, session.Profile{}, nil)
	if _, err := h.navigate(h.env.URL("/security-dataframe.html")); err != nil {
		t.Fatal(err)
	}
	e := h.waitBlock("data:text/html")
	if e.Details["kind"] != string(KindSubframe) {
		t.Fatalf("kind %q, want subframe: %+v", e.Details["kind"], e.Details)
	}
	cs, err := h.s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the data: frame replaced by about:blank", func() bool {
		tree, err := cdpproto.Call(h.ctx, cs, page.GetFrameTree, cdpproto.Empty{})
		if err != nil || tree.FrameTree == nil || len(tree.FrameTree.ChildFrames) != 1 {
			return false
		}
		return tree.FrameTree.ChildFrames[0].Frame.URL == "about:blank"
	})
}

// A domain pattern that does not parse fails the session's Start, naming
// the pattern, instead of silently matching nothing.
func TestSecurityInvalidPatternFailsStart(t *testing.T) {
	env := testbrowser.Start(t)
	for _, c := range []struct {
		name string
		prof session.Profile
		cfg  Config
		want string
	}{
		{"profile allowed", session.Profile{AllowedDomains: []string{"example.com", "exa mple.com"}}, Config{}, `AllowedDomains[1]`},
		{"profile prohibited", session.Profile{ProhibitedDomains: []string{"evil.test:http"}}, Config{}, `ProhibitedDomains[0]`},
		{"configured policy", session.Profile{}, Config{Policy: &DomainPolicy{Prohibited: []string{"*.evil.test/path"}}}, `Prohibited[0]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			prof := c.prof
			prof.CDPURL = env.Browser.WebSocketURL()
			s := session.New(prof, session.WithWatchdogs(New(c.cfg)))
			err := s.Start(wdtest.Ctx(t))
			if err == nil {
				_ = s.Stop(wdtest.Ctx(t))
				t.Fatal("Start succeeded with an invalid domain pattern")
			}
			var pe *PatternError
			t.Logf("Start: %v", err)
			if !errors.Is(err, urlmatch.ErrInvalidPattern) || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start = %v, want a PatternError for %s wrapping urlmatch.ErrInvalidPattern", err, c.want)
			}
			if s.Running() {
				t.Fatal("session running after a failed Start")
			}
		})
	}
}

// gatedPolicy refuses URLs containing refuse once closed is set: a URL
// that committed while allowed is then a tab on a refused URL of which the
// commit watcher saw no event — what a lost Target.targetInfoChanged leaves.
type gatedPolicy struct {
	closed atomic.Bool
	refuse string
}

func (g *gatedPolicy) CheckURL(_ context.Context, r URLRequest) error {
	if g.closed.Load() && strings.Contains(r.URL, g.refuse) {
		return &BlockedURLError{URL: r.URL, Kind: r.Kind, Reason: "closed after the fact"}
	}
	return nil
}

// The commit watcher's Resync re-checks every tab's current URL. An
// overflow of the real connection's buffer cannot be forced from a test (the
// session has no connection option), so the Resync function is called
// directly with a tab that sits on a refused URL no event announced.
func TestSecurityCommitResync(t *testing.T) {
	gate := &gatedPolicy{refuse: "sec=resync-refused"}
	h := start(t, session.Profile{}, gate)
	refused := h.env.Server.URL1 + "/other.html?sec=resync-refused"
	if _, err := h.navigate(refused); err != nil {
		t.Fatal(err)
	}
	tab := h.s.FocusedTab()
	res, err := bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: h.env.Server.URL1 + "/other.html?sec=resync-allowed", NewTab: true})
	if err != nil {
		t.Fatal(err)
	}
	other := res.TargetID
	if other == "" || other == tab {
		t.Fatalf("second tab %q (first %q)", other, tab)
	}
	gate.closed.Store(true)
	if b := h.blocks(); len(b) != 0 {
		t.Fatalf("reports before the resync: %+v", b)
	}

	h.w.resyncCommits(h.ctx, h.s.Conn())

	e := h.waitBlock("sec=resync-refused")
	if e.Details["target"] != tab || e.Details["kind"] != string(KindNavigate) || !strings.Contains(e.Details["action"], "about:blank") {
		t.Fatalf("report %+v, want tab %s left for about:blank", e.Details, tab)
	}
	waitFor(t, "the tab left for about:blank", func() bool { return h.href(tab) == "about:blank" })
	if href := h.href(other); !strings.Contains(href, "sec=resync-allowed") {
		t.Fatalf("the allowed tab moved to %q", href)
	}
	if b := h.blocks(); len(b) != 1 {
		t.Fatalf("reports %+v, want exactly one", b)
	}
}

// The interception consumer's Resync re-checks the committed sub-frames
// (the Page.frameNavigated events it may have lost); called directly, as
// above, on a data: iframe that committed while the policy allowed it.
func TestSecurityFrameResync(t *testing.T) {
	gate := &gatedPolicy{refuse: "data:"}
	h := start(t, session.Profile{}, gate)
	if _, err := h.navigate(h.env.URL("/security-dataframe.html")); err != nil {
		t.Fatal(err)
	}
	cs, err := h.s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	frameURL := func() string {
		tree, err := cdpproto.Call(h.ctx, cs, page.GetFrameTree, cdpproto.Empty{})
		if err != nil || tree.FrameTree == nil || len(tree.FrameTree.ChildFrames) != 1 {
			return ""
		}
		return tree.FrameTree.ChildFrames[0].Frame.URL
	}
	waitFor(t, "the data: frame", func() bool { return strings.HasPrefix(frameURL(), "data:") })
	gate.closed.Store(true)

	h.w.resyncTarget(h.ctx, &intercepted{sess: cs, kind: session.TargetPage, seen: map[fetch.RequestID]bool{}})

	e := h.waitBlock("data:text/html")
	if e.Details["kind"] != string(KindSubframe) {
		t.Fatalf("kind %q, want subframe: %+v", e.Details["kind"], e.Details)
	}
	waitFor(t, "the data: frame replaced by about:blank", func() bool { return frameURL() == "about:blank" })
}
