package dom

import (
	"strconv"
	"testing"
)

var fuzzTags = []string{"div", "span", "a", "button", "input", "select", "option", "textarea", "label", "svg", "iframe", "p", "li", "script", "my-el", "td"}
var fuzzAttrKeys = []string{"id", "class", "role", "type", "aria-label", "value", "tabindex", "onclick", "href", "placeholder", "title", "for", "data-browseragent-exclude"}
var fuzzStyles = [][2]string{{"display", "none"}, {"visibility", "hidden"}, {"opacity", "0"}, {"opacity", "x%"}, {"cursor", "pointer"},
	{"background-color", "rgb(1, 2, 3)"}, {"overflow", "auto"}, {"opacity", "NaN"}, {"background-color", "rgba(1, 2, 3, 0.5)"}}

// fuzzReader turns fuzz bytes into choices; it returns zeros once exhausted.
type fuzzReader struct {
	b []byte
	i int
}

func (r *fuzzReader) next() int {
	if r.i >= len(r.b) {
		return 0
	}
	v := int(r.b[r.i])
	r.i++
	return v
}

func (r *fuzzReader) str() string {
	n := r.next() % 24
	if r.i+n > len(r.b) {
		n = len(r.b) - r.i
	}
	s := string(r.b[r.i : r.i+n])
	r.i += n
	return s
}

func (r *fuzzReader) tree(depth int, budget *int) *tn {
	*budget--
	if *budget <= 0 || depth > 12 {
		return T(r.str())
	}
	k := r.next()
	if k%5 == 0 {
		return T(r.str())
	}
	t := E(fuzzTags[k%len(fuzzTags)])
	t.At(float64(r.next()*7-300), float64(r.next()*13-300), float64(r.next()*3), float64(r.next()*2))
	for a := r.next() % 4; a > 0; a-- {
		t.A(fuzzAttrKeys[r.next()%len(fuzzAttrKeys)], r.str())
	}
	for s := r.next() % 3; s > 0; s-- {
		st := fuzzStyles[r.next()%len(fuzzStyles)]
		t.S(st[0], st[1])
	}
	if r.next()%4 == 0 {
		t.P(int64(r.next()))
	}
	switch r.next() % 8 {
	case 0:
		t.NoLayout()
	case 1:
		t.Val(r.str())
	case 2:
		t.Scroll(Rect{W: 100, H: float64(r.next())}, Rect{Y: float64(r.next()), W: 100, H: float64(r.next() * 5)})
	case 3:
		t.Listener()
	case 4:
		t.AX(fuzzTags[r.next()%len(fuzzTags)], r.str(), "focusable", r.next()%2 == 0, "valuetext", r.str())
	}
	kids := r.next() % 5
	for i := 0; i < kids; i++ {
		t.Kids(r.tree(depth+1, budget))
	}
	switch r.next() % 10 {
	case 0:
		t.Shadow("open", r.tree(depth+1, budget))
	case 1:
		t.Shadow("closed", r.tree(depth+1, budget))
	case 2:
		if t.tag == "iframe" {
			t.Content(r.tree(depth+1, budget))
		}
	}
	return t
}

func FuzzSerialize(f *testing.F) {
	f.Add([]byte("hello world, a seed"), uint16(40000))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, uint16(50))
	f.Add([]byte{3, 200, 100, 50, 40, 2, 0, 1, 5, 3, 7, 1, 1, 3, 9, 9, 9, 9, 3, 4, 4, 4, 4, 3}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		r := &fuzzReader{b: data}
		budget := 300
		var body []*tn
		for i := 0; i < 1+r.next()%4; i++ {
			body = append(body, r.tree(0, &budget))
		}
		in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP, body...)}}
		tree, err := Build(in, Options{})
		if err != nil {
			t.Fatalf("Build on well-formed input: %v", err)
		}
		res, err := Serialize(tree, nil, SerializeOptions{MaxChars: int(max)})
		if err != nil {
			t.Fatal(err)
		}
		limit := int(max)
		if limit <= 0 {
			limit = 40000
		}
		if len(res.Text) > limit {
			t.Fatalf("text %d bytes over cap %d", len(res.Text), limit)
		}
		if res.TruncatedElements > res.Map.Len() || (res.TruncatedElements > 0 && !res.Truncated) {
			t.Fatalf("truncation count %d inconsistent (map %d, truncated %v)", res.TruncatedElements, res.Map.Len(), res.Truncated)
		}
		seen := map[int64]bool{}
		for _, i := range res.Map.Indexes() {
			if seen[i] {
				t.Fatalf("duplicate index %d", i)
			}
			seen[i] = true
		}
		// A second observation against the first must not panic either.
		if _, err := Serialize(tree, res.Map, SerializeOptions{MaxChars: int(max)}); err != nil {
			t.Fatal(err)
		}
		_ = Markdown(tree, MarkdownOptions{Links: true, Images: true})
		_ = FingerprintOf(tree)
	})
}

