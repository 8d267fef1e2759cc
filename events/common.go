package events

import (
	"errors"
	"fmt"
	"strings"
)

// ElementRef is the address of a DOM node: the node, the target (tab or
// cross-site iframe) and the CDP session it was observed in, and its frame.
// It is the one element address of the runtime: an observation's
// ElementInfo carries it, and element-targeting events accept it instead of
// an Index (for embedders with perception of their own).
type ElementRef struct {
	BackendNodeID int64
	TargetID      string
	SessionID     string // CDP flat session of the frame's target
	FrameID       string
}

// Target is how element-targeting events name their element: Index, the
// element index shown to the model in the last observation (the session
// resolves it in its cached selector map), unless Element is set. An index
// that is not in the selector map is an error, never a silent success.
type Target struct {
	Index   int
	Element *ElementRef
}

// Verdict is the observed effect of an action.
type Verdict string

// Verdicts, from the before/after evidence of an action.
const (
	VerdictChanged   Verdict = "changed"   // the page changed (fingerprint differs)
	VerdictNoChange  Verdict = "no_change" // nothing observable changed
	VerdictNavigated Verdict = "navigated" // the URL of the focused tab changed
	VerdictNewTab    Verdict = "new_tab"   // a tab opened (and may have taken focus)
	VerdictDialog    Verdict = "dialog"    // a JavaScript dialog opened
	VerdictDownload  Verdict = "download"  // a download started
	VerdictFailed    Verdict = "failed"    // the action failed (see Detail and the error)
)

// Evidence is the page state an outcome compares.
type Evidence struct {
	URL           string
	FocusedTarget string
	Fingerprint   string // cheap page fingerprint (mutation counter / DOM hash)
	TabCount      int    // the session's own tabs (not a connected browser's foreign ones)
	// RequestMark is the session's network sequence number when the
	// evidence was read: the outcome computed from this evidence lists
	// the requests sent after it (the session's marks start at 1). Zero
	// (an Evidence the session did not read): no requests are listed.
	RequestMark uint64 `json:"-"`
}

// ActionOutcome is carried by every action result: what the action did,
// with the evidence before and after it.
type ActionOutcome struct {
	Verdict  Verdict
	Before   Evidence
	After    Evidence
	Detail   string   // human-readable detail for the model ("opened tab X", "value rejected")
	NewTabs  []string // target ids of tabs opened by the action
	Download string   // download guid, when Verdict is download
	// Requests are the network requests the action caused, in the order
	// they were sent, until the page settled (method, URL, type, status;
	// never headers or bodies). Nil when none was sent. At most
	// MaxOutcomeRequests are listed: the first ones, since an action's own
	// requests come before what they load.
	Requests []Request
	// RequestsOmitted counts the requests sent after those listed.
	RequestsOmitted int
}

// MaxOutcomeRequests caps ActionOutcome.Requests.
const MaxOutcomeRequests = 50

// ErrRequestFailed is wrapped by the error of an action whose write request
// (a POST, PUT, PATCH or DELETE document, XHR or fetch) answered 4xx or 5xx
// or failed on the network, even when the page looks as if it worked.
var ErrRequestFailed = errors.New("a request the action sent failed")

// RequestError is the cause of such an action's failure: the request, with
// its status or network error. It wraps ErrRequestFailed; its text, for the
// model, is the request and its answer ("POST http://host/submit answered
// 500"). Find it with errors.As on the action's error.
type RequestError struct {
	Request Request
}

func (e *RequestError) Error() string { return e.Request.Describe() }

// Unwrap returns ErrRequestFailed.
func (e *RequestError) Unwrap() error { return ErrRequestFailed }

// Describe says what became of r, in one line for the model: "POST
// http://host/submit answered 500", "... failed: net::ERR_...", "... was
// blocked by policy", "... has no answer yet
// (unconfirmed)". The URL is shown without its query and fragment, which
// may hold secrets, and clipped.
func (r Request) Describe() string {
	head := strings.ToUpper(r.Method) + " " + ShortURL(r.URL)
	switch {
	case r.Blocked && strings.HasPrefix(r.Error, "blocked"):
		return head + " was " + r.Error
	case r.Blocked:
		return head + " was blocked (" + r.Error + ")"
	case r.Canceled:
		return head + " was canceled before its answer (unconfirmed)"
	case r.Error != "":
		return head + " failed: " + r.Error
	case r.Status != 0:
		return fmt.Sprintf("%s answered %d", head, r.Status)
	case r.Pending:
		return head + " has no answer yet (unconfirmed)"
	}
	return head
}

// Unconfirmed reports whether r was sent but its outcome is unknown: no
// answer came before the page settled, or it was canceled (the page
// navigated away, a script aborted it) before one came.
func (r Request) Unconfirmed() bool {
	return r.Status == 0 && (r.Pending || r.Canceled)
}

// ShortURL is u without its query and fragment, clipped to 200 bytes.
func ShortURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if len(u) > 200 {
		u = u[:200] + "…"
	}
	return u
}

// FailedWrite returns the first write request of the outcome whose answer
// is an error (see Request.Failed) among documents, XHRs and fetches: the
// request that makes an action's verdict failed. Only the page's own
// requests count (Request.Own): a third-party script's telemetry or a
// cross-site poll failing is not the action failing. XHRs and fetches
// listed after a main-frame navigation (Request.Navigation) are taken for
// the new document's own (its scripts' analytics, say), not the action's,
// and do not count.
func (o ActionOutcome) FailedWrite() (Request, bool) {
	nav := false
	for _, r := range o.Requests {
		if nav && !r.Navigation {
			continue
		}
		if r.Own && r.Write() && r.Failed() && r.Verdictable() {
			return r, true
		}
		nav = nav || r.Navigation
	}
	return Request{}, false
}

