package dom

import (
	"errors"
	"strings"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/domsnapshot"
)

func TestBasicFormat(t *testing.T) {
	res, _ := render(t,
		E("div",
			T("User form"),
			E("input").A("type", "text", "placeholder", "Enter name").At(10, 10, 200, 30).ID(35),
			E("button").A("aria-label", "Submit form").At(10, 50, 80, 30).ID(38).Kids(T("Submit")),
		).At(0, 0, 800, 200),
	)
	want := "User form\n[35]<input type=text placeholder=Enter name />\n[38]<button aria-label=Submit form />\n\tSubmit"
	if res.Text != want {
		t.Fatalf("text:\n%s\nwant:\n%s", res.Text, want)
	}
	if res.Map.Len() != 2 {
		t.Fatalf("map len %d", res.Map.Len())
	}
	e, ok := res.Map.Get(35)
	if !ok || e.Node.Tag != "input" || e.TargetID != "T1" || e.SessionID != "S1" || e.BackendNodeID != 35 {
		t.Fatalf("element 35: %+v", e)
	}
}

func TestVisibility(t *testing.T) {
	cases := []struct {
		name string
		n    *tn
		vis  bool
	}{
		{"plain", E("button").At(10, 10, 50, 20), true},
		{"display none", E("button").At(10, 10, 50, 20).S("display", "none"), false},
		{"visibility hidden", E("button").At(10, 10, 50, 20).S("visibility", "hidden"), false},
		{"opacity 0", E("button").At(10, 10, 50, 20).S("opacity", "0"), false},
		{"opacity garbage is visible", E("button").At(10, 10, 50, 20).S("opacity", "bogus"), true},
		{"empty bounds", E("button").At(10, 10, 0, 20), false},
		{"no layout", E("button").NoLayout(), false},
		{"within 1000px below", E("button").At(10, 800+900, 50, 20), true},
		{"beyond 1000px below", E("button").At(10, 800+1100, 50, 20), false},
		{"within 1000px right", E("button").At(1280+900, 10, 50, 20), true},
		{"beyond 1000px right", E("button").At(1280+1100, 10, 50, 20), false},
		{"within 1000px left", E("button").At(-900, 10, 50, 20), true},
		{"beyond 1000px left", E("button").At(-1100, 10, 50, 20), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.n.A("id", "target")
			in := &PageInput{Frames: []FrameInput{frameOfHTML(1, stdVP,
				E("html", E("body", c.n).At(0, 0, 1280, 5000)).At(0, 0, 1280, 5000))}}
			tree := build(t, in, Options{})
			n := findNode(tree, byAttr("id", "target"))
			if n == nil {
				t.Fatal("node not found")
			}
			if n.Visible != c.vis {
				t.Fatalf("visible=%v want %v", n.Visible, c.vis)
			}
		})
	}
}

func TestVisibilityScrolledViewport(t *testing.T) {
	vp := stdVP
	vp.ScrollY = 3000
	in := &PageInput{Frames: []FrameInput{frameOfHTML(1, vp,
		E("html", E("body",
			E("button").A("id", "top").At(10, 10, 50, 20),
			E("button").A("id", "here").At(10, 3100, 50, 20),
		).At(0, 0, 1280, 5000)).At(0, 0, 1280, 5000))}}
	tree := build(t, in, Options{})
	if findNode(tree, byAttr("id", "top")).Visible {
		t.Fatal("element 2990px above the viewport should be invisible")
	}
	if !findNode(tree, byAttr("id", "here")).Visible {
		t.Fatal("element in viewport should be visible")
	}
	// Threshold disabled: both visible.
	tree = build(t, in, Options{ViewportThreshold: -1})
	if !findNode(tree, byAttr("id", "top")).Visible {
		t.Fatal("with the viewport test off, CSS-visible elements are visible")
	}
}

func TestVisibilityThroughIframe(t *testing.T) {
	// iframe at y=100, 600×400; its document holds one button inside and one
	// far below the iframe's viewport.
	frame := E("iframe").At(0, 100, 600, 400).Content(
		E("button").A("id", "in").At(10, 10, 50, 20),
		E("button").A("id", "out").At(10, 2000, 50, 20),
	)
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP, frame)}}
	tree := build(t, in, Options{})
	inBtn := findNode(tree, byAttr("id", "in"))
	if !inBtn.Visible || inBtn.Bounds.Y != 110 {
		t.Fatalf("inner button: visible=%v bounds=%+v", inBtn.Visible, inBtn.Bounds)
	}
	if findNode(tree, byAttr("id", "out")).Visible {
		t.Fatal("button 1600px below the iframe viewport must be invisible")
	}
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := lineWith(res.Text, "<iframe")
	if !strings.HasPrefix(l, "|IFRAME|[") {
		t.Fatalf("iframe line %q (600x400 iframe is interactive)", l)
	}
	if bl := lineWith(res.Text, "id=in"); !strings.HasPrefix(bl, "\t") {
		t.Fatalf("iframe content must be indented under it: %q", bl)
	}
	if len(tree.Frames) != 2 || tree.Frames[1].Depth != 1 {
		t.Fatalf("frames: %+v", tree.Frames)
	}
}

