package actions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// formSite serves the fixture pages of the network-evidence tests on
// loopback: forms and scripts whose requests answer 500, 422, 200 with an
// error banner, a redirect, or never (until the test ends).
func formSite(t testing.TB) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	form := func(action, extra string) string {
		return `<!doctype html><html><body><form method="post" action="` + action + `">` +
			`<input name="q" value="x"><button id="send">Send</button></form>` + extra + `</body></html>`
	}
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/form500", page(form("/submit500", "")))
	mux.HandleFunc("/submit500", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `<!doctype html><html><body><form method="post" action="/submit500"><input name="q" value="x"><button id="send">Send</button></form></body></html>`)
	})
	mux.HandleFunc("/formbanner", page(form("/banner", "")))
	mux.HandleFunc("/banner", page(`<!doctype html><html><body><div class="error">Invalid input, try again</div></body></html>`))
	mux.HandleFunc("/formprg", page(form("/prg", "")))
	mux.HandleFunc("/prg", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/thanks", http.StatusFound)
	})
	mux.HandleFunc("/thanks", page(`<!doctype html><html><body><h1>Thanks</h1></body></html>`))
	mux.HandleFunc("/xhr", page(`<!doctype html><html><body><button id="send" onclick="fetch('/api', {method: 'POST', body: 'q=1'}).catch(() => {})">Save</button>`+
		`<button id="slow" onclick="fetch('/hang', {method: 'POST'}).catch(() => {})">Slow</button>`+
		`<button id="noop" onclick="void 0">Nothing</button>`+
		`<button id="pixel" onclick="new Image().src = '/img?p=' + Math.random()">Pixel</button>`+
		`<button id="grow" onclick="document.body.appendChild(document.createElement('p'))">Grow</button>`+
		`<button id="search" onclick="fetch('/results').then(r => r.text()).then(t => { const p = document.createElement('p'); p.textContent = t; document.body.appendChild(p) })">Search</button></body></html>`))
	mux.HandleFunc("/results", func(w http.ResponseWriter, r *http.Request) {
		// Slower than the 150 ms settle look: only waiting for the
		// answer sees the page change.
		select {
		case <-time.After(400 * time.Millisecond):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "3 results")
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":"invalid"}`)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	// A link to a page that never answers: the server accepts the
	// connection and holds it until the test ends.
	mux.HandleFunc("/linknever", page(`<!doctype html><html><body><a id="go" href="/never">Never</a></body></html>`))
	mux.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `<!doctype html><html><body>Not here</body></html>`)
	})
	// A page of 40 images, for the navigation benchmark.
	mux.HandleFunc("/many", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><body>`)
		for i := 0; i < 40; i++ {
			fmt.Fprintf(w, `<img src="/img?i=%d&v=%s">`, i, r.URL.Query().Get("v"))
		}
		fmt.Fprint(w, `</body></html>`)
	})
	mux.HandleFunc("/img", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/gif")
		w.Write([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b"))
	})
	srv := httptest.NewServer(mux)
	// A page on 127.0.0.1 framing /xhr from localhost: another site, so
	// the frame is a target of its own (out of process).
	mux.HandleFunc("/outer", page(`<!doctype html><html><body><iframe src="`+strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+`/xhr"></iframe></body></html>`))
	// A page whose script posts telemetry to another site every 50 ms,
	// answered 422: never an action's request.
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	mux.HandleFunc("/v1/t", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.WriteHeader(http.StatusUnprocessableEntity)
	})
	mux.HandleFunc("/telemetry", page(`<!doctype html><html><body><button id="noop" onclick="void 0">Nothing</button>`+
		`<script>setInterval(() => fetch('`+other+`/v1/t', {method: 'POST', body: 'e=1'}).catch(() => {}), 50)</script></body></html>`))
	// A button that inserts an iframe (a document of its own, slow) and
	// then posts, answered 422.
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><p>frame</p>`)
	})
	mux.HandleFunc("/framepost", page(`<!doctype html><html><body><button id="send" onclick="`+
		`const f = document.createElement('iframe'); f.src = '/slow'; document.body.appendChild(f); `+
		`setTimeout(() => fetch('/api', {method: 'POST', body: 'q=1'}).catch(() => {}), 20)">Save</button></body></html>`))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

