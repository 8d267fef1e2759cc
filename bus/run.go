package bus

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"
)

const (
	stateQueued uint8 = iota + 1
	stateRunning
	stateDone
)

// job is the type-erased side of a call[E, R].
type job interface {
	invoke(i int, hc *hctx) bool
	setResult(i int, err error, d time.Duration, skipped bool)
	prepare(n int)
	finish()
	eventValue() any
}

// event is the untyped state of one dispatched event.
type event struct {
	b           *Bus
	job         job
	id, parent  uint64
	kind        string
	tok         any
	dctx        context.Context
	pframe      *frame        // frame of the dispatching handler, if any
	timeout     time.Duration // <= 0: none
	stopOnError bool
	state       uint8 // guarded by b.mu
	done        chan struct{}

	// Owned by whoever processes the event (a runner or an inline waiter);
	// ownership moves under b.mu when a runner is abandoned.
	entries      []*entry
	next         int
	ran, failed  int
	stopErr      error
	firstErr     error
	errs         []error
	err          error // event-level error
	dispatchedAt time.Time
	startedAt    time.Time
	ctx0         hctx
}

// hctx is the context given to one handler invocation. It is cancelled when
// the handler returns, times out, or its event is cancelled or closed.
type hctx struct {
	parent    context.Context
	fr        frame
	ev        *event
	idx       int
	guard     bool
	start     time.Time
	timeout   time.Duration
	tdeadline time.Time // start+timeout, zero if none
	deadline  time.Time // min(tdeadline, parent deadline)

	mu   sync.Mutex
	done chan struct{}
	err  error

	finished, abandoned bool // guarded by Bus.mu
}

