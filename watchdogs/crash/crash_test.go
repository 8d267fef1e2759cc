package crash

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

func tabGone(s *session.Session, id string) bool {
	return !slices.ContainsFunc(s.Tabs(), func(t events.TabInfo) bool { return t.TargetID == id })
}

func TestCrashTabCrashReported(t *testing.T) {
	for _, policy := range []Policy{ReportOnly, CloseTab} {
		t.Run(string(policy), func(t *testing.T) {
			w := New(Config{Policy: policy})
			s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, w)
			wdtest.Navigate(t, ctx, s, env.URL("/index.html"))
			tab := s.FocusedTab()
			cs, err := s.PageSession(tab)
			if err != nil {
				t.Fatal(err)
			}
			// Page.crash never answers: the renderer is gone.
			crashedAt := time.Now()
			cs.Send(ctx, page.CommandCrash, nil)
			ev := wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
				return e.Type == "TargetCrashed" && e.Details["target_id"] == tab && e.Details["watchdog"] == "crash"
			})
			t.Logf("crash reported after %s: %s", time.Since(crashedAt), ev.Message)
			if !strings.Contains(ev.Message, tab[len(tab)-4:]) {
				t.Errorf("message does not name the tab: %q", ev.Message)
			}
			if got := w.Crashed(); !slices.Contains(got, tab) || len(got) != 1 {
				t.Errorf("Crashed() = %v, want [%s] once", got, tab)
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := pagejs.Evaluate(cctx, cs, `1+1`, nil); !errors.Is(err, cdp.ErrTargetCrashed) {
				t.Fatalf("call on the crashed tab: %v, want ErrTargetCrashed", err)
			}
			if policy == CloseTab {
				deadline := time.Now().Add(30 * time.Second)
				for !tabGone(s, tab) {
					if time.Now().After(deadline) {
						t.Fatalf("crashed tab still open: %v", s.Tabs())
					}
					time.Sleep(20 * time.Millisecond)
				}
				if s.FocusedTab() == tab {
					t.Fatal("focus still on the closed tab")
				}
			} else if tabGone(s, tab) {
				t.Fatal("report-only policy closed the tab")
			}
		})
	}
}

func TestCrashLaunchedBrowserKilled(t *testing.T) {
	env := testbrowser.Start(t) // the fixture server
	s, rec, ctx := wdtest.Launch(t, session.Profile{}, New(Config{}))
	defer func() {
		// Stopped here, not by wdtest's cleanup: an error is expected.
		if err := s.Stop(ctx); err != nil {
			t.Logf("Stop after the kill: %v", err)
		}
	}()
	pid := s.Browser().PID()

	slow := "/slow?ms=20000&crash=" + url.QueryEscape(t.Name())
	done := make(chan error, 1)
	go func() {
		_, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL(slow)})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(env.Server.Requests(testbrowser.Site1), func(r string) bool { return r == slow }) {
		if time.Now().After(deadline) {
			t.Fatal("the slow navigation never reached the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("navigation error: %v", err)
		if !errors.Is(err, cdp.ErrConnectionLost) {
			t.Fatalf("navigation error = %v, want one wrapping cdp.ErrConnectionLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the navigation did not fail after the browser died")
	}
	ev := wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "BrowserExited" && e.Details["watchdog"] == "crash"
	})
	t.Logf("exit reported: %s", ev.Message)
	if !strings.Contains(ev.Message, "killed") {
		t.Errorf("exit report does not say how: %q", ev.Message)
	}
}

// proxy forwards TCP connections to target until cut.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }()
	}
}

// proxied returns the shared test browser and a proxy to its DevTools
// endpoint, with the endpoint's URL through the proxy.
func proxied(t *testing.T) (*testbrowser.Env, *proxy, string) {
	t.Helper()
	env := testbrowser.Start(t)
	ws, err := url.Parse(env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, ws.Host)
	ws.Host = p.ln.Addr().String()
	return env, p, ws.String()
}

// closeAtCleanup closes a tab of the shared browser that a session which
// lost its connection could not close itself.
func closeAtCleanup(t *testing.T, ctx context.Context, env *testbrowser.Env, tab string) {
	t.Cleanup(func() {
		if err := env.Conn.CloseTarget(ctx, target.ID(tab)); err != nil {
			t.Logf("closing the session's tab: %v", err)
		}
	})
}

