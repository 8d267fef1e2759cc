package events

import "fmt"

// ElementRef identifies a DOM node directly, for embedders that hold one
// (for example from their own perception). Element-targeting events accept
// it instead of an Index.
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
	TabCount      int
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
}

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
