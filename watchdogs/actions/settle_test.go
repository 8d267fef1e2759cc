package actions

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// settleSite serves pages whose controls navigate late: from a zero-delay
// timer, from a promise callback, from a checkbox's change handler; and
// a page whose load handler fetches its content from a slow endpoint.
func settleSite(t testing.TB) *httptest.Server {
	t.Helper()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><html><body>`+body+`</body></html>`)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/late", page(`<button id="timer" onclick="setTimeout(() => { location.href = '/next' }, 0)">Timer</button>`+
		`<form method="post" action="/next"><input name="q" value="x"></form>`+
		`<button id="promise" onclick="Promise.resolve().then(() => document.forms[0].requestSubmit())">Promise</button>`+
		`<form id="f2" action="/next"><label><input id="box" type="checkbox" name="b" onchange="this.form.submit()"> Box</label></form>`+
		`<button id="noop" onclick="void 0">Nothing</button>`))
	mux.HandleFunc("/next", page(`<h1>Next</h1>`))
	// A frame whose controls remove it: the element's document is gone
	// by the time the action reads it back, every time.
	mux.HandleFunc("/vanish", page(`<iframe id="f" srcdoc="`+
		`<input id='field' oninput='parent.document.getElementById(&quot;f&quot;).remove()'>`+
		`<label><input id='box' type='checkbox' onchange='parent.document.getElementById(&quot;f&quot;).remove()'> Box</label>`+
		`"></iframe>`))
	mux.HandleFunc("/loads", page(`<p id="out">loading</p><script>addEventListener('load', () => `+
		`fetch('/data').then(r => r.text()).then(t => { document.getElementById('out').textContent = t }))</script>`))
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) {
		// Answered well after the load event, well within the 500 ms the
		// wait after load is bounded by.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "fetched")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestLateNavigationIsNavigated: the outcome's second look no longer
// waits a fixed 150 ms; a navigation the action sets off in a task of its
// own (a zero-delay timer, a promise callback, a checkbox's change
// handler submitting its form) is still the action's: navigated, on the
// new page. With request recording off (no navigation signals to follow)
// the fixed wait still decides it.
func TestLateNavigationIsNavigated(t *testing.T) {
	srv := settleSite(t)
	for _, off := range []bool{false, true} {
		for _, sel := range []string{"#timer", "#promise", "#box"} {
			name := strings.TrimPrefix(sel, "#")
			if off {
				name += "/no-request-evidence"
			}
			t.Run(name, func(t *testing.T) {
				at := startSite(t, session.Profile{NoRequestEvidence: off}, srv.URL+"/late")
				res, err := at.clickSel(sel)
				if err != nil {
					t.Fatalf("click: %v", err)
				}
				if res.Outcome.Verdict != events.VerdictNavigated || !strings.Contains(res.Outcome.After.URL, "/next") {
					t.Fatalf("outcome = %s %q, after %s", res.Outcome.Verdict, res.Outcome.Detail, res.Outcome.After.URL)
				}
				if h := at.str(`document.querySelector('h1') ? document.querySelector('h1').textContent : ''`); h != "Next" {
					t.Fatalf("page after the click shows %q, want the next page", h)
				}
			})
		}
	}
}

// TestNoOpClickSettlesWithoutNavigation: a click that does nothing is
// no_change after the render turn, and a click right after it on the
// same page still works (the probe left nothing behind).
func TestNoOpClickSettlesWithoutNavigation(t *testing.T) {
	srv := settleSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/late")
	var settle time.Duration
	ctx := session.WithPhases(at.ctx, func(phase string, d time.Duration) {
		if phase == "settle" {
			settle += d
		}
	})
	for i := 0; i < 2; i++ {
		res, err := bus.Call(ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#noop")})
		if err != nil {
			t.Fatalf("click %d: %v", i, err)
		}
		if res.Outcome.Verdict != events.VerdictNoChange || res.Outcome.After.URL != res.Outcome.Before.URL {
			t.Fatalf("click %d: outcome = %s %q", i, res.Outcome.Verdict, res.Outcome.Detail)
		}
	}
	if settle == 0 {
		t.Fatal("no settle phase reported for a click with no visible effect")
	}
}

// TestNavigateWaitsForTheLoadHandlersFetch: a navigation returns once the
// page loaded and its network went quiet, not at a fixed pause after
// load: what the load handler fetched (answered 200 ms after it asked)
// is on the page when NavigateToURL returns.
func TestNavigateWaitsForTheLoadHandlersFetch(t *testing.T) {
	srv := settleSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/late")
	res, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + "/loads"})
	if err != nil {
		t.Fatalf("navigate: %v", err)
	}
	if res.Outcome.Detail != "" {
		t.Fatalf("navigate stopped early: %q", res.Outcome.Detail)
	}
	if got := at.str(`document.getElementById('out').textContent`); got != "fetched" {
		t.Fatalf("the page shows %q when the navigation returned, want what its load handler fetched", got)
	}
}

