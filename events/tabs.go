package events

// TabCreatedEvent reports a new page target. Emitted by the Session when a
// target appears; handled by the Session (tab model), the security watchdog
// (closes forbidden tabs), popups, downloads and about:blank watchdogs.
type TabCreatedEvent struct {
	TargetID string
	URL      string
	OpenerID string // target that opened it, "" if none
}

// TabCreated reports a new tab (30 s).
var TabCreated = def[TabCreatedEvent, None]("TabCreated", 30*sec)

// TabClosedEvent reports that a page target went away. Emitted by the
// Session; handled by the Session (focus moves), downloads and about:blank
// watchdogs.
type TabClosedEvent struct {
	TargetID string
}

// TabClosed reports a closed tab (3 s).
var TabClosed = def[TabClosedEvent, None]("TabClosed", 3*sec)

// SwitchTabEvent asks to focus a tab (TargetID "" = the newest tab).
// Emitted by the agent's switch action and by the Session after NewTab
// navigation; handled by the Session, which activates the target and emits
// AgentFocusChanged.
type SwitchTabEvent struct {
	TargetID string
}

// SwitchTabResult is the tab that now has focus.
type SwitchTabResult struct {
	TargetID string
	URL      string
}

// SwitchTab is a focus change request (10 s).
var SwitchTab = def[SwitchTabEvent, SwitchTabResult]("SwitchTab", 10*sec)

// CloseTabEvent asks to close a tab. Emitted by the agent's close action and
// by the security and about:blank watchdogs; handled by the Session.
type CloseTabEvent struct {
	TargetID string
}

// CloseTab is a close request (10 s).
var CloseTab = def[CloseTabEvent, None]("CloseTab", 10*sec)

// AgentFocusChangedEvent reports that the agent's focused tab changed.
// Emitted by the Session; handled by the recording watchdog (follows focus),
// the DOM watchdog (drops caches) and the agent's action fence.
type AgentFocusChangedEvent struct {
	TargetID string
	URL      string
}

// AgentFocusChanged reports a focus change (10 s).
var AgentFocusChanged = def[AgentFocusChangedEvent, None]("AgentFocusChanged", 10*sec)

// TabInfo describes one open tab.
type TabInfo struct {
	TargetID string
	URL      string
	Title    string
}
