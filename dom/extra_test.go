package dom

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

func TestMarkdown(t *testing.T) {
	_, tree := render(t,
		E("script", T(`window.x = 1`)),
		E("style", T(`.a{color:red}`)),
		E("h1", T("Title")),
		E("p", T("Hello"), E("a", T("world")).A("href", "https://w.test/"), T(".")),
		E("ul", E("li", T("one")), E("li", T("two"))),
		E("pre", T("code line 1\n  indented")),
		E("table",
			E("tr", E("th", T("Name")), E("th", T("Qty"))),
			E("tr", E("td", T("Apple")), E("td", T("3"))),
		),
		E("div", T(`{"props":{"a":1,"b":2,"c":"`+strings.Repeat("x", 80)+`"},"page":"/"}`)),
		E("iframe").At(0, 0, 400, 300).Content(E("p", T("Inside frame"))),
		E("x-el").Shadow("closed", E("p", T("Shadow text"))),
		E("img").A("alt", "Logo", "src", "/logo.png"),
	)
	md := Markdown(tree, MarkdownOptions{Links: true, Images: true})
	for _, want := range []string{"# Title", "Hello [world](https://w.test/)", "- one\n- two", "```\ncode line 1\n  indented\n```",
		"| Name | Qty |\n| --- | --- |\n| Apple | 3 |", "Inside frame", "Shadow text", "![Logo](/logo.png)"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown missing %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"window.x", "color:red", `"props"`} {
		if strings.Contains(md, bad) {
			t.Fatalf("markdown contains %q:\n%s", bad, md)
		}
	}
	if strings.Contains(md, "\n\n\n\n") {
		t.Fatal("more than 3 newlines in a row")
	}
	plain := Markdown(tree, MarkdownOptions{})
	if strings.Contains(plain, "](") || !strings.Contains(plain, "world") {
		t.Fatalf("links off: %s", plain)
	}
}

func TestChunkMarkdown(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 400; i++ {
		b.WriteString("## Section ")
		b.WriteString(fmtInt(i))
		b.WriteString("\n\n")
		b.WriteString(strings.Repeat("word ", 60))
		b.WriteString("\n\n")
	}
	md := b.String()
	var got strings.Builder
	start, n := 0, 0
	for {
		c := ChunkMarkdown(md, start, 10000)
		n++
		if len(c.Text) > 10000 {
			t.Fatalf("chunk %d is %d bytes", n, len(c.Text))
		}
		got.WriteString(md[c.Start:c.End])
		if c.Next < 0 {
			if c.End != len(md) || strings.Contains(c.Text, "start_from_char") {
				t.Fatal("last chunk wrong")
			}
			break
		}
		if !strings.Contains(c.Text, "start_from_char="+fmtInt(c.Next)) {
			t.Fatalf("chunk %d has no pointer to %d", n, c.Next)
		}
		if !strings.HasPrefix(md[c.Next:], "## ") {
			t.Fatalf("chunk %d does not end at a heading: %q", n, md[c.Next:c.Next+20])
		}
		start = c.Next
		if n > 100 {
			t.Fatal("no progress")
		}
	}
	if got.String() != md || n < 3 {
		t.Fatalf("chunks do not reassemble (n=%d)", n)
	}
	if c := ChunkMarkdown("short", 0, 0); c.Text != "short" || c.Next != -1 {
		t.Fatalf("short: %+v", c)
	}
	if c := ChunkMarkdown("short", 99, 0); c.Text != "" || c.Next != -1 {
		t.Fatalf("past end: %+v", c)
	}
}

