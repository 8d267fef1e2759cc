package events

import "fmt"

// ClickElementEvent asks to click an element. Emitted by the agent's click
// action; handled by the actions watchdog (scroll into view, occlusion test,
// mouse events, JS fallback), after any approval/policy guard placed first.
type ClickElementEvent struct {
	Target
	Button MouseButton // "" = left
}

// ClickResult is where and how the click happened.
type ClickResult struct {
	Outcome ActionOutcome
	// X, Y is the point clicked, in the CSS pixels of the viewport of
	// the element's frame target: the top-level page's, except for an
	// element in a cross-site iframe (its own target), where it is local
	// to that iframe. Meaningless for Method "js_fallback".
	X, Y    float64
	Method  string // "mouse" or "js_fallback"
	Checked *bool  // checkbox/radio state after the click, if applicable
}

// ClickElement clicks an element (15 s). Its chain stops at the first error.
var ClickElement = guard[ClickElementEvent, ClickResult]("ClickElement", 15*sec)

// ClickCoordinateEvent asks to click viewport coordinates. Emitted by the
// agent (coordinate clicks); handled by the actions watchdog. Force skips the
// actionability checks.
type ClickCoordinateEvent struct {
	X, Y   float64
	Button MouseButton
	Force  bool
}

// ClickCoordinate clicks a point (15 s). Its chain stops at the first error.
var ClickCoordinate = guard[ClickCoordinateEvent, ClickResult]("ClickCoordinate", 15*sec)

// TypeTextEvent asks to type Text into an element (Index 0 with no Element:
// into whatever has focus). Emitted by the agent's input action; handled by
// the actions watchdog. Sensitive marks a secret: traces show SensitiveKey
// instead of the text.
type TypeTextEvent struct {
	Target
	Text         string
	Clear        bool // upstream default true: callers set it
	Sensitive    bool
	SensitiveKey string
}

// Summary implements bus.Summarizer without revealing sensitive text.
func (e TypeTextEvent) Summary() string {
	if e.Sensitive {
		return "type <secret " + e.SensitiveKey + ">"
	}
	return "type " + e.Text
}

// TypeResult is the field's value after typing.
type TypeResult struct {
	Outcome     ActionOutcome
	X, Y        float64
	ActualValue string // the element's value after typing (may differ: masks, maxlength)
}

// TypeText types into an element (60 s). Its chain stops at the first error.
var TypeText = guard[TypeTextEvent, TypeResult]("TypeText", 60*sec)

// ScrollDirection is a scroll direction.
type ScrollDirection string

// Scroll directions.
const (
	ScrollUp    ScrollDirection = "up"
	ScrollDown  ScrollDirection = "down"
	ScrollLeft  ScrollDirection = "left"
	ScrollRight ScrollDirection = "right"
)

// ScrollEvent asks to scroll the page, or the element's scroll container if
// Target names one (Index 0 and no Element: the page). Emitted by the agent;
// handled by the actions watchdog.
type ScrollEvent struct {
	Target
	Direction ScrollDirection
	Amount    int // pixels
}

// ScrollResult is the outcome of a scroll.
type ScrollResult struct {
	Outcome ActionOutcome
}

// Scroll scrolls (8 s).
var Scroll = guard[ScrollEvent, ScrollResult]("Scroll", 8*sec)

// ScrollToTextEvent asks to scroll until Text is visible. Emitted by the
// agent; handled by the actions watchdog. Text not found is an error.
type ScrollToTextEvent struct {
	Text      string
	Direction ScrollDirection // "" = down
}

// ScrollToText scrolls to text (15 s).
var ScrollToText = guard[ScrollToTextEvent, ScrollResult]("ScrollToText", 15*sec)

// SendKeysEvent asks to press keys or combinations ("Enter", "Control+a").
// Emitted by the agent's send_keys action; handled by the actions watchdog.
type SendKeysEvent struct {
	Keys string
}

// SendKeysResult is the outcome of key presses.
type SendKeysResult struct {
	Outcome ActionOutcome
}

