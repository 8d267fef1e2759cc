package dom

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestGoldenFixtures feeds every testdata/*.json page capture (CDP wire
// format: getDocument, captureSnapshot, getFullAXTree results) through Build
// and Serialize and compares the text view with testdata/<name>.golden.
// Run with -update to accept new output.
func TestGoldenFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := LoadPageInput(f)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := Build(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Serialize(tree, nil, SerializeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Text + "\n--- stats: " + res.Stats.String() + "\n"
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Fatalf("output differs from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestShopFixtureSemantics checks, on the hand-written wire-format fixture,
// the facts the golden file encodes, so a careless -update cannot hide them.
func TestShopFixtureSemantics(t *testing.T) {
	in, err := LoadPageInput("testdata/shop.json")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Build(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "pw-secret") || strings.Contains(res.Text, "Fixture shop") {
		t.Fatalf("password or <title> leaked:\n%s", res.Text)
	}
	if l := lineWith(res.Text, "[12]<input"); !strings.Contains(l, `value="shoes "`) || !strings.Contains(l, "type=search") {
		t.Fatalf("live value from snapshot inputValue expected: %q\n%s", l, res.Text)
	}
	if l := lineWith(res.Text, "[15]<a"); l == "" || lineWith(res.Text, "Cart (2)") != "\tCart (2)" {
		t.Fatalf("link:\n%s", res.Text)
	}
	if e, ok := res.Map.Get(13); !ok || e.SessionID != "SESSION1" || e.Node.AX == nil || e.Node.AX.Role != "button" {
		t.Fatalf("button element %+v", e)
	}
	n12, _ := res.Map.Get(12)
	if n12.Node.Layout.Styles.Cursor != "text" || n12.Node.Bounds != (Rect{X: 60, Y: 62, W: 200, H: 24}) {
		t.Fatalf("snapshot decode: %+v %+v", n12.Node.Layout.Styles, n12.Node.Bounds)
	}
	if tree.URL != "https://shop.test/" || tree.ContentHeight != 1600 {
		t.Fatalf("tree meta %q %v", tree.URL, tree.ContentHeight)
	}
	if res.Stats.PagesBelow != 1 {
		t.Fatalf("pages below %v", res.Stats.PagesBelow)
	}
}

// TestLiveFixtureSemantics checks a capture recorded from headless Chromium
// (DOM.getDocument pierce, DOMSnapshot.captureSnapshot with
// RequiredComputedStyles, getFullAXTree, getLayoutMetrics) of a page with a
// typed input, a password, an emptied input, a covered button, an open
// shadow root, a scroll container and a same-process iframe with a border.
func TestLiveFixtureSemantics(t *testing.T) {
	in, err := LoadPageInput("testdata/live_basic.json")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Build(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "secret-pw-123") {
		t.Fatal("password leaked")
	}
	if l := lineWith(res.Text, "id=email"); !strings.Contains(l, `value="  typed  value "`) || !strings.Contains(l, "label=Email") {
		t.Fatalf("email line %q", l)
	}
	if l := lineWith(res.Text, "id=cleared"); l == "" || strings.Contains(l, "value=") {
		t.Fatalf("emptied input (snapshot string index -1) line %q", l)
	}
	if lineWith(res.Text, "Covered") != "" || lineWith(res.Text, "id=under") != "" {
		t.Fatalf("button under the fixed modal must be filtered:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "|SHADOW") && !strings.Contains(res.Text, "Open Shadow") {
		t.Fatalf("shadow root missing:\n%s", res.Text)
	}
	if l := lineWith(res.Text, "id=scroller"); !strings.HasPrefix(l, "|scroll element|") || !strings.Contains(l, "4.0 pages below") {
		t.Fatalf("scroller line %q", l)
	}
	fb := findNode(tree, byAttr("id", "fb"))
	ifr := findNode(tree, byAttr("id", "same"))
	// The frame document starts inside the iframe's 2px border.
	if fb == nil || !fb.Visible || fb.Bounds.X != ifr.Bounds.X+2 || fb.Frame.Depth != 1 {
		t.Fatalf("iframe button %+v (iframe %+v)", fb, ifr.Bounds)
	}
	if res.Stats.PagesBelow < 3.5 || res.Stats.Links != 1 {
		t.Fatalf("stats %+v", res.Stats)
	}
}
