// Command custom-watchdog adds a watchdog of its own to a session: it counts
// the pages the browser loads and vetoes navigations to any /admin path
// before they are sent to the browser.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// ErrAdminPath is the veto; callers recognise it with errors.Is.
var ErrAdminPath = errors.New("admin pages are off limits")

// AdminGuard is the watchdog: a guard on NavigateToURL and an observer of
// NavigationComplete.
type AdminGuard struct {
	mu      sync.Mutex
	visited []string
}

// Name identifies the watchdog; giving another watchdog this name replaces it.
func (g *AdminGuard) Name() string { return "admin-guard" }

// Attach registers the handlers on the session's (new) bus.
func (g *AdminGuard) Attach(s *session.Session) error {
	// bus.Guard + bus.First: our error stops the chain before the session
	// (or anyone else) navigates.
	if _, err := bus.Handle(s.Bus(), events.NavigateToURL, g.Name(),
		func(_ context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
			if strings.Contains(ev.URL, "/admin") {
				return events.NavigateResult{}, fmt.Errorf("%w: %s", ErrAdminPath, ev.URL)
			}
			return events.NavigateResult{}, nil
		}, bus.Guard(), bus.First()); err != nil {
		return err
	}
	_, err := bus.Handle(s.Bus(), events.NavigationComplete, g.Name(),
		func(_ context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.visited = append(g.visited, ev.URL)
			return events.None{}, nil
		})
	return err
}

// Visited returns the URLs loaded so far.
func (g *AdminGuard) Visited() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.visited...)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	var adminHits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/admin") {
			adminHits.Add(1)
		}
		io.WriteString(w, "<!doctype html><title>page</title>"+r.URL.Path)
	}))
	defer srv.Close()

	guard := &AdminGuard{}
	s := watchdogs.NewSession(session.Profile{}, session.WithWatchdogs(guard))
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer s.Stop(context.Background())

	for _, path := range []string{"/home", "/admin/users", "/about"} {
		_, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + path})
		switch {
		case errors.Is(err, ErrAdminPath):
			fmt.Fprintf(out, "%s: vetoed\n", path)
		case err != nil:
			return err
		default:
			fmt.Fprintf(out, "%s: loaded\n", path)
		}
	}
	fmt.Fprintf(out, "pages loaded: %d, requests to /admin: %d\n", len(guard.Visited()), adminHits.Load())
	return nil
}