// SendKeys presses keys (60 s).
var SendKeys = guard[SendKeysEvent, SendKeysResult]("SendKeys", 60*sec)

// UploadFileEvent asks to set a file input's files. Emitted by the agent's
// upload action; handled by the actions watchdog, whose upload policy
// decides first whether each file may leave the machine.
type UploadFileEvent struct {
	Target
	Paths []string
}

// UploadResult is the outcome of an upload.
type UploadResult struct {
	Outcome ActionOutcome
	Files   []string // names the input reports after the upload
}

// UploadFile uploads files (30 s). Its chain stops at the first error.
var UploadFile = guard[UploadFileEvent, UploadResult]("UploadFile", 30*sec)

// GetDropdownOptionsEvent asks for the options of a <select> or ARIA
// listbox. Emitted by the agent; handled by the actions watchdog.
type GetDropdownOptionsEvent struct {
	Target
}

// DropdownOption is one option of a dropdown.
type DropdownOption struct {
	Index    int
	Text     string
	Value    string
	Selected bool
}

// DropdownOptionsResult lists a dropdown's options.
type DropdownOptionsResult struct {
	Options []DropdownOption
}

// GetDropdownOptions reads options (15 s).
var GetDropdownOptions = def[GetDropdownOptionsEvent, DropdownOptionsResult]("GetDropdownOptions", 15*sec)

// SelectDropdownOptionEvent asks to select the option whose text (or value)
// is Text. Emitted by the agent; handled by the actions watchdog. On a
// multiple select or multiselectable listbox the option is added to the
// selection unless Clear is set.
type SelectDropdownOptionEvent struct {
	Target
	Text string
	// Clear makes the chosen option the only selected one: the other
	// selected options are deselected first. On a single select it changes
	// nothing (choosing an option there replaces the selection anyway).
	Clear bool
}

// SelectDropdownResult is the selection made.
type SelectDropdownResult struct {
	Outcome  ActionOutcome
	Selected DropdownOption
}

// SelectDropdownOption selects an option (8 s). Its chain stops at the first error.
var SelectDropdownOption = guard[SelectDropdownOptionEvent, SelectDropdownResult]("SelectDropdownOption", 8*sec)

// HoverEvent asks to move the mouse over an element (beyond upstream).
// Emitted by the agent; handled by the actions watchdog.
type HoverEvent struct {
	Target
}

// HoverResult is where the pointer went.
type HoverResult struct {
	Outcome ActionOutcome
	// X, Y is where the mouse went, local to the element's frame target
	// as ClickResult's.
	X, Y float64
}

// Hover hovers an element (15 s; not upstream).
var Hover = guard[HoverEvent, HoverResult]("Hover", 15*sec)

// EvaluateEvent asks to run JavaScript in the focused tab's main frame (the
// model's evaluate action). The expression may return a promise, which is
// awaited; it runs with a user gesture. Emitted by the agent; handled by the
// actions watchdog, after any approval or policy guard placed first.
type EvaluateEvent struct {
	Code string
	// MaxResultBytes caps the JSON text of the result; 0 means
	// DefaultEvaluateResultBytes.
	MaxResultBytes int
}

// DefaultEvaluateResultBytes caps an evaluation's result text.
const DefaultEvaluateResultBytes = 20000

// Summary implements bus.Summarizer (the code's length only: traces stay
// small and page scripts may hold data the trace should not).
func (e EvaluateEvent) Summary() string {
	return fmt.Sprintf("evaluate %d bytes of JavaScript", len(e.Code))
}

// EvaluateResult is the expression's value as JSON text ("undefined" for
// undefined), capped, with the action's outcome.
type EvaluateResult struct {
	Value     string
	Truncated bool
	Outcome   ActionOutcome
}

// Summary implements bus.Summarizer.
func (r EvaluateResult) Summary() string {
	return fmt.Sprintf("%d bytes, %s", len(r.Value), r.Outcome.Summary())
}

// Evaluate runs page JavaScript (30 s). Its chain stops at the first error.
var Evaluate = guard[EvaluateEvent, EvaluateResult]("Evaluate", 30*sec)
