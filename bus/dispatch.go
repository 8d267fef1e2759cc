package bus

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DispatchOption configures one dispatch.
type DispatchOption func(*dispatchConfig)

type dispatchConfig struct {
	timeout    time.Duration
	hasTimeout bool
}

// WithTimeout overrides the handler timeout for this dispatch (d < 0: none).
func WithTimeout(d time.Duration) DispatchOption {
	return func(c *dispatchConfig) { c.timeout, c.hasTimeout = d, true }
}

func applyDispatchOptions(opts []DispatchOption) dispatchConfig {
	dc := new(dispatchConfig)
	for _, o := range opts {
		o(dc)
	}
	return *dc
}

// HandlerResult is the outcome of one handler for one event.
type HandlerResult[R any] struct {
	Handler  string
	Value    R
	Err      error // a *HandlerError, or nil
	Duration time.Duration
	Guard    bool // registered with Guard: Value is not a result
	Skipped  bool // not run (Err matches ErrSkipped)
}

// Result is the outcome of a completed event: every handler's result in the
// order they were registered when the event started.
type Result[R any] struct {
	ID, ParentID uint64
	Kind         string
	handlers     []HandlerResult[R]
	err          error
}

// All returns every handler's result, in run order. The slice belongs to the
// Result; do not modify it.
func (r *Result[R]) All() []HandlerResult[R] { return r.handlers }

// Err returns nil if every handler that ran succeeded; otherwise the event's
// error (ErrClosed, a cancellation) or the handlers' errors joined. An event
// without handlers reports an error matching ErrNoHandler. Handlers skipped
// after an earlier error add nothing (the earlier error is there).
func (r *Result[R]) Err() error {
	if r.err != nil {
		return r.err
	}
	if len(r.handlers) == 0 {
		return fmt.Errorf("%w for %s", ErrNoHandler, r.Kind)
	}
	var first error
	n := 0
	for i := range r.handlers {
		if h := &r.handlers[i]; h.Err != nil && !h.Skipped {
			if n == 0 {
				first = h.Err
			}
			n++
		}
	}
	if n <= 1 {
		return first
	}
	errs := make([]error, 0, n)
	for i := range r.handlers {
		if h := &r.handlers[i]; h.Err != nil && !h.Skipped {
			errs = append(errs, h.Err)
		}
	}
	return errors.Join(errs...)
}

// First returns one value and Err(): the value of the first non-guard
// handler that succeeded, else the value of the first non-guard handler that
// ran and failed. A handler may return a value together with its error (a
// failed action returns its verdict and evidence); First keeps that value,
// so a caller gets both. A handler the bus gave up on (timeout, cancel) and
// a skipped one have no value. If no handler produced a value, the zero R is
// returned.
func (r *Result[R]) First() (R, error) {
	err := r.Err()
	failed := -1
	for i := range r.handlers {
		h := &r.handlers[i]
		if h.Guard || h.Skipped {
			continue
		}
		if h.Err == nil {
			return h.Value, err
		}
		if failed < 0 {
			failed = i
		}
	}
	if failed >= 0 {
		return r.handlers[failed].Value, err
	}
	var zero R
	return zero, err
}

// Pending is a dispatched event. It is complete when Done is closed.
type Pending[R any] struct {
	e   event
	res Result[R]
	one [1]HandlerResult[R]
}

// ID returns the event id (unique in the process, increasing).
func (p *Pending[R]) ID() uint64 { return p.e.id }

// Done returns a channel closed when the event is complete.
func (p *Pending[R]) Done() <-chan struct{} { return p.e.done }

// Wait waits until the event is complete and returns its result, or returns
// ctx's error if ctx ends first (the event goes on; its dispatch context
// governs its handlers).
//
// Called with a handler's context (from inside a handler of the same bus),
// Wait runs the event at once on the calling goroutine if it has not started:
// the awaiting handler blocks the bus's worker anyway, and this is what makes
// nested dispatch deadlock-free. Each of the child's handlers still gets its
// own timeout.
func (p *Pending[R]) Wait(ctx context.Context) (*Result[R], error) {
	select {
	case <-p.e.done:
		return &p.res, nil
	default:
	}
	if frameOf(ctx).on(p.e.b) != nil {
		b := p.e.b
		b.mu.Lock()
		steal := p.e.state == stateQueued
		if steal {
			b.beginLocked(&p.e)
		}
		b.mu.Unlock()
		if steal {
			b.runInline(&p.e)
		}
	}
	select {
	case <-p.e.done:
		return &p.res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("bus: waiting for %s#%d: %w", p.e.kind, p.e.id, ctx.Err())
	}
}

// call is the typed state of one dispatched event.
type call[E, R any] struct {
	Pending[R]
	payload E
}

func (c *call[E, R]) prepare(n int) {
	if n <= 1 {
		c.res.handlers = c.one[:n]
	} else {
		c.res.handlers = make([]HandlerResult[R], n)
	}
}

func (c *call[E, R]) setResult(i int, err error, d time.Duration, skipped bool) {
	ent := c.e.entries[i]
	c.res.handlers[i] = HandlerResult[R]{Handler: ent.name, Err: err, Duration: d, Guard: ent.guard, Skipped: skipped}
}

func (c *call[E, R]) finish() {
	c.res.ID, c.res.ParentID, c.res.Kind, c.res.err = c.e.id, c.e.parent, c.e.kind, c.e.err
}

func (c *call[E, R]) eventValue() any { return c.payload }