func interactiveOf(t *testing.T, n *tn) bool {
	t.Helper()
	n.A("data-probe", "x")
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP, n)}}
	tree := build(t, in, Options{})
	node := findNode(tree, byAttr("data-probe", "x"))
	return IsInteractive(node)
}

func TestInteractivityRules(t *testing.T) {
	cases := []struct {
		name string
		n    *tn
		want bool
	}{
		{"plain div", E("div").At(0, 0, 300, 300), false},
		{"listener", E("div").At(0, 0, 300, 300).Listener(), true},
		{"big iframe", E("iframe").At(0, 0, 300, 300), true},
		{"small iframe", E("iframe").At(0, 0, 90, 90), false},
		{"label for", E("label").A("for", "x").At(0, 0, 300, 300).S("cursor", "pointer"), false},
		{"label wrapping input", E("label", E("span", E("input"))).At(0, 0, 300, 300), true},
		{"span wrapping input", E("span", E("input")).At(0, 0, 300, 300), true},
		{"search class", E("div").A("class", "site-search-box").At(0, 0, 300, 300), true},
		{"search id", E("div").A("id", "magnify-btn").At(0, 0, 300, 300), true},
		{"search data attr", E("div").A("data-role", "query-field").At(0, 0, 300, 300), true},
		{"ax disabled beats tag", E("button").At(0, 0, 300, 300).AX("button", "x", "disabled", true), false},
		{"ax hidden", E("a").At(0, 0, 300, 300).AX("link", "x", "hidden", true), false},
		{"ax focusable", E("div").At(0, 0, 300, 300).AX("generic", "", "focusable", true), true},
		{"ax focusable false", E("div").At(0, 0, 300, 300).AX("generic", "", "focusable", false), false},
		{"ax expanded present", E("div").At(0, 0, 300, 300).AX("generic", "", "expanded", false), true},
		{"ax required", E("div").At(0, 0, 300, 300).AX("generic", "", "required", true), true},
		{"tag a", E("a").At(0, 0, 300, 300), true},
		{"tag summary", E("summary").At(0, 0, 300, 300), true},
		{"tag option", E("option").At(0, 0, 300, 300), true},
		{"onclick", E("div").A("onclick", "f()").At(0, 0, 300, 300), true},
		{"tabindex", E("div").A("tabindex", "-1").At(0, 0, 300, 300), true},
		{"draggable", E("div").A("draggable", "true").At(0, 0, 300, 300), true},
		{"draggable false", E("div").A("draggable", "false").At(0, 0, 300, 300), false},
		{"role button", E("div").A("role", "button").At(0, 0, 300, 300), true},
		{"role gridcell", E("div").A("role", "gridcell").At(0, 0, 300, 300), true},
		{"role presentation", E("div").A("role", "presentation").At(0, 0, 300, 300), false},
		{"plain table cell", E("td").At(0, 0, 300, 300).AX("cell", ""), false},
		{"role row outside grid", E("div").A("role", "row").At(0, 0, 300, 300), false},
		{"row with own pointer", E("tr").At(0, 0, 300, 300).S("cursor", "pointer"), true},
		{"ax role listbox", E("div").At(0, 0, 300, 300).AX("listbox", ""), true},
		{"icon sized with class", E("span").A("class", "icon").At(0, 0, 24, 24), true},
		{"icon sized bare", E("span").At(0, 0, 24, 24), false},
		{"too small for icon", E("span").A("class", "icon").At(0, 0, 8, 8), false},
		{"cursor pointer", E("div").At(0, 0, 300, 300).S("cursor", "pointer"), true},
		{"html", E("section").At(0, 0, 300, 300), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := interactiveOf(t, c.n); got != c.want {
				t.Fatalf("IsInteractive=%v want %v", got, c.want)
			}
		})
	}
}

