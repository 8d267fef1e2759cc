package watchdogs

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

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

func crashTabGone(s *session.Session, id string) bool {
	return !slices.ContainsFunc(s.Tabs(), func(t events.TabInfo) bool { return t.TargetID == id })
}

func TestCrashTabCrashReported(t *testing.T) {
	for _, policy := range []CrashPolicy{CrashReportOnly, CrashCloseTab} {
		t.Run(string(policy), func(t *testing.T) {
			w := NewCrash(CrashConfig{Policy: policy})
			s, env, rec, ctx := popConnect(t, session.Profile{}, w)
			popNavigate(t, ctx, s, env.URL("/index.html"))
			tab := s.FocusedTab()
			cs, err := s.PageSession(tab)
			if err != nil {
				t.Fatal(err)
			}
			// Page.crash never answers: the renderer is gone.
			crashedAt := time.Now()
			cs.Send(ctx, page.CommandCrash, nil)
			ev := popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
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
			if err := evaluate(cctx, cs, `1+1`, nil); !errors.Is(err, cdp.ErrTargetCrashed) {
				t.Fatalf("call on the crashed tab: %v, want ErrTargetCrashed", err)
			}
			if policy == CrashCloseTab {
				deadline := time.Now().Add(30 * time.Second)
				for !crashTabGone(s, tab) {
					if time.Now().After(deadline) {
						t.Fatalf("crashed tab still open: %v", s.Tabs())
					}
					time.Sleep(20 * time.Millisecond)
				}
				if s.FocusedTab() == tab {
					t.Fatal("focus still on the closed tab")
				}
			} else if crashTabGone(s, tab) {
				t.Fatal("report-only policy closed the tab")
			}
		})
	}
}

func TestCrashLaunchedBrowserKilled(t *testing.T) {
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := &popRecorder{}
	s := session.New(session.Profile{}, session.WithWatchdogs(rec, NewCrash(CrashConfig{})))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
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
	ev := popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "BrowserExited" && e.Details["watchdog"] == "crash"
	})
	t.Logf("exit reported: %s", ev.Message)
	if !strings.Contains(ev.Message, "killed") {
		t.Errorf("exit report does not say how: %q", ev.Message)
	}
}

// crashProxy forwards TCP connections to target until cut.
type crashProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func crashNewProxy(t *testing.T, target string) *crashProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &crashProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *crashProxy) accept() {
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

// cut drops every open connection; new ones are still accepted.
func (p *crashProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestCrashRemoteReconnectGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	remote, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close(ctx)
	rec := &popRecorder{}
	s := session.New(session.Profile{CDPURL: remote.WebSocketURL()}, session.WithWatchdogs(rec,
		NewCrash(CrashConfig{ReconnectAttempts: 2, ReconnectBackoff: []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}, ReconnectTimeout: 10 * time.Second})))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(ctx)

	if err := remote.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectingEvent) bool {
			return e.Attempt == i && e.MaxAttempts == 2 && e.CDPURL == remote.WebSocketURL()
		})
	}
	ev := popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "ReconnectionFailed" && e.Details["watchdog"] == "crash"
	})
	if !strings.Contains(ev.Message, "2 reconnect attempts failed") {
		t.Errorf("message = %q", ev.Message)
	}
	for _, e := range rec.all() {
		if _, ok := e.(events.BrowserReconnectedEvent); ok {
			t.Fatalf("reported a reconnection to a dead browser: %+v", e)
		}
	}
	cs, err := s.PageSession("")
	if err == nil {
		if err := evaluate(ctx, cs, `1`, nil); !errors.Is(err, cdp.ErrConnectionLost) {
			t.Fatalf("call after the loss: %v, want ErrConnectionLost", err)
		}
	}
}

// A dropped websocket to a browser that is still up: the session reconnects,
// re-attaches its tab and keeps working.
func TestCrashRemoteDropReconnects(t *testing.T) {
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ws, err := url.Parse(env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := crashNewProxy(t, ws.Host)
	ws.Host = proxy.ln.Addr().String()
	rec := &popRecorder{}
	s := session.New(session.Profile{CDPURL: ws.String()}, session.WithWatchdogs(rec,
		NewCrash(CrashConfig{ReconnectAttempts: 1, ReconnectBackoff: []time.Duration{10 * time.Millisecond}})))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(ctx)
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/form.html")}); err != nil {
		t.Fatal(err)
	}
	focus := s.FocusedTab()
	proxy.cut()
	popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectingEvent) bool { return e.Attempt == 1 })
	popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserReconnectedEvent) bool { return e.Attempt == 1 && e.Downtime > 0 })
	if s.FocusedTab() != focus {
		t.Fatalf("focus moved from %s to %s across the reconnect", focus, s.FocusedTab())
	}
	var href string
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := evaluate(ctx, cs, `location.pathname`, &href); err != nil || href != "/form.html" {
		t.Fatalf("after reconnect: %q, %v", href, err)
	}
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/other.html")}); err != nil {
		t.Fatalf("navigation after reconnect: %v", err)
	}
}
