package actions

import (
	"errors"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// TestActionsReadValue reads whole values: a textarea far longer than the
// observation's cap (to its last character), an input, a multiple
// select's selected options, a checkbox, an editable element (the whole
// host, also through a child); a password field and a field a person
// typed into are refused with ErrValueWithheld, a paragraph with
// ErrNoValue.
func TestActionsReadValue(t *testing.T) {
	at := start(t, "/actions-value.html", Config{})
	read := func(sel string) (events.ReadValueResult, error) {
		return bus.Call(at.ctx, at.s.Bus(), events.ReadValue, events.ReadValueEvent{Target: at.el(sel)})
	}
	want := at.str(`document.getElementById('notes').value`)
	if len(want) < 1500 || !strings.HasSuffix(want, "END-OF-NOTES") {
		t.Fatalf("fixture note is %d chars", len(want))
	}
	res, err := read("#notes")
	if err != nil || res.Kind != "textarea" || res.Value != want {
		t.Fatalf("textarea: %v kind %q, %d chars (want %d)", err, res.Kind, len(res.Value), len(want))
	}
	if res, err = read("#title"); err != nil || res.Kind != "input" || res.Value != "Quarterly report" {
		t.Fatalf("input: %v %+v", err, res)
	}
	res, err = read("#colours")
	if err != nil || res.Kind != "select" || res.Value != "Green\nBlue" || len(res.Selected) != 2 ||
		res.Selected[0].Value != "g" || res.Selected[1].Text != "Blue" || !res.Selected[1].Selected {
		t.Fatalf("select: %v %+v", err, res)
	}
	if res, err = read("#agree"); err != nil || res.Value != "checked" {
		t.Fatalf("checkbox: %v %+v", err, res)
	}
	for _, sel := range []string{"#editor", "#second"} {
		res, err = read(sel)
		if err != nil || res.Kind != "contenteditable" || !strings.Contains(res.Value, "First paragraph of the draft.") || !strings.Contains(res.Value, "Second paragraph.") {
			t.Fatalf("editable %s: %v %+v", sel, err, res)
		}
	}
	for _, sel := range []string{"#pw", "#code"} {
		res, err = read(sel)
		if !errors.Is(err, events.ErrValueWithheld) {
			t.Fatalf("%s: err %v, want ErrValueWithheld", sel, err)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "492-117") || res.Value != "" {
			t.Fatalf("%s: the withheld value leaked: %v %+v", sel, err, res)
		}
	}
	if _, err = read("#plain"); !errors.Is(err, events.ErrNoValue) {
		t.Fatalf("paragraph: err %v, want ErrNoValue", err)
	}
}
