package pool

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/session"
)

// Lease is one started session of a pool, held until Release.
type Lease struct {
	pool   *Pool
	id     int
	sess   *session.Session
	shared *cdp.Browser // the shared browser the session runs on (nil otherwise)
	own    *cdp.Browser // the session's own browser (BrowserPerSession)

	watch     sync.WaitGroup // watchBrowser
	stopWatch chan struct{}  // closed by release: the watcher ends

	mu       sync.Mutex
	released bool
	done     chan struct{} // closed when the release finished
	err      error         // the release's error, set before done closes
}

// Session returns the lease's session, started by Acquire. It is stopped
// once the lease is released (by Release or the pool's Close).
func (l *Lease) Session() *session.Session { return l.sess }

// ID numbers the pool's leases from 1 in the order their Acquire got a
// slot; it names the lease in the pool's logs.
func (l *Lease) ID() int { return l.id }

// Release stops the session and frees its slot, even when Stop fails: the
// error says what did not stop cleanly. ctx bounds Stop as it bounds
// session.Stop (each phase also has its StopBudgets); should ctx end
// before Stop could begin, the pool stops the session in the background
// (Close waits for it) and Release returns the ctx's error; the slot is
// then freed when that stop ends, so the pool never runs more than
// MaxSessions sessions. Release on a released lease waits for the first
// release (bounded by ctx) and returns nil.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
		}
		return nil
	}
	l.mu.Unlock()
	err := l.release(ctx)
	p := l.pool
	p.mu.Lock()
	delete(p.leases, l)
	p.mu.Unlock()
	return err
}

// release stops the session and frees the slot, once.
func (l *Lease) release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.released = true
	l.mu.Unlock()
	close(l.stopWatch)
	p := l.pool
	err := l.sess.Stop(ctx)
	l.watch.Wait()
	if err != nil && l.sess.Running() {
		// Stop never began (ctx ended, or a reconnect held the session
		// past it): the session still runs; stop it off the caller's ctx.
		// The slot stays taken until it stopped.
		p.wg.Add(1)
		go p.stopLater(l)
	} else {
		<-p.slot
	}
	if err != nil {
		err = fmt.Errorf("pool: releasing lease %d: %w", l.id, err)
		p.log.Info("pool: release", zap.Int("lease", l.id), zap.Error(err))
	}
	l.err = err
	close(l.done)
	return err
}

// watchBrowser counts the lease's own browser as crashed when it exits
// before the lease is released.
func (l *Lease) watchBrowser() {
	defer l.watch.Done()
	select {
	case <-l.own.Done():
	case <-l.stopWatch:
		return
	}
	l.mu.Lock()
	crashed := !l.released
	l.mu.Unlock()
	if !crashed {
		return
	}
	p := l.pool
	p.mu.Lock()
	p.crashes++
	p.mu.Unlock()
	p.log.Warn("pool: a session's browser exited before its lease was released",
		zap.Int("lease", l.id), zap.Int("pid", l.own.PID()), zap.NamedError("exit", l.own.Wait()))
}
