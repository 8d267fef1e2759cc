package actions

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// What a person can click, the agent can click (issue 21): each test reads
// the page's own state back, not only the verdict.

func (at *harness) num(expr string) int {
	at.t.Helper()
	var n int
	at.eval(at.page(), expr, &n)
	return n
}

func (at *harness) flag(expr string) bool {
	at.t.Helper()
	var b bool
	at.eval(at.page(), expr, &b)
	return b
}

func (at *harness) click(target events.Target) (events.ClickResult, error) {
	at.t.Helper()
	return bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: target})
}

func TestClickUncoversStickyHeader(t *testing.T) {
	at := start(t, "/actions-issue21-sticky.html", Config{})
	// The button at the top of the viewport, under the fixed header:
	// scrollIntoViewIfNeeded leaves it there, since it is in the viewport.
	at.eval(at.page(), "window.scrollTo(0, document.getElementById('target').getBoundingClientRect().top + scrollY - 30), true", nil)
	if !at.flag("document.elementFromPoint(100, 50) === document.getElementById('hdr')") {
		t.Fatal("fixture: the header does not cover the button")
	}
	res, err := at.click(at.el("#target"))
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Method != "mouse" {
		t.Fatalf("method = %q (%s), want mouse", res.Method, res.Outcome.Detail)
	}
	if at.num("window.count.target") != 1 || !at.flag("window.trusted.target === true") {
		t.Fatalf("button clicks %d trusted %v, want one trusted click", at.num("window.count.target"), at.flag("window.trusted.target"))
	}
	if n := at.num("window.count.header"); n != 0 {
		t.Fatalf("the header got %d clicks, want 0", n)
	}
	if res.Y <= 90 {
		t.Fatalf("clicked at y=%v, under the 90px header", res.Y)
	}
}

func TestClickUncoversStickyTableHeader(t *testing.T) {
	at := start(t, "/actions-issue21-sticky.html", Config{})
	// The row button at the top of its scroll box, under the box's sticky
	// <th>; the box itself is in view below the page's fixed header.
	at.eval(at.page(), `(() => {
		const box = document.getElementById('box'), b = document.getElementById('row-btn');
		box.scrollIntoView({block: 'center'});
		box.scrollTop += b.getBoundingClientRect().top - box.getBoundingClientRect().top - 20;
		return true;
	})()`, nil)
	if at.flag("(() => { const r = document.getElementById('row-btn').getBoundingClientRect(); return document.elementFromPoint(r.x + r.width/2, r.y + r.height/2) === document.getElementById('row-btn'); })()") {
		t.Fatal("fixture: the sticky table header does not cover the row button")
	}
	res, err := at.click(at.el("#row-btn"))
	if err != nil || res.Method != "mouse" {
		t.Fatalf("click: %v, method %q (%s), want mouse", err, res.Method, res.Outcome.Detail)
	}
	if at.num("window.count.row") != 1 || !at.flag("window.trusted.row === true") {
		t.Fatalf("row button clicks %d, want one trusted click", at.num("window.count.row"))
	}
}

func TestClickModalCoverStillFallsBack(t *testing.T) {
	at := start(t, "/actions-issue21-sticky.html", Config{})
	at.eval(at.page(), "document.getElementById('modal').style.display = 'block', true", nil)
	res, err := at.click(at.el("#target"))
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Method != "js_fallback" || !strings.Contains(res.Outcome.Detail, "covered by <div id=modal>; clicked with JavaScript") {
		t.Fatalf("method %q detail %q, want the JavaScript fallback naming the modal", res.Method, res.Outcome.Detail)
	}
	if at.num("window.count.target") != 1 || at.flag("window.trusted.target === true") || at.num("window.count.modal") != 0 {
		t.Fatalf("target clicks %d (trusted %v), modal clicks %d; want one untrusted target click",
			at.num("window.count.target"), at.flag("window.trusted.target"), at.num("window.count.modal"))
	}
}