// RequestErr returns the error an action must return with outcome o: err
// when it is not nil; when o's verdict is failed because of a write
// request it lists (FailedWrite), a *RequestError wrapping
// ErrRequestFailed; nil otherwise.
func (o ActionOutcome) RequestErr(err error) error {
	if err != nil || o.Verdict != VerdictFailed {
		return err
	}
	if r, ok := o.FailedWrite(); ok {
		return &RequestError{Request: r}
	}
	return nil
}

// Verdictable reports whether r is of a type whose answer decides an
// action's verdict: a document, an XHR or a fetch (not an image, a script,
// a beacon).
func (r Request) Verdictable() bool {
	switch r.Type {
	case "Document", "XHR", "Fetch":
		return true
	}
	return false
}

// Request is one network request an action caused, as its outcome lists
// it. It holds no headers and no bodies.
type Request struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// Type is Chrome's resource type: Document, XHR, Fetch, Script, ...
	Type string `json:"type,omitempty"`
	// Status is the HTTP status of the response; 0 when none came.
	Status int `json:"status,omitempty"`
	// Error is the network error (net::ERR_..., "blocked by policy") when
	// the request failed without a response.
	Error string `json:"error,omitempty"`
	// Pending reports that no answer had come when the page settled.
	Pending bool `json:"pending,omitempty"`
	// Blocked reports that the browser refused the request before sending
	// it (the URL policy's interception, a client block); Error says how.
	Blocked bool `json:"blocked,omitempty"`
	// Canceled reports that the request was aborted before its answer
	// (the page navigated away, a script aborted it): it may have reached
	// the server. It is not Failed.
	Canceled bool `json:"canceled,omitempty"`
	// Own reports that the request is the page's own: a document, or a
	// request to the same site (scheme and registrable domain) as the
	// document of the frame that sent it. A third-party request (a
	// tracker's POST, a cross-site poll) is listed but decides nothing.
	Own bool `json:"own,omitempty"`
	// Navigation reports that the request loads a new document in the
	// tab's main frame (not an iframe's).
	Navigation bool `json:"navigation,omitempty"`
}

// Write reports whether r asks the server to change something: any method
// but GET, HEAD and OPTIONS.
func (r Request) Write() bool {
	switch strings.ToUpper(r.Method) {
	case "GET", "HEAD", "OPTIONS", "":
		return false
	}
	return true
}

// Failed reports whether r got an error status (4xx, 5xx) or no response
// because of a network error or a block. A canceled request is not failed
// but unconfirmed.
func (r Request) Failed() bool { return r.Status >= 400 || (r.Error != "" && !r.Canceled) }

// Summary implements bus.Summarizer.
func (o ActionOutcome) Summary() string {
	if o.Detail == "" {
		return string(o.Verdict)
	}
	return fmt.Sprintf("%s: %s", o.Verdict, o.Detail)
}

// MouseButton names a mouse button.
type MouseButton string

// Mouse buttons.
const (
	ButtonLeft   MouseButton = "left"
	ButtonRight  MouseButton = "right"
	ButtonMiddle MouseButton = "middle"
)

// ErrBrowserGone is wrapped by errors that mean the browser will not come
// back: its process exited, or its connection was lost and not restored.
// The agent ends a run on it.
var ErrBrowserGone = errors.New("the browser is gone")

// ActionError is the error of an action that failed. Action handlers return
// it together with their result, whose Outcome is the same: Verdict failed,
// Detail, and the evidence read before and after (for an action refused
// before it touched the page, both are the page as it was then). The bus wraps it in a *bus.HandlerError;
// errors.As reaches it, so a caller that kept only the error still has the
// evidence:
//
//	var ae *events.ActionError
//	if errors.As(err, &ae) { log(ae.Outcome.Before, ae.Outcome.After) }
//
// Err is the cause; errors.Is looks through to it (for example
// ErrElementNotFound-style sentinels of the session). Error returns the
// cause's text alone: it is written for the model.
type ActionError struct {
	Action  string        // the event kind, e.g. "ClickElement"
	Outcome ActionOutcome // Verdict is VerdictFailed
	Err     error
}

func (e *ActionError) Error() string {
	if e.Err == nil {
		return e.Action + " failed"
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *ActionError) Unwrap() error { return e.Err }

// PageFingerprint is a cheap summary of a page, read in one round trip
// before and after every action: its URL, the number of mutations that
// change what it shows since the document loaded (elements added or
// removed; a class, style, hidden or open attribute changed when the
// rendered text then differs, as when a menu is shown by toggling a class
// or a <details> opened), and its element count. Two fingerprints differ
// when the page navigated, re-rendered, or showed or hid content; text
// changes alone do not count.
type PageFingerprint struct {
	URL       string `json:"url"`
	Mutations int64  `json:"mutations"` // mutations that change what is shown
	Elements  int64  `json:"elements"`
	Title     string `json:"title"`
}

// String is the compact form used in evidence and traces.
func (f PageFingerprint) String() string {
	return fmt.Sprintf("%s#m%d/e%d", f.URL, f.Mutations, f.Elements)
}

// Changed reports whether the page navigated or its structure changed
// between f and g.
func (f PageFingerprint) Changed(g PageFingerprint) bool {
	return f.URL != g.URL || f.Mutations != g.Mutations || f.Elements != g.Elements
}