func (c *call[E, R]) invoke(i int, hc *hctx) bool {
	e := &c.e
	ent := e.entries[i]
	var v R
	var err error
	if fn, ok := ent.fn.(func(context.Context, E) (R, error)); ok {
		v, err = safeCall(fn, hc, c.payload)
	} else {
		err = fmt.Errorf("%w: handler type", ErrKindMismatch)
	}
	d := time.Since(hc.start)
	b := e.b
	b.mu.Lock()
	if len(b.side) > 0 {
		delete(b.side, hc)
	}
	if hc.abandoned {
		b.mu.Unlock()
		if b.observing() {
			b.emit(Record{Phase: HandlerLate, Time: time.Now(), Bus: b.name, EventID: e.id, ParentID: e.parent,
				Kind: e.kind, Handler: ent.name, Duration: d, Value: v, Err: err})
		}
		return false
	}
	hc.finished = true
	b.mu.Unlock()
	hc.cancel(context.Canceled)
	if err != nil {
		herr := &HandlerError{Kind: e.kind, EventID: e.id, Handler: ent.name, Err: err}
		err = herr
		e.noteErr(herr, ent.guard)
	}
	c.res.handlers[i] = HandlerResult[R]{Handler: ent.name, Value: v, Err: err, Duration: d, Guard: ent.guard}
	if b.observing() {
		// The value goes with the error: a failed handler's value is its
		// evidence (an action's verdict), which the trace must keep.
		b.emit(Record{Phase: HandlerFinished, Time: hc.start.Add(d), Bus: b.name, EventID: e.id, ParentID: e.parent,
			Kind: e.kind, Handler: ent.name, Duration: d, Value: v, Err: err})
	}
	return true
}

// Dispatch queues ev on b and returns at once. Handlers run on the bus's
// worker in dispatch order, each under the timeout of kind k (unless
// overridden), with a context derived from ctx: cancelling ctx cancels the
// event. If ctx is a handler's context, the new event records that handler's
// event as its parent. Not waiting for the Pending is fire-and-forget; the
// outcome then reaches observers and History. Prefer Emit for
// fire-and-forget from inside a handler: a handler's context is cancelled
// when the handler returns, which would cancel the event.
//
// On a closed bus the Pending is already complete with ErrClosed (handlers
// still running may dispatch until Close cancels).
func Dispatch[E, R any](ctx context.Context, b *Bus, k Kind[E, R], ev E, opts ...DispatchOption) *Pending[R] {
	c := &call[E, R]{payload: ev}
	b.submit(ctx, &c.e, c, k.Name, kindTok[E, R](), k.Timeout, k.StopOnError, opts)
	return &c.Pending
}

func emit[E, R any](ctx context.Context, b *Bus, k Kind[E, R], ev E, opts []DispatchOption) (uint64, error) {
	c := &call[E, R]{payload: ev}
	err := b.submit(ctx, &c.e, c, k.Name, kindTok[E, R](), k.Timeout, k.StopOnError, opts)
	return c.e.id, err
}

// Emit dispatches ev without waiting and without tying it to ctx's
// cancellation (ctx's values, such as the parent link, are kept). It returns
// the event id, or ErrClosed. Errors of its handlers reach observers and
// History.
func Emit[E, R any](ctx context.Context, b *Bus, k Kind[E, R], ev E, opts ...DispatchOption) (uint64, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return emit(context.WithoutCancel(ctx), b, k, ev, opts)
}

// Call dispatches ev, waits for it under ctx and returns Result.First: the
// first handler value and the handlers' error (ErrNoHandler if none). A
// failed handler's value is returned with its error, so check the error
// before trusting the value, and use the value as evidence when it failed.
func Call[E, R any](ctx context.Context, b *Bus, k Kind[E, R], ev E, opts ...DispatchOption) (R, error) {
	p := Dispatch(ctx, b, k, ev, opts...)
	res, err := p.Wait(ctx)
	if err != nil {
		var zero R
		return zero, err
	}
	return res.First()
}

// submit queues e, or completes it at once with its error (returned).
func (b *Bus) submit(ctx context.Context, e *event, j job, name string, tok any, kt time.Duration, soe bool, opts []DispatchOption) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var dc dispatchConfig
	if len(opts) > 0 {
		dc = applyDispatchOptions(opts) // kept apart: &dc escapes to the option funcs
	}
	e.b, e.job, e.kind, e.tok, e.stopOnError, e.dctx = b, j, name, tok, soe, ctx
	e.id = idSeq.Add(1)
	inHandler := false
	if f := frameOf(ctx); f != nil {
		e.pframe = f
		e.parent = f.eventID
		inHandler = f.on(b) != nil
	}
	e.done = make(chan struct{})
	e.dispatchedAt = time.Now()
	obs := b.observing()
	if obs {
		b.emit(Record{Phase: Dispatched, Time: e.dispatchedAt, Bus: b.name, EventID: e.id, ParentID: e.parent,
			Kind: name, Event: j.eventValue()})
	}
	b.mu.Lock()
	if name == "" || b.cancelled.Load() || (b.closed && !inHandler) {
		b.mu.Unlock()
		e.err = ErrClosed
		if name == "" {
			e.err = fmt.Errorf("%w: kind without a name", ErrInvalid)
		}
		e.state = stateRunning
		err := e.err
		b.complete(e)
		return err
	}
	t := kt
	if ks := b.kinds[name]; ks != nil && ks.timeout != 0 {
		t = ks.timeout
	}
	if dc.hasTimeout {
		t = dc.timeout
	}
	if t == 0 {
		t = b.defTimeout
	}
	e.timeout = t
	e.state = stateQueued
	b.queue = append(b.queue, e)
	b.stats.Dispatched++
	if b.active == nil {
		b.startRunnerLocked(nil)
	} else {
		b.wakeLocked()
	}
	b.mu.Unlock()
	return nil
}
