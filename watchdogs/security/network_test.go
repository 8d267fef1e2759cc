package security

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// countingServer is a refused origin that counts every TCP connection and
// every request it receives, and answers each with a secret the model must
// never read.
type countingServer struct {
	addr     string
	conns    atomic.Int64
	mu       sync.Mutex
	requests []string
	srv      *http.Server
}

const secret = "SECRET-7f3c"

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingServer{addr: ln.Addr().String()}
	cs.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.requests = append(cs.requests, r.Host+r.URL.Path)
		cs.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, secret)
	})}
	go func() { _ = cs.srv.Serve(countingListener{ln, &cs.conns}) }()
	t.Cleanup(func() { _ = cs.srv.Close() })
	return cs
}

func (cs *countingServer) seen() (conns int64, reqs []string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.conns.Load(), append([]string(nil), cs.requests...)
}

// hostileSite is the allowed origin: pages that try every way out.
func hostileSite(t *testing.T, pages map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ".js"):
			w.Header().Set("Content-Type", "text/javascript")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		fmt.Fprint(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// routeAll is the guard's dialer in these tests: the allowed site is
// dialled as itself, and every host on port 8080 or the counting server's
// port — whatever its spelling — reaches the counting server, so anything
// the policy let through is counted. Anything else (the browser's own
// background requests) finds no network, as in CI.
func routeAll(allowed, refused string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	_, refusedPort, _ := net.SplitHostPort(refused)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == allowed {
			return d.DialContext(ctx, network, addr)
		}
		if _, port, _ := net.SplitHostPort(addr); port == "8080" || port == refusedPort {
			return d.DialContext(ctx, network, refused)
		}
		return nil, fmt.Errorf("no route to %s in this test", addr)
	}
}

// subresourcePage tries every kind of request against base (the refused
// origin) and sets the title to "done" when each attempt settled.
const subresourcePage = `<!doctype html><html><head>
<link rel="icon" href="{{B}}/x/favicon">
<link rel="stylesheet" href="{{B}}/x/stylesheet">
<link rel="preconnect" href="{{B}}">
<link rel="dns-prefetch" href="{{B}}">
<link rel="prefetch" href="{{B}}/x/prefetch">
<style>body { background: url({{B}}/x/css-url); }</style>
</head><body>
<img src="{{B}}/x/img">
<video src="{{B}}/x/video"></video>
<audio src="{{B}}/x/audio"></audio>
<pre id="out"></pre>
<script src="{{B}}/x/script"></script>
<script>
const B = "{{B}}";
const out = document.getElementById('out');
const settle = (p, ms = 3000) => Promise.race([p, new Promise(r => setTimeout(r, ms))]).catch(() => {});
const show = (what) => (v) => { out.textContent += what + ': ' + v + '\n'; };
const attempts = [];
attempts.push(settle(fetch(B + '/x/fetch-cors').then(r => r.text()).then(show('fetch'))));
attempts.push(settle(fetch(B + '/x/fetch-no-cors', {mode: 'no-cors'})));
attempts.push(settle(new Promise(res => {
  const x = new XMLHttpRequest();
  x.open('GET', B + '/x/xhr');
  x.onload = () => { show('xhr')(x.responseText); res(); };
  x.onerror = res;
  x.send();
})));
attempts.push(settle(new Promise(res => {
  const ws = new WebSocket(B.replace('http', 'ws') + '/x/websocket');
  ws.onopen = ws.onerror = ws.onclose = res;
})));
// Chromium sends loopback hosts around a proxy unless told not to: this
// one reaches the counting server directly if the guard is bypassed.
attempts.push(settle(new Promise(res => {
  const ws = new WebSocket('ws://localhost:{{P}}/x/websocket-loopback');
  ws.onopen = ws.onerror = ws.onclose = res;
})));
attempts.push(settle(new Promise(res => {
  const es = new EventSource(B + '/x/eventsource');
  es.onmessage = (e) => show('eventsource')(e.data);
  es.onerror = () => { es.close(); res(); };
})));
navigator.sendBeacon(B + '/x/beacon', 'data');
attempts.push(settle(new Promise(res => {
  const w = new Worker('/worker.js');
  w.onmessage = (e) => { show('worker')(e.data); res(); };
  w.onerror = res;
})));
attempts.push(settle(new Promise(res => {
  const w = new SharedWorker('/shared.js');
  w.port.onmessage = (e) => { show('shared worker')(e.data); res(); };
  w.onerror = res;
})));
// Asked once the worker controls the page (clients.claim may come after ready).
const controlled = () => navigator.serviceWorker.controller ? null :
  new Promise(r => navigator.serviceWorker.addEventListener('controllerchange', r, {once: true}));
attempts.push(settle(navigator.serviceWorker.register('/sw.js').then(controlled)
  .then(() => fetch('/via-sw')).then(r => r.text()).then(show('service worker')), 5000));
Promise.all(attempts).then(() => { document.title = 'done'; });
</script></body></html>`