func (c *hctx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

func (c *hctx) Done() <-chan struct{} {
	c.mu.Lock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	d := c.done
	c.mu.Unlock()
	return d
}

func (c *hctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *hctx) Value(key any) any {
	if key == (frameKey{}) {
		return &c.fr
	}
	return c.parent.Value(key)
}

// cancel ends the context. Err reports context.DeadlineExceeded for a
// timeout and context.Canceled for anything else (the cause is in the
// handler's recorded error).
func (c *hctx) cancel(cause error) {
	err := context.Canceled
	if errors.Is(cause, context.DeadlineExceeded) {
		err = context.DeadlineExceeded
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
	c.mu.Unlock()
}

func (e *event) handlerCtx(i int) *hctx {
	hc := &e.ctx0
	if i != 0 {
		hc = new(hctx)
	}
	ent := e.entries[i]
	hc.parent, hc.ev, hc.idx, hc.guard = e.dctx, e, i, ent.guard
	hc.fr = frame{bus: e.b, eventID: e.id, kind: e.kind, handler: ent.name, outer: e.pframe}
	e.ran++
	hc.start = time.Now()
	hc.timeout = e.timeout
	if e.timeout > 0 {
		hc.tdeadline = hc.start.Add(e.timeout)
	}
	hc.deadline = hc.tdeadline
	if pd, ok := e.dctx.Deadline(); ok && (hc.deadline.IsZero() || pd.Before(hc.deadline)) {
		hc.deadline = pd
	}
	return hc
}

func (e *event) noteErr(err error, guard bool) {
	e.failed++
	e.errs = append(e.errs, err)
	if e.firstErr == nil {
		e.firstErr = err
	}
	if e.stopErr == nil && (e.stopOnError || guard) {
		e.stopErr = err
	}
}

func safeCall[E, R any](fn func(context.Context, E) (R, error), ctx context.Context, ev E) (v R, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, ev)
}

// runner is a worker goroutine of a bus. At most one runner is active; a
// runner whose handler is abandoned (timeout, cancel) hands the event and the
// queue to a new runner and exits when that handler finally returns.
type runner struct {
	b     *Bus
	timer *time.Timer
	cur   *hctx     // guarded by b.mu
	armed time.Time // when timer fires; zero if stopped; guarded by b.mu
}

func (b *Bus) startRunnerLocked(resume *event) {
	r := &runner{b: b}
	r.timer = time.AfterFunc(time.Hour, r.onTimer)
	r.timer.Stop()
	b.active = r
	b.idle = false
	b.gor++
	go r.loop(resume)
}

func (r *runner) loop(resume *event) {
	b := r.b
	defer b.exitGoroutine()
	if resume != nil && !r.process(resume) {
		return
	}
	for {
		b.mu.Lock()
		e := b.popLocked()
		if e == nil {
			if b.closed {
				if b.active == r {
					b.active = nil
				}
				r.timer.Stop()
				r.armed = time.Time{}
				b.mu.Unlock()
				return
			}
			b.idle = true
			b.mu.Unlock()
			<-b.wake
			continue
		}
		b.beginLocked(e)
		b.mu.Unlock()
		if !r.process(e) {
			return
		}
	}
}

func (b *Bus) popLocked() *event {
	for b.qhead < len(b.queue) {
		e := b.queue[b.qhead]
		b.queue[b.qhead] = nil
		b.qhead++
		if b.qhead == len(b.queue) {
			b.queue, b.qhead = b.queue[:0], 0
		} else if b.qhead >= 1024 && b.qhead*2 >= len(b.queue) {
			n := copy(b.queue, b.queue[b.qhead:])
			clear(b.queue[n:])
			b.queue, b.qhead = b.queue[:n], 0
		}
		if e.state == stateQueued {
			return e
		}
	}
	return nil
}

// beginLocked takes ownership of a queued event and snapshots its handlers.
func (b *Bus) beginLocked(e *event) {
	e.state = stateRunning
	if ks := b.kinds[e.kind]; ks != nil {
		if ks.tok != nil && ks.tok != e.tok {
			e.err = ErrKindMismatch
		} else {
			e.entries = ks.entries
		}
	}
}

func (r *runner) process(e *event) bool {
	b := r.b
	b.start(e)
	for e.next < len(e.entries) {
		i := e.next
		e.next++
		if b.skip(e, i) {
			continue
		}
		hc := e.handlerCtx(i)
		b.mu.Lock()
		r.cur = hc
		// The timer is re-armed only when this deadline is earlier than the
		// armed one; a timer firing early re-arms itself (onTimer). With equal
		// timeouts, consecutive handlers cost no timer operation.
		if !hc.tdeadline.IsZero() && (r.armed.IsZero() || hc.tdeadline.Before(r.armed)) {
			r.armed = hc.tdeadline
			r.timer.Reset(time.Until(hc.tdeadline))
		}
		b.mu.Unlock()
		var stop func() bool
		if e.dctx.Done() != nil {
			stop = context.AfterFunc(e.dctx, func() { r.onCancel(hc) })
		}
		b.emitStarted(hc)
		ok := e.job.invoke(i, hc)
		if stop != nil {
			stop()
		}
		if !ok {
			return false
		}
	}
	b.complete(e)
	return true
}

func (r *runner) onTimer() {
	b := r.b
	b.mu.Lock()
	r.armed = time.Time{}
	hc := r.cur
	if hc == nil || hc.finished || hc.abandoned || hc.tdeadline.IsZero() {
		b.mu.Unlock()
		return
	}
	if now := time.Now(); now.Before(hc.tdeadline) {
		r.armed = hc.tdeadline
		r.timer.Reset(hc.tdeadline.Sub(now))
		b.mu.Unlock()
		return
	}
	b.abandonLocked(hc, &TimeoutError{Timeout: hc.timeout}, context.DeadlineExceeded)
	b.takeOverLocked(r, hc.ev)
	b.mu.Unlock()
}

func (r *runner) onCancel(hc *hctx) {
	b := r.b
	cause := context.Cause(hc.ev.dctx)
	b.mu.Lock()
	if r.cur != hc || hc.finished || hc.abandoned {
		b.mu.Unlock()
		return
	}
	b.abandonLocked(hc, canceledError{cause}, cause)
	b.takeOverLocked(r, hc.ev)
	b.mu.Unlock()
}

// abandonLocked gives up on a running handler: its result becomes cause, its
// context is cancelled, and its late return is discarded.
func (b *Bus) abandonLocked(hc *hctx, cause, ctxErr error) {
	hc.abandoned = true
	e := hc.ev
	herr := &HandlerError{Kind: e.kind, EventID: e.id, Handler: hc.fr.handler, Err: cause}
	e.job.setResult(hc.idx, herr, time.Since(hc.start), false)
	e.noteErr(herr, hc.guard)
	b.side[hc] = struct{}{}
	b.stats.Abandoned++
	hc.cancel(ctxErr)
	// Emitted here, before a new worker can complete the event, so observers
	// see it before Completed. emit never blocks, so holding b.mu is fine.
	b.emitFinishedErr(hc, herr)
}

// takeOverLocked starts a new runner that continues e and then the queue,
// in place of r whose goroutine is stuck in an abandoned handler.
func (b *Bus) takeOverLocked(r *runner, e *event) {
	if b.active == r {
		b.active = nil
	}
	r.cur = nil
	r.timer.Stop()
	r.armed = time.Time{}
	b.startRunnerLocked(e)
}

// skip records handler i as not run if the event was cancelled, the bus
// cancelled by Close, or an earlier error stops the chain.
func (b *Bus) skip(e *event, i int) bool {
	var reason error
	switch {
	case b.cancelled.Load():
		reason = ErrClosed
	case e.dctx.Err() != nil:
		reason = canceledError{context.Cause(e.dctx)}
	case e.stopErr != nil:
		reason = e.stopErr
	default:
		return false
	}
	if e.ran == 0 && e.failed == 0 && e.err == nil && e.stopErr == nil {
		e.err = reason
	}
	e.job.setResult(i, skippedError{reason}, 0, true)
	return true
}

func (b *Bus) start(e *event) {
	e.job.prepare(len(e.entries))
	if len(e.entries) > 0 {
		e.startedAt = time.Now()
	}
}

// runInline processes e on the calling goroutine (a handler awaiting its
// child). Each handler runs on its own goroutine so that a hung child handler
// times out without hanging the awaiting parent.
func (b *Bus) runInline(e *event) {
	b.start(e)
	for e.next < len(e.entries) {
		i := e.next
		e.next++
		if b.skip(e, i) {
			continue
		}
		hc := e.handlerCtx(i)
		fin := make(chan bool, 1)
		b.mu.Lock()
		b.gor++
		b.side[hc] = struct{}{}
		b.mu.Unlock()
		b.emitStarted(hc)
		go func() {
			defer b.exitGoroutine()
			fin <- e.job.invoke(i, hc)
		}()
		var tc <-chan time.Time
		var t *time.Timer
		if hc.timeout > 0 {
			t = time.NewTimer(hc.timeout)
			tc = t.C
		}
		select {
		case <-fin:
		case <-tc:
			b.abandonInline(hc, &TimeoutError{Timeout: hc.timeout}, context.DeadlineExceeded, fin)
		case <-e.dctx.Done():
			cause := context.Cause(e.dctx)
			b.abandonInline(hc, canceledError{cause}, cause, fin)
		case <-hc.Done():
			// Cancelled by Close, or finished an instant ago (fin follows).
			b.abandonInline(hc, canceledError{ErrClosed}, ErrClosed, fin)
		}
		if t != nil {
			t.Stop()
		}
	}
	b.complete(e)
}

func (b *Bus) abandonInline(hc *hctx, cause, ctxErr error, fin chan bool) {
	b.mu.Lock()
	if hc.finished {
		b.mu.Unlock()
		<-fin
		return
	}
	b.abandonLocked(hc, cause, ctxErr)
	b.mu.Unlock()
}

func (b *Bus) complete(e *event) {
	e.job.finish()
	now := time.Now()
	b.mu.Lock()
	e.state = stateDone
	b.stats.Completed++
	if b.histCap > 0 {
		s := EventSummary{
			ID: e.id, ParentID: e.parent, Kind: e.kind,
			DispatchedAt: e.dispatchedAt, StartedAt: e.startedAt, CompletedAt: now,
			Handlers: len(e.entries), Failed: e.failed, Err: e.err, HandlerErrors: e.errs,
		}
		if s.Err == nil {
			s.Err = e.firstErr
		}
		if len(b.hist) < b.histCap {
			b.hist = append(b.hist, s)
		} else {
			b.hist[b.histNext] = s
			b.histNext = (b.histNext + 1) % b.histCap
		}
	}
	b.mu.Unlock()
	// Observers get Completed before awaiters are released, so whatever an
	// awaiter does next (even stopping the observer) comes after it.
	if b.observing() {
		err := e.err
		if err == nil {
			err = e.firstErr
		}
		b.emit(Record{Phase: Completed, Time: now, Bus: b.name, EventID: e.id, ParentID: e.parent, Kind: e.kind,
			Duration: now.Sub(e.dispatchedAt), Err: err, Handlers: len(e.entries), Failed: e.failed})
	}
	close(e.done)
}
