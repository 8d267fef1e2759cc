package session_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// TestBlockedRequestFailsTheAction: a form's POST the URL policy refuses
// (the security watchdog pauses it with Fetch and fails it) is listed as
// blocked, and the action that sent it failed. (A fetch to a refused
// other site is a third-party request: listed, deciding nothing; see
// watchdogs/actions TestBackgroundTelemetryDoesNotDecide.)
func TestBlockedRequestFailsTheAction(t *testing.T) {
	hits := make(chan struct{}, 10)
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		hits <- struct{}{}
		w.Header().Set("Access-Control-Allow-Origin", "*")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	refused := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/api"
	mux.HandleFunc("/page", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><html><body><form method="post" action="%s"><input name="q" value="x"><button id="b">Send</button></form></body></html>`, refused)
	})

	s, _ := start(t, session.Profile{ProhibitedDomains: []string{"localhost"}},
		session.WithWatchdogs(actions.New(actions.Config{}), security.New(security.Config{})))
	navigate(t, s, srv.URL+"/page", false)
	res, err := bus.Call(ctxT(t), s.Bus(), events.ClickElement, events.ClickElementEvent{Target: element(t, s, "#b")})
	var re *events.RequestError
	if !errors.Is(err, events.ErrRequestFailed) || !errors.As(err, &re) || !re.Request.Blocked {
		t.Fatalf("err = %v (%+v), want a blocked request's failure; outcome %+v", err, re, res.Outcome)
	}
	if res.Outcome.Verdict != events.VerdictFailed || !strings.Contains(res.Outcome.Detail, "POST "+refused+" was blocked by policy") {
		t.Fatalf("outcome %s %q", res.Outcome.Verdict, res.Outcome.Detail)
	}
	if len(hits) != 0 {
		t.Fatalf("the refused request reached the server")
	}
}

// TestForeignTabRequestsAreNotRecorded: in a connected browser, the
// requests of a tab that is not the session's (the user's) are not
// recorded: the session's request mark does not move while that tab loads
// a page.
func TestForeignTabRequestsAreNotRecorded(t *testing.T) {
	u := newUserBrowser(t)
	a := u.connect(t, session.Profile{ConnectTab: session.ConnectTabNew})
	user := u.open(t, "/index.html")
	poll(t, "the session attached the user's tab", func() bool {
		_, err := a.PageSession(string(user))
		return err == nil
	})
	before := a.Evidence(ctxT(t)).RequestMark
	want := u.env.URL("/other.html")
	if err := testbrowser.Eval(u.pages[user], `setTimeout(() => { location.href = `+jsString(want)+` }, 0)`, nil); err != nil {
		t.Fatal(err)
	}
	poll(t, "the user's tab loaded another page", func() bool { return u.href(t, user) == want })
	if after := a.Evidence(ctxT(t)).RequestMark; after != before {
		t.Fatalf("request mark moved %d → %d: the user's tab's requests were recorded", before, after)
	}
}

// TestPendingNavigationIsNotAnUnresponsivePage: while a link's navigation
// has no answer (its server never answers), Chromium holds every command
// for the page's renderer; EnsureResponsive says so with
// ErrNavigationPending instead of waiting out its probes and interrupting
// the page's script, which is not at fault.
func TestPendingNavigationIsNotAnUnresponsivePage(t *testing.T) {
	release, asked := make(chan struct{}), make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><body><a id="go" href="/never">Never</a></body></html>`)
	})
	mux.HandleFunc("/never", func(_ http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})

	s, _ := start(t, session.Profile{})
	navigate(t, s, srv.URL+"/page", false)
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, `setTimeout(() => document.getElementById('go').click(), 0)`, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-ctxT(t).Done():
		t.Fatal("the link's request never reached the server")
	}
	interrupted, err := s.EnsureResponsive(ctxT(t), "")
	if !errors.Is(err, session.ErrNavigationPending) || interrupted {
		t.Fatalf("EnsureResponsive = %v, %v; want ErrNavigationPending, not interrupted", interrupted, err)
	}
	if got := s.TakeInterrupts(""); len(got) != 0 {
		t.Fatalf("interrupts %q: the page's script was stopped", got)
	}
	if ev := s.Evidence(ctxT(t)); ev.Fingerprint != "" || ev.URL != srv.URL+"/page" {
		t.Fatalf("evidence %+v, want the old URL and no fingerprint read", ev)
	}
}
