package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/events"
)

// Version is the protocol version this build speaks. It changes whenever a
// request or response changes meaning.
const Version = 1

// Size limits of one message.
const (
	// MaxRequestBytes bounds one request line (the text typed by "type" is
	// the largest part).
	MaxRequestBytes = 1 << 20
	// MaxResponseBytes bounds one response line (a full-page screenshot is
	// the largest part).
	MaxResponseBytes = 64 << 20
)

// Operations of a Request.
const (
	OpDo         = "do"         // run Request.Action with Request.Params (Driver.Do)
	OpState      = "state"      // observe the page (Driver.State); its indexes become the valid ones
	OpText       = "text"       // the page's text from Request.From, at most Request.Max characters (Driver.PageText)
	OpTabs       = "tabs"       // the open tabs (Driver.Tabs)
	OpActions    = "actions"    // the actions the session offers (Driver.Actions)
	OpScreenshot = "screenshot" // a PNG of the focused tab, indexes untouched
	OpInfo       = "info"       // what the session is (Info); does not count as activity
	OpClose      = "close"      // end the session: history, trace and report written
)

// Codes of a failed Response: what kind of failure, for programs. Client
// turns them back into errors that errors.Is and errors.As recognize.
const (
	CodeFailed        = "failed"         // the action ran and failed (its verdict is failed, or it returned an error)
	CodeStaleIndex    = "stale_index"    // agent.ErrStaleIndex; Response.Stale says which index and why
	CodeDenied        = "denied"         // agent.ErrDenied: the session refuses this kind of action (--deny)
	CodeUnknownAction = "unknown_action" // agent.ErrUnknownAction
	CodeBadParams     = "bad_params"     // agent.ErrBadParams
	CodeBrowserGone   = "browser_gone"   // events.ErrBrowserGone: the session's browser crashed or was closed
	CodeClosed        = "closed"         // agent.ErrClosed: the session is stopping (close, idle, a signal); the request was cancelled or refused
	CodeVersion       = "version"        // ErrVersion: the request's protocol version is not the server's
	CodeBadRequest    = "bad_request"    // ErrBadRequest: not a request this server can read
	CodeRefused       = "refused"        // ErrRefused: the connection did not present the session's token
)

// Request is one line a client sends.
type Request struct {
	// V is the protocol version (Version).
	V  int    `json:"v"`
	Op string `json:"op"`
	// Action and Params name a Driver action and its parameters (OpDo), as
	// a model writes them: {"index": 12}.
	Action string          `json:"action,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Screenshot asks OpState for a screenshot too.
	Screenshot bool `json:"screenshot,omitempty"`
	// Detail asks OpState for the whole observation (Response.State).
	Detail bool `json:"detail,omitempty"`
	// From and Max select a chunk of the page text (OpText).
	From int `json:"from,omitempty"`
	Max  int `json:"max,omitempty"`
}

// Response is the line a server answers with.
type Response struct {
	V  int    `json:"v"`
	OK bool   `json:"ok"`
	Op string `json:"op"`
	// Code classifies a failure (the Code constants); Error is its text as
	// the caller reads it, secrets scrubbed.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Stale is set with CodeStaleIndex.
	Stale *StaleIndex `json:"stale,omitempty"`
	// Reason is why the approval policy refused the action (CodeDenied).
	Reason string `json:"reason,omitempty"`

	// Action, Verdict and Text are the action's record (OpDo); Text is
	// also the page state (OpState) and the page text (OpText). ReadOnce is
	// what an action returned to be read once (dropdown options, a long
	// evaluate result).
	Action   string         `json:"action,omitempty"`
	Verdict  events.Verdict `json:"verdict,omitempty"`
	Text     string         `json:"text,omitempty"`
	ReadOnce string         `json:"read_once,omitempty"`

	// URL and Title are the focused tab's after the request.
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
	// Step is the history step that recorded the request.
	Step int `json:"step,omitempty"`
	// Total is the length of the whole page text (OpText).
	Total int `json:"total,omitempty"`
	// Screenshot is a PNG (OpScreenshot, OpState with Screenshot).
	Screenshot []byte `json:"screenshot,omitempty"`
	// State is the whole observation without its screenshot (OpState with
	// Detail).
	State *events.BrowserState `json:"state,omitempty"`
	// Tabs and Focused are the open tabs and the focused one's id (OpTabs).
	Tabs    []Tab  `json:"tabs,omitempty"`
	Focused string `json:"focused,omitempty"`
	// Actions are the offered actions (OpActions).
	Actions []Action `json:"actions,omitempty"`
	// Info describes the session (OpInfo, OpClose).
	Info *Info `json:"info,omitempty"`
}

// StaleIndex is an agent.StaleIndexError on the wire.
type StaleIndex struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// Tab is one open tab. ID is the 4-character id the state text shows and
// switch_tab takes.
type Tab struct {
	ID       string `json:"id"`
	TargetID string `json:"target_id"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	Focused  bool   `json:"focused,omitempty"`
}

