package bus

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is the handler timeout for kinds whose Timeout is 0, unless
// WithDefaultTimeout sets another.
const DefaultTimeout = 5 * time.Minute

// DefaultHistory is the number of completed events a bus remembers, unless
// WithHistory sets another.
const DefaultHistory = 256

// idSeq numbers events across all buses, so parent ids stay meaningful when a
// handler on one bus dispatches on another. It is an atomic counter, not a lock.
var idSeq atomic.Uint64

// Option configures a Bus.
type Option func(*Bus)

// WithName names the bus in records (e.g. the browser session id).
func WithName(name string) Option { return func(b *Bus) { b.name = name } }

// WithHistory sets how many completed events History keeps (0 disables it).
func WithHistory(n int) Option {
	return func(b *Bus) {
		if n < 0 {
			n = 0
		}
		b.histCap = n
	}
}

// WithDefaultTimeout sets the handler timeout of kinds whose Timeout is 0
// (d < 0: no timeout).
func WithDefaultTimeout(d time.Duration) Option { return func(b *Bus) { b.defTimeout = d } }

// WithTimeouts overrides kinds' timeouts by kind name, as SetTimeout does.
func WithTimeouts(m map[string]time.Duration) Option {
	return func(b *Bus) {
		for k, d := range m {
			b.kinds[k] = &kindState{name: k, timeout: d}
		}
	}
}

// Bus is a typed event bus. Events of one bus are processed one at a time in
// dispatch order by one worker goroutine (started on the first dispatch),
// except that a child event awaited from inside a handler runs at once (see
// Pending.Wait). Separate buses share no lock and run in parallel.
//
// A Bus must be closed with Close to stop its goroutines. All methods are
// safe for concurrent use.
type Bus struct {
	name       string
	histCap    int
	defTimeout time.Duration
	cancelled  atomic.Bool

	mu       sync.Mutex
	seq      uint64
	kinds    map[string]*kindState
	queue    []*event
	qhead    int
	closed   bool
	active   *runner
	idle     bool
	wake     chan struct{}
	gor      int // goroutines owned: runners and inline handler goroutines
	drained  chan struct{}
	drainedC bool
	side     map[*hctx]struct{} // inline and abandoned handlers still running
	hist     []EventSummary
	histNext int
	stats    Stats

	obsMu   sync.Mutex
	obs     atomic.Pointer[[]*Observation]
	stopped []*Observation // stopped observers Close must still wait for; guarded by obsMu
}

// New returns an open bus.
func New(opts ...Option) *Bus {
	b := &Bus{
		histCap:    DefaultHistory,
		defTimeout: DefaultTimeout,
		kinds:      make(map[string]*kindState),
		wake:       make(chan struct{}, 1),
		drained:    make(chan struct{}),
		side:       make(map[*hctx]struct{}),
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Name returns the bus name given by WithName.
func (b *Bus) Name() string { return b.name }

// EventSummary is what History keeps of a completed event.
type EventSummary struct {
	ID, ParentID  uint64
	Kind          string
	DispatchedAt  time.Time
	StartedAt     time.Time // zero if no handler ran
	CompletedAt   time.Time
	Handlers      int   // handlers the event had when it started
	Failed        int   // handlers that returned an error, panicked, timed out or were cancelled
	Err           error // the event's error (closed, cancelled) or the first handler error
	HandlerErrors []error
}

// History returns the most recent completed events, oldest first, at most
// WithHistory of them.
func (b *Bus) History() []EventSummary {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.hist) < b.histCap {
		return append([]EventSummary(nil), b.hist...)
	}
	out := make([]EventSummary, 0, len(b.hist))
	out = append(out, b.hist[b.histNext:]...)
	return append(out, b.hist[:b.histNext]...)
}

// Stats are counters of a bus.
type Stats struct {
	Dispatched    uint64 // events accepted
	Completed     uint64 // events completed (including cancelled ones)
	Abandoned     uint64 // handler invocations given up at timeout, cancel or close
	Queued        int    // events waiting
	Running       int    // abandoned or inline handlers whose goroutine has not returned
	ObserverDrops uint64 // records dropped by full observer buffers (current observers)
}

// Stats returns the bus counters.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	s := b.stats
	s.Queued = 0
	for _, e := range b.queue[b.qhead:] {
		if e.state == stateQueued {
			s.Queued++
		}
	}
	s.Running = len(b.side)
	b.mu.Unlock()
	if p := b.obs.Load(); p != nil {
		for _, o := range *p {
			s.ObserverDrops += o.Dropped()
		}
	}
	return s
}