// cut drops every open connection; new ones are still accepted.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestCrashRemoteReconnectGivesUp(t *testing.T) {
	ctx := wdtest.Ctx(t)
	remote, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close(ctx)
	s, _, rec, _ := wdtest.Connect(t, session.Profile{CDPURL: remote.WebSocketURL()},
		New(Config{ReconnectAttempts: 2, ReconnectBackoff: []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}, ReconnectTimeout: 10 * time.Second}))

	if err := remote.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectingEvent) bool {
			return e.Attempt == i && e.MaxAttempts == 2 && e.CDPURL == remote.WebSocketURL()
		})
	}
	ev := wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "ReconnectionFailed" && e.Details["watchdog"] == "crash"
	})
	if !strings.Contains(ev.Message, "2 reconnect attempts failed") {
		t.Errorf("message = %q", ev.Message)
	}
	for _, e := range rec.All() {
		if _, ok := e.(events.BrowserReconnectedEvent); ok {
			t.Fatalf("reported a reconnection to a dead browser: %+v", e)
		}
	}
	cs, err := s.PageSession("")
	if err == nil {
		if err := pagejs.Evaluate(ctx, cs, `1`, nil); !errors.Is(err, cdp.ErrConnectionLost) {
			t.Fatalf("call after the loss: %v, want ErrConnectionLost", err)
		}
	}
}

// A dropped websocket to a browser that is still up: the session reconnects,
// re-attaches its tab and keeps working.
func TestCrashRemoteDropReconnects(t *testing.T) {
	env, proxy, endpoint := proxied(t)
	s, _, rec, ctx := wdtest.Connect(t, session.Profile{CDPURL: endpoint},
		New(Config{ReconnectAttempts: 1, ReconnectBackoff: []time.Duration{10 * time.Millisecond}}))
	wdtest.Navigate(t, ctx, s, env.URL("/form.html"))
	focus := s.FocusedTab()
	proxy.cut()
	wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectingEvent) bool { return e.Attempt == 1 })
	wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectedEvent) bool { return e.Attempt == 1 && e.Downtime > 0 })
	if s.FocusedTab() != focus {
		t.Fatalf("focus moved from %s to %s across the reconnect", focus, s.FocusedTab())
	}
	var href string
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := pagejs.Evaluate(ctx, cs, `location.pathname`, &href); err != nil || href != "/form.html" {
		t.Fatalf("after reconnect: %q, %v", href, err)
	}
	wdtest.Navigate(t, ctx, s, env.URL("/other.html"))
}

// With reconnecting disabled, a dropped connection is reported once.
func TestCrashRemoteDropNoReconnect(t *testing.T) {
	env, proxy, endpoint := proxied(t)
	s, _, rec, ctx := wdtest.Connect(t, session.Profile{CDPURL: endpoint}, New(Config{ReconnectAttempts: -1}))
	closeAtCleanup(t, ctx, env, s.FocusedTab())
	conn := s.Conn()
	proxy.cut()
	ev := wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "ConnectionLost" && e.Details["cdp_url"] == endpoint && e.Details["watchdog"] == Name
	})
	t.Logf("reported: %s", ev.Message)
	if !errors.Is(conn.Err(), cdp.ErrConnectionLost) {
		t.Fatalf("connection error %v", conn.Err())
	}
	for _, e := range rec.All() {
		if _, ok := e.(events.BrowserReconnectingEvent); ok {
			t.Fatalf("reconnecting although disabled: %+v", e)
		}
	}
}

// Stop while a reconnect waits for its backoff ends the wait at once: the
// monitor does not hold Stop up.
func TestCrashStopDuringReconnectBackoff(t *testing.T) {
	env, proxy, endpoint := proxied(t)
	s, _, _, ctx := wdtest.Connect(t, session.Profile{CDPURL: endpoint},
		New(Config{ReconnectBackoff: []time.Duration{time.Hour}}))
	closeAtCleanup(t, ctx, env, s.FocusedTab())
	conn := s.Conn()
	proxy.cut()
	select {
	case <-conn.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection did not end when the proxy cut it")
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop during the reconnect backoff: %v", err)
	}
	t.Logf("Stop took %s", time.Since(start))
}

func TestCrashUnknownPolicy(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := wdtest.Ctx(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL()}, session.WithWatchdogs(New(Config{Policy: "reboot"})))
	err := s.Start(ctx)
	if err == nil {
		s.Stop(ctx)
		t.Fatal("Start accepted an unknown crash policy")
	}
	if !errors.Is(err, ErrUnknownPolicy) || !strings.Contains(err.Error(), `"reboot"`) {
		t.Fatalf("error = %v, want ErrUnknownPolicy naming the policy", err)
	}
}
