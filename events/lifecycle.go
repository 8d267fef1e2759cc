package events

import "time"

// BrowserStopEvent asks the watchdogs to finish their work before the
// session stops (Force: do not save state or wait). Dispatched and awaited by
// Session.Stop while the browser is still connected; handled by the
// storage-state watchdog (saves state) and the permissions watchdog (resets
// what it granted). The Session then dispatches BrowserStopped.
type BrowserStopEvent struct {
	Force bool
}

// BrowserStop stops (45 s).
var BrowserStop = def[BrowserStopEvent, None]("BrowserStop", 45*sec)

// BrowserStoppedEvent reports that the session is stopping: the last event
// before the bus closes. Dispatched and awaited by Session.Stop after
// BrowserStop; handled by the crash watchdog (stops reconnecting), and for
// observers and audits (Reason says why).
type BrowserStoppedEvent struct {
	Reason string
}

// BrowserStopped reports a stop (30 s).
var BrowserStopped = def[BrowserStoppedEvent, None]("BrowserStopped", 30*sec)

// BrowserConnectedEvent reports a live CDP connection. Dispatched and
// awaited by Session.Start; handled by the security (commit watcher),
// downloads (download behaviour), permissions (grants), storage-state
// (cookies), crash (connection monitor) and recording watchdogs.
type BrowserConnectedEvent struct {
	CDPURL string
}

// BrowserConnected reports a connection (30 s).
var BrowserConnected = def[BrowserConnectedEvent, None]("BrowserConnected", 30*sec)

// BrowserErrorEvent reports an error the runtime wants visible (a blocked
// navigation, a dialog policy that failed, a crashed tab, a lost
// connection). Emitted by the security, popups, downloads and crash
// watchdogs; for observers and the trace.
type BrowserErrorEvent struct {
	Type    string
	Message string
	Details map[string]string
}

// BrowserError reports an error (30 s).
var BrowserError = def[BrowserErrorEvent, None]("BrowserError", 30*sec)

// TargetCrashedEvent reports a crashed target (renderer gone). Emitted by
// the Session (Inspector.targetCrashed / Target.targetCrashed); handled by
// the crash watchdog.
type TargetCrashedEvent struct {
	TargetID string
	Error    string
}

// TargetCrashed reports a crash (10 s).
var TargetCrashed = def[TargetCrashedEvent, None]("TargetCrashed", 10*sec)

// BrowserReconnectingEvent reports that a reconnect attempt is scheduled
// after the websocket was lost (emitted before its backoff, so that waiters
// know a reconnect is under way). Emitted by the crash watchdog; handled by
// the Session (Ready waits for the outcome) and for observers.
type BrowserReconnectingEvent struct {
	CDPURL      string
	Attempt     int
	MaxAttempts int
}

// BrowserReconnecting reports a reconnect attempt (30 s).
var BrowserReconnecting = def[BrowserReconnectingEvent, None]("BrowserReconnecting", 30*sec)

// BrowserReconnectedEvent reports a restored connection (Session.Reconnect
// succeeded). Emitted by the crash watchdog; handled by the watchdogs that
// listen on the connection itself: security, downloads and recording.
type BrowserReconnectedEvent struct {
	CDPURL   string
	Attempt  int
	Downtime time.Duration
}

// BrowserReconnected reports a reconnection (30 s).
var BrowserReconnected = def[BrowserReconnectedEvent, None]("BrowserReconnected", 30*sec)

// BrowserLostEvent reports that the runtime gave up on the browser: the
// launched process exited, or the connection was lost and will not be
// restored (no reconnect configured, or every attempt failed). Emitted by
// the crash watchdog; handled by the Session (Ready then reports
// ErrBrowserGone at once) and for observers and the trace.
type BrowserLostEvent struct {
	Reason string
}

// BrowserLost reports that the browser is gone for good (10 s).
var BrowserLost = def[BrowserLostEvent, None]("BrowserLost", 10*sec)
