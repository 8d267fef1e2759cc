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
	"time"

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
	loaded  chan string // each NavigationComplete's URL, for whoever waits
}

// NewAdminGuard returns the watchdog.
func NewAdminGuard() *AdminGuard { return &AdminGuard{loaded: make(chan string, 64)} }

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
			g.visited = append(g.visited, ev.URL)
			g.mu.Unlock()
			select {
			case g.loaded <- ev.URL:
			default: // nobody waits
			}
			return events.None{}, nil
		})
	return err
}

// WaitLoaded waits for the next NavigationComplete. The session emits that
// report without awaiting it, so it may reach the watchdog just after the
// navigation's own Call has returned.
func (g *AdminGuard) WaitLoaded(ctx context.Context) (string, error) {
	select {
	case u := <-g.loaded:
		return u, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
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

	guard := NewAdminGuard()
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
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := guard.WaitLoaded(wctx)
			cancel()
			if err != nil {
				return fmt.Errorf("waiting for the report of %s: %w", path, err)
			}
			fmt.Fprintf(out, "%s: loaded\n", path)
		}
	}
	fmt.Fprintf(out, "pages loaded: %d, requests to /admin: %d\n", len(guard.Visited()), adminHits.Load())
	return nil
}
