package session

import (
	"errors"
	"fmt"
)

// Sentinel errors of the session. Errors returned by the session wrap them.
var (
	// ErrNotStarted is returned by methods that need a running session.
	ErrNotStarted = errors.New("session: not started")
	// ErrAlreadyStarted is returned by Start on a running session.
	ErrAlreadyStarted = errors.New("session: already started")
	// ErrNoTab is returned when the session has no tab to act on.
	ErrNoTab = errors.New("session: no tab")
	// ErrTabNotFound is returned for a tab id the session does not know.
	ErrTabNotFound = errors.New("session: tab not found")
	// ErrForeignTab is returned for a tab of a browser the session
	// connected to that is not one of its tabs (the user's, another
	// session's; see Session.Owns): it may not be switched to, closed,
	// resolved or read. It wraps ErrTabNotFound: to the session's
	// callers such a tab does not exist.
	ErrForeignTab error = &wrapped{"session: not one of this session's tabs", ErrTabNotFound}
	// ErrTabConcealed is returned by [Session.Readable] for a tab the URL
	// policy concealed: its content must not be read (see ConcealTab).
	ErrTabConcealed = errors.New("session: tab concealed by the URL policy")
	// ErrElementNotFound is returned for an element index that is not in the
	// selector map of the last observation. The caller must request a new
	// browser state; the index may belong to an older page.
	ErrElementNotFound = errors.New("session: element index not in the current page state")
	// ErrNavigation is wrapped by a navigation the browser refused or failed.
	ErrNavigation = errors.New("session: navigation failed")
	// ErrNavigationPending is wrapped when a tab's document cannot be read
	// because a navigation of the tab has not been answered yet: the
	// browser holds every command for the page's renderer (an evaluation,
	// a DOM read) until the new document is ready to commit, so the old
	// document does not answer either.
	ErrNavigationPending = errors.New("session: the tab's navigation has no answer yet")
	// ErrPageGone is wrapped when the page an operation waited on went away
	// under it: its renderer crashed, its target detached, or the connection
	// to the browser was lost (the cause is wrapped too, e.g.
	// cdp.ErrConnectionLost).
	ErrPageGone = errors.New("session: the page is gone")
)

// ElementNotFoundError names the index that was not found.
type ElementNotFoundError struct {
	Index int
	// MapSize is the number of elements of the current selector map; zero
	// when no browser state was taken yet (or its DOM build failed).
	MapSize int
}

func (e *ElementNotFoundError) Error() string {
	if e.MapSize == 0 {
		return fmt.Sprintf("element index %d is unknown: no page state with element indexes exists; request the browser state first", e.Index)
	}
	return fmt.Sprintf("element index %d is not in the current page state (%d indexed elements); the page may have changed, request the browser state again", e.Index, e.MapSize)
}

// Unwrap makes errors.Is(err, ErrElementNotFound) hold.
func (e *ElementNotFoundError) Unwrap() error { return ErrElementNotFound }

// NavigationError is a navigation the browser reported as failed, such as
// net::ERR_NAME_NOT_RESOLVED or net::ERR_BLOCKED_BY_CLIENT (a policy
// interception refused the request or one of its redirects).
type NavigationError struct {
	URL       string
	ErrorText string
}

func (e *NavigationError) Error() string {
	return fmt.Sprintf("navigation to %s failed: %s", e.URL, e.ErrorText)
}

// Unwrap makes errors.Is(err, ErrNavigation) hold.
func (e *NavigationError) Unwrap() error { return ErrNavigation }

// wrapped is a sentinel error with its own message that also matches a
// more general one.
type wrapped struct {
	msg    string
	parent error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.parent }