// Action is one action a session offers.
type Action struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// Info describes a running session. The server fills PID, Version, Idle,
// URL, Title and the Go runtime figures; the rest comes from
// ServerOptions.Info.
type Info struct {
	Name    string    `json:"name"`
	PID     int       `json:"pid"`
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	// Idle is the time since the last request ended (0 while one runs).
	Idle time.Duration `json:"idle_ns"`
	// IdleTimeout is when the session ends by itself (0: never).
	IdleTimeout time.Duration `json:"idle_timeout_ns,omitempty"`
	URL         string        `json:"url,omitempty"`
	Title       string        `json:"title,omitempty"`
	// Dir holds the session's files: Trace, Report, History and Log.
	Dir     string `json:"dir,omitempty"`
	Trace   string `json:"trace,omitempty"`
	Report  string `json:"report,omitempty"`
	History string `json:"history,omitempty"`
	Log     string `json:"log,omitempty"`
	// CDPURL is the browser the session connected to ("" when it launched
	// its own, whose process is BrowserPID).
	CDPURL     string `json:"cdp_url,omitempty"`
	BrowserPID int    `json:"browser_pid,omitempty"`
	// Go runtime of the server process (runtime.MemStats), in bytes.
	HeapAlloc  uint64 `json:"heap_alloc"`
	HeapInuse  uint64 `json:"heap_inuse"`
	Sys        uint64 `json:"sys"`
	Goroutines int    `json:"goroutines"`
}

// Errors of the protocol. A Client's errors wrap them (or the agent's and
// events' sentinels, see RemoteError).
var (
	// ErrNotRunning: no server answers on the socket (none exists, or it
	// refuses connections). See NotRunningError for what Dir.Diagnose
	// found.
	ErrNotRunning = errors.New("control: session not running")
	// ErrVersion: client and server speak different protocol versions.
	ErrVersion = errors.New("control: protocol version mismatch")
	// ErrBadRequest: the server could not read the request (too large, not
	// JSON, unknown op).
	ErrBadRequest = errors.New("control: bad request")
	// ErrBadResponse: the client could not read the answer.
	ErrBadResponse = errors.New("control: bad response")
	// ErrTimeout: no answer came within the client's timeout.
	ErrTimeout = errors.New("control: no answer in time")
)

// RemoteError is a failure the server reported. errors.Is matches the
// sentinel of its Code: agent.ErrUnknownAction, agent.ErrBadParams,
// agent.ErrClosed, events.ErrBrowserGone, ErrVersion, ErrBadRequest or
// ErrRefused.
// (Stale indexes and denials come back as *agent.StaleIndexError and
// *agent.DeniedError instead.)
type RemoteError struct {
	Op, Code, Message string
}

func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel of the code, or nil.
func (e *RemoteError) Unwrap() error {
	switch e.Code {
	case CodeUnknownAction:
		return agent.ErrUnknownAction
	case CodeBadParams:
		return agent.ErrBadParams
	case CodeClosed:
		return agent.ErrClosed
	case CodeBrowserGone:
		return events.ErrBrowserGone
	case CodeVersion:
		return ErrVersion
	case CodeBadRequest:
		return ErrBadRequest
	case CodeRefused:
		return ErrRefused
	}
	return nil
}

// Err turns a failed response into the error it stands for (nil when OK).
func (r *Response) Err() error {
	if r.OK {
		return nil
	}
	switch r.Code {
	case CodeStaleIndex:
		if r.Stale != nil {
			return &agent.StaleIndexError{Index: r.Stale.Index, Reason: r.Stale.Reason}
		}
	case CodeDenied:
		return &agent.DeniedError{Action: r.Action, Reason: r.Reason}
	}
	msg := r.Error
	if msg == "" {
		msg = fmt.Sprintf("%s failed (%s)", r.Op, r.Code)
	}
	return &RemoteError{Op: r.Op, Code: r.Code, Message: msg}
}
