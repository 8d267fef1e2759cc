package events

import "errors"

// ReadValueEvent asks for the whole current value of a form field (the
// observation cuts long values): an input's or textarea's value, a
// select's selected options, an editable element's text. Emitted by the
// agent's read_value action; handled by the actions watchdog.
type ReadValueEvent struct {
	Target
}

// ReadValueResult is a field's whole value.
type ReadValueResult struct {
	// Kind is what was read: "input", "textarea", "select" or
	// "contenteditable".
	Kind string
	// Value is the value exactly as the page holds it: for a select, its
	// selected options' texts, one a line.
	Value string
	// Selected lists a select's selected options (text and value).
	Selected []DropdownOption
}

// ReadValue reads a field's whole value (15 s).
var ReadValue = def[ReadValueEvent, ReadValueResult]("ReadValue", 15*sec)

var (
	// ErrValueWithheld: the field's value is never read for the model (a
	// password field, or one a person typed into during a hand-off), as
	// the observation withholds it.
	ErrValueWithheld = errors.New("the field's value is withheld")
	// ErrNoValue: the element is not a form field or editable element.
	ErrNoValue = errors.New("the element has no value to read")
)
