package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// A report handler that blocks does not hold the navigation that reports:
// reports are not awaited on the action's path.
func TestReportHandlersDoNotHoldNavigation(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := session.NewWatchdog("slow-reports", func(s *session.Session) error {
		return session.Handle(s, events.NavigationComplete, "slow-reports", func(ctx context.Context, _ events.NavigationCompleteEvent) (events.None, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return events.None{}, nil
		})
	})
	s, env := start(t, session.Profile{}, session.WithWatchdogs(slow))
	began := time.Now()
	res, err := bus.Call(ctxT(t), s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/index.html")})
	if err != nil || res.Outcome.Verdict != events.VerdictNavigated {
		t.Fatalf("navigate: %+v %v", res.Outcome, err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("the navigation waited %s for its report handler", took)
	}
}

// Ready: nil while connected; a launched browser that was killed is gone at
// once; a lost connection with nobody reconnecting is gone after the grace.
func TestReady(t *testing.T) {
	s := session.New(session.Profile{})
	if err := s.Ready(ctxT(t)); !errors.Is(err, session.ErrNotStarted) {
		t.Fatalf("Ready before Start = %v", err)
	}
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if err := s.Ready(ctxT(t)); err != nil {
		t.Fatalf("Ready while connected = %v", err)
	}
	if err := testbrowser.KillProcess(s.Browser().PID()); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var err error
	waitUntil(t, 30*time.Second, "Ready to report the killed browser", func() bool {
		err = s.Ready(ctxT(t))
		return err != nil
	})
	if !errors.Is(err, events.ErrBrowserGone) {
		t.Fatalf("Ready after the browser was killed = %v", err)
	}
	t.Logf("a killed browser was known gone %s after the kill: %v", time.Since(began), err)

	env := testbrowser.Start(t)
	p := testbrowser.NewProxy(t, hostOf(t, env.Browser.WebSocketURL()))
	s2 := session.New(session.Profile{CDPURL: p.Through(env.Browser.WebSocketURL()), ConnectTab: session.ConnectTabNew, ReconnectGrace: 300 * time.Millisecond})
	if err := s2.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer s2.Stop(context.Background())
	p.Cut()
	began = time.Now()
	waitUntil(t, 30*time.Second, "Ready to report the cut connection", func() bool {
		err = s2.Ready(ctxT(t))
		return err != nil
	})
	if !errors.Is(err, events.ErrBrowserGone) || !strings.Contains(err.Error(), "no reconnect began") {
		t.Fatalf("Ready after the connection was cut = %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("Ready took %s with a 300 ms grace", took)
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	i := strings.Index(raw, "://")
	rest := raw[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// waitUntil polls cond until it holds, failing the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