// Cells inherit a clickable row's cursor (the row is the action); a grid's
// cells are actions; a field is named by its row's header cell.
func TestTableRowsAndCells(t *testing.T) {
	res, _ := render(t,
		E("table",
			E("tr", E("td", T("A-1")).A("id", "inherit").At(0, 0, 100, 20).S("cursor", "pointer")).
				A("id", "row").At(0, 0, 300, 20).S("cursor", "pointer"),
		).At(0, 0, 300, 20),
		E("table",
			E("tr", E("td", T("G-1")).A("id", "gcell").At(0, 40, 100, 20)).At(0, 40, 300, 20),
		).A("role", "grid").At(0, 40, 300, 20),
		E("table",
			E("tr", E("th", T("Street")).At(0, 80, 100, 20), E("td", E("input").A("id", "street").At(100, 80, 100, 20)).At(100, 80, 200, 20)).At(0, 80, 300, 20),
			E("tr", E("td", T("City")).At(0, 100, 100, 20), E("td", E("input").A("id", "city").At(100, 100, 100, 20)).At(100, 100, 200, 20)).At(0, 100, 300, 20),
			E("tr", E("td", E("input").A("id", "first").At(0, 120, 100, 20)).At(0, 120, 100, 20)).At(0, 120, 300, 20),
		).At(0, 80, 300, 60),
		E("div", E("table",
			E("tr", E("td", T("5")).A("id", "day").At(0, 160, 30, 20), E("td", E("input").A("id", "in-cell").At(30, 160, 60, 20)).A("id", "ctl-cell").At(30, 160, 70, 20)).At(0, 160, 100, 20),
		).At(0, 160, 100, 20)).Listener().At(0, 160, 100, 20),
	)
	for id, want := range map[string]bool{"row": true, "inherit": false, "gcell": true, "day": true, "ctl-cell": false} {
		if got := strings.HasPrefix(strings.TrimSpace(lineWith(res.Text, "id="+id+" ")+lineWith(res.Text, "id="+id)), "["); got != want {
			t.Errorf("%s indexed=%v, want %v\n%s", id, got, want, res.Text)
		}
	}
	for id, want := range map[string]string{"street": "label=Street", "city": "label=City", "first": ""} {
		l := lineWith(res.Text, "id="+id)
		if want == "" && strings.Contains(l, "label=") || !strings.Contains(l, want) {
			t.Errorf("%s line %q, want %q", id, l, want)
		}
	}
}

func TestPaintOrderCovering(t *testing.T) {
	// A modal overlay (opaque, painted last) covers a button under it.
	res, _ := render(t,
		E("button").A("id", "under").At(100, 100, 80, 30).P(1),
		E("button").A("id", "beside").At(900, 100, 80, 30).P(2),
		E("div", E("button").A("id", "modal-ok").At(300, 300, 80, 30).P(11)).
			A("class", "overlay").At(0, 0, 800, 600).S("background-color", "rgb(255, 255, 255)").P(10),
	)
	if lineWith(res.Text, "id=under") != "" {
		t.Fatalf("covered button must lose its index:\n%s", res.Text)
	}
	for _, id := range []string{"id=beside", "id=modal-ok"} {
		if l := lineWith(res.Text, id); !strings.Contains(l, "[") {
			t.Fatalf("%s should be indexed:\n%s", id, res.Text)
		}
	}
}

func TestPaintOrderTransparentOrFaintDoesNotCover(t *testing.T) {
	for _, tc := range []struct{ name, bg, op string }{
		{"transparent", "rgba(0, 0, 0, 0)", "1"},
		{"faint", "rgb(255, 255, 255)", "0.5"},
		{"bad opacity", "rgb(255, 255, 255)", "oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := render(t,
				E("button").A("id", "under").At(100, 100, 80, 30).P(1),
				E("div").At(0, 0, 800, 600).S("background-color", tc.bg).S("opacity", tc.op).P(10),
			)
			if !strings.Contains(lineWith(res.Text, "id=under"), "[") {
				t.Fatalf("button under a %s layer must stay indexed:\n%s", tc.name, res.Text)
			}
		})
	}
	// Disabled filter keeps covered elements.
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP,
		E("button").A("id", "under").At(100, 100, 80, 30).P(1),
		E("div").At(0, 0, 800, 600).S("background-color", "rgb(1, 2, 3)").P(10))}}
	tree := build(t, in, Options{})
	res, _ := Serialize(tree, nil, SerializeOptions{DisablePaintOrder: true})
	if !strings.Contains(lineWith(res.Text, "id=under"), "[") {
		t.Fatal("DisablePaintOrder must keep the covered button")
	}
}

