package events

// DialogOpenedEvent reports a JavaScript dialog (alert, confirm, prompt,
// beforeunload). Emitted by the popups watchdog (Page.javascriptDialogOpening)
// before its policy decides; for observers and the trace. DialogHandled
// reports the decision. (An action learns of its dialog from CDP directly:
// verdict "dialog".)
type DialogOpenedEvent struct {
	TargetID      string
	FrameID       string
	Type          string
	Message       string
	URL           string
	DefaultPrompt string
}

// DialogOpened reports a dialog (300 s).
var DialogOpened = def[DialogOpenedEvent, None]("DialogOpened", 300*sec)

// DialogHandledEvent reports how a dialog was answered (beyond upstream, for
// the audit trace). Emitted by the popups watchdog when it decided, before
// the answer reaches the page, so that the action that opened the dialog
// completes after it; handled by the DOM watchdog (ClosedDialogs of the next
// observation) and the trace.
type DialogHandledEvent struct {
	TargetID   string
	Type       string
	Message    string
	URL        string // the URL of the frame that opened it
	Accepted   bool
	PromptText string
	DecidedBy  string // policy name
}

// DialogHandled reports a dialog decision (10 s; not upstream).
var DialogHandled = def[DialogHandledEvent, None]("DialogHandled", 10*sec)