func TestHoverUncoversStickyHeader(t *testing.T) {
	at := start(t, "/actions-issue21-sticky.html", Config{})
	at.eval(at.page(), "window.scrollTo(0, document.getElementById('target').getBoundingClientRect().top + scrollY - 30), true", nil)
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Hover, events.HoverEvent{Target: at.el("#target")})
	if err != nil {
		t.Fatalf("hover: %v", err)
	}
	if !at.flag("window.hovered === true") || strings.Contains(res.Outcome.Detail, "covered") {
		t.Fatalf("mouseenter trusted %v, detail %q; want the pointer on the button", at.flag("window.hovered"), res.Outcome.Detail)
	}
}

func TestClickRefusesElementWithoutBox(t *testing.T) {
	at := start(t, "/actions-issue21-hidden.html", Config{})
	for _, tc := range []struct{ id, hide, why string }{
		{"gone-display", "document.getElementById('gone-display').style.display = 'none'", "display:none"},
		{"gone-visibility", "document.getElementById('gone-visibility').style.visibility = 'hidden'", "visibility:hidden"},
		{"gone-parent", "document.getElementById('parent').style.display = 'none'", "display:none"},
	} {
		target := at.el("#" + tc.id) // observed while visible
		at.eval(at.page(), tc.hide+", true", nil)
		res, err := at.click(target)
		if !errors.Is(err, ErrNotVisible) {
			t.Fatalf("%s: err = %v, want ErrNotVisible", tc.id, err)
		}
		if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "request a new browser state") {
			t.Fatalf("%s: error %q should say %s and what to do", tc.id, err, tc.why)
		}
		if res.Outcome.Verdict != events.VerdictFailed || res.Method != "" {
			t.Fatalf("%s: verdict %s method %q, want failed and no click", tc.id, res.Outcome.Verdict, res.Method)
		}
		if n := at.num("window.count['" + tc.id + "'] || 0"); n != 0 {
			t.Fatalf("%s: the handler ran %d times; a person could not have clicked it", tc.id, n)
		}
		_, err = bus.Call(at.ctx, at.s.Bus(), events.Hover, events.HoverEvent{Target: target})
		if !errors.Is(err, ErrNotVisible) {
			t.Fatalf("%s: hover err = %v, want ErrNotVisible", tc.id, err)
		}
	}
}

func TestClickDisplayContentsClicksVisibleChild(t *testing.T) {
	at := start(t, "/actions-issue21-hidden.html", Config{DownloadStartWait: -1})
	for _, id := range []string{"contents", "contents-text", "zero-wrap"} {
		res, err := at.click(at.el("#" + id))
		if err != nil || res.Method != "mouse" {
			t.Fatalf("%s: %v, method %q (%s), want a mouse click", id, err, res.Method, res.Outcome.Detail)
		}
		if at.num("window.count['"+id+"'] || 0") != 1 || !at.flag("window.trusted['"+id+"'] === true") {
			t.Fatalf("%s: clicks %d, want one trusted click", id, at.num("window.count['"+id+"'] || 0"))
		}
	}
	entered := at.num("window.count['contents:hover'] || 0") // by the click
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Hover, events.HoverEvent{Target: at.el("#contents")}); err != nil {
		t.Fatalf("hover display:contents: %v", err)
	}
	if at.num("window.count['contents:hover'] || 0") != entered+1 {
		t.Fatal("hovering the display:contents element did not enter it")
	}
}

