package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is the lifecycle step a Record describes.
type Phase uint8

// Lifecycle phases, in the order they happen for one event.
const (
	Dispatched      Phase = iota + 1 // the event was accepted (or rejected: a Completed with ErrClosed follows)
	HandlerStarted                   // a handler began
	HandlerFinished                  // a handler returned, panicked, timed out or was cancelled
	Completed                        // every handler is done; delivered to buffers before awaiters are released
	HandlerLate                      // an abandoned handler (timed out/cancelled) finally returned; its result was discarded
)

func (p Phase) String() string {
	switch p {
	case Dispatched:
		return "dispatched"
	case HandlerStarted:
		return "handler_started"
	case HandlerFinished:
		return "handler_finished"
	case Completed:
		return "completed"
	case HandlerLate:
		return "handler_late"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Record is one lifecycle step of one event, as delivered to observers.
// Event and Value are the caller's and handler's values, shared, not copied:
// observers must not modify them.
type Record struct {
	Phase    Phase
	Time     time.Time
	Bus      string // WithName
	EventID  uint64
	ParentID uint64 // 0 for a root event
	Kind     string
	Handler  string        // handler phases
	Duration time.Duration // HandlerFinished/HandlerLate: handler run time; Completed: since dispatch
	Event    any           // Dispatched: the event value
	Value    any           // HandlerFinished and HandlerLate: the handler's value, also when it failed (nil when the bus gave up on it)
	Err      error         // HandlerFinished/HandlerLate: handler error; Completed: event error or first handler error
	Handlers int           // Completed: handlers run or skipped
	Failed   int           // Completed: handlers that failed
}

// Summarizer lets a result or event type give observers a short description
// without reflection-based formatting.
type Summarizer interface {
	Summary() string
}

// Summary describes Value (or Event for a Dispatched record) in at most max
// bytes (max <= 0: unlimited), using Summarizer when implemented, else
// fmt.Sprint. Call it from observers, off the hot path.
func (r Record) Summary(max int) string {
	v := r.Value
	if r.Phase == Dispatched {
		v = r.Event
	}
	if v == nil {
		return ""
	}
	var s string
	if sm, ok := v.(Summarizer); ok {
		s = sm.Summary()
	} else {
		s = fmt.Sprint(v)
	}
	if max > 0 && len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Observer receives every Record of a bus, on its own goroutine.
type Observer interface {
	Observe(Record)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Record)

// Observe calls f(r).
func (f ObserverFunc) Observe(r Record) { f(r) }

// DefaultObserverBuffer is the record buffer of an observer unless
// WithBuffer sets another.
const DefaultObserverBuffer = 4096

// ObserveOption configures an observation.
type ObserveOption func(*Observation)

// WithBuffer sets the number of records buffered for the observer (min 1).
func WithBuffer(n int) ObserveOption {
	return func(o *Observation) {
		if n < 1 {
			n = 1
		}
		o.bufN = n
	}
}

// Observation is an attached observer. Records are delivered in the order
// the bus produced them, by one goroutine per observer, through a bounded
// buffer: the bus never waits for an observer. When the buffer is full the
// record is dropped and counted (Dropped); a slow observer loses records, it
// does not slow the bus.
type Observation struct {
	b       *Bus
	o       Observer
	bufN    int
	ch      chan Record
	quit    chan struct{}
	done    chan struct{}
	abort   atomic.Bool
	dropped atomic.Uint64
	panics  atomic.Uint64
	once    sync.Once
}

// Observe attaches o to b until Stop or Close. On a closed bus the returned
// Observation is already done and receives nothing.
func (b *Bus) Observe(o Observer, opts ...ObserveOption) *Observation {
	ob := &Observation{b: b, o: o, bufN: DefaultObserverBuffer, quit: make(chan struct{}), done: make(chan struct{})}
	for _, opt := range opts {
		opt(ob)
	}
	ob.ch = make(chan Record, ob.bufN)
	b.obsMu.Lock()
	defer b.obsMu.Unlock()
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		ob.once.Do(func() { close(ob.quit) })
		close(ob.done)
		return ob
	}
	var list []*Observation
	if p := b.obs.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, ob)
	b.obs.Store(&list)
	go ob.run()
	return ob
}

// Dropped returns the number of records dropped because the buffer was full
// (or left undelivered when Close ran out of time).
func (o *Observation) Dropped() uint64 { return o.dropped.Load() }

// Panics returns how many times the observer panicked (each panic loses that record only).
func (o *Observation) Panics() uint64 { return o.panics.Load() }

// Done returns a channel closed when the observer goroutine has returned.
func (o *Observation) Done() <-chan struct{} { return o.done }

// Stop detaches the observer. Records already buffered are still delivered;
// Stop does not wait (use Done; the bus's Close also waits for it). It may be
// called from the observer itself.
func (o *Observation) Stop() {
	b := o.b
	b.obsMu.Lock()
	if p := b.obs.Load(); p != nil {
		var list []*Observation
		for _, x := range *p {
			if x != o {
				list = append(list, x)
			}
		}
		b.obs.Store(&list)
	}
	// Close still waits for stopped observers that have not finished.
	kept := b.stopped[:0]
	for _, x := range b.stopped {
		select {
		case <-x.done:
		default:
			kept = append(kept, x)
		}
	}
	b.stopped = append(kept, o)
	b.obsMu.Unlock()
	o.once.Do(func() { close(o.quit) })
}

func (o *Observation) run() {
	defer close(o.done)
	for {
		select {
		case r := <-o.ch:
			o.deliver(r)
		case <-o.quit:
			for {
				if o.abort.Load() {
					o.dropped.Add(uint64(len(o.ch)))
					return
				}
				select {
				case r := <-o.ch:
					o.deliver(r)
				default:
					return
				}
			}
		}
	}
}

func (o *Observation) deliver(r Record) {
	defer func() {
		if recover() != nil {
			o.panics.Add(1)
		}
	}()
	o.o.Observe(r)
}

func (b *Bus) observing() bool {
	p := b.obs.Load()
	return p != nil && len(*p) > 0
}

func (b *Bus) emit(r Record) {
	p := b.obs.Load()
	if p == nil {
		return
	}
	for _, o := range *p {
		select {
		case o.ch <- r:
		default:
			o.dropped.Add(1)
		}
	}
}

func (b *Bus) emitStarted(hc *hctx) {
	if b.observing() {
		e := hc.ev
		b.emit(Record{Phase: HandlerStarted, Time: hc.start, Bus: b.name, EventID: e.id, ParentID: e.parent,
			Kind: e.kind, Handler: hc.fr.handler})
	}
}

// emitFinishedErr reports a handler the bus gave up on (timeout, cancel, close).
func (b *Bus) emitFinishedErr(hc *hctx, err error) {
	if !b.observing() {
		return
	}
	e := hc.ev
	b.emit(Record{Phase: HandlerFinished, Time: time.Now(), Bus: b.name, EventID: e.id, ParentID: e.parent,
		Kind: e.kind, Handler: hc.fr.handler, Duration: time.Since(hc.start), Err: err})
}

// closeObservers stops every observer after it delivered its buffer, or,
// when ctx ends, makes them stop at once (the rest counts as dropped).
func (b *Bus) closeObservers(ctx context.Context) error {
	b.obsMu.Lock()
	var list []*Observation
	if p := b.obs.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, b.stopped...)
	b.stopped = nil
	b.obs.Store(nil)
	b.obsMu.Unlock()
	for _, o := range list {
		o.once.Do(func() { close(o.quit) })
	}
	for _, o := range list {
		select {
		case <-o.done:
		case <-ctx.Done():
			for _, x := range list {
				x.abort.Store(true)
			}
			select {
			case <-o.done:
			default:
				return &CloseError{Running: []string{"observer"}, Cause: ctx.Err()}
			}
		}
	}
	return nil
}
