package pool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// testTimeout bounds each test's calls; generous for a busy 2-core machine.
const testTimeout = 3 * time.Minute

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fixtures serves the fixture site on loopback for one test.
func fixtures(t *testing.T) *testbrowser.Server {
	t.Helper()
	srv, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("fixture server: %v", err)
		}
	})
	return srv
}

// recorders hands every session of a pool a wdtest.Recorder, kept in the
// order the sessions were made (the order of sequential Acquires).
type recorders struct {
	mu   sync.Mutex
	recs []*wdtest.Recorder
}

func (r *recorders) options() []session.Option {
	rec := &wdtest.Recorder{}
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	return []session.Option{session.WithWatchdogs(rec)}
}

func (r *recorders) get(i int) *wdtest.Recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs[i]
}

// newPool makes a pool that the test's cleanup closes (a second Close is
// harmless when the test closed it itself).
func newPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func acquire(t *testing.T, ctx context.Context, p *Pool) *Lease {
	t.Helper()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

// eventually polls cond until it holds, failing the test after the bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(testTimeout / 2)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// storage sets a cookie and a localStorage item on the lease's page.
func storage(t *testing.T, ctx context.Context, l *Lease, set string) (cookie, local string) {
	t.Helper()
	expr := `(() => {
		const set = ` + jsString(set) + `;
		if (set) { document.cookie = 'who=' + set + '; path=/'; localStorage.setItem('who', set); }
		return {cookie: document.cookie, local: localStorage.getItem('who') || ''};
	})()`
	var out struct {
		Cookie string `json:"cookie"`
		Local  string `json:"local"`
	}
	wdtest.Eval(t, ctx, l.Session(), expr, &out)
	return out.Cookie, out.Local
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestSharedBrowserIsolationAndRendererCrash runs three leases on one
// Chromium: each has a browser context of its own, a cookie and a
// localStorage item set in one are not seen by the others, and a renderer
// crash in one leaves the two others navigating and observing.
func TestSharedBrowserIsolationAndRendererCrash(t *testing.T) {
	srv := fixtures(t)
	ctx := testCtx(t)
	var recs recorders
	p := newPool(t, Config{MaxSessions: 3, Options: recs.options})
	leases := make([]*Lease, 3)
	for i := range leases {
		leases[i] = acquire(t, ctx, p)
	}
	st := p.Stats()
	if st.InUse != 3 || st.Browsers != 1 || st.Launches != 1 || st.Crashes != 0 || st.MaxSessions != 3 {
		t.Fatalf("stats with three leases on a shared browser: %+v", st)
	}
	seen := map[string]bool{}
	for i, l := range leases {
		id := l.Session().BrowserContextID()
		if id == "" || seen[id] {
			t.Fatalf("lease %d: browser context %q (want one of its own; have %v)", i, id, seen)
		}
		seen[id] = true
		if l.Session().Browser() != nil {
			t.Fatalf("lease %d launched a browser of its own in SharedBrowser mode", i)
		}
	}

	a, b, c := leases[0], leases[1], leases[2]
	for _, l := range leases {
		wdtest.Navigate(t, ctx, l.Session(), srv.URL1+"/index.html")
	}
	if cookie, local := storage(t, ctx, a, "a"); cookie != "who=a" || local != "a" {
		t.Fatalf("lease A's own cookie %q, storage %q", cookie, local)
	}
	if cookie, local := storage(t, ctx, b, ""); cookie != "" || local != "" {
		t.Fatalf("lease B sees lease A's cookie %q / storage %q on the same origin", cookie, local)
	}
	if cookie, local := storage(t, ctx, b, "b"); cookie != "who=b" || local != "b" {
		t.Fatalf("lease B's own cookie %q, storage %q", cookie, local)
	}
	if cookie, local := storage(t, ctx, a, ""); cookie != "who=a" || local != "a" {
		t.Fatalf("lease B's writes reached lease A: cookie %q, storage %q", cookie, local)
	}

	storage(t, ctx, c, "c")
	// Crash C's renderer. Page.crash is never answered: the renderer is gone.
	tab := c.Session().FocusedTab()
	cs, err := c.Session().PageSession(tab)
	if err != nil {
		t.Fatal(err)
	}
	cs.Send(ctx, page.CommandCrash, nil)
	wdtest.WaitEvent(t, recs.get(2), testTimeout/2, func(e events.BrowserErrorEvent) bool {
		return e.Type == "TargetCrashed" && e.Details["target_id"] == tab
	})
	if err := pagejs.Evaluate(ctx, cs, `1+1`, nil); !errors.Is(err, cdp.ErrTargetCrashed) {
		t.Fatalf("a call on the crashed tab: %v, want cdp.ErrTargetCrashed", err)
	}
	for i, l := range []*Lease{a, b} {
		for _, r := range []*wdtest.Recorder{recs.get(0), recs.get(1)} {
			for _, e := range r.All() {
				if be, ok := e.(events.BrowserErrorEvent); ok && be.Type == "TargetCrashed" {
					t.Fatalf("lease C's crash was reported to another lease: %+v", be)
				}
			}
		}
		if err := l.Session().Ready(ctx); err != nil {
			t.Fatalf("lease %d after lease C's crash: Ready: %v", i, err)
		}
		wdtest.Navigate(t, ctx, l.Session(), srv.URL1+"/form.html")
		if st := wdtest.State(t, ctx, l.Session()); len(st.Elements) == 0 || !strings.HasSuffix(st.URL, "/form.html") {
			t.Fatalf("lease %d observed %s with %d elements after lease C's crash", i, st.URL, len(st.Elements))
		}
	}
	if cookie, _ := storage(t, ctx, a, ""); cookie != "who=a" {
		t.Fatalf("lease A's cookie after lease C's crash: %q", cookie)
	}
	// The crashed lease's tab stays dead (the crash watchdog's default
	// policy reports and leaves it); the lease goes on in a new tab of its
	// context, whose cookies survived the renderer.
	if _, err := bus.Call(ctx, c.Session().Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL1 + "/index.html"}); !errors.Is(err, cdp.ErrTargetCrashed) {
		t.Fatalf("navigating the crashed tab: %v, want cdp.ErrTargetCrashed", err)
	}
	if _, err := bus.Call(ctx, c.Session().Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL1 + "/form.html", NewTab: true},
		bus.WithTimeout(testTimeout/2)); err != nil {
		t.Fatalf("the crashed lease opening a new tab: %v", err)
	}
	if st := wdtest.State(t, ctx, c.Session()); len(st.Elements) == 0 || st.FocusedTarget == tab {
		t.Fatalf("the crashed lease observed %s (tab %s) with %d elements in its new tab", st.URL, st.FocusedTarget, len(st.Elements))
	}
	if cookie, _ := storage(t, ctx, c, ""); cookie != "who=c" {
		t.Fatalf("the crashed lease's context lost its cookie: %q", cookie)
	}
	if st := p.Stats(); st.Crashes != 0 || st.Browsers != 1 || st.Launches != 1 {
		t.Fatalf("a renderer crash counted as a browser crash: %+v", st)
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
	if st := p.Stats(); st.InUse != 0 || st.Browsers != 1 {
		t.Fatalf("after releasing every lease: %+v (the shared browser stays up until Close)", st)
	}
}

// TestMaxSessionsBound: with MaxSessions 2 a third Acquire waits until a
// lease is released, and one whose ctx ends first fails with ctx's error.
// (On the package's test browser: the bound does not depend on who
// launched it.)
func TestMaxSessionsBound(t *testing.T) {
	ctx := testCtx(t)
	env := testbrowser.Start(t)
	p := newPool(t, Config{MaxSessions: 2, Profile: session.Profile{CDPURL: env.Browser.WebSocketURL()}})
	l1, l2 := acquire(t, ctx, p), acquire(t, ctx, p)

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l, err := p.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third Acquire with a short ctx: lease %v, error %v; want context.DeadlineExceeded", l, err)
	}

	got := make(chan *Lease, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := p.Acquire(ctx)
		if err != nil {
			errc <- err
			return
		}
		got <- l
	}()
	eventually(t, "the third Acquire waits", func() bool { return p.Stats().Waiting == 1 })
	if st := p.Stats(); st.InUse != 2 {
		t.Fatalf("stats while one waits: %+v", st)
	}
	select {
	case l := <-got:
		t.Fatalf("the third Acquire got lease %d with two out", l.ID())
	case err := <-errc:
		t.Fatalf("the third Acquire failed: %v", err)
	default:
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatalf("a second Release: %v", err)
	}
	var l3 *Lease
	select {
	case l3 = <-got:
	case err := <-errc:
		t.Fatalf("the third Acquire failed after a release: %v", err)
	case <-ctx.Done():
		t.Fatal("the third Acquire never got the released slot")
	}
	if l1.Session().Running() || !l3.Session().Running() {
		t.Fatalf("released session running %v, new one running %v", l1.Session().Running(), l3.Session().Running())
	}
	if st := p.Stats(); st.InUse != 2 || st.Waiting != 0 || st.Launches != 0 {
		t.Fatalf("stats after the handover: %+v", st)
	}
	if err := l3.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A Release whose ctx has already ended still frees the slot, and the
	// session is stopped (by Release or, when Stop could not begin, by the
	// pool in the background, the slot taken until it stopped: the bound
	// holds on that path too).
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	if err := l2.Release(done); err != nil {
		t.Logf("Release with an ended ctx: %v (running %v, stats %+v)", err, l2.Session().Running(), p.Stats())
		if st := p.Stats(); l2.Session().Running() && st.InUse != 1 {
			t.Fatalf("a session still stopping holds no slot: %+v", st)
		}
	}
	eventually(t, "the session released with an ended ctx stops and frees its slot", func() bool {
		return !l2.Session().Running() && p.Stats().InUse == 0
	})
}