const workerJS = `fetch("{{B}}/x/worker").then(r => r.text()).then(t => postMessage(t), e => postMessage('refused'));`

const sharedJS = `onconnect = (e) => { const port = e.ports[0];
fetch("{{B}}/x/shared-worker").then(r => r.text()).then(t => port.postMessage(t), () => port.postMessage('refused')); };`

// The service worker answers /via-sw with the refused origin's answer: it
// would serve refused content under an allowed URL.
const swJS = `self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  if (new URL(e.request.url).pathname === '/via-sw') {
    e.respondWith(fetch("{{B}}/x/service-worker").catch(() => new Response('refused')));
  }
});`

func fill(s, base string) string { return strings.ReplaceAll(s, "{{B}}", base) }

// blockedRecords returns the RequestBlocked events recorded so far.
func blockedRecords(h *harness) []events.RequestBlockedEvent {
	var out []events.RequestBlockedEvent
	for _, ev := range h.rec.All() {
		if e, ok := ev.(events.RequestBlockedEvent); ok {
			out = append(out, e)
		}
	}
	return out
}

// launch starts a session on a browser of its own (so that the guard is in
// the launch flags) with the security watchdog.
func launch(t *testing.T, prof session.Profile, cfg Config) *harness {
	t.Helper()
	w := New(cfg)
	s, rec, ctx := wdtest.Launch(t, prof, w)
	return &harness{t: t, s: s, w: w, rec: rec, ctx: ctx}
}

// connect starts a session on the shared test browser with the security
// watchdog.
func connect(t *testing.T, prof session.Profile, cfg Config) *harness {
	t.Helper()
	w := New(cfg)
	s, _, rec, ctx := wdtest.Connect(t, prof, w)
	return &harness{t: t, s: s, w: w, rec: rec, ctx: ctx}
}

func (h *harness) waitTitle(want string) {
	h.t.Helper()
	waitFor(h.t, "title "+want, func() bool {
		var title string
		cs, err := h.s.PageSession("")
		if err != nil {
			return false
		}
		if err := pagejs.Evaluate(h.ctx, cs, "document.title", &title); err != nil {
			return false
		}
		return title == want
	})
}

// TestRequestsScopeStopsEverySubresource loads a page on an allowed origin
// that reaches for a refused one in every way a page can; not one
// connection may reach it, and each attempt is reported.
func TestRequestsScopeStopsEverySubresource(t *testing.T) {
	requestsScopeStopsEverySubresource(t, false)
}

// In a browser context of the session's own (Profile.IsolatedContext) the
// interception and the network guard hold the same: the context uses the
// launched browser's proxy, the guard.
func TestRequestsScopeStopsEverySubresourceIsolated(t *testing.T) {
	requestsScopeStopsEverySubresource(t, true)
}

// In a browser context of the session's own in a browser it connected to
// (a SharedBrowser pool's sessions), where no launch flag can be set, the
// guard is the context's proxy: the WebSockets are refused by it all the
// same, and the refused host gets no connection.
func TestRequestsScopeStopsEverySubresourceIsolatedConnected(t *testing.T) {
	requestsScopeStopsEverySubresourceOn(t, true, true)
}

func requestsScopeStopsEverySubresource(t *testing.T, isolated bool) {
	requestsScopeStopsEverySubresourceOn(t, isolated, false)
}