func TestClickCustomCheckboxLabel(t *testing.T) {
	at := start(t, "/actions-issue21-checkbox.html", Config{})
	for _, id := range []string{"c-opacity", "c-clip", "c-none"} {
		for i, want := range []bool{true, false} {
			res, err := at.click(at.el("label[for=" + id + "]"))
			if err != nil || res.Method != "mouse" {
				t.Fatalf("%s click %d: %v, method %q (%s)", id, i, err, res.Method, res.Outcome.Detail)
			}
			if got := at.flag("document.getElementById('" + id + "').checked"); got != want {
				t.Fatalf("%s click %d: page checked = %v, want %v", id, i, got, want)
			}
			if res.Checked == nil || *res.Checked != want {
				t.Fatalf("%s click %d: Checked = %v, want %v", id, i, res.Checked, want)
			}
			if res.Outcome.Verdict != events.VerdictChanged || !strings.Contains(res.Outcome.Detail, "checked is now") {
				t.Fatalf("%s click %d: verdict %s detail %q, want changed and the checked state", id, i, res.Outcome.Verdict, res.Outcome.Detail)
			}
		}
		if n := at.num("window.changes['" + id + "'] || 0"); n != 2 {
			t.Fatalf("%s: %d change events, want 2", id, n)
		}
	}
}

func TestClickHiddenCheckboxClicksItsLabel(t *testing.T) {
	at := start(t, "/actions-issue21-checkbox.html", Config{})
	for _, id := range []string{"c-opacity", "c-clip", "c-none"} {
		res, err := at.click(at.el("#" + id))
		if err != nil || res.Method != "mouse" {
			t.Fatalf("%s: %v, method %q (%s), want a mouse click on the label", id, err, res.Method, res.Outcome.Detail)
		}
		if !strings.Contains(res.Outcome.Detail, "visually hidden; clicked its label <label") {
			t.Fatalf("%s: detail %q should say the label was clicked", id, res.Outcome.Detail)
		}
		if !at.flag("document.getElementById('"+id+"').checked") || res.Checked == nil || !*res.Checked || res.Outcome.Verdict != events.VerdictChanged {
			t.Fatalf("%s: page checked %v, Checked %v, verdict %s; want checked and changed", id, at.flag("document.getElementById('"+id+"').checked"), res.Checked, res.Outcome.Verdict)
		}
	}
	// No visible label: nothing a person could click.
	_, err := at.click(at.el("#c-orphan"))
	if !errors.Is(err, ErrNotVisible) || at.flag("document.getElementById('c-orphan').checked") {
		t.Fatalf("unlabelled hidden checkbox: %v, want ErrNotVisible and unchecked", err)
	}
}

func TestClickCustomRadioGroup(t *testing.T) {
	at := start(t, "/actions-issue21-checkbox.html", Config{})
	checked := func() string { return at.str("document.querySelector('input[name=size]:checked').value") }
	res, err := at.click(at.el("label[for=r-m]"))
	if err != nil || res.Method != "mouse" || res.Checked == nil || !*res.Checked || res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("label Medium: %v, method %q Checked %v verdict %s (%s)", err, res.Method, res.Checked, res.Outcome.Verdict, res.Outcome.Detail)
	}
	if c := checked(); c != "m" {
		t.Fatalf("checked radio %q, want m", c)
	}
	res, err = at.click(at.el("#r-l")) // the hidden radio itself: through its label
	if err != nil || res.Method != "mouse" || res.Checked == nil || !*res.Checked {
		t.Fatalf("radio Large: %v, method %q Checked %v (%s)", err, res.Method, res.Checked, res.Outcome.Detail)
	}
	if c := checked(); c != "l" {
		t.Fatalf("checked radio %q, want l", c)
	}
	// Clicking the checked radio's label again keeps it checked.
	res, err = at.click(at.el("label[for=r-l]"))
	if err != nil || res.Checked == nil || !*res.Checked || checked() != "l" {
		t.Fatalf("label Large again: %v, Checked %v, page %q", err, res.Checked, checked())
	}
}

