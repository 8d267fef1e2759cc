package events

// TabCreatedEvent reports a new page target (a tab the session opened, or
// one the page opened). Emitted by the Session once the tab is attached and
// prepared; handled by the security watchdog (closes a popup on a refused
// URL) and the trace. In a browser the session connected to, TabCreated
// and TabClosed also report foreign tabs (the user's, another session's),
// which the session attaches but does not list: Session.Owns tells them
// apart.
type TabCreatedEvent struct {
	TargetID string
	URL      string
	OpenerID string // target that opened it, "" if none
}

// TabCreated reports a new tab (30 s).
var TabCreated = def[TabCreatedEvent, None]("TabCreated", 30*sec)

// TabClosedEvent reports that a page target went away. Emitted by the
// Session after it updated its tab model (and moved the focus if needed);
// handled by the security watchdog (forgets the tab) and the trace.
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

// CloseTabEvent asks to close a tab. Emitted by the agent's close_tab
// action, the security watchdog (a popup on a refused URL) and the crash
// watchdog (CloseTab policy); handled by the Session.
type CloseTabEvent struct {
	TargetID string
}

// CloseTab is a close request (10 s).
var CloseTab = def[CloseTabEvent, None]("CloseTab", 10*sec)

// AgentFocusChangedEvent reports that the agent's focused tab changed.
// Emitted by the Session; handled by the DOM watchdog (drops its previous
// selector maps) and the recording watchdog (follows the focus). The agent
// reads the focus from the session instead (its batch fence).
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
