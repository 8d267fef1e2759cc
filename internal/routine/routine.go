// Package routine owns goroutines: a Group starts them with a context of its
// own and Stop cancels that context and joins them. Every long-lived
// goroutine of a watchdog belongs to exactly one Group, created in Attach
// and stopped in Detach, so that stopping the owner stops (and waits for)
// everything it started.
package routine

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrStopped is returned by Go after Stop.
var ErrStopped = errors.New("routine: group stopped")

// Group is a set of goroutines with a shared lifetime. The zero value is not
// usable; create one with New. Its methods are safe for concurrent use, and
// Go may be called from inside a goroutine of the group.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stopped bool
	running map[*entry]struct{}
	wg      sync.WaitGroup
}

type entry struct{ name string }

// New returns a running group whose context derives from parent's values
// but not its cancellation (a group lives until Stop).
func New(parent context.Context) *Group {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	return &Group{ctx: ctx, cancel: cancel, running: map[*entry]struct{}{}}
}

// Context returns the group's context, cancelled by Stop. Work a goroutine
// of the group starts on behalf of it (CDP calls, timers) should use it.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs fn on a new goroutine with the group's context. name identifies
// it in Stop's error. It returns ErrStopped, and does not run fn, once Stop
// has been called.
func (g *Group) Go(name string, fn func(ctx context.Context)) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return ErrStopped
	}
	e := &entry{name: name}
	g.running[e] = struct{}{}
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			delete(g.running, e)
			g.mu.Unlock()
			g.wg.Done()
		}()
		fn(g.ctx)
	}()
	return nil
}

// Stopped reports whether Stop was called.
func (g *Group) Stopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopped
}

// Stop cancels the group's context, refuses new goroutines and waits until
// every goroutine of the group returned, or until ctx ends: then it returns
// an error naming the goroutines still running (they ignore their context;
// they are not abandoned, a later Stop waits again). Stop may be called more
// than once; it must not be called from a goroutine of the group.
func (g *Group) Stop(ctx context.Context) error {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.cancel()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		var names []string
		for e := range g.running {
			names = append(names, e.name)
		}
		g.mu.Unlock()
		return fmt.Errorf("routine: %d goroutine(s) still running (%v): %w", len(names), names, ctx.Err())
	}
}
