package cdp

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Errors returned by this package wrap them, so test with
// errors.Is.
var (
	// ErrConnectionLost is wrapped by every error of a call that failed because
	// the websocket connection ended without Close. The error that ended the
	// connection (for example a *websocket.CloseError with code 1006) is in the
	// same chain.
	ErrConnectionLost = errors.New("cdp: connection to the browser lost")

	// ErrStalled is wrapped (together with ErrConnectionLost) by the error of
	// every call and subscription of a connection that the Conn failed itself
	// because nothing at all arrived from the browser for the stall timeout
	// (see WithKeepalive), the probes it sent meanwhile unanswered. The cause
	// in the chain is a *StallError.
	ErrStalled = errors.New("cdp: connection stalled")

	// ErrCorruptMessage is wrapped (together with ErrConnectionLost) by the
	// error of every call and subscription of a connection that received a
	// message it could not decode and whose id it could not recover (an event,
	// or garbage): the stream can no longer be trusted, so the Conn failed
	// itself. An undecodable reply whose id is recovered fails only its own
	// call, with a *ProtocolError of code CodeUndecodable.
	ErrCorruptMessage = errors.New("cdp: undecodable message from the browser")

	// ErrClosed is returned by calls made on (or pending when) Conn.Close ran.
	ErrClosed = errors.New("cdp: connection closed")

	// ErrTargetCrashed is returned by calls on a session whose target crashed
	// (Inspector.targetCrashed on the session, or Target.targetCrashed for its
	// target). It is sticky: the session stays unusable; close the target and
	// open a new one.
	ErrTargetCrashed = errors.New("cdp: target crashed")

	// ErrTargetDetached is returned by calls on a session that was detached
	// (Target.detachedFromTarget), for example because its target closed.
	ErrTargetDetached = errors.New("cdp: target detached")

	// ErrSubscriptionOverflow is the Err of a subscription that was closed
	// because its buffer was full when an event arrived.
	ErrSubscriptionOverflow = errors.New("cdp: subscription buffer overflow")

	// ErrBrowserNotFound is returned by FindChrome and Launch when no Chromium
	// binary was found.
	ErrBrowserNotFound = errors.New("cdp: no Chromium binary found; install it (apt-get install chromium) or set BROWSERAGENT_CHROME to its path")

	// ErrLaunchTimeout is returned by Launch when the browser did not publish its
	// DevTools endpoint in time.
	ErrLaunchTimeout = errors.New("cdp: timed out waiting for the browser's DevTools endpoint")

	// ErrBrowserExited is returned by Launch when the browser process exited
	// before it published its DevTools endpoint.
	ErrBrowserExited = errors.New("cdp: browser process exited")
)

// CodeUndecodable is the Code of the *ProtocolError that fails a call whose
// reply arrived but could not be decoded (the JSON-RPC "parse error" code).
// The browser sent nothing with this code: the Conn made it up.
const CodeUndecodable = -32700

// ProtocolError is an error reply of the browser to a command, or (Code
// CodeUndecodable) a reply that could not be decoded. Use errors.As to read
// the code.
type ProtocolError struct {
	Method  string // the command that failed, such as "DOM.describeNode"
	Code    int64  // the JSON-RPC error code, such as -32000
	Message string // the browser's message
	Data    string // optional details sent by the browser
	// Err is the decoding error when Code is CodeUndecodable (Unwrap returns
	// it); nil for an error reply of the browser.
	Err error
}

func (e *ProtocolError) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("cdp: %s: %s (%d): %s", e.Method, e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("cdp: %s: %s (%d)", e.Method, e.Message, e.Code)
}

// Unwrap returns the decoding error of an undecodable reply, else nil.
func (e *ProtocolError) Unwrap() error { return e.Err }

// StallError is the cause of a connection failed for silence (see
// WithKeepalive). It wraps ErrStalled; the Conn's error wraps it together
// with ErrConnectionLost.
type StallError struct {
	Silence time.Duration // how long nothing had been received
	Timeout time.Duration // the stall timeout in force
}

func (e *StallError) Error() string {
	return fmt.Sprintf("cdp: connection stalled: nothing received from the browser for %s (stall timeout %s)",
		e.Silence.Round(time.Millisecond), e.Timeout)
}

func (e *StallError) Unwrap() error { return ErrStalled }

// OverflowError is the Err of a subscription closed by overflow. It wraps
// ErrSubscriptionOverflow.
type OverflowError struct {
	Method string // the event that did not fit
	Buffer int    // the capacity of the subscription's buffer
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("cdp: subscription closed: buffer of %d events full when %s arrived", e.Buffer, e.Method)
}

func (e *OverflowError) Unwrap() error { return ErrSubscriptionOverflow }

// lostError wraps both ErrConnectionLost and the cause.
func lostError(cause error) error {
	return fmt.Errorf("%w: %w", ErrConnectionLost, cause)
}

// corruptError is the connection's error after an undecodable message
// without a recoverable id: ErrConnectionLost, ErrCorruptMessage and the
// decoding error.
func corruptError(size int, decodeErr error) error {
	return lostError(fmt.Errorf("%w (%d bytes, no id recovered): %w", ErrCorruptMessage, size, decodeErr))
}
