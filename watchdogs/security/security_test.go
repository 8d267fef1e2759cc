package watchdogs

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// secHarness is a started session with the security watchdog and a record
// of the BrowserError events it emitted.
type secHarness struct {
	t   *testing.T
	env *testbrowser.Env
	s   *session.Session
	w   *Security
	ctx context.Context

	mu     sync.Mutex
	errs   []events.BrowserErrorEvent
	notify chan struct{}
}

func secStart(t *testing.T, prof session.Profile, policy URLPolicy) *secHarness {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	prof.CDPURL = env.Browser.WebSocketURL()
	w := NewSecurity(policy)
	s := session.New(prof, session.WithWatchdogs(w))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if err := s.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	h := &secHarness{t: t, env: env, s: s, w: w, ctx: ctx, notify: make(chan struct{}, 1)}
	_, err := bus.Handle(s.Bus(), events.BrowserError, "sectest", func(_ context.Context, e events.BrowserErrorEvent) (events.None, error) {
		h.mu.Lock()
		h.errs = append(h.errs, e)
		h.mu.Unlock()
		select {
		case h.notify <- struct{}{}:
		default:
		}
		return events.None{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *secHarness) navigate(u string) (events.NavigateResult, error) {
	return bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u})
}

// waitBlock waits for a NavigationBlocked report whose url contains sub.
func (h *secHarness) waitBlock(sub string) events.BrowserErrorEvent {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		h.mu.Lock()
		for _, e := range h.errs {
			if e.Type == "NavigationBlocked" && strings.Contains(e.Details["url"], sub) {
				h.mu.Unlock()
				return e
			}
		}
		h.mu.Unlock()
		select {
		case <-h.notify:
		case <-deadline:
			h.t.Fatalf("no NavigationBlocked report for %q; reports: %+v", sub, h.errs)
		}
	}
}

// waitFor polls cond (bounded generously; no timing assertions).
func secWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *secHarness) eval(expr string, out any) {
	h.t.Helper()
	cs, err := h.s.PageSession("")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := evaluate(h.ctx, cs, expr, out); err != nil {
		h.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

func secHost(raw string) string {
	u, _ := url.Parse(raw)
	return u.Hostname()
}

func TestSecurityAllowedNavigation(t *testing.T) {
	h := secStart(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
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
	h := secStart(t, session.Profile{ProhibitedDomains: []string{"localhost"}}, nil)
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
	h := secStart(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
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
	secWaitFor(t, "tab off the blocked URL", func() bool {
		var href string
		h.eval("location.href", &href)
		return secHost(href) != "localhost"
	})
}

func TestSecurityPopupToBlockedDomain(t *testing.T) {
	h := secStart(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=opener"); err != nil {
		t.Fatal(err)
	}
	const p = "/security-popup-target.html"
	created := make(chan events.TabCreatedEvent, 4)
	if _, err := bus.Handle(h.s.Bus(), events.TabCreated, "sectest", func(_ context.Context, e events.TabCreatedEvent) (events.None, error) {
		created <- e
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h.eval(`window.open(`+secJSString(h.env.Server.URL2+p)+`, "_blank"), true`, nil)
	e := h.waitBlock(p)
	if e.Details["kind"] != string(KindNewTab) {
		t.Fatalf("kind = %q, want new_tab", e.Details["kind"])
	}
	popup := e.Details["target"]
	if popup == "" || popup == h.s.FocusedTab() {
		t.Fatalf("block reported for target %q", popup)
	}
	secWaitFor(t, "popup closed", func() bool {
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
		if secHost(tab.URL) == "localhost" {
			t.Fatalf("a tab is on the blocked site: %+v", h.s.Tabs())
		}
	}
}

func TestSecurityCrossSiteIframeBlocked(t *testing.T) {
	h := secStart(t, session.Profile{AllowedDomains: []string{"127.0.0.1"}}, nil)
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
	secWaitFor(t, "same-site iframe", func() bool {
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
		h := secStart(t, session.Profile{}, nil)
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
		h := secStart(t, session.Profile{}, allowAll)
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
		h := secStart(t, session.Profile{}, nil)
		if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=data-opener"); err != nil {
			t.Fatal(err)
		}
		created := make(chan events.TabCreatedEvent, 4)
		if _, err := bus.Handle(h.s.Bus(), events.TabCreated, "sectest", func(_ context.Context, e events.TabCreatedEvent) (events.None, error) {
			created <- e
			return events.None{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		opener := h.s.FocusedTab()
		h.eval(`window.open("data:text/html,<title>evil</title><h1>evil</h1>", "_blank"), true`, nil)
		var popup string
		select {
		case e := <-created:
			if e.OpenerID != opener {
				t.Fatalf("unexpected tab %+v", e)
			}
			popup = e.TargetID
		case <-time.After(30 * time.Second):
			t.Fatal("the popup never appeared")
		}
		// Chromium refuses renderer-initiated top-level data: navigations
		// itself, and the after-commit check would leave one; the popup must
		// be closed or on a blank page, never on the data: URL.
		cs, err := h.s.PageSession(popup)
		if err == nil {
			var href string
			if err := evaluate(h.ctx, cs, "location.href", &href); err == nil && strings.HasPrefix(href, "data:") {
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
	h := secStart(t, session.Profile{}, veto)
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
	h := secStart(t, session.Profile{BlockIPAddresses: true}, nil)
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
	h.eval(`location.href = `+secJSString(h.env.Server.URL1+p+"?via=link")+`, true`, nil)
	e := h.waitBlock(p + "?via=link")
	if e.Details["kind"] != string(KindNavigate) {
		t.Fatalf("kind %q", e.Details["kind"])
	}
	if n := h.env.Server.Hits(testbrowser.Site1, p); n != 0 {
		t.Fatalf("IP site got %d requests", n)
	}
}

func secJSString(s string) string {
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
	h := secStart(t, session.Profile{}, noBlob)
	if _, err := h.navigate(h.env.Server.URL1 + "/other.html?sec=blob"); err != nil {
		t.Fatal(err)
	}
	h.eval(`location.href = URL.createObjectURL(new Blob(["<title>blob</title><h1>blob page</h1>"], {type: "text/html"})), true`, nil)
	e := h.waitBlock("blob:")
	t.Logf("blob report: %+v", e.Details)
	if e.Details["kind"] != string(KindNavigate) {
		t.Fatalf("kind %q", e.Details["kind"])
	}
	secWaitFor(t, "tab off the blob: page", func() bool {
		var href string
		cs, err := h.s.PageSession("")
		if err != nil {
			return false
		}
		if evaluate(h.ctx, cs, "location.href", &href) != nil {
			return false // navigating
		}
		return href == "about:blank"
	})
}

// A data: iframe never reaches Fetch: it is refused after it committed and
// replaced by about:blank, and the refusal is reported as a sub-frame one.
func TestSecurityDataIframeReplaced(t *testing.T) {
	h := secStart(t, session.Profile{}, nil)
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
	secWaitFor(t, "the data: frame replaced by about:blank", func() bool {
		tree, err := cdpproto.Call(h.ctx, cs, page.GetFrameTree, cdpproto.Empty{})
		if err != nil || tree.FrameTree == nil || len(tree.FrameTree.ChildFrames) != 1 {
			return false
		}
		return tree.FrameTree.ChildFrames[0].Frame.URL == "about:blank"
	})
}