// synthPage builds a CDP-shaped capture of a page with about n elements:
// cards of heading, text, link, icon button, input and a short list, some
// with opaque backgrounds, a few shadow hosts and an iframe.
func synthPage(n int) *PageInput {
	var cards []*tn
	const cols = 8
	per := 12 // elements per card
	for i := 0; i < n/per; i++ {
		x := float64(i%cols) * 160
		y := float64(i/cols) * 140
		id := strconv.Itoa(i)
		card := E("div",
			E("h3", T("Card title "+id)).At(x+5, y+5, 150, 20),
			E("p", T("Some descriptive text for card "+id+" that is long enough to matter.")).At(x+5, y+25, 150, 30),
			E("a", T("Open")).A("href", "/item/"+id, "class", "link").At(x+5, y+60, 50, 16),
			E("button", E("span").A("class", "icon icon-star").At(x+62, y+62, 14, 14), T("Star")).At(x+60, y+60, 50, 18),
			E("input").A("type", "text", "name", "q"+id, "placeholder", "Note").At(x+5, y+82, 140, 20).Val("v"+id),
			E("ul",
				E("li", T("alpha")).At(x+5, y+105, 140, 10),
				E("li", T("beta")).At(x+5, y+115, 140, 10),
				E("li", E("span", T("gamma")).A("role", "button").At(x+5, y+125, 60, 10)).At(x+5, y+125, 140, 10),
			).At(x+5, y+105, 140, 30),
		).A("class", "card card-"+strconv.Itoa(i%7)).At(x, y, 155, 135)
		if i%3 == 0 {
			card.S("background-color", "rgb(255, 255, 255)")
		}
		if i%50 == 0 {
			card = E("x-card").At(x, y, 155, 135).Shadow("open", card)
		}
		if i%10 == 0 {
			card.AX("region", "Card "+id)
		}
		cards = append(cards, card)
	}
	cards = append(cards, E("iframe").At(0, 0, 300, 200).Content(E("button", T("In frame")).At(5, 5, 60, 20)))
	height := float64(n/per/cols+1) * 140
	html := E("html", E("body", cards...).At(0, 0, 1280, height)).At(0, 0, 1280, height)
	html.Scroll(Rect{W: 1280, H: 800}, Rect{W: 1280, H: height})
	return &PageInput{Frames: []FrameInput{frameOfHTML(1, stdVP, html)}}
}

func countElements(in *PageInput) int {
	tree, err := Build(in, Options{})
	if err != nil {
		panic(err)
	}
	c := 0
	tree.Walk(func(n *Node) bool {
		if n.Type == ElementNode {
			c++
		}
		return true
	})
	return c
}

func benchBuildSerialize(b *testing.B, opts Options) {
	in := synthPage(10000)
	elems := countElements(in)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tree, err := Build(in, opts)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Serialize(tree, nil, SerializeOptions{})
		if err != nil || res.Map.Len() == 0 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(elems), "elements")
}

// BenchmarkBuildSerialize10k: a 10k-element page with an 800 px viewport at
// the top (most elements outside viewport+1000 px, as on a real long page).
func BenchmarkBuildSerialize10k(b *testing.B) { benchBuildSerialize(b, Options{}) }

// BenchmarkBuildSerialize10kAllVisible: the same page with the viewport test
// off, so every element goes through the filters, indexing and rendering.
func BenchmarkBuildSerialize10kAllVisible(b *testing.B) {
	benchBuildSerialize(b, Options{ViewportThreshold: -1})
}