func TestIdentity(t *testing.T) {
	_, tree := render(t,
		E("div",
			E("button", T("A")).A("class", "btn primary hover focus-visible", "id", "go").At(0, 0, 50, 20).AX("button", "Go"),
			E("button", T("B")).A("class", "btn").At(0, 30, 50, 20),
			E("button", T("C")).A("class", "btn").At(0, 60, 50, 20),
		).At(0, 0, 300, 100),
		E("x-host").Shadow("open", E("span", T("s"))),
	)
	goBtn := findNode(tree, byAttr("id", "go"))
	id := IdentityOf(goBtn)
	if id.XPath != "html/body/div/button[1]" {
		t.Fatalf("xpath %q", id.XPath)
	}
	if id.AXName != "Go" || id.KeyAttrs["id"] != "go" || id.Tag != "button" {
		t.Fatalf("identity %+v", id)
	}
	// Volatile classes change the hash but not the stable hash.
	setAttr(goBtn, "class", "btn primary active")
	id2 := IdentityOf(goBtn)
	if id2.Hash == id.Hash {
		t.Fatal("hash must see class changes")
	}
	if id2.StableHash != id.StableHash {
		t.Fatal("stable hash must ignore volatile classes")
	}
	setAttr(goBtn, "class", "btn secondary")
	if IdentityOf(goBtn).StableHash == id.StableHash {
		t.Fatal("stable hash must see semantic class changes")
	}
	third := findNode(tree, func(n *Node) bool { return n.Tag == "button" && visibleText(n, 10) == "C" })
	if XPath(third) != "html/body/div/button[3]" {
		t.Fatalf("xpath %q", XPath(third))
	}
	span := findNode(tree, func(n *Node) bool { return n.Tag == "span" })
	if XPath(span) != "html/body/x-host/span" {
		t.Fatalf("shadow xpath %q", XPath(span))
	}
	inFrame := func() *Tree {
		_, tr := render(t, E("iframe").At(0, 0, 300, 300).Content(E("a", T("x")).A("id", "deep")))
		return tr
	}()
	if x := XPath(findNode(inFrame, byAttr("id", "deep"))); x != "html/body/a" {
		t.Fatalf("iframe xpath must restart at the frame document: %q", x)
	}
}

func TestFingerprint(t *testing.T) {
	_, a := render(t, E("p", T("hello")), E("button", T("go")).At(0, 50, 50, 20))
	_, b := render(t, E("p", T("hello")), E("button", T("go")).At(0, 50, 50, 20))
	_, c := render(t, E("p", T("hello!")), E("button", T("go")).At(0, 50, 50, 20))
	_, d := render(t, E("p", T("hello")), E("button", T("go")).At(0, 50, 50, 20), E("div"))
	fa, fb := FingerprintOf(a), FingerprintOf(b)
	if !fa.Equal(fb) || fa.URL != "https://example.test/" {
		t.Fatalf("same page, different fingerprints: %+v %+v", fa, fb)
	}
	if fa.Equal(FingerprintOf(c)) {
		t.Fatal("text change not detected")
	}
	if fd := FingerprintOf(d); fa.Equal(fd) || fd.ElementCount != fa.ElementCount+1 {
		t.Fatal("element count change not detected")
	}
}

func TestStats(t *testing.T) {
	vp := stdVP
	vp.ScrollY = 800
	in := &PageInput{ReadyState: "interactive", Frames: []FrameInput{frameOfHTML(1, vp, E("html", E("body",
		E("a", T("link one")).A("href", "/1").At(0, 900, 50, 20),
		E("a", T("anchor")).At(0, 950, 50, 20),
		E("input").At(0, 1000, 50, 20),
		E("textarea").At(0, 1030, 50, 20),
		E("iframe").At(0, 1100, 50, 50),
		E("div", E("p", T("x"))).At(0, 1200, 300, 100).S("overflow", "auto").Scroll(Rect{W: 300, H: 100}, Rect{W: 300, H: 500}),
	).At(0, 0, 1280, 4000)).At(0, 0, 1280, 4000))}}
	in.Frames[0].Snapshot.Documents[0].ContentHeight = 4000
	tree := build(t, in, Options{})
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats
	if s.Links != 1 || s.Inputs != 2 || s.Iframes != 1 || s.ScrollContainers != 1 || s.Interactive != res.Map.Len() || s.Interactive < 5 {
		t.Fatalf("stats %+v", s)
	}
	if s.PagesAbove != 1 || s.PagesBelow != 3 {
		t.Fatalf("pages above/below %v/%v", s.PagesAbove, s.PagesBelow)
	}
	if !s.MayBeLoading || s.AppearsEmpty {
		t.Fatalf("hints %+v", s)
	}
	h := strings.Join(s.Hints(), " ")
	if !strings.Contains(h, "3.0 pages below") || !strings.Contains(h, "loading") {
		t.Fatalf("hints %q", h)
	}
	if !strings.Contains(s.String(), "1 links") {
		t.Fatalf("string %q", s.String())
	}
}

func TestLoadPageInputErrors(t *testing.T) {
	if _, err := LoadPageInput("testdata/does-not-exist.json"); err == nil {
		t.Fatal("missing file must fail")
	}
	if _, err := DecodePageInput([]byte(`{"frames": 3}`)); err == nil {
		t.Fatal("bad JSON shape must fail")
	}
}

// setAttr replaces an attribute on a copy of the node's attribute list.
func setAttr(n *Node, k, v string) {
	out := make([]string, 0, len(n.attrs)+2)
	found := false
	for i := 0; i+1 < len(n.attrs); i += 2 {
		if n.attrs[i] == k {
			out = append(out, k, v)
			found = true
			continue
		}
		out = append(out, n.attrs[i], n.attrs[i+1])
	}
	if !found {
		out = append(out, k, v)
	}
	n.attrs = out
}

