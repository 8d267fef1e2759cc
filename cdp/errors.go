package cdp

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap them, so test with
// errors.Is.
var (
	// ErrConnectionLost is wrapped by every error of a call that failed because
	// the websocket connection ended without Close. The error that ended the
	// connection (for example a *websocket.CloseError with code 1006) is in the
	// same chain.
	ErrConnectionLost = errors.New("cdp: connection to the browser lost")

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

// ProtocolError is an error reply of the browser to a command. Use errors.As to
// read the code.
type ProtocolError struct {
	Method  string // the command that failed, such as "DOM.describeNode"
	Code    int64  // the JSON-RPC error code, such as -32000
	Message string // the browser's message
	Data    string // optional details sent by the browser
}

func (e *ProtocolError) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("cdp: %s: %s (%d): %s", e.Method, e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("cdp: %s: %s (%d)", e.Method, e.Message, e.Code)
}

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