func requestsScopeStopsEverySubresourceOn(t *testing.T, isolated, connected bool) {
	refused := newCountingServer(t)
	pages := map[string]string{}
	allowed := hostileSite(t, pages)
	base := "http://refused.test:8080"
	_, refusedPort, _ := net.SplitHostPort(refused.addr)
	pages["/page.html"] = strings.ReplaceAll(fill(subresourcePage, base), "{{P}}", refusedPort)
	pages["/worker.js"] = fill(workerJS, base)
	pages["/shared.js"] = fill(sharedJS, base)
	pages["/sw.js"] = fill(swJS, base)

	prof := session.Profile{AllowedDomains: []string{"127.0.0.1"}, IsolatedContext: isolated}
	cfg := Config{Dial: routeAll(allowed, refused.addr)}
	var h *harness
	if connected {
		h = connect(t, prof, cfg)
	} else {
		h = launch(t, prof, cfg)
	}
	for _, ev := range h.rec.All() {
		if e, ok := ev.(events.BrowserErrorEvent); ok && e.Type == "PolicyGuardOff" {
			t.Fatalf("the guard is off: %+v", e)
		}
	}
	if got := h.w.Scope(); got != ScopeRequests {
		t.Fatalf("scope = %q, want %q (a domain list defaults to every request)", got, ScopeRequests)
	}
	if _, err := h.navigate("http://" + allowed + "/page.html"); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	h.waitTitle("done")

	// Each path the page tried must be reported as refused by the
	// interception, with its resource type.
	want := []string{"favicon", "stylesheet", "css-url", "img", "script", "fetch-cors", "fetch-no-cors",
		"xhr", "eventsource", "beacon", "worker", "shared-worker", "service-worker"}
	var missing []string
	waitFor(t, "a RequestBlocked record for every attempt", func() bool {
		got := map[string]bool{}
		for _, r := range blockedRecords(h) {
			if i := strings.LastIndex(r.URL, "/x/"); i >= 0 {
				got[r.URL[i+3:]] = true
			}
		}
		missing = missing[:0]
		for _, p := range want {
			if !got[p] {
				missing = append(missing, p)
			}
		}
		return len(missing) == 0
	}, func() string { return fmt.Sprintf("missing %v", missing) })
	// (The browser's own background requests — update checks, network
	// time — are refused by the guard too: they are not the page's.)
	types := map[string]bool{}
	for _, r := range blockedRecords(h) {
		if r.Host != "refused.test" {
			continue
		}
		types[r.ResourceType] = true
		t.Logf("refused %s %s (%s, initiator %q)", r.ResourceType, r.URL, r.Layer, r.Initiator)
	}
	for _, ty := range []string{"Image", "Script", "Stylesheet", "Fetch", "XHR", "Ping", "Media"} {
		if !types[ty] {
			t.Errorf("no RequestBlocked record of type %s; types: %v", ty, types)
		}
	}
	// WebSocket handshakes never reach interception: the guard refused
	// their connections, the loopback one included.
	waitFor(t, "the guard's refusal of both WebSockets", func() bool {
		named, loopback := false, false
		for _, r := range blockedRecords(h) {
			named = named || (r.Layer == "guard" && r.Host == "refused.test")
			loopback = loopback || (r.Layer == "guard" && r.Host == "localhost")
		}
		return named && loopback
	})
	var text string
	h.eval("document.body.innerText", &text)
	if strings.Contains(text, secret) {
		t.Errorf("the page read the refused origin's answer:\n%s", text)
	}
	if conns, reqs := refused.seen(); conns != 0 {
		t.Errorf("the refused origin got %d connections (requests %v)", conns, reqs)
	}

	// The runtime's own evaluate (Runtime.evaluate in the page, as the
	// evaluate action does) is a page script like any other.
	var got string
	h.eval(`fetch("`+base+`/x/evaluate").then(r => r.text()).catch(e => 'refused: ' + e.message)`, &got)
	if strings.Contains(got, secret) {
		t.Errorf("evaluate read the refused origin: %q", got)
	}
	// A blob: document and a javascript: URL of the allowed page.
	h.eval(`(() => {
		const b = new Blob(['<script>fetch("`+base+`/x/blob").then(r => r.text()).then(t => document.title = t, () => document.title = "blob refused")<\/script>'], {type: 'text/html'});
		const f = document.createElement('iframe'); f.src = URL.createObjectURL(b); document.body.append(f);
		location.href = 'javascript:void fetch("`+base+`/x/javascript-url")';
		return true; })()`, new(bool))
	waitFor(t, "records for the evaluate, blob and javascript: attempts", func() bool {
		got := map[string]bool{}
		for _, r := range blockedRecords(h) {
			got[r.URL[strings.LastIndex(r.URL, "/")+1:]] = true
		}
		return got["evaluate"] && got["blob"] && got["javascript-url"]
	})
	if conns, reqs := refused.seen(); conns != 0 {
		t.Errorf("the refused origin got %d connections (requests %v)", conns, reqs)
	}
}