func TestTypeSpecialInputsVerdict(t *testing.T) {
	at := start(t, "/actions-issue21-special.html", Config{})
	for _, tc := range []struct{ id, value string }{
		{"range", "70"},
		{"color", "#ff8800"},
		{"date", "2024-03-15"},
		{"time", "13:45"},
		{"datetime-local", "2024-03-15T13:45"},
		{"month", "2024-03"},
		{"week", "2024-W11"},
	} {
		target := at.el("#" + tc.id)
		res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: target, Text: tc.value, Clear: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		if got := at.str("document.getElementById('" + tc.id + "').value"); got != tc.value || res.ActualValue != tc.value {
			t.Fatalf("%s: page value %q, ActualValue %q, want %q", tc.id, got, res.ActualValue, tc.value)
		}
		if res.Outcome.Verdict != events.VerdictChanged {
			t.Fatalf("%s: verdict %s (%s), want changed", tc.id, res.Outcome.Verdict, res.Outcome.Detail)
		}
		// The same value again changes nothing, and fires no input event.
		res, err = bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: target, Text: tc.value, Clear: true})
		if err != nil || res.Outcome.Verdict != events.VerdictNoChange {
			t.Fatalf("%s again: %v, verdict %s (%s), want no_change", tc.id, err, res.Outcome.Verdict, res.Outcome.Detail)
		}
		if n := at.num("window.inputs['" + tc.id + "'] || 0"); n != 1 {
			t.Fatalf("%s: %d input events, want 1", tc.id, n)
		}
	}
}

func TestSelectMultipleClear(t *testing.T) {
	at := start(t, "/actions-issue21-multiselect.html", Config{})
	selected := func(id string) []string {
		var v []string
		at.eval(at.page(), "Array.from(document.getElementById('"+id+"').selectedOptions).map(o => o.value)", &v)
		return v
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#multi"), Text: "Green", Clear: true})
	if err != nil {
		t.Fatalf("clear and pick: %v", err)
	}
	if got := selected("multi"); !reflect.DeepEqual(got, []string{"g"}) {
		t.Fatalf("selection %v, want [g]", got)
	}
	if !res.Selected.Selected || !strings.Contains(res.Outcome.Detail, `deselected "Red", "Blue"`) {
		t.Fatalf("result %+v detail %q, want Green selected and Red, Blue named as deselected", res.Selected, res.Outcome.Detail)
	}
	if c, i := at.num("window.events['multi:change'] || 0"), at.num("window.events['multi:input'] || 0"); c != 1 || i != 1 {
		t.Fatalf("%d change and %d input events, want one of each", c, i)
	}
	// Without Clear: added to the selection.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#multi2"), Text: "Green"}); err != nil {
		t.Fatal(err)
	}
	if got := selected("multi2"); !reflect.DeepEqual(got, []string{"r", "g", "b"}) {
		t.Fatalf("selection without Clear %v, want [r g b]", got)
	}
	// A single select: Clear changes nothing.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#single"), Text: "Beta", Clear: true}); err != nil {
		t.Fatal(err)
	}
	if got := selected("single"); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("single selection %v, want [b]", got)
	}
}

func TestSelectAriaMultiselectableClear(t *testing.T) {
	at := start(t, "/actions-issue21-multiselect.html", Config{})
	selected := func() []string {
		var v []string
		at.eval(at.page(), "Array.from(document.querySelectorAll('#lb [aria-selected=true]')).map(o => o.id)", &v)
		return v
	}
	// Adding an option already selected leaves it selected.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#lb"), Text: "Ham"}); err != nil {
		t.Fatal(err)
	}
	if got := selected(); !reflect.DeepEqual(got, []string{"o-cheese", "o-ham"}) {
		t.Fatalf("after adding Ham: %v, want cheese and ham", got)
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#lb"), Text: "Olives", Clear: true})
	if err != nil {
		t.Fatalf("clear and pick: %v", err)
	}
	if got := selected(); !reflect.DeepEqual(got, []string{"o-olives"}) {
		t.Fatalf("after clear and pick Olives: %v, want only olives", got)
	}
	if !res.Selected.Selected || !strings.Contains(res.Outcome.Detail, `deselected "Cheese", "Ham"`) {
		t.Fatalf("result %+v detail %q", res.Selected, res.Outcome.Detail)
	}
	// Without Clear: added.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#lb"), Text: "Basil"}); err != nil {
		t.Fatal(err)
	}
	if got := selected(); !reflect.DeepEqual(got, []string{"o-olives", "o-basil"}) {
		t.Fatalf("after adding Basil: %v", got)
	}
}
