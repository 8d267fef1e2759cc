package dom

import (
	"strings"
	"testing"
)

// A label stands in for a control that cannot be clicked where it is
// (hidden, or a 1 px box); not for a visible control, nor a file input
// (which keeps its own index); for= resolves in the label's own scope.
func TestLabelStandsInForHiddenControl(t *testing.T) {
	res, tree := render(t,
		E("input").A("type", "checkbox", "id", "hidden").At(10, 10, 13, 13).S("opacity", "0").ID(50),
		E("label", T("Hidden")).A("for", "hidden").At(30, 10, 100, 20).ID(51),
		E("input").A("type", "radio", "id", "tiny").At(10, 40, 1, 1).ID(52),
		E("label", T("Tiny")).A("for", "tiny").At(30, 40, 100, 20).ID(53),
		E("input").A("type", "checkbox", "id", "shown").At(10, 70, 13, 13).ID(54),
		E("label", T("Shown")).A("for", "shown").At(30, 70, 100, 20).ID(55),
		E("input").A("type", "file", "id", "upload").At(10, 100, 100, 20).S("display", "none").ID(56),
		E("label", T("Upload")).A("for", "upload").At(30, 100, 100, 20).ID(57),
		E("div").At(10, 130, 300, 40).Shadow("open",
			E("label", T("Shadow")).A("for", "hidden").At(10, 130, 100, 20).ID(58),
		),
		E("label", T("Wrapped"), E("input").A("type", "checkbox").At(10, 170, 13, 13).S("display", "none").ID(59)).At(10, 170, 100, 20).ID(60),
	)
	for idx, want := range map[string]string{"[51]": "role=checkbox checked=false", "[53]": "role=radio checked=false", "[60]": "role=checkbox checked=false"} {
		if l := lineWith(res.Text, idx+"<label"); !strings.Contains(l, want) {
			t.Errorf("%s: line %q, want %q", idx, l, want)
		}
	}
	for _, idx := range []string{"[50]", "[52]", "[55]", "[57]", "[58]", "[59]"} {
		if strings.Contains(res.Text, idx) {
			t.Errorf("%s has an index", idx)
		}
	}
	for _, idx := range []string{"[54]", "[56]"} {
		if !strings.Contains(res.Text, idx) {
			t.Errorf("%s has no index", idx)
		}
	}
	if t.Failed() {
		t.Fatalf("\n%s", res.Text)
	}
	shadowLabel := findNode(tree, func(n *Node) bool { return n.BackendNodeID == 58 })
	if shadowLabel.Control != nil {
		t.Fatalf("a label in a shadow root resolved for= in the document: %+v", shadowLabel.Control)
	}
}

// Clickable shapes inside an <svg> are listed under it, with their text;
// the rest of the svg stays collapsed.
func TestSVGClickableShapes(t *testing.T) {
	res, _ := render(t,
		E("svg",
			E("circle").A("onclick", "f()").At(10, 10, 20, 20).ID(70),
			E("rect").At(40, 10, 20, 20).ID(71),
			E("g", E("rect").At(70, 10, 20, 20), E("text", T("Go")).At(70, 10, 20, 20)).Listener().At(70, 10, 20, 20).ID(72),
		).At(0, 0, 100, 40).ID(69),
		E("svg", E("path").At(0, 50, 20, 20)).At(0, 50, 200, 20),
	)
	want := "<svg />\n\t[70]<circle />\n\t[72]<g />\n\t\tGo\n<svg /> <!-- SVG content collapsed -->"
	if !strings.Contains(res.Text, want) {
		t.Fatalf("got\n%s\nwant\n%s", res.Text, want)
	}
}