func TestRectUnionBounded(t *testing.T) {
	u := newRectUnion()
	var sc [2][]Rect
	buf := make([]int32, 0, 8)
	for i := 0; i < 20000; i++ {
		x := float64(i%200) * 7
		y := float64(i/200) * 7
		u.add(Rect{X: x, Y: y, W: 5, H: 5}, &sc, buf)
	}
	if len(u.rects) > maxUnionRects {
		t.Fatalf("union grew to %d rects", len(u.rects))
	}
	u2 := newRectUnion()
	u2.add(Rect{X: 0, Y: 0, W: 100, H: 100}, &sc, buf)
	u2.add(Rect{X: 50, Y: 0, W: 100, H: 100}, &sc, buf)
	if !u2.covers(Rect{X: 10, Y: 10, W: 130, H: 80}, &sc, buf) {
		t.Fatal("rect inside the union of two overlapping rects must be covered")
	}
	if u2.covers(Rect{X: 10, Y: 10, W: 150, H: 80}, &sc, buf) {
		t.Fatal("rect sticking out must not be covered")
	}
	// Huge rectangles (taller than the grid indexes) are still found.
	u3 := newRectUnion()
	u3.add(Rect{X: 0, Y: 0, W: 30000, H: 90000}, &sc, buf)
	if !u3.covers(Rect{X: 100, Y: 80000, W: 10, H: 10}, &sc, buf) {
		t.Fatal("huge rect must cover a small rect far from its origin")
	}
}

func TestBBoxFilter(t *testing.T) {
	res, _ := render(t,
		E("a",
			E("span").A("class", "icon", "id", "inner-span").At(10, 10, 20, 20).S("cursor", "pointer"),
			E("input").A("id", "inner-input").At(40, 10, 50, 20),
			E("div").A("id", "inner-onclick", "onclick", "x()").At(100, 10, 50, 20),
			E("div").A("id", "inner-aria", "aria-label", "Close").At(160, 10, 20, 20).S("cursor", "pointer"),
			E("div").A("id", "inner-role", "role", "checkbox").At(200, 10, 20, 20),
			E("button").A("id", "inner-button").At(230, 10, 20, 20),
			E("div").A("id", "outside", "class", "x").At(250, 10, 100, 20).S("cursor", "pointer"),
		).A("href", "/x", "id", "link").At(0, 0, 300, 40),
	)
	if lineWith(res.Text, "id=inner-span") != "" {
		t.Fatalf("span inside link must be folded:\n%s", res.Text)
	}
	for _, id := range []string{"link", "inner-input", "inner-onclick", "inner-aria", "inner-role", "inner-button", "outside"} {
		if !strings.Contains(lineWith(res.Text, "id="+id), "[") {
			t.Fatalf("%s must keep its index:\n%s", id, res.Text)
		}
	}
	// Filter disabled: the span is back.
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP,
		E("a", E("span").A("id", "s").At(10, 10, 20, 20).S("cursor", "pointer")).A("href", "/").At(0, 0, 300, 40))}}
	tree := build(t, in, Options{})
	r2, _ := Serialize(tree, nil, SerializeOptions{DisableBBoxFilter: true})
	if lineWith(r2.Text, "id=s") == "" {
		t.Fatal("DisableBBoxFilter must keep nested span")
	}
}

func TestPasswordNeverEmitted(t *testing.T) {
	secret := "hunter2-secret"
	res, _ := render(t,
		E("input").A("type", "password", "id", "pw", "value", secret).At(0, 0, 200, 30).Val(secret).
			AX("textbox", "Password", "value", secret, "valuetext", secret, "focusable", true),
		E("input").A("type", "PassWord ", "id", "pw2").At(0, 40, 200, 30).Val(secret),
	)
	if strings.Contains(res.Text, secret) {
		t.Fatalf("password leaked:\n%s", res.Text)
	}
	if !strings.Contains(lineWith(res.Text, "id=pw "), "[") && !strings.Contains(lineWith(res.Text, "id=pw"), "[") {
		t.Fatalf("password field should still be indexed:\n%s", res.Text)
	}
}

func TestSingleCharTextKept(t *testing.T) {
	res, _ := render(t,
		E("nav",
			E("a", T("1")).A("href", "?p=1").At(0, 0, 20, 20),
			E("a", T("2")).A("href", "?p=2").At(30, 0, 20, 20),
		).At(0, 0, 200, 20),
		E("td", T("7")).At(0, 100, 30, 30),
	)
	for _, want := range []string{"\t1", "\t2", "7"} {
		if lineWith(res.Text, want) == "" {
			t.Fatalf("missing %q:\n%s", want, res.Text)
		}
	}
	if !strings.Contains(res.Text, "\n7") && !strings.HasSuffix(res.Text, "7") {
		t.Fatalf("calendar day 7 not on its own line:\n%s", res.Text)
	}
}

