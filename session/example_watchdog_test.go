package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// auditWatchdog is what an embedding program writes: it observes every
// navigation and vetoes those whose path contains a forbidden word. It
// lives outside the session package and uses only its public API.
type auditWatchdog struct {
	forbidden string

	mu   sync.Mutex
	seen []string
}

// errForbidden is the veto; callers test for it with errors.Is.
var errForbidden = errors.New("audit: forbidden path")

func (w *auditWatchdog) Name() string { return "audit" }

func (w *auditWatchdog) Attach(s *session.Session) error {
	// A guard placed before the session's own handler: its error stops the
	// navigation before anything is sent to the browser.
	_, err := bus.Handle(s.Bus(), events.NavigateToURL, w.Name(),
		func(_ context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
			if strings.Contains(ev.URL, w.forbidden) {
				return events.NavigateResult{}, fmt.Errorf("%w: %s", errForbidden, w.forbidden)
			}
			return events.NavigateResult{}, nil
		}, bus.Guard(), bus.Before(session.HandlerName))
	if err != nil {
		return err
	}
	// An observer of completed navigations.
	_, err = bus.Handle(s.Bus(), events.NavigationComplete, w.Name(),
		func(_ context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.seen = append(w.seen, ev.URL[strings.LastIndex(ev.URL, "/"):])
			return events.None{}, nil
		})
	return err
}

func (w *auditWatchdog) Seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

func Example_customWatchdog() {
	env, err := testbrowser.NewEnv(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	audit := &auditWatchdog{forbidden: "admin"}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(audit))
	if err := s.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Stop(ctx)

	_, err = bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/form.html")})
	fmt.Println("form:", err)
	_, err = bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/admin.html")})
	fmt.Println("admin vetoed:", errors.Is(err, errForbidden))

	fmt.Println("seen:", audit.Seen())
	// Output:
	// form: <nil>
	// admin vetoed: true
	// seen: [/form.html]
}
