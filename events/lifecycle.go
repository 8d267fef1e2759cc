package events

import "time"

// BrowserStartEvent asks to start the browser: launch a local one, or
// connect to CDPURL. Emitted by Session.Start; handled by the Session (and
// the launcher watchdog for local browsers), which emits BrowserConnected.
type BrowserStartEvent struct {
	CDPURL string // "" = launch locally
}

// BrowserStartResult is the endpoint in use.
type BrowserStartResult struct {
	CDPURL string
}

// BrowserStart starts or connects (30 s).
var BrowserStart = def[BrowserStartEvent, BrowserStartResult]("BrowserStart", 30*sec)

// BrowserLaunchEvent asks the launcher to start a local browser process.
// Emitted by the Session during BrowserStart; handled by the launcher.
type BrowserLaunchEvent struct{}

// BrowserLaunchResult is the launched browser's endpoint.
type BrowserLaunchResult struct {
	CDPURL string
	PID    int
}

// BrowserLaunch launches a local browser (30 s).
var BrowserLaunch = def[BrowserLaunchEvent, BrowserLaunchResult]("BrowserLaunch", 30*sec)

// BrowserKillEvent asks the launcher to end the local browser process.
// Emitted by the Session during BrowserStop; handled by the launcher.
type BrowserKillEvent struct{}

// BrowserKill kills the local browser (30 s).
var BrowserKill = def[BrowserKillEvent, None]("BrowserKill", 30*sec)

// BrowserStopEvent asks to stop the browser (Force: do not save state or
// wait). Emitted by Session.Stop; handled by the storage-state, recording
// and launcher watchdogs and the Session, which emits BrowserStopped.
type BrowserStopEvent struct {
	Force bool
}

// BrowserStop stops (45 s).
var BrowserStop = def[BrowserStopEvent, None]("BrowserStop", 45*sec)

// BrowserStoppedEvent reports that the browser is stopped. Emitted by the
// Session; handled by watchdogs that release resources.
type BrowserStoppedEvent struct {
	Reason string
}

// BrowserStopped reports a stop (30 s).
var BrowserStopped = def[BrowserStoppedEvent, None]("BrowserStopped", 30*sec)

// BrowserConnectedEvent reports a live CDP connection. Emitted by the
// Session; handled by the permissions, storage-state, recording watchdogs.
type BrowserConnectedEvent struct {
	CDPURL string
}

// BrowserConnected reports a connection (30 s).
var BrowserConnected = def[BrowserConnectedEvent, None]("BrowserConnected", 30*sec)

// BrowserErrorEvent reports an error the runtime wants visible (a blocked
// navigation, a failed launch). Emitted by any watchdog; handled by the
// trace and the agent (it reaches the model).
type BrowserErrorEvent struct {
	Type    string
	Message string
	Details map[string]string
}

// BrowserError reports an error (30 s).
var BrowserError = def[BrowserErrorEvent, None]("BrowserError", 30*sec)

// TargetCrashedEvent reports a crashed target (renderer gone). Emitted by
// the Session (Inspector.targetCrashed / Target.targetCrashed); handled by
// the crash watchdog and the Session (tab model).
type TargetCrashedEvent struct {
	TargetID string
	Error    string
}

// TargetCrashed reports a crash (10 s).
var TargetCrashed = def[TargetCrashedEvent, None]("TargetCrashed", 10*sec)

// BrowserReconnectingEvent reports a reconnect attempt after the websocket
// was lost. Emitted by the Session; handled by the trace and by handlers
// that pause work (circuit breaker).
type BrowserReconnectingEvent struct {
	CDPURL      string
	Attempt     int
	MaxAttempts int
}

// BrowserReconnecting reports a reconnect attempt (30 s).
var BrowserReconnecting = def[BrowserReconnectingEvent, None]("BrowserReconnecting", 30*sec)

// BrowserReconnectedEvent reports a restored connection. Emitted by the
// Session; handled by watchdogs that re-subscribe.
type BrowserReconnectedEvent struct {
	CDPURL   string
	Attempt  int
	Downtime time.Duration
}

// BrowserReconnected reports a reconnection (30 s).
var BrowserReconnected = def[BrowserReconnectedEvent, None]("BrowserReconnected", 30*sec)