func TestIconicHint(t *testing.T) {
	res, _ := render(t,
		E("button").A("class", "btn-close is-active").At(0, 0, 30, 30).ID(50),
		E("button").A("data-testid", "menu-toggle").At(40, 0, 30, 30).ID(51),
		E("button", E("svg").A("class", "icon-trash").At(45, 45, 16, 16)).At(80, 0, 30, 30).ID(52),
		E("button").At(120, 0, 30, 30).ID(53).AX("button", "Delete item"),
		E("button", T("OK")).A("class", "btn").At(160, 0, 60, 30).ID(54),
	)
	checks := map[string]string{
		"[50]": "hint=.btn-close",
		"[51]": "hint=data-testid:menu-toggle",
		"[52]": "hint=icon:trash",
		"[53]": "ax_name=Delete item",
	}
	for idx, want := range checks {
		if l := lineWith(res.Text, idx); !strings.Contains(l, want) {
			t.Fatalf("line %s = %q, want %q\n%s", idx, l, want, res.Text)
		}
	}
	if strings.Contains(lineWith(res.Text, "[50]"), "is-active") {
		t.Fatal("volatile class token in hint")
	}
	if l := lineWith(res.Text, "[54]"); strings.Contains(l, "hint=") {
		t.Fatalf("button with text needs no hint: %q", l)
	}
}

func TestValueWhitespacePreservedAndCapped(t *testing.T) {
	long := strings.Repeat("x", 700)
	res, _ := render(t,
		E("input").A("id", "a", "value", "default").At(0, 0, 200, 30).Val("  two  spaces "),
		E("textarea").A("id", "b").At(0, 40, 200, 60).TVal("line1\nline2"),
		E("input").A("id", "c").At(0, 110, 200, 30).Val("plain"),
		E("input").A("id", "d").At(0, 150, 200, 30).Val(long),
	)
	if l := lineWith(res.Text, "id=a"); !strings.Contains(l, `value="  two  spaces "`) {
		t.Fatalf("whitespace lost: %q", l)
	}
	if l := lineWith(res.Text, "id=b"); !strings.Contains(l, `value="line1\nline2"`) {
		t.Fatalf("textarea newline lost: %q", l)
	}
	if l := lineWith(res.Text, "id=c"); !strings.Contains(l, "value=plain") {
		t.Fatalf("plain value: %q", l)
	}
	l := lineWith(res.Text, "id=d")
	if !strings.Contains(l, "value="+strings.Repeat("x", 500)+"… 200 more chars (read_value)") || strings.Contains(l, strings.Repeat("x", 501)) {
		t.Fatalf("value cap 500 not applied: len %d", len(l))
	}
}

func TestAttributeCap(t *testing.T) {
	res, _ := render(t, E("button").A("title", strings.Repeat("t", 150)).At(0, 0, 50, 20))
	l := lineWith(res.Text, "title=")
	if !strings.Contains(l, "title="+strings.Repeat("t", 100)+"...") || strings.Contains(l, strings.Repeat("t", 101)) {
		t.Fatalf("title not capped at 100: %q", l)
	}
}

func TestUnassociatedLabel(t *testing.T) {
	res, _ := render(t,
		E("div",
			E("label", T("Email")).At(0, 0, 100, 20),
			E("input").A("type", "text").At(0, 20, 200, 30).ID(60),
		).At(0, 0, 400, 60),
		E("div",
			E("label", T("Phone")).A("for", "phone").At(0, 100, 100, 20),
			E("input").A("type", "text", "id", "phone").At(0, 120, 200, 30).ID(61),
		).At(0, 100, 400, 60),
		E("div",
			E("label", T("Mislabelled")).A("for", "nope").At(0, 200, 100, 20),
			E("input").A("type", "text").At(0, 220, 200, 30).ID(62),
		).At(0, 200, 400, 60),
	)
	if l := lineWith(res.Text, "[60]"); !strings.Contains(l, "label=Email") {
		t.Fatalf("unassociated label not attached: %q\n%s", l, res.Text)
	}
	if l := lineWith(res.Text, "[61]"); strings.Contains(l, "label=") {
		t.Fatalf("associated label must not be repeated: %q", l)
	}
	if l := lineWith(res.Text, "[62]"); !strings.Contains(l, "label=Mislabelled") {
		t.Fatalf("label pointing at a missing id should attach: %q", l)
	}
}