// startSite starts a session with the actions watchdog on url.
func startSite(t testing.TB, p session.Profile, url string) *harness {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p.CDPURL, p.ConnectTab = env.Browser.WebSocketURL(), session.ConnectTabNew
	s := session.New(p, session.WithWatchdogs(New(Config{})))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	at := &harness{t: t, ctx: ctx, s: s, env: env}
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: url}); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
	return at
}

func (at *harness) clickSel(selector string) (events.ClickResult, error) {
	at.t.Helper()
	return bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el(selector)})
}

// find returns the listed request with method and path.
func find(rs []events.Request, method, path string) (events.Request, bool) {
	for _, r := range rs {
		if r.Method == method && strings.HasSuffix(strings.SplitN(r.URL, "?", 2)[0], path) {
			return r, true
		}
	}
	return events.Request{}, false
}

func TestFormPost500IsFailed(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/form500")
	res, err := at.clickSel("#send")
	if !errors.Is(err, events.ErrRequestFailed) {
		t.Fatalf("err = %v, want one wrapping ErrRequestFailed (outcome %+v)", err, res.Outcome)
	}
	var re *events.RequestError
	if !errors.As(err, &re) || re.Request.Status != 500 || re.Request.Method != "POST" {
		t.Fatalf("RequestError = %+v", re)
	}
	var ae *events.ActionError
	if !errors.As(err, &ae) || ae.Outcome.Verdict != events.VerdictFailed {
		t.Fatalf("ActionError = %+v", ae)
	}
	o := res.Outcome
	want := "POST " + srv.URL + "/submit500 answered 500"
	if o.Verdict != events.VerdictFailed || !strings.Contains(o.Detail, want) {
		t.Fatalf("outcome = %s %q, want failed naming %q", o.Verdict, o.Detail, want)
	}
	if r, ok := find(o.Requests, "POST", "/submit500"); !ok || r.Status != 500 || r.Type != "Document" {
		t.Fatalf("requests = %+v, want the POST with 500", o.Requests)
	}

	// The page answered looks like the form it came from: the same
	// verdict, though the fingerprint alone might say otherwise.
	res, err = at.clickSel("#send")
	if !errors.Is(err, events.ErrRequestFailed) || res.Outcome.Verdict != events.VerdictFailed {
		t.Fatalf("second submit: %v, %s %q", err, res.Outcome.Verdict, res.Outcome.Detail)
	}
}

func TestFormPost200WithBannerKeepsPageVerdict(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/formbanner")
	res, err := at.clickSel("#send")
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	o := res.Outcome
	if o.Verdict != events.VerdictNavigated {
		t.Fatalf("verdict = %s %q, want navigated", o.Verdict, o.Detail)
	}
	if r, ok := find(o.Requests, "POST", "/banner"); !ok || r.Status != 200 || r.Failed() || r.Pending {
		t.Fatalf("requests = %+v, want the POST answered 200", o.Requests)
	}
	if got := at.str(`document.querySelector('.error').textContent`); !strings.Contains(got, "Invalid") {
		t.Fatalf("banner = %q", got)
	}
}

func TestFetchPost422IsFailed(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/xhr")
	res, err := at.clickSel("#send")
	if !errors.Is(err, events.ErrRequestFailed) {
		t.Fatalf("err = %v (outcome %+v)", err, res.Outcome)
	}
	o := res.Outcome
	if o.Verdict != events.VerdictFailed || !strings.Contains(o.Detail, "POST "+srv.URL+"/api answered 422") {
		t.Fatalf("outcome = %s %q", o.Verdict, o.Detail)
	}
	if r, ok := find(o.Requests, "POST", "/api"); !ok || r.Type != "Fetch" || r.Status != 422 {
		t.Fatalf("requests = %+v", o.Requests)
	}
}

