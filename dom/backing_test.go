package dom

import (
	"strings"
	"testing"
)

// A select hidden behind a drawn widget is indexed with the marker and the
// widget's text; a visible select and a hidden one with nothing drawn for
// it are not marked.
func TestBackingSelect(t *testing.T) {
	res, _ := render(t,
		E("div",
			E("select", E("option", T("Small")).NoLayout(), E("option", T("Large")).A("selected", "").NoLayout()).A("id", "size").NoLayout(),
			E("div", E("a", E("span", T("Large")).At(10, 10, 80, 20)).At(10, 10, 200, 20)).A("class", "chz-container").At(10, 10, 200, 20),
		).At(0, 0, 400, 40),
		E("div",
			E("div", E("select", E("option", T("Express")).NoLayout()).A("id", "ship").At(10, 50, 100, 20).S("opacity", "0")).
				At(10, 50, 0, 0).S("overflow", "hidden"),
			E("div", E("span", T("Express")).At(10, 50, 80, 20)).A("tabindex", "0").At(10, 50, 200, 20),
		).At(0, 50, 400, 40),
		E("div",
			E("select", E("option", T("Orphan")).NoLayout()).A("id", "orphan").NoLayout(),
			E("p", T("A paragraph")).At(10, 100, 200, 20),
		).At(0, 100, 400, 40),
		E("select", E("option", T("Plain")).At(10, 150, 100, 20)).A("id", "plain").At(10, 150, 100, 20),
		// A one-character choice is in any text: a pager beside a hidden
		// page select is not its widget; a widget showing "2" alone is.
		E("div",
			E("select", E("option", T("1")).NoLayout(), E("option", T("2")).NoLayout()).A("id", "page").NoLayout(),
			E("div", E("span", T("Page 1 of 3")).At(10, 200, 80, 20)).A("class", "dropdown").At(10, 200, 200, 20),
		).At(0, 200, 400, 40),
		E("div",
			E("select", E("option", T("1")).NoLayout(), E("option", T("2")).A("selected", "").NoLayout()).A("id", "per").NoLayout(),
			E("div", E("span", T("2")).At(10, 250, 30, 20), E("b", T("×")).At(40, 250, 10, 20)).A("class", "ts-control").At(10, 250, 200, 20),
		).At(0, 250, 400, 40),
	)
	if l := lineWith(res.Text, "id=page"); l != "" {
		t.Errorf("hidden select beside a pager shown: %q", l)
	}
	if l := lineWith(res.Text, "id=per"); !strings.Contains(l, "hidden-backing=true") {
		t.Errorf("per line %q, want the backing of the widget showing 2\n%s", l, res.Text)
	}
	for id, want := range map[string]string{"size": "widget_text=Large", "ship": "widget_text=Express"} {
		l := lineWith(res.Text, "id="+id)
		if !strings.HasPrefix(strings.TrimSpace(l), "[") || !strings.Contains(l, "hidden-backing=true") || !strings.Contains(l, want) {
			t.Errorf("%s line %q, want indexed with hidden-backing=true and %s\n%s", id, l, want, res.Text)
		}
	}
	if l := lineWith(res.Text, "id=orphan"); l != "" {
		t.Errorf("hidden select with no widget shown: %q", l)
	}
	if l := lineWith(res.Text, "id=plain"); !strings.Contains(l, "[") || strings.Contains(l, "hidden-backing") {
		t.Errorf("visible select line %q, want indexed without the marker", l)
	}
}