func TestTruncationNoticeAndCap(t *testing.T) {
	var kids []*tn
	for i := 0; i < 300; i++ {
		kids = append(kids, E("button", T("Button number with a fairly long label")).At(0, float64(i)*2, 300, 2))
	}
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP, kids...)}}
	tree := build(t, in, Options{})
	res, err := Serialize(tree, nil, SerializeOptions{MaxChars: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text) > 2000 {
		t.Fatalf("cap exceeded: %d", len(res.Text))
	}
	if !res.Truncated || res.TruncatedElements == 0 {
		t.Fatalf("truncation not reported: %+v", res.Truncated)
	}
	shown := strings.Count(res.Text, "<button")
	if shown+res.TruncatedElements != 300 {
		t.Fatalf("shown %d + cut %d != 300", shown, res.TruncatedElements)
	}
	if !strings.Contains(res.Text, "page truncated") || !strings.Contains(res.Text, itoa(res.TruncatedElements)+" more interactive elements") {
		t.Fatalf("notice missing or dishonest:\n%s", res.Text[len(res.Text)-300:])
	}
	if res.Map.Len() != 300 {
		t.Fatalf("selector map must keep all elements: %d", res.Map.Len())
	}
	// Default cap is 40000.
	res2, _ := Serialize(tree, nil, SerializeOptions{})
	if res2.Truncated {
		t.Fatalf("small page truncated at default cap (%d chars)", len(res2.Text))
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

func TestNewMarks(t *testing.T) {
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP,
		E("button", T("A")).At(0, 0, 50, 20).ID(100),
	)}}
	tree := build(t, in, Options{})
	first, _ := Serialize(tree, nil, SerializeOptions{})
	if strings.Contains(first.Text, "*[") {
		t.Fatal("first observation must not mark anything new")
	}
	in2 := &PageInput{Frames: []FrameInput{frameOf(1, stdVP,
		E("button", T("A")).At(0, 0, 50, 20).ID(100),
		E("li", T("Suggestion")).A("role", "option").At(0, 30, 50, 20).ID(200),
	)}}
	tree2 := build(t, in2, Options{})
	second, _ := Serialize(tree2, first.Map, SerializeOptions{})
	if l := lineWith(second.Text, "[100]"); strings.HasPrefix(l, "*") {
		t.Fatalf("old element marked new: %q", l)
	}
	if l := lineWith(second.Text, "[200]"); !strings.HasPrefix(l, "*[200]") {
		t.Fatalf("new element not marked: %q\n%s", l, second.Text)
	}
	if e, _ := second.Map.Get(200); !e.New {
		t.Fatal("Element.New not set")
	}
}

func TestShadowMarkers(t *testing.T) {
	res, _ := render(t,
		E("my-widget").A("tabindex", "0").At(0, 0, 300, 50).Shadow("open",
			E("button", T("Inside")).At(10, 10, 80, 30)),
		E("closed-el").A("role", "button").At(0, 100, 300, 50).Shadow("closed",
			E("input").At(10, 110, 80, 30)),
	)
	for _, want := range []string{"|SHADOW(open)|[", "|SHADOW(closed)|[", "Open Shadow", "Closed Shadow", "Shadow End"} {
		if !strings.Contains(res.Text, want) {
			t.Fatalf("missing %q:\n%s", want, res.Text)
		}
	}
	if l := lineWith(res.Text, "<input"); !strings.HasPrefix(l, "\t\t[") {
		t.Fatalf("shadow content indentation: %q\n%s", l, res.Text)
	}
}

func TestUserAgentShadowHidden(t *testing.T) {
	res, _ := render(t,
		E("input").A("id", "q").At(0, 0, 200, 30).Val("abc").Shadow("user-agent", E("div", T("abc")).At(0, 0, 200, 30)),
	)
	if strings.Contains(res.Text, "Shadow") || strings.Count(res.Text, "abc") != 1 {
		t.Fatalf("user-agent shadow leaked:\n%s", res.Text)
	}
}

func TestScrollContainer(t *testing.T) {
	res, _ := render(t,
		E("div", E("p", T("Long content")).At(0, 0, 300, 50)).A("id", "list").At(0, 0, 300, 200).
			S("overflow-y", "auto").Scroll(Rect{W: 300, H: 200}, Rect{Y: 200, W: 300, H: 1000}),
		E("div", E("button", T("x")).At(0, 300, 30, 30)).A("id", "withbtn").At(0, 300, 300, 200).
			S("overflow", "scroll").Scroll(Rect{W: 300, H: 200}, Rect{W: 300, H: 600}),
		E("ul").A("role", "listbox", "id", "dd").At(0, 600, 300, 100).
			S("overflow", "auto").Scroll(Rect{W: 300, H: 100}, Rect{W: 300, H: 400}).
			Kids(E("li", T("opt")).A("role", "option").At(0, 600, 300, 20)),
	)
	if l := lineWith(res.Text, "id=list"); !strings.HasPrefix(l, "|scroll element[") || !strings.Contains(l, "(1.0 pages above, 3.0 pages below)") {
		t.Fatalf("scroll line: %q\n%s", l, res.Text)
	}
	if l := lineWith(res.Text, "id=withbtn"); !strings.HasPrefix(l, "|scroll element|<div") {
		t.Fatalf("scroll container with interactive children keeps no index: %q", l)
	}
	if l := lineWith(res.Text, "id=dd"); !strings.HasPrefix(l, "|scroll element[") {
		t.Fatalf("dropdown container must be indexed: %q", l)
	}
}

