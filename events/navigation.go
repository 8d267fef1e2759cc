package events

import "time"

// WaitUntil is the load state a navigation waits for.
type WaitUntil string

// Load states (upstream default: load).
const (
	WaitLoad             WaitUntil = "load"
	WaitDOMContentLoaded WaitUntil = "domcontentloaded"
	WaitNetworkIdle      WaitUntil = "networkidle"
	WaitCommit           WaitUntil = "commit"
)

// NavigateToURLEvent asks to load URL in the focused tab, or in a new tab.
// Emitted by the agent's navigate and search actions. Handled by the
// security watchdog first (a guard:
// its policy error stops the chain, so a blocked URL is never loaded) and
// then by the Session, which navigates and emits NavigationStarted/Complete
// (and TabCreated/SwitchTab for NewTab).
type NavigateToURLEvent struct {
	URL    string
	NewTab bool
	// WaitUntil is how far the page must get before the navigation returns:
	// WaitCommit (the document committed), WaitDOMContentLoaded, WaitLoad
	// (the default: load, then a short settle or network idle) or
	// WaitNetworkIdle. A page that does not get there within Timeout is
	// reported as still loading, not as an error.
	WaitUntil WaitUntil
	// Timeout is the page-load budget after the commit; 0 = the session
	// profile's (NavigationTimeout, or the same-site/cross-site waits).
	Timeout time.Duration
}

// NavigateResult is where the navigation ended.
type NavigateResult struct {
	TargetID   string
	URL        string // final URL, after redirects
	HTTPStatus int    // 0 if unknown
	Outcome    ActionOutcome
}

// NavigateToURL is the navigation request (30 s). Its chain stops at the
// first error.
var NavigateToURL = guard[NavigateToURLEvent, NavigateResult]("NavigateToURL", 30*sec)

// NavigationStartedEvent reports that a navigation began in a target.
// Emitted by the Session before it navigates, not awaited; for observers
// and the trace (redirects are checked by request interception).
type NavigationStartedEvent struct {
	TargetID string
	URL      string
}

// NavigationStarted reports a navigation start (30 s).
var NavigationStarted = def[NavigationStartedEvent, None]("NavigationStarted", 30*sec)

// NavigationCompleteEvent reports that a navigation finished or failed.
// Emitted by the Session when the navigation returns, not awaited (a slow
// report handler must not hold the navigation; the bus runs it before any
// event dispatched later); handled by the security watchdog
// (final URL check: a forbidden page is replaced with about:blank), the
// downloads watchdog (PDF auto-download), the storage-state watchdog (notes
// the origin) and the trace.
type NavigationCompleteEvent struct {
	TargetID      string
	URL           string
	Status        int    // HTTP status, 0 if unknown
	ErrorMessage  string // net error text, "" on success
	LoadingStatus string
}

// NavigationComplete reports a navigation end (30 s).
var NavigationComplete = def[NavigationCompleteEvent, None]("NavigationComplete", 30*sec)

// GoBackEvent asks to go back in the focused tab's history. Emitted by the
// agent's go_back action; handled by the Session.
type GoBackEvent struct{}

// GoForwardEvent asks to go forward in the focused tab's history. Emitted by
// the agent; handled by the Session.
type GoForwardEvent struct{}

// RefreshEvent asks to reload the focused tab. Emitted by the agent; handled
// by the Session.
type RefreshEvent struct{}

// HistoryResult is the outcome of GoBack, GoForward and Refresh.
type HistoryResult struct {
	Outcome ActionOutcome
}

// History navigation (15 s each).
var (
	GoBack    = def[GoBackEvent, HistoryResult]("GoBack", 15*sec)
	GoForward = def[GoForwardEvent, HistoryResult]("GoForward", 15*sec)
	Refresh   = def[RefreshEvent, HistoryResult]("Refresh", 15*sec)
)

// WaitEvent asks to wait Duration (capped at Max). Emitted by the agent's
// wait action; handled by the actions watchdog, which honours cancellation.
type WaitEvent struct {
	Duration time.Duration // upstream default 3 s
	Max      time.Duration // upstream default 10 s
}

// Wait is a timed pause (60 s).
var Wait = def[WaitEvent, None]("Wait", 60*sec)