func TestPostRedirectGetIsNotFailed(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/formprg")
	res, err := at.clickSel("#send")
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	o := res.Outcome
	if o.Verdict != events.VerdictNavigated || !strings.HasSuffix(o.After.URL, "/thanks") {
		t.Fatalf("outcome = %s %q at %s", o.Verdict, o.Detail, o.After.URL)
	}
	post, ok := find(o.Requests, "POST", "/prg")
	get, ok2 := find(o.Requests, "GET", "/thanks")
	if !ok || !ok2 || post.Status != 302 || get.Status != 200 || post.Failed() || get.Failed() {
		t.Fatalf("requests = %+v, want POST 302 then GET 200", o.Requests)
	}
}

func TestClickWithoutRequestListsNone(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/xhr")
	res, err := at.clickSel("#noop")
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictNoChange || len(res.Outcome.Requests) != 0 {
		t.Fatalf("outcome = %s %q, requests %+v", res.Outcome.Verdict, res.Outcome.Detail, res.Outcome.Requests)
	}
}

func TestPendingWriteIsUnconfirmed(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{RequestWait: 300 * time.Millisecond}, srv.URL+"/xhr")
	res, err := at.clickSel("#slow")
	if err != nil {
		t.Fatalf("click: %v (%+v)", err, res.Outcome)
	}
	o := res.Outcome
	r, ok := find(o.Requests, "POST", "/hang")
	if !ok || !r.Pending || !r.Unconfirmed() || r.Failed() {
		t.Fatalf("requests = %+v, want the POST pending", o.Requests)
	}
	if o.Verdict == events.VerdictFailed || !strings.Contains(o.Detail, "unconfirmed") {
		t.Fatalf("outcome = %s %q, want not failed, unconfirmed in Detail", o.Verdict, o.Detail)
	}
}

func TestNavigationTo404StatesStatus(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/xhr")
	res, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + "/missing"})
	if err != nil {
		t.Fatalf("navigate: %v", err)
	}
	o := res.Outcome
	if o.Verdict != events.VerdictNavigated || !strings.Contains(o.Detail, "GET "+srv.URL+"/missing answered 404") {
		t.Fatalf("outcome = %s %q", o.Verdict, o.Detail)
	}
}

func TestCrossSiteFrameRequestIsListed(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/outer")
	fs := at.frame("localhost")
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.node(fs, "#send")})
	if !errors.Is(err, events.ErrRequestFailed) {
		t.Fatalf("err = %v (outcome %+v)", err, res.Outcome)
	}
	if r, ok := find(res.Outcome.Requests, "POST", "/api"); !ok || r.Status != 422 || !strings.HasPrefix(r.URL, "http://localhost:") {
		t.Fatalf("requests = %+v", res.Outcome.Requests)
	}
}

func TestSlowReadingFetchIsAwaited(t *testing.T) {
	srv := formSite(t)
	// Bounds far above the answer's 400 ms: a busy machine may be slow.
	at := startSite(t, session.Profile{RequestWait: 20 * time.Second, ReadWait: 10 * time.Second}, srv.URL+"/xhr")
	res, err := at.clickSel("#search")
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	o := res.Outcome
	if r, ok := find(o.Requests, "GET", "/results"); !ok || r.Status != 200 || r.Type != "Fetch" {
		t.Fatalf("requests = %+v", o.Requests)
	}
	if o.Verdict != events.VerdictChanged {
		t.Fatalf("verdict = %s %q, want changed (the answer was shown)", o.Verdict, o.Detail)
	}
}