func TestHiddenFileInputKept(t *testing.T) {
	res, _ := render(t,
		E("label", T("Upload")).At(0, 0, 100, 30),
		E("input").A("type", "file", "id", "f").At(0, 0, 100, 30).S("opacity", "0"),
	)
	if !strings.Contains(lineWith(res.Text, "id=f"), "[") {
		t.Fatalf("hidden file input must be indexed:\n%s", res.Text)
	}
}

func TestSVGCollapsedAndSelect(t *testing.T) {
	res, _ := render(t,
		E("svg", E("path").At(0, 0, 10, 10)).A("role", "button", "aria-label", "Play").At(0, 0, 20, 20),
		E("select", E("option", T("Red")), E("option", T("Green")).A("selected", ""), E("option", T("Blue")),
			E("option", T("Cyan")), E("option", T("Magenta"))).A("name", "color").At(0, 50, 100, 20),
	)
	if l := lineWith(res.Text, "<svg"); !strings.HasSuffix(l, "/> <!-- SVG content collapsed -->") || strings.Contains(res.Text, "path") {
		t.Fatalf("svg: %q", l)
	}
	l := lineWith(res.Text, "<select")
	if !strings.Contains(l, "value=Green") || !strings.Contains(l, "count=5,options=Red|Green|Blue|Cyan|…") {
		t.Fatalf("select: %q", l)
	}
}

func TestDateFormatHint(t *testing.T) {
	res, _ := render(t, E("input").A("type", "date").At(0, 0, 100, 20))
	if l := lineWith(res.Text, "<input"); !strings.Contains(l, "placeholder=YYYY-MM-DD") || !strings.Contains(l, "format=YYYY-MM-DD") {
		t.Fatalf("date hints: %q", l)
	}
}

func TestEmptyPage(t *testing.T) {
	res, _ := render(t)
	if res.Text != EmptyPageText {
		t.Fatalf("empty page text %q", res.Text)
	}
	if !res.Stats.AppearsEmpty || !res.Stats.MayBeLoading {
		t.Fatalf("stats: %+v", res.Stats)
	}
}

func TestExcludeAttr(t *testing.T) {
	res, _ := render(t,
		E("div", E("button", T("overlay")).At(0, 0, 50, 20)).A("data-browseragent-exclude", "true").At(0, 0, 100, 100),
		E("button", T("real")).At(0, 200, 50, 20),
	)
	if strings.Contains(res.Text, "overlay") || !strings.Contains(res.Text, "real") {
		t.Fatalf("exclude: %s", res.Text)
	}
}

func TestBackendIDCollisionAcrossTargets(t *testing.T) {
	// The page and an OOPIF both use backend node ids starting at 1, so the
	// buttons collide.
	main := frameOf(1, stdVP,
		E("button", T("Main")).At(0, 0, 50, 20).ID(40),
		E("iframe").A("id", "ext").FrameID("F2").At(0, 100, 400, 300),
	)
	child := frameOf(1, Viewport{Width: 400, Height: 300}, E("button", T("Inner")).At(10, 10, 50, 20).ID(40))
	child.TargetID, child.SessionID, child.FrameID = "F2", "S-oopif", "F2"
	in := &PageInput{Frames: []FrameInput{main, child}}
	tree := build(t, in, Options{})
	if len(tree.Warnings) != 0 {
		t.Fatalf("warnings: %v", tree.Warnings)
	}
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e40, ok := res.Map.Get(40)
	if !ok || e40.TargetID != "T1" {
		t.Fatalf("index 40 should stay with the main page: %+v", e40)
	}
	var inner *Element
	for _, i := range res.Map.Indexes() {
		e, _ := res.Map.Get(i)
		if e.SessionID == "S-oopif" && e.Node.Tag == "button" {
			inner = e
		}
	}
	if inner == nil || inner.Index == 40 || inner.BackendNodeID != 40 {
		t.Fatalf("inner button must get a synthetic index: %+v", inner)
	}
	var maxID cdpproto.BackendNodeID
	tree.Walk(func(n *Node) bool {
		if n.BackendNodeID > maxID {
			maxID = n.BackendNodeID
		}
		return true
	})
	if inner.Index <= int64(maxID) {
		t.Fatalf("synthetic index %d not above max backend id %d", inner.Index, maxID)
	}
	if !strings.Contains(res.Text, "Inner") || inner.Node.Bounds.Y != 110 {
		t.Fatalf("OOPIF not offset/stitched: bounds %+v\n%s", inner.Node.Bounds, res.Text)
	}
	// New marks are per session: same backend id in another session is new.
	tree2 := build(t, in, Options{})
	res2, _ := Serialize(tree2, res.Map, SerializeOptions{})
	if strings.Contains(res2.Text, "*[") {
		t.Fatalf("identical capture marked new:\n%s", res2.Text)
	}
}