// TestSharedBrowserFromCDPURL: a SharedBrowser pool given Profile.CDPURL
// runs its sessions in contexts of that browser, launches nothing and
// leaves the browser running on Close.
func TestSharedBrowserFromCDPURL(t *testing.T) {
	ctx := testCtx(t)
	env := testbrowser.Start(t)
	p := newPool(t, Config{MaxSessions: 2, Profile: session.Profile{CDPURL: env.Browser.WebSocketURL()}})
	a := acquire(t, ctx, p)
	// AcquireWith: a bus hook of this lease only, in place before the
	// session starts, sees its start-up (what batch's per-task trace needs).
	var (
		mu    sync.Mutex
		kinds = map[string]bool{}
		hooks int
	)
	b, err := p.AcquireWith(ctx, session.WithBusHook(func(bb *bus.Bus) {
		mu.Lock()
		hooks++
		mu.Unlock()
		bb.Observe(bus.ObserverFunc(func(r bus.Record) {
			mu.Lock()
			kinds[r.Kind] = true
			mu.Unlock()
		}))
	}))
	if err != nil {
		t.Fatalf("AcquireWith: %v", err)
	}
	mu.Lock()
	if hooks != 1 {
		t.Fatalf("the lease's bus hook ran %d times, want once", hooks)
	}
	mu.Unlock()
	eventually(t, "the lease's hook sees the start-up's BrowserConnected", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return kinds[events.BrowserConnected.Name]
	})
	if a.Session().BrowserContextID() == "" || a.Session().BrowserContextID() == b.Session().BrowserContextID() {
		t.Fatalf("contexts %q and %q", a.Session().BrowserContextID(), b.Session().BrowserContextID())
	}
	wdtest.Navigate(t, ctx, a.Session(), env.URL("/form.html"))
	wdtest.State(t, ctx, a.Session())
	if st := p.Stats(); st.Launches != 0 || st.Browsers != 0 || st.InUse != 2 {
		t.Fatalf("stats of a pool on a given browser: %+v", st)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if exited(env.Browser) || env.Conn.Err() != nil {
		t.Fatal("Close ended a browser the pool did not launch")
	}
}