func TestOOPIFNestedDepthAndVisibility(t *testing.T) {
	main := frameOf(1, stdVP, E("iframe").FrameID("A").At(0, 100, 500, 400))
	a := frameOf(100, Viewport{Width: 500, Height: 400},
		E("button", T("near")).A("id", "near").At(10, 10, 50, 20),
		E("button", T("far")).A("id", "far").At(10, 3000, 50, 20),
		E("iframe").FrameID("B").At(0, 50, 300, 200),
	)
	a.TargetID, a.FrameID = "A", "A"
	bf := frameOf(200, Viewport{Width: 300, Height: 200}, E("button", T("deep")).A("id", "deep").At(5, 5, 50, 20))
	bf.TargetID, bf.FrameID = "B", "B"
	// B is listed before A: attachment must not depend on order.
	in := &PageInput{Frames: []FrameInput{main, bf, a}}
	tree := build(t, in, Options{})
	if len(tree.Warnings) != 0 {
		t.Fatalf("warnings %v", tree.Warnings)
	}
	deep := findNode(tree, byAttr("id", "deep"))
	if deep == nil || deep.Frame.Depth != 2 || deep.Bounds.Y != 100+50+5 || !deep.Visible {
		t.Fatalf("deep: %+v", deep)
	}
	if !findNode(tree, byAttr("id", "near")).Visible || findNode(tree, byAttr("id", "far")).Visible {
		t.Fatal("OOPIF viewport test wrong")
	}
	tree = build(t, in, Options{MaxIframeDepth: 1})
	if findNode(tree, byAttr("id", "deep")) != nil || len(tree.Warnings) != 1 || !strings.Contains(tree.Warnings[0], "depth 2 over limit 1") {
		t.Fatalf("depth limit: %v", tree.Warnings)
	}
}

func TestDivideBoundsByDPR(t *testing.T) {
	vp := stdVP
	vp.DPR = 2
	in := &PageInput{Frames: []FrameInput{frameOf(1, vp, E("button").A("id", "b").At(100, 200, 80, 40))}}
	tree := build(t, in, Options{DivideBoundsByDPR: true})
	if b := findNode(tree, byAttr("id", "b")).Bounds; b != (Rect{X: 50, Y: 100, W: 40, H: 20}) {
		t.Fatalf("bounds %+v", b)
	}
	tree = build(t, in, Options{})
	if b := findNode(tree, byAttr("id", "b")).Bounds; b != (Rect{X: 100, Y: 200, W: 80, H: 40}) {
		t.Fatalf("bounds %+v", b)
	}
}

func TestViewportFallbackToHTMLClientRect(t *testing.T) {
	html := E("html", E("body",
		E("button").A("id", "in").At(0, 100, 50, 20),
		E("button").A("id", "out").At(0, 2000, 50, 20),
	).At(0, 0, 1280, 3000)).At(0, 0, 1280, 3000)
	html.Scroll(Rect{W: 1000, H: 600}, Rect{W: 1000, H: 3000})
	in := &PageInput{Frames: []FrameInput{frameOfHTML(1, Viewport{}, html)}}
	tree := build(t, in, Options{})
	if !findNode(tree, byAttr("id", "in")).Visible || findNode(tree, byAttr("id", "out")).Visible {
		t.Fatal("unknown viewport must fall back to the <html> client rect (600 px + 1000 px margin)")
	}
}

func TestAXCandidatesAndMergeAX(t *testing.T) {
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP,
		E("button").At(0, 0, 40, 40).ID(10),
		E("div", T("text")).At(0, 50, 300, 40).ID(11),
		E("a").A("href", "/").At(0, 100, 40, 20).ID(12).S("display", "none"),
	)}}
	tree := build(t, in, Options{})
	c := AXCandidates(tree)
	// The button, and the body (design mode shows only in AX).
	body := findNode(tree, func(n *Node) bool { return n.Tag == "body" })
	if len(c) != 1 || !slices.Equal(c["T1"], []cdpproto.BackendNodeID{body.BackendNodeID, 10}) {
		t.Fatalf("candidates %v", c)
	}
	probe := E("button").AX("button", "Close dialog")
	ax := frameOf(1, stdVP, probe.ID(10)).AX
	if n := tree.MergeAX("T1", ax); n != 1 {
		t.Fatalf("merged %d", n)
	}
	if n := tree.MergeAX("other-target", ax); n != 0 {
		t.Fatalf("merged into wrong target: %d", n)
	}
	res, _ := Serialize(tree, nil, SerializeOptions{})
	if l := lineWith(res.Text, "[10]"); !strings.Contains(l, "ax_name=Close dialog") {
		t.Fatalf("merged AX name not used: %q", l)
	}
}