// Done returns a channel closed when the bus is closed and every goroutine it
// owns has returned (including handlers that ignored cancellation).
func (b *Bus) Done() <-chan struct{} { return b.drained }

// Close stops accepting events from outside handlers (Dispatch then reports
// ErrClosed; handlers still running may dispatch and await children), lets the
// queued and running events finish, then stops the observers after they
// delivered what they hold. If ctx ends first, Close cancels: queued events
// complete with ErrClosed, running handlers have their context cancelled and
// get an ErrCanceled error, observers stop (undelivered records count as
// drops). Close then returns nil if every goroutine of the bus has returned,
// or a *CloseError (errors.Is ErrCloseIncomplete) naming the handlers that
// ignore their context; Done is closed once they return. Calling Close again
// waits again. Close must not be called with a handler's context
// (ErrCloseFromHandler).
func (b *Bus) Close(ctx context.Context) error {
	if frameOf(ctx).on(b) != nil {
		return ErrCloseFromHandler
	}
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.wakeLocked()
		b.checkDrainedLocked()
	}
	b.mu.Unlock()
	var err error
	select {
	case <-b.drained:
	case <-ctx.Done():
		b.cancelAll()
		select {
		case <-b.drained:
		default:
			err = &CloseError{Running: b.runningNames(), Cause: ctx.Err()}
		}
	}
	if oerr := b.closeObservers(ctx); err == nil {
		err = oerr
	}
	return err
}

func (b *Bus) wakeLocked() {
	if b.idle {
		b.idle = false
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

func (b *Bus) checkDrainedLocked() {
	if b.closed && b.gor == 0 && !b.drainedC {
		b.drainedC = true
		close(b.drained)
	}
}

func (b *Bus) exitGoroutine() {
	b.mu.Lock()
	b.gor--
	b.checkDrainedLocked()
	b.mu.Unlock()
}

// cancelAll implements Close's cancel phase.
func (b *Bus) cancelAll() {
	b.cancelled.Store(true)
	var queued []*event
	b.mu.Lock()
	for _, e := range b.queue[b.qhead:] {
		if e.state == stateQueued {
			e.state = stateRunning
			e.err = ErrClosed
			queued = append(queued, e)
		}
	}
	b.queue, b.qhead = b.queue[:0], 0
	if r := b.active; r != nil && r.cur != nil && !r.cur.finished && !r.cur.abandoned {
		hc := r.cur
		b.abandonLocked(hc, canceledError{ErrClosed}, ErrClosed)
		b.takeOverLocked(r, hc.ev)
	}
	for hc := range b.side {
		hc.cancel(ErrClosed) // inline waiters see Done and give up on the handler
	}
	b.mu.Unlock()
	for _, e := range queued {
		b.complete(e)
	}
}

func (b *Bus) runningNames() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for hc := range b.side {
		out = append(out, hc.fr.kind+"/"+hc.fr.handler)
	}
	sort.Strings(out)
	return out
}

type frameKey struct{}

// frame identifies the handler invocation a context belongs to; outer is
// the frame of the handler that dispatched its event (possibly on another bus).
type frame struct {
	bus     *Bus
	eventID uint64
	kind    string
	handler string
	outer   *frame
}

// on returns the innermost frame of bus b in the chain, or nil. A handler
// whose ancestors include a handler of b is, for b, inside that handler.
func (f *frame) on(b *Bus) *frame {
	for ; f != nil; f = f.outer {
		if f.bus == b {
			return f
		}
	}
	return nil
}

func frameOf(ctx context.Context) *frame {
	if ctx == nil {
		return nil
	}
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

// HandlerInfo describes the handler invocation a context belongs to.
type HandlerInfo struct {
	Bus     *Bus
	EventID uint64
	Kind    string
	Handler string
}

// Current reports the handler invocation that ctx (or a context derived from
// it) was given to, if any.
func Current(ctx context.Context) (HandlerInfo, bool) {
	f := frameOf(ctx)
	if f == nil {
		return HandlerInfo{}, false
	}
	return HandlerInfo{Bus: f.bus, EventID: f.eventID, Kind: f.kind, Handler: f.handler}, true
}