// TestCloseWithLeasesOut: Close stops the leases still out and the shared
// browser, fails a waiting Acquire and every later one with ErrClosed, and
// a Release after it is harmless.
func TestCloseWithLeasesOut(t *testing.T) {
	ctx := testCtx(t)
	p := newPool(t, Config{MaxSessions: 1})
	l := acquire(t, ctx, p)
	pids := p.BrowserPIDs()
	if len(pids) != 1 {
		t.Fatalf("BrowserPIDs %v, want the shared browser", pids)
	}
	errc := make(chan error, 1)
	go func() {
		l, err := p.Acquire(ctx)
		if l != nil {
			_ = l.Release(ctx)
		}
		errc <- err
	}()
	eventually(t, "an Acquire waits", func() bool { return p.Stats().Waiting == 1 })
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("the waiting Acquire: %v, want ErrClosed", err)
	}
	if l.Session().Running() {
		t.Fatal("the lease's session still runs after Close")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after Close: %v", err)
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	if st := p.Stats(); st.InUse != 0 || st.Browsers != 0 || st.Waiting != 0 {
		t.Fatalf("stats after Close: %+v", st)
	}
	if testbrowser.ProcessExists(pids[0]) {
		t.Fatalf("the shared browser (pid %d) still runs after Close", pids[0])
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestSharedBrowserDies: when the shared browser is killed its leases see
// their sessions end (ErrBrowserGone), the death counts as a crash, and the
// next Acquire launches a new browser.
func TestSharedBrowserDies(t *testing.T) {
	srv := fixtures(t)
	ctx := testCtx(t)
	p := newPool(t, Config{MaxSessions: 2})
	l := acquire(t, ctx, p)
	pids := p.BrowserPIDs()
	if err := testbrowser.KillProcess(pids[0]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool notices the shared browser's death", func() bool { return p.Stats().Crashes == 1 })
	if err := l.Session().Ready(ctx); !errors.Is(err, events.ErrBrowserGone) {
		t.Fatalf("Ready on a lease of the dead browser: %v, want events.ErrBrowserGone", err)
	}
	if st := p.Stats(); st.Browsers != 0 || st.InUse != 1 {
		t.Fatalf("stats after the browser died: %+v", st)
	}
	l2 := acquire(t, ctx, p)
	if st := p.Stats(); st.Launches != 2 || st.Browsers != 1 || st.Crashes != 1 {
		t.Fatalf("stats after the relaunch: %+v", st)
	}
	if got := p.BrowserPIDs(); len(got) != 1 || got[0] == pids[0] {
		t.Fatalf("BrowserPIDs after the relaunch: %v (the dead one was %d)", got, pids[0])
	}
	wdtest.Navigate(t, ctx, l2.Session(), srv.URL1+"/form.html")
	wdtest.State(t, ctx, l2.Session())
	if err := l.Release(ctx); err != nil {
		t.Logf("releasing the lease of the dead browser: %v", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserPerSession: every lease launches a browser of its own, which
// Release closes; a cookie stays in its browser; a browser killed under its
// lease counts as a crash and ends that lease only.
func TestBrowserPerSession(t *testing.T) {
	srv := fixtures(t)
	ctx := testCtx(t)
	p := newPool(t, Config{Mode: BrowserPerSession, MaxSessions: 2})
	a, b := acquire(t, ctx, p), acquire(t, ctx, p)
	if a.Session().Browser() == nil || b.Session().Browser() == nil || a.Session().Browser().PID() == b.Session().Browser().PID() {
		t.Fatal("leases do not have browsers of their own")
	}
	if st := p.Stats(); st.InUse != 2 || st.Browsers != 2 || st.Launches != 2 {
		t.Fatalf("stats with two leases: %+v", st)
	}
	for _, l := range []*Lease{a, b} {
		wdtest.Navigate(t, ctx, l.Session(), srv.URL1+"/index.html")
	}
	storage(t, ctx, a, "a")
	if cookie, local := storage(t, ctx, b, ""); cookie != "" || local != "" {
		t.Fatalf("lease B sees lease A's cookie %q / storage %q", cookie, local)
	}

	pidA := a.Session().Browser().PID()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if testbrowser.ProcessExists(pidA) {
		t.Fatalf("lease A's browser (pid %d) still runs after Release", pidA)
	}
	if st := p.Stats(); st.Browsers != 1 || st.InUse != 1 || st.Crashes != 0 {
		t.Fatalf("stats after a release: %+v", st)
	}

	c := acquire(t, ctx, p)
	if err := testbrowser.KillProcess(b.Session().Browser().PID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool counts the killed browser", func() bool { return p.Stats().Crashes == 1 })
	if err := b.Session().Ready(ctx); !errors.Is(err, events.ErrBrowserGone) {
		t.Fatalf("Ready on the lease whose browser was killed: %v", err)
	}
	wdtest.Navigate(t, ctx, c.Session(), srv.URL1+"/form.html")
	wdtest.State(t, ctx, c.Session())
	if err := b.Release(ctx); err != nil {
		t.Logf("releasing the lease of the killed browser: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close with a lease out: %v", err)
	}
	if c.Session().Running() {
		t.Fatal("Close left a session running")
	}
	if st := p.Stats(); st.Browsers != 0 || st.Launches != 3 || st.Crashes != 1 {
		t.Fatalf("stats after Close: %+v", st)
	}
	_, err := bus.Call(ctx, c.Session().Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
	if err == nil {
		t.Fatal("an observation on a session the pool closed succeeded")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative max":         {MaxSessions: -1},
		"negative starting":    {MaxStarting: -2},
		"unknown mode":         {Mode: Mode(7)},
		"per-session with URL": {Mode: BrowserPerSession, Profile: session.Profile{CDPURL: "ws://127.0.0.1:1/devtools/browser/x"}},
		"per-session with dir": {Mode: BrowserPerSession, Profile: session.Profile{UserDataDir: t.TempDir()}},
		"shared storage state": {Profile: session.Profile{StorageStatePath: "state.json"}},
		"two on one state":     {Mode: BrowserPerSession, MaxSessions: 2, Profile: session.Profile{StorageStatePath: "state.json"}},
	} {
		if p, err := New(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: New = %v, %v; want ErrBadConfig", name, p, err)
		}
	}
	for _, m := range []Mode{SharedBrowser, BrowserPerSession} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("pooled"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("ParseMode(pooled): %v, want ErrBadConfig", err)
	}
	// One session may keep a state file: nobody else saves it.
	if p, err := New(Config{MaxSessions: 1, Profile: session.Profile{StorageStatePath: "state.json"}}); err != nil {
		t.Errorf("a pool of one with a StorageStatePath: %v", err)
	} else if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.MaxSessions != DefaultMaxSessions || st.Browsers != 0 || st.Launches != 0 {
		t.Fatalf("a new pool launched something or has the wrong bound: %+v", st)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMaxStartingAndCancelledStart: with MaxStarting 1 a second Acquire
// that has a slot waits for the first session's start before its own
// begins; cancelling it there frees its slot at once; it then starts when
// the first is done.
func TestMaxStartingAndCancelledStart(t *testing.T) {
	ctx := testCtx(t)
	env := testbrowser.Start(t)
	entered, proceed, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	p := newPool(t, Config{MaxSessions: 3, MaxStarting: 1, Profile: session.Profile{CDPURL: env.Browser.WebSocketURL()},
		Options: func() []session.Option {
			calls.Add(1)
			// Holds the session's start (the hook runs inside Start)
			// until the test lets it go.
			return []session.Option{session.WithBusHook(func(*bus.Bus) {
				select {
				case entered <- struct{}{}:
				case <-stop:
					return
				}
				select {
				case <-proceed:
				case <-stop:
				}
			})}
		}})
	t.Cleanup(func() { close(stop) }) // before the pool's Close: no start stays held
	type result struct {
		l   *Lease
		err error
	}
	out := make(chan result, 3)
	acq := func(ctx context.Context) {
		l, err := p.Acquire(ctx)
		out <- result{l, err}
	}
	next := func(what string) result {
		t.Helper()
		select {
		case r := <-out:
			return r
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
		return result{}
	}
	hold := func(what string) {
		t.Helper()
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s to start", what)
		}
	}

	go acq(ctx)
	hold("the first session")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go acq(cctx)
	eventually(t, "the second Acquire has a slot", func() bool { return p.Stats().InUse == 2 })
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d sessions began starting with MaxStarting 1", n)
	}
	cancel()
	if r := next("the cancelled Acquire"); !errors.Is(r.err, context.Canceled) || r.l != nil {
		t.Fatalf("the Acquire cancelled while waiting its turn to start: %v, %v; want context.Canceled", r.l, r.err)
	}
	if st := p.Stats(); st.InUse != 1 || st.Waiting != 0 {
		t.Fatalf("stats after the cancelled start: %+v (its slot must be free)", st)
	}
	go acq(ctx)
	eventually(t, "the third Acquire has a slot", func() bool { return p.Stats().InUse == 2 })
	proceed <- struct{}{}
	first := next("the first lease")
	if first.err != nil {
		t.Fatalf("the first Acquire: %v", first.err)
	}
	hold("the third session")
	proceed <- struct{}{}
	third := next("the third lease")
	if third.err != nil {
		t.Fatalf("the third Acquire: %v", third.err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d sessions made, want 2 (the cancelled Acquire never began one)", n)
	}
	for _, l := range []*Lease{first.l, third.l} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.InUse != 0 {
		t.Fatalf("stats after the releases: %+v", st)
	}
}