// TestHostSpellingsAreOneHost reaches prohibited hosts by every spelling
// Chromium treats as the same host; none may load.
func TestHostSpellingsAreOneHost(t *testing.T) {
	refused := newCountingServer(t)
	pages := map[string]string{}
	allowed := hostileSite(t, pages)
	_, port, _ := net.SplitHostPort(refused.addr)
	spellings := []string{
		"localhost.", "LOCALHOST", "127.0.0.2", "[::ffff:127.0.0.2]", "[::ffff:7f00:2]", "0x7f.0.0.2",
		"2130706434", "0177.0.0.02", "127.2", "xn--bcher-kva.example", "BÜCHER.example",
		"x.secret.corp.test", "deep.x.secret.corp.test", "secret.corp.test.",
	}
	var imgs strings.Builder
	for i, sp := range spellings {
		fmt.Fprintf(&imgs, "<img src=\"http://%s:%s/x/spelling-%d\">\n", sp, port, i)
	}
	pages["/spellings.html"] = "<!doctype html><body>" + imgs.String() + "<script>onload = () => document.title = 'done';</script></body>"
	h := launch(t, session.Profile{ProhibitedDomains: []string{"localhost", "127.0.0.2", "bücher.example", "secret.corp.test"}},
		Config{Dial: routeAll(allowed, refused.addr)})
	if _, err := h.navigate("http://" + allowed + "/spellings.html"); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	h.waitTitle("done")
	defer func() {
		if t.Failed() {
			for _, r := range blockedRecords(h) {
				t.Logf("refused %s %s: %s", r.ResourceType, r.URL, r.Reason)
			}
			conns, reqs := refused.seen()
			t.Logf("connections %d, requests %v", conns, reqs)
		}
	}()
	waitFor(t, "a refusal of every spelling", func() bool {
		n := 0
		for _, r := range blockedRecords(h) {
			if strings.Contains(r.URL, "/x/spelling-") {
				n++
			}
		}
		return n >= len(spellings)
	})
	if conns, reqs := refused.seen(); conns != 0 {
		t.Errorf("a prohibited host got %d connections (requests %v)", conns, reqs)
	}
}

// TestNavigationsScopeLetsSubresourcesThrough is the contrast: a
// deployment that asks for navigation-only checks gets exactly that.
func TestNavigationsScopeLetsSubresourcesThrough(t *testing.T) {
	refused := newCountingServer(t)
	pages := map[string]string{}
	allowed := hostileSite(t, pages)
	pages["/img.html"] = `<!doctype html><img src="http://` + refused.addr + `/x/img" onload="document.title='done'" onerror="document.title='done'">`
	h := start(t, session.Profile{AllowedDomains: []string{allowed}, PolicyScope: "navigations"}, nil)
	if got := h.w.Scope(); got != ScopeNavigations {
		t.Fatalf("scope = %q", got)
	}
	if _, err := h.navigate("http://" + allowed + "/img.html"); err != nil {
		t.Fatal(err)
	}
	h.waitTitle("done")
	if _, reqs := refused.seen(); len(reqs) != 1 {
		t.Errorf("requests at the other origin = %v, want the image (navigation-only scope)", reqs)
	}
	if _, err := h.navigate("http://" + refused.addr + "/x/page"); err == nil {
		t.Error("a navigation to a refused origin succeeded in the navigations scope")
	}
}

func TestUnknownScopeFailsStart(t *testing.T) {
	s := session.New(session.Profile{PolicyScope: "everything"}, session.WithWatchdogs(New(Config{})))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.Start(ctx)
	if err == nil {
		_ = s.Stop(ctx)
		t.Fatal("Start accepted an unknown policy scope")
	}
	if !errors.Is(err, ErrUnknownScope) {
		t.Fatalf("err = %v, want ErrUnknownScope", err)
	}
}

// TestAdoptedTabOnRefusedOriginIsConcealed connects to a browser that
// already has a tab on a refused origin: the tab is not navigated (it is
// the user's), but its URL and title are hidden from the model until it
// leaves for an allowed page.
func TestAdoptedTabOnRefusedOriginIsConcealed(t *testing.T) {
	env := testbrowser.Start(t)
	foreign := env.NewPage(t, "/other.html")
	refusedHost := strings.TrimPrefix(env.URL(""), "http://")
	refusedHost = strings.TrimSuffix(refusedHost, "/")
	h := start(t, session.Profile{ProhibitedDomains: []string{refusedHost}}, nil)
	id := string(foreign.TargetID)
	if note := h.s.Concealed(id); note == "" {
		t.Fatalf("the tab on %s is shown", env.URL("/other.html"))
	}
	// The user's tab is not the session's: not listed at all (a concealed
	// tab of the session's would show a note instead of its URL and title).
	for _, tab := range h.s.Tabs() {
		if tab.TargetID == id {
			t.Errorf("the user's concealed tab is listed: URL %q title %q", tab.URL, tab.Title)
		}
	}
	b := h.waitBlock(refusedHost)
	if b.Details["target"] != id || !strings.Contains(b.Details["action"], "concealed") {
		t.Errorf("report = %+v", b.Details)
	}
	// Not navigated: it is not the session's tab.
	var href string
	foreign.Eval(t, "location.href", &href)
	if !strings.HasSuffix(href, "/other.html") {
		t.Fatalf("the user's tab was navigated to %s", href)
	}
	// Once it leaves for an allowed page, it is shown again.
	foreign.Eval(t, "location.href = 'about:blank'", new(string))
	waitFor(t, "the tab shown again", func() bool { return h.s.Concealed(id) == "" })
}