func TestClearedInputShowsNoStaleDefault(t *testing.T) {
	res, _ := render(t,
		E("input").A("id", "cleared", "value", "default text").At(0, 0, 200, 30).Val(""),
		E("input").A("id", "nosnap", "value", "default text").At(0, 40, 200, 30),
		E("input").A("type", "submit", "id", "sub", "value", "Search").At(0, 80, 80, 30),
	)
	if l := lineWith(res.Text, "id=cleared"); strings.Contains(l, "value=") {
		t.Fatalf("cleared input shows stale default: %q", l)
	}
	if l := lineWith(res.Text, "id=nosnap"); !strings.Contains(l, "value=default text") {
		t.Fatalf("without a live value the attribute is shown: %q", l)
	}
	if l := lineWith(res.Text, "id=sub"); !strings.Contains(l, "value=Search") {
		t.Fatalf("submit label: %q", l)
	}
}

func TestPageInputJSONRoundTrip(t *testing.T) {
	in := synthPage(600)
	in.Frames[0].Owner = OwnerRef{}
	b, err := jsonv2.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePageInput(b)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := Serialize(build(t, in, Options{}), nil, SerializeOptions{})
	r2, _ := Serialize(build(t, back, Options{}), nil, SerializeOptions{})
	if r1.Text != r2.Text || r1.Map.Len() != r2.Map.Len() || r1.Map.Len() == 0 {
		t.Fatalf("JSON round trip changed the output (%d vs %d elements)", r1.Map.Len(), r2.Map.Len())
	}
}

func TestAttributeNewlinesCollapsed(t *testing.T) {
	res, _ := render(t, E("button").A("title", "two\nlines\tand  tabs").At(0, 0, 50, 20))
	if l := lineWith(res.Text, "title="); !strings.Contains(l, "title=two lines and tabs />") {
		t.Fatalf("title line %q\n%s", l, res.Text)
	}
}

func TestIframeBelowViewportHints(t *testing.T) {
	res, _ := render(t, E("iframe").At(0, 0, 600, 400).Content(
		E("button", T("Visible")).At(5, 5, 60, 20),
		E("button", T("Far away")).At(5, 1800, 60, 20),
		E("a", T("Hidden link")).A("href", "/").At(5, 1800, 60, 20).S("display", "none"),
	))
	want := "... (1 more elements below - scroll to reveal):\n    <button> \"Far away\" ~3.5 pages down"
	if !strings.Contains(res.Text, want) {
		t.Fatalf("missing hint %q:\n%s", want, res.Text)
	}
	if strings.Contains(res.Text, "Hidden link") {
		t.Fatal("CSS-hidden elements are not hinted")
	}
}

// naiveXPath is the definition XPaths must agree with: scan the siblings
// for every element.
func naiveXPath(n *Node) string {
	var segs []string
	for c := n; c != nil; c = c.Parent {
		if c.Type == DocumentFragmentNode {
			continue
		}
		if c.Type != ElementNode {
			break
		}
		seg := c.Tag
		if p := c.Parent; p != nil {
			same, pos := 0, 0
			for _, s := range p.Children {
				if s.Type == ElementNode && s.Tag == c.Tag {
					same++
					if s == c {
						pos = same
					}
				}
			}
			if same > 1 && pos > 0 {
				seg += "[" + strconv.Itoa(pos) + "]"
			}
		}
		segs = append(segs, seg)
		if c.Parent != nil && c.Parent.Type == ElementNode && (c.Parent.Tag == "iframe" || c.Parent.Tag == "frame") {
			break
		}
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/")
}

// TestXPathsMatchTheDefinition checks the memoised XPaths against the
// naive definition on every element of the recorded pages (shadow roots
// and iframes included), sharing one XPaths across the tree.
func TestXPathsMatchTheDefinition(t *testing.T) {
	for _, name := range []string{"live_basic", "shop"} {
		in, err := LoadPageInput(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		tree, err := Build(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		xp := NewXPaths()
		n := 0
		tree.Walk(func(nd *Node) bool {
			if nd.IsElement() {
				n++
				if got, want := xp.Of(nd), naiveXPath(nd); got != want {
					t.Errorf("%s: XPaths %q, definition %q", name, got, want)
				}
			}
			return true
		})
		if n < 10 {
			t.Fatalf("%s: only %d elements", name, n)
		}
	}
}