func TestOOPIFOwnerByBackendIDAndLimits(t *testing.T) {
	main := frameOf(1, stdVP, E("iframe").At(0, 0, 400, 300).ID(77))
	child := frameOf(500, Viewport{Width: 400, Height: 300}, E("a", T("x")).A("href", "/").At(0, 0, 50, 20))
	child.Owner = OwnerRef{ParentTargetID: "T1", BackendNodeID: 77}
	orphan := frameOf(900, stdVP, E("a", T("y")).At(0, 0, 50, 20))
	orphan.FrameID = "nowhere"
	tree := build(t, &PageInput{Frames: []FrameInput{main, child, orphan}}, Options{})
	if len(tree.Warnings) != 1 || !strings.Contains(tree.Warnings[0], "owner iframe not found") {
		t.Fatalf("warnings: %v", tree.Warnings)
	}
	ifr := findNode(tree, func(n *Node) bool { return n.BackendNodeID == 77 })
	if ifr.ContentDocument == nil || ifr.ContentDocument.Frame.TargetID != "T500" {
		t.Fatal("OOPIF not stitched by backend id")
	}
	// Depth limit 1 still allows the OOPIF (depth 1); MaxIframes 1 with a
	// same-process iframe first blocks the OOPIF.
	main2 := frameOf(1, stdVP, E("iframe").At(0, 0, 400, 300).Content(E("p", T("same"))), E("iframe").At(0, 400, 400, 300).ID(78))
	child2 := frameOf(500, stdVP, E("a", T("x")).At(0, 0, 50, 20))
	child2.Owner = OwnerRef{BackendNodeID: 78}
	tree2 := build(t, &PageInput{Frames: []FrameInput{main2, child2}}, Options{MaxIframes: 1})
	if len(tree2.Warnings) != 1 || !strings.Contains(tree2.Warnings[0], "more than 1 iframes") {
		t.Fatalf("warnings: %v", tree2.Warnings)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(&PageInput{}, Options{}); !errors.Is(err, ErrNoFrames) {
		t.Fatalf("got %v", err)
	}
	if _, err := Build(nil, Options{}); !errors.Is(err, ErrNoFrames) {
		t.Fatalf("got %v", err)
	}
	fi := frameOf(1, stdVP)
	fi.Document = nil
	_, err := Build(&PageInput{Frames: []FrameInput{fi}}, Options{})
	var fe *FrameError
	if !errors.Is(err, ErrNoDocument) || !errors.As(err, &fe) || fe.Index != 0 {
		t.Fatalf("got %v", err)
	}
	fi = frameOf(1, stdVP)
	fi.Snapshot = nil
	if _, err := Build(&PageInput{Frames: []FrameInput{fi}}, Options{}); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("got %v", err)
	}
	bad := []func(s *domsnapshot.CaptureSnapshotResult){
		func(s *domsnapshot.CaptureSnapshotResult) {
			s.Documents[0].Layout.Bounds = s.Documents[0].Layout.Bounds[1:]
		},
		func(s *domsnapshot.CaptureSnapshotResult) { s.Documents[0].Layout.NodeIndex[0] = 9999 },
		func(s *domsnapshot.CaptureSnapshotResult) { s.Documents[0].Layout.Styles[0][0] = 99999 },
		func(s *domsnapshot.CaptureSnapshotResult) { s.Documents[0].Layout.PaintOrders = []int64{1} },
		func(s *domsnapshot.CaptureSnapshotResult) { s.Documents[0].Nodes = nil },
		func(s *domsnapshot.CaptureSnapshotResult) {
			s.Documents[0].Nodes.InputValue = &domsnapshot.RareStringData{Index: []int64{1}, Value: nil}
		},
		func(s *domsnapshot.CaptureSnapshotResult) {
			s.Documents[0].Nodes.IsClickable = &domsnapshot.RareBooleanData{Index: []int64{-1}}
		},
	}
	for i, mut := range bad {
		fi := frameOf(1, stdVP, E("button", T("b")).At(0, 0, 10, 10))
		mut(fi.Snapshot)
		_, err := Build(&PageInput{Frames: []FrameInput{fi}}, Options{})
		if !errors.Is(err, ErrBadSnapshot) || !errors.As(err, &fe) {
			t.Fatalf("case %d: got %v", i, err)
		}
	}
	if _, err := Serialize(nil, nil, SerializeOptions{}); !errors.Is(err, ErrNilTree) {
		t.Fatalf("got %v", err)
	}
}