// TestPageLeftClassifiesChromiumErrors: the errors Chromium gives a call
// on an element of a page that navigated away, both for a call that was
// pending when the page left and for one made after, are what pageLeft
// recognises (a click whose change handler submits its form meets them
// when it reads the checked state); a script's own exception is not.
func TestPageLeftClassifiesChromiumErrors(t *testing.T) {
	srv := settleSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/late")
	ps := at.page()
	res, err := cdpproto.Call(at.ctx, ps, runtime.Evaluate, runtime.EvaluateParams{Expression: `document.querySelector('#box')`})
	if err != nil || res.Result == nil || res.Result.ObjectID == "" {
		t.Fatalf("querySelector: %v", err)
	}
	obj := res.Result.ObjectID

	thrown := pagejs.CallOn(at.ctx, ps, obj, `function(){ throw new Error('own failure') }`, nil)
	if thrown == nil || pageLeft(thrown) {
		t.Fatalf("a script's exception: err %v, pageLeft %v", thrown, pageLeft(thrown))
	}

	pending := make(chan error, 1)
	go func() {
		pending <- pagejs.CallOn(at.ctx, ps, obj, `function(){ window.pendingCall = true; return new Promise(() => {}) }`, nil)
	}()
	// The call is pending once the page ran it; then the page leaves.
	for seen := false; !seen; {
		if err := pagejs.Evaluate(at.ctx, ps, `window.pendingCall === true`, &seen); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cdpproto.Call(at.ctx, ps, page.Navigate, page.NavigateParams{URL: srv.URL + "/next"}); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	select {
	case err := <-pending:
		if err == nil || !pageLeft(err) {
			t.Fatalf("a call pending while the page left: %v, pageLeft false", err)
		}
		t.Logf("pending: %v", err)
	case <-at.ctx.Done():
		t.Fatal("the pending call never ended")
	}
	var after bool
	stale := pagejs.CallOn(at.ctx, ps, obj, checkedJS, &after)
	if stale == nil || !pageLeft(stale) {
		t.Fatalf("a call on the left page's element: %v, pageLeft false", stale)
	}
	t.Logf("stale: %v", stale)
}

// An action whose own handler takes its element's document away (here it
// removes the element's frame; a form submitted on change navigates) has
// done its part: the click and the typing succeed with a detail saying
// the value could not be read back, not an error.
func TestActionOnAVanishingDocument(t *testing.T) {
	srv := settleSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/vanish")
	ps := at.page()
	inFrame := func(id string) events.Target {
		var ready bool
		for !ready {
			at.eval(ps, `(() => { const d = document.getElementById('f').contentDocument; return !!(d && d.getElementById('`+id+`')); })()`, &ready)
		}
		return at.nodeExpr(ps, `document.getElementById('f').contentDocument.getElementById('`+id+`')`)
	}

	box := inFrame("box")
	cr, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: box})
	if err != nil || cr.Outcome.Verdict == events.VerdictFailed || !strings.Contains(cr.Outcome.Detail, "before its checked state could be read") {
		t.Fatalf("click: %v, outcome %s %q", err, cr.Outcome.Verdict, cr.Outcome.Detail)
	}
	if gone := at.str(`document.getElementById('f') ? 'frame' : 'gone'`); gone != "gone" {
		t.Fatalf("the checkbox's handler did not run: %s", gone)
	}

	if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + "/vanish"}); err != nil {
		t.Fatal(err)
	}
	field := inFrame("field")
	tr, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: field, Text: "hello"})
	if err != nil || tr.Outcome.Verdict == events.VerdictFailed || !strings.Contains(tr.Outcome.Detail, "before its value could be read back") {
		t.Fatalf("type: %v, outcome %s %q", err, tr.Outcome.Verdict, tr.Outcome.Detail)
	}
}
