package dom

import (
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
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-tables.html"))
	st := wdtest.State(t, ctx, s)
	text := st.DOMText
	if n := countTag(st, "td") + countTag(st, "th"); n != 0 {
		t.Errorf("%d plain table cells indexed, want 0:\n%s", n, text)
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
	if t.Failed() {
		t.Log(text)
	}
}
