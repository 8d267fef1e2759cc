package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Errors returned by the bus wrap these, so test with errors.Is.
var (
	// ErrClosed is returned for a dispatch or registration on a closed bus, and
	// recorded for events that Close cancelled before they ran.
	ErrClosed = errors.New("bus: closed")
	// ErrNoHandler is reported by Result.Err and Call when an event had no handler.
	ErrNoHandler = errors.New("bus: no handler")
	// ErrTimeout is matched by the error of a handler that exceeded its timeout
	// (such errors also match context.DeadlineExceeded).
	ErrTimeout = errors.New("bus: handler timed out")
	// ErrCanceled is matched by the error of a handler whose dispatch context
	// was cancelled while it ran or before it could run.
	ErrCanceled = errors.New("bus: handler canceled")
	// ErrSkipped marks a handler that was not run: an earlier handler of the
	// same event failed and the chain stops on error (Kind.StopOnError or
	// Guard), or the event was cancelled or the bus closed first. The error
	// also unwraps to that reason.
	ErrSkipped = errors.New("bus: handler skipped after an earlier error")
	// ErrDuplicateHandler is returned by Handle when the kind already has a
	// handler of that name.
	ErrDuplicateHandler = errors.New("bus: duplicate handler name")
	// ErrHandlerNotFound is returned by Replace, Before and After for an unknown handler name.
	ErrHandlerNotFound = errors.New("bus: handler not found")
	// ErrKindMismatch is returned when one kind name is used with two different
	// event or result types on the same bus.
	ErrKindMismatch = errors.New("bus: kind name used with different types")
	// ErrInvalid is returned for an empty kind name, an empty handler name or a nil handler.
	ErrInvalid = errors.New("bus: invalid argument")
	// ErrCloseFromHandler is returned by Close called with a handler's context:
	// the handler would wait for itself.
	ErrCloseFromHandler = errors.New("bus: Close called from inside a handler")
	// ErrCloseIncomplete is matched by the error of a Close whose context ended
	// while handlers that ignore cancellation were still running.
	ErrCloseIncomplete = errors.New("bus: close incomplete, handlers still running")
)

// HandlerError is the error of one handler invocation. It names the event kind,
// the event id and the handler, and wraps the cause (the handler's own error,
// a *PanicError, a *TimeoutError, or a cancellation).
type HandlerError struct {
	Kind    string
	EventID uint64
	Handler string
	Err     error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("bus: %s#%d handler %q: %v", e.Kind, e.EventID, e.Handler, e.Err)
}

// Unwrap returns the cause.
func (e *HandlerError) Unwrap() error { return e.Err }

// PanicError is the cause recorded when a handler panics. Stack is the
// goroutine stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack)
}

// TimeoutError is the cause recorded when a handler exceeded its timeout. It
// matches ErrTimeout and context.DeadlineExceeded.
type TimeoutError struct {
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("bus: handler timed out after %s", e.Timeout)
}

// Is reports whether target is ErrTimeout or context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// CloseError is returned by Close when its context ended before every
// goroutine of the bus returned. Running names the handlers (kind/handler)
// still running; they were cancelled and the bus's Done channel closes when
// the last of them returns.
type CloseError struct {
	Running []string
	Cause   error
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("bus: close incomplete (%v), still running: %s", e.Cause, strings.Join(e.Running, ", "))
}

// Is matches ErrCloseIncomplete.
func (e *CloseError) Is(target error) bool { return target == ErrCloseIncomplete }

// Unwrap returns the context error that ended the wait.
func (e *CloseError) Unwrap() error { return e.Cause }

type canceledError struct{ cause error }

func (e canceledError) Error() string { return "bus: handler canceled: " + e.cause.Error() }
func (e canceledError) Is(target error) bool {
	return target == ErrCanceled
}
func (e canceledError) Unwrap() error { return e.cause }

type skippedError struct{ cause error }

func (e skippedError) Error() string { return "bus: handler not run: " + e.cause.Error() }
func (e skippedError) Is(target error) bool {
	return target == ErrSkipped
}
func (e skippedError) Unwrap() error { return e.cause }