// An editable body is a field (attribute, or AX editable as in design
// mode); the editable paragraphs inside an editing host are not fields of
// their own; contenteditable=false is not editable.
func TestEditingHosts(t *testing.T) {
	page := func(body *tn) string {
		in := &PageInput{Frames: []FrameInput{frameOfHTML(1, stdVP, E("html", body).At(0, 0, 1280, 800))}}
		res, err := Serialize(build(t, in, Options{}), nil, SerializeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Text
	}
	para := func() *tn {
		return E("p", T("Draft")).At(8, 8, 600, 20).AX("paragraph", "", "editable", "richtext").ID(90)
	}
	for name, c := range map[string]struct {
		body *tn
		want string
	}{
		"attribute":   {E("body", para()).A("contenteditable", "").At(8, 8, 600, 20).ID(80), "[80]<body contenteditable=true />"},
		"design mode": {E("body", para()).At(8, 8, 600, 20).AX("generic", "", "editable", "richtext", "focusable", true).ID(80), "[80]<body contenteditable=true />"},
		"false":       {E("body", E("p", T("Draft")).At(8, 8, 600, 20)).A("contenteditable", "false").At(8, 8, 600, 20).ID(80), ""},
	} {
		t.Run(name, func(t *testing.T) {
			text := page(c.body)
			if c.want != "" && !strings.Contains(text, c.want) || c.want == "" && strings.Contains(text, "[80]") {
				t.Fatalf("got\n%s\nwant %q", text, c.want)
			}
			if strings.Contains(text, "[90]") {
				t.Fatalf("a paragraph inside the editor got an index:\n%s", text)
			}
		})
	}
}

// A band (fixed/sticky/absolute cover at an edge of the viewport, over at
// most half of it) hides only what no scrolling can bring clear of it.
func TestBandCovers(t *testing.T) {
	for _, c := range []struct {
		name    string
		scrollY float64
		cover   *tn
		button  Rect
		visible bool
	}{
		{"fixed header, room to scroll", 600, E("header").S("position", "fixed").At(0, 600, 1280, 80), Rect{0, 620, 200, 30}, true},
		{"fixed header, top of page", 0, E("header").S("position", "fixed").At(0, 0, 1280, 80), Rect{0, 20, 200, 30}, false},
		{"fixed footer, room to scroll", 0, E("footer").S("position", "fixed").At(0, 700, 1280, 100), Rect{0, 740, 200, 30}, true},
		{"fixed footer, end of page", 2200, E("footer").S("position", "fixed").At(0, 2900, 1280, 100), Rect{0, 2940, 200, 30}, false},
		{"fixed sidebar, no horizontal scroll", 0, E("nav").S("position", "fixed").At(0, 0, 200, 800), Rect{20, 100, 100, 30}, false},
		{"overlay over the viewport", 600, E("div").S("position", "fixed").At(0, 600, 1280, 800), Rect{0, 620, 200, 30}, false},
		{"absolute header scrolls with the page", 600, E("header").S("position", "absolute").At(0, 600, 1280, 80), Rect{0, 620, 200, 30}, false},
		{"static cover", 600, E("div").At(0, 600, 1280, 80), Rect{0, 620, 200, 30}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			vp := stdVP
			vp.ScrollY = c.scrollY
			b := c.button
			fi := frameOf(1, vp,
				E("button", T("Under")).A("id", "under").At(b.X, b.Y, b.W, b.H).P(1),
				c.cover.S("background-color", "rgb(255, 255, 255)").P(10),
			)
			fi.Snapshot.Documents[0].ContentWidth, fi.Snapshot.Documents[0].ContentHeight = 1280, 3000
			res, err := Serialize(build(t, &PageInput{Frames: []FrameInput{fi}}, Options{}), nil, SerializeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(lineWith(res.Text, "id=under"), "["); got != c.visible {
				t.Fatalf("indexed %v, want %v:\n%s", got, c.visible, res.Text)
			}
		})
	}
}

// A sticky header in a scrolling pane is a band of the pane: an item under
// it stays visible when the pane can scroll it clear.
func TestStickyBandInScrollContainer(t *testing.T) {
	pane := func(scrollTop float64) *tn {
		return E("div",
			E("div", T("Head")).S("position", "sticky").S("background-color", "rgb(238, 238, 238)").At(0, 100, 400, 50).P(10),
			E("button", T("Item")).A("id", "item").At(0, 105, 300, 40).P(2),
		).S("overflow", "auto").At(0, 100, 400, 300).Scroll(Rect{0, 0, 400, 300}, Rect{0, scrollTop, 400, 900})
	}
	for _, c := range []struct {
		top     float64
		visible bool
	}{{200, true}, {0, false}} {
		res, _ := render(t, pane(c.top))
		if got := strings.Contains(lineWith(res.Text, "id=item"), "["); got != c.visible {
			t.Fatalf("scrollTop %v: indexed %v, want %v:\n%s", c.top, got, c.visible, res.Text)
		}
	}
}
