package crash

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
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
	if err := testbrowser.KillProcess(pid); err != nil {
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

// proxied returns the shared test browser and a proxy to its DevTools
// endpoint, with the endpoint's URL through the proxy.
func proxied(t *testing.T) (*testbrowser.Env, *testbrowser.Proxy, string) {
	t.Helper()
	env := testbrowser.Start(t)
	ws, err := url.Parse(env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	p := testbrowser.NewProxy(t, ws.Host)
	return env, p, p.Through(ws.String())
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
