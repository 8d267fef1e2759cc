package dom

import (
	"strconv"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
)

// Fidelity cases of issue 13: pages where a model could not act.

// countTag counts the indexed elements with tag.
func countTag(st events.BrowserState, tag string) int {
	n := 0
	for _, e := range st.Elements {
		if e.Tag == tag {
			n++
		}
	}
	return n
}

// A form laid out in a table: its rows and cells are layout, not actions,
// and each field is named by its row's header cell. A data table's rows
// that open something (listener, cursor:pointer) and an ARIA grid's rows
// and cells stay actions.
func TestDOMWTableLayoutForm(t *testing.T) {
	bothCaptures(t, testTableLayoutForm)
}

// bothCaptures runs f on the viewport walker and on the full capture.
func bothCaptures(t *testing.T, f func(t *testing.T, cfg Config)) {
	t.Run("walker", func(t *testing.T) { f(t, Config{}) })
	t.Run("full", func(t *testing.T) { f(t, Config{FullCapture: true}) })
}

func testTableLayoutForm(t *testing.T, cfg Config) {
	env, s, _ := start(t, cfg)
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-tables.html"))
	st := wdtest.State(t, ctx, s)
	text := st.DOMText
	days := 0
	for _, e := range st.Elements {
		if e.Tag == "td" || e.Tag == "th" {
			switch {
			case e.Attributes["data-day"] != "":
				days++
			case e.Attributes["class"] == "prev" || e.Attributes["class"] == "switch" || e.Attributes["class"] == "next":
				// the picker's header (month switch, previous, next) is clickable too
			default:
				t.Errorf("plain table cell indexed: %+v", e)
			}
		}
	}
	// The date picker's days: its wrapper's listener handles their clicks.
	if days != 3 {
		t.Errorf("%d date picker days indexed, want 3:\n%s", days, text)
	}
	for _, want := range []struct{ sub, label string }{
		{"name=fullname", "label=Full name"},
		{"name=em", "label=E-mail address"},
		{"name=ctry", "label=Country"},
	} {
		if l := line(text, want.sub); !strings.Contains(l, "[") || !strings.Contains(l, want.label) {
			t.Errorf("field line %q, want indexed with %q", l, want.label)
		}
	}
	if l := line(text, "id=f-notes"); strings.Contains(l, "label=") {
		t.Errorf("a field with its own <label> got a row label: %q", l)
	}
	// The layout table's rows are not indexed; the orders' rows are.
	rows := map[string]bool{}
	for _, e := range st.Elements {
		if e.Tag == "tr" {
			rows[e.Attributes["data-order"]] = true
		}
	}
	if len(rows) != 3 || !rows["A-100"] || !rows["A-101"] || !rows["A-102"] {
		t.Errorf("indexed rows %v, want the three order rows (cursor:pointer ×2, listener ×1):\n%s", rows, text)
	}
	// The ARIA grid: its cells (tabindex) and selectable rows are actions.
	if _, ok := indexOf(st, "cell-ada"); !ok {
		t.Errorf("grid cell not indexed:\n%s", text)
	}
	if _, ok := indexOf(st, "team-row-1"); !ok {
		t.Errorf("selectable grid row not indexed:\n%s", text)
	}
	// Its header row names columns; a sortable header (aria-sort) acts.
	for _, id := range []string{"team-head", "head-name"} {
		if _, ok := indexOf(st, id); ok {
			t.Errorf("grid header %s indexed:\n%s", id, text)
		}
	}
	if _, ok := indexOf(st, "head-role"); !ok {
		t.Errorf("sortable grid header not indexed:\n%s", text)
	}
	if t.Failed() {
		t.Log(text)
	}
}

// A native <select> behind a custom dropdown (select2, chosen and
// nice-select styles: clipped to 1 px and aria-hidden, display:none, and
// opacity:0 in a zero-size wrapper) is indexed, marked as the hidden
// backing of a drawn widget, with the widget's text; hidden selects that no
// widget draws are not.
func TestDOMWBackingSelect(t *testing.T) {
	bothCaptures(t, testBackingSelect)
}

func testBackingSelect(t *testing.T, cfg Config) {
	env, s, _ := start(t, cfg)
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-custom-select.html"))
	st := wdtest.State(t, ctx, s)
	text := st.DOMText
	for _, want := range []struct{ id, widget string }{
		{"country", "Norway"},
		{"size", "Select a size"},
		{"shipping", "Express"},
		{"pet", "Choose a pet"}, // a placeholder option chosen: the widget is known by its name
	} {
		e := element(t, st, want.id)
		if e.Tag != "select" {
			t.Errorf("%s: tag %q", want.id, e.Tag)
		}
		l := line(text, "id="+want.id+" ")
		if !strings.Contains(l, "hidden-backing=true") || !strings.Contains(l, "widget_text="+want.widget) {
			t.Errorf("%s line %q, want the backing marker and widget_text=%s", want.id, l, want.widget)
		}
		t.Log(l)
	}
	// legacy: next to a dropdown-named control that shows none of its
	// options; in-modal: inside a closed modal, next to text holding its
	// chosen option.
	for _, id := range []string{"ghost", "orphan", "legacy", "in-modal"} {
		if _, ok := indexOf(st, id); ok {
			t.Errorf("%s is hidden with no widget, but indexed", id)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// byAttr returns the indexed element whose attribute k is v (the icon
// fixture has no ids: an id would name its controls).
func byAttr(t testing.TB, st events.BrowserState, k, v string) events.ElementInfo {
	t.Helper()
	for _, e := range st.Elements {
		if e.Attributes[k] == v {
			return e
		}
	}
	t.Fatalf("no indexed element with %s=%s:\n%s", k, v, st.DOMText)
	return events.ElementInfo{}
}

// Icon-only controls get a hint that tells them apart: the spinner's
// meaningful class tokens (not ui-corner-tr / ui-button-icon-only), an svg
// <use>, a background image's file name, a ::before content:url()'s file
// name, an icon font's class, a material ligature's text. Both capture
// paths (the walker reports the ::before as the snapshot row the full
// capture has).
func TestDOMWIconHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"walker", Config{}}, {"full", Config{FullCapture: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			env, s, _ := start(t, tc.cfg)
			ctx := wdtest.Ctx(t)
			wdtest.Navigate(t, ctx, s, env.URL("/dom-icons.html"))
			st := wdtest.State(t, ctx, s)
			text := st.DOMText
			cases := []struct{ id, sub string }{
				{"spin-up", "hint=.ui-spinner-up"},
				{"spin-down", "hint=.ui-spinner-down"},
				{"b-use", "hint=icon:trash"},
				{"b-bg", "hint=icon:more"},
				{"b-fa", "hint=icon:trash-can"},
				{"b-title", "Settings"},           // the svg's title: its AX name, else the hint
				{"b-pseudo", "hint=icon:refresh"}, // a ::before content:url()
			}
			for _, want := range cases {
				e := byAttr(t, st, "data-k", want.id)
				l := line(text, "["+strconv.Itoa(e.Index)+"]")
				if !strings.Contains(l, want.sub) {
					t.Errorf("%s line %q, want %q", want.id, l, want.sub)
				}
				if strings.Contains(l, "corner") || strings.Contains(l, "icon-only") || strings.Contains(l, "btn-sm") {
					t.Errorf("%s line %q names a styling token", want.id, l)
				}
			}
			// The material ligature is the button's text (its name).
			if mat := byAttr(t, st, "data-k", "b-mat"); mat.Name != "delete" {
				t.Errorf("material button name %q, want delete", mat.Name)
			}
			if t.Failed() {
				t.Log(text)
			}
		})
	}
}
