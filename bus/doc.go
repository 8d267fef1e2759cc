// Package bus is the typed event bus the runtime runs on (stdlib only).
//
// An event type is a Go struct E with a result type R, bound by a Kind[E, R]
// value that names it and gives its default timeout. Handlers are
// func(ctx, E) (R, error), registered per kind with Handle; callers dispatch
// with Dispatch (returns a *Pending[R]), Emit (fire-and-forget) or Call
// (dispatch, await, first result).
//
// Guarantees:
//
//   - Ordering: events of one bus are processed one at a time, in dispatch
//     order, by one worker goroutine. The handlers of an event run one after
//     another, in registration order (First, Before, After place them), and
//     every handler's result is kept (Result.All).
//   - Nesting: a handler may dispatch a child with its context and await it;
//     the child runs at once on the awaiting goroutine (the parent handler is
//     blocked anyway), so nested dispatch never deadlocks, at any depth and
//     across buses. A child emitted without waiting is queued after the
//     events already queued. Children record their parent's id.
//   - Timeouts: each kind has a default per-handler timeout, overridable per
//     bus (SetTimeout, WithTimeouts) and per dispatch (WithTimeout). On
//     timeout the handler's context is cancelled, its result becomes a
//     *HandlerError naming the kind and the handler (matching ErrTimeout and
//     context.DeadlineExceeded), and the event goes on with the next handler
//     at once: a handler that ignores its context is abandoned (its late
//     result is discarded and reported as HandlerLate) and a fresh worker
//     takes over the bus. Cancelling the dispatch context does the same with
//     ErrCanceled.
//   - Errors: a handler's panic becomes that handler's *PanicError (with the
//     stack); other handlers and the bus go on. StopOnError kinds and Guard
//     handlers stop the chain at the first error (policy vetoes).
//   - Isolation: buses share no lock; one bus per browser session.
//   - Observability: observers get every lifecycle record through a bounded
//     buffer and their own goroutine; a full buffer drops (counted), never
//     blocks. History keeps the last completed events.
//   - Shutdown: Close drains or, when its context ends, cancels; afterwards
//     no goroutine of the bus is left, except handlers that ignore
//     cancellation, until they return (Close reports them, Done waits).
//
// See docs/bus.md for the model and an example.
package bus