// TestBackgroundTelemetryDoesNotDecide: a page posting to another site
// every 50 ms, answered 422 (or blocked by the URL policy), does not make
// a click on a button that does nothing failed; the third-party requests
// are listed, not the page's own.
func TestBackgroundTelemetryDoesNotDecide(t *testing.T) {
	for _, c := range []struct {
		name string
		p    session.Profile
	}{
		{"answered 422", session.Profile{}},
		{"blocked by policy", session.Profile{AllowedDomains: []string{"127.0.0.1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := formSite(t)
			at := startSite(t, c.p, srv.URL+"/telemetry")
			// The page posts every 50 ms; a click's outcome may be over
			// before one of them failed: click until one did, each click
			// no_change whatever its window held.
			deadline := time.Now().Add(30 * time.Second)
			for seen := false; !seen; {
				if time.Now().After(deadline) {
					t.Fatal("no click's outcome listed a failed telemetry post in 30 s")
				}
				res, err := at.clickSel("#noop")
				if err != nil {
					t.Fatalf("click: %v (outcome %s %q)", err, res.Outcome.Verdict, res.Outcome.Detail)
				}
				o := res.Outcome
				if o.Verdict != events.VerdictNoChange || strings.Contains(o.Detail, "/v1/t") {
					t.Fatalf("outcome = %s %q, want no_change", o.Verdict, o.Detail)
				}
				for _, r := range o.Requests {
					if r.Own {
						t.Fatalf("request %+v listed as the page's own", r)
					}
					seen = seen || strings.HasSuffix(r.URL, "/v1/t") && r.Failed()
				}
			}
		})
	}
}

// TestFrameDocumentDoesNotHideTheFailedWrite: a click that inserts an
// iframe and then posts: the frame's document is not a navigation of the
// tab, so the POST answered 422 after it still fails the click.
func TestFrameDocumentDoesNotHideTheFailedWrite(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/framepost")
	res, err := at.clickSel("#send")
	if !errors.Is(err, events.ErrRequestFailed) {
		t.Fatalf("err = %v (outcome %s %q, requests %+v)", err, res.Outcome.Verdict, res.Outcome.Detail, res.Outcome.Requests)
	}
	doc, ok := find(res.Outcome.Requests, "GET", "/slow")
	if !ok || doc.Type != "Document" || doc.Navigation || !doc.Own {
		t.Fatalf("requests = %+v, want the frame's document, not a navigation", res.Outcome.Requests)
	}
}

// TestZeroMarkListsNoRequests: an outcome computed from an Evidence the
// session did not read (a custom watchdog's events.Evidence{}) lists no
// requests and decides nothing from them.
func TestZeroMarkListsNoRequests(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/xhr")
	if _, err := at.clickSel("#send"); !errors.Is(err, events.ErrRequestFailed) {
		t.Fatalf("click: %v, want the 422", err)
	}
	o := at.s.Outcome(at.ctx, events.Evidence{}, nil)
	if len(o.Requests) != 0 || o.Verdict == events.VerdictFailed {
		t.Fatalf("outcome %s %q, requests %+v: want none listed", o.Verdict, o.Detail, o.Requests)
	}
}

// TestClickLinkToNeverAnsweringPage: a click on a link whose server never
// answers ends with a verdict naming the navigation still unanswered, not
// with the click's bus timeout. The old document stays (the new one never
// committed): no_change.
func TestClickLinkToNeverAnsweringPage(t *testing.T) {
	srv := formSite(t)
	at := startSite(t, session.Profile{}, srv.URL+"/linknever")
	start := time.Now()
	res, err := at.clickSel("#go")
	t.Logf("click returned after %v", time.Since(start))
	if err != nil {
		t.Fatalf("click: %v (outcome %s %q)", err, res.Outcome.Verdict, res.Outcome.Detail)
	}
	o := res.Outcome
	want := "GET " + srv.URL + "/never has no answer yet"
	if o.Verdict != events.VerdictNoChange || !strings.Contains(o.Detail, want) {
		t.Fatalf("outcome = %s %q, want no_change naming %q", o.Verdict, o.Detail, want)
	}
	if r, ok := find(o.Requests, "GET", "/never"); !ok || !r.Pending || !r.Navigation {
		t.Fatalf("requests = %+v, want the navigation pending", o.Requests)
	}
}
