package dom

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
)

// recordEnv, when set to 1, makes TestDOMWRecordGolden capture the
// fixture pages from the live browser with the watchdog's own gather code
// and rewrite testdata/dom/*.json (dom.PageInput, AX nodes included) and
// *.golden (the serializer text replayed from that JSON).
const recordEnv = "BROWSERAGENT_RECORD_DOM"

// goldenPages are the recorded fixture pages, by golden name.
var goldenPages = map[string]string{
	"forms":   "/dom-forms.html",
	"shadow":  "/shadow.html",
	"iframes": "/iframes.html",
}

// replay runs a recorded capture through dom.Build and dom.Serialize.
func replay(in *dom.PageInput) (string, error) {
	tree, err := dom.Build(in, dom.Options{})
	if err != nil {
		return "", err
	}
	res, err := dom.Serialize(tree, nil, dom.SerializeOptions{})
	if err != nil {
		return "", err
	}
	return res.Text + "\n--- stats: " + res.Stats.String() + "\n", nil
}

// TestDOMWGolden replays the committed captures (no browser needed) and
// compares the text with the committed expectation.
func TestDOMWGolden(t *testing.T) {
	for name := range goldenPages {
		t.Run(name, func(t *testing.T) {
			base := filepath.Join("testdata", "dom", name)
			in, err := dom.LoadPageInput(base + ".json")
			if err != nil {
				t.Fatalf("%v (record with %s=1)", err, recordEnv)
			}
			got, err := replay(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(base + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("replay differs from %s.golden:\n--- got\n%s\n--- want\n%s", base, got, want)
			}
		})
	}
}

// TestDOMWGoldenSemantics checks facts the recorded goldens must hold, so a
// careless re-recording cannot hide a regression.
func TestDOMWGoldenSemantics(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "dom", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	forms := read("forms")
	if strings.Contains(forms, "secret") || !strings.Contains(forms, `"  two  spaces\nsecond line  "`) || !strings.Contains(forms, "type=file") {
		t.Fatalf("forms golden:\n%s", forms)
	}
	shadow := read("shadow")
	if !strings.Contains(shadow, "Open Shadow") || !strings.Contains(shadow, "Closed Shadow") {
		t.Fatalf("shadow golden:\n%s", shadow)
	}
	if ifr := read("iframes"); strings.Count(ifr, "Frame button") != 2 || strings.Count(ifr, "|IFRAME|") != 2 {
		t.Fatalf("iframes golden must hold both frames' buttons:\n%s", ifr)
	}
}

// TestDOMWRecordGolden captures the fixture pages live with the watchdog's
// own gather code and checks that the recorded JSON replays to exactly the
// live text (the recording is lossless). It writes into a temporary
// directory, or over testdata/dom when BROWSERAGENT_RECORD_DOM=1.
func TestDOMWRecordGolden(t *testing.T) {
	dir := t.TempDir()
	if os.Getenv(recordEnv) == "1" {
		dir = filepath.Join("testdata", "dom")
	}
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, p := range goldenPages {
		wdtest.Navigate(t, ctx, s, env.URL(p))
		tab := s.FocusedTab()
		cs, err := s.PageSession(tab)
		if err != nil {
			t.Fatal(err)
		}
		var obs *observation
		// Wait for the cross-site frame target to attach.
		pollUntil(30*time.Second, func() bool {
			w.mu.Lock()
			w.prev = map[string]*dom.SelectorMap{}
			w.mu.Unlock()
			obs, err = w.capture(ctx, s, tab, cs)
			if err != nil {
				t.Fatal(err)
			}
			return name != "iframes" || len(obs.input.Frames) > 1
		})
		live := obs.res.Text + "\n--- stats: " + obs.res.Stats.String() + "\n"
		b, err := jsonv2.Marshal(obs.input)
		if err != nil {
			t.Fatal(err)
		}
		in, err := dom.DecodePageInput(b)
		if err != nil {
			t.Fatal(err)
		}
		replayed, err := replay(in)
		if err != nil {
			t.Fatal(err)
		}
		if replayed != live {
			t.Fatalf("%s: replay of the recorded JSON differs from the live text:\n--- replay\n%s\n--- live\n%s", name, replayed, live)
		}
		base := filepath.Join(dir, name)
		if err := os.WriteFile(base+".json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".golden", []byte(replayed), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s: %d bytes of capture, %d of text", base, len(b), len(replayed))
	}
	if os.Getenv(recordEnv) == "1" {
		// The benchmark input: a 10k-element page, gzipped (it is large).
		wdtest.Navigate(t, ctx, s, env.URL("/generated?n=10000"))
		tab := s.FocusedTab()
		cs, err := s.PageSession(tab)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := w.capture(ctx, s, tab, cs)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jsonv2.Marshal(obs.input)
		if err != nil {
			t.Fatal(err)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, largeCapture), gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s: %d bytes (%d gzipped)", largeCapture, len(b), gz.Len())
	}
}

// largeCapture is the recorded capture of /generated?n=10000 that
// BenchmarkDOMWReplay10k feeds to package dom.
const largeCapture = "generated10k.json.gz"

func loadLarge(tb testing.TB) *dom.PageInput {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "dom", largeCapture))
	if err != nil {
		tb.Fatalf("%v (record with %s=1 go test -run TestDOMWRecordGolden ./watchdogs/)", err, recordEnv)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := dom.DecodePageInput(b)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// BenchmarkDOMWReplay10k is the Go side of an observation alone (merge,
// filters, serializer) on recorded CDP results of a 10k-element page.
func BenchmarkDOMWReplay10k(b *testing.B) {
	in := loadLarge(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tree, err := dom.Build(in, dom.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dom.Serialize(tree, nil, dom.SerializeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The recorded large capture replays into a sane observation.
func TestDOMWReplayLarge(t *testing.T) {
	in := loadLarge(t)
	tree, err := dom.Build(in, dom.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := dom.Serialize(tree, nil, dom.SerializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tree.NodeCount() < 10000 || res.Map.Len() == 0 || len(res.Text) == 0 {
		t.Fatalf("nodes %d, indexed %d, text %d", tree.NodeCount(), res.Map.Len(), len(res.Text))
	}
}

// TestDOMWURLRules covers which pages are indexed and which count as PDFs.
func TestDOMWURLRules(t *testing.T) {
	for u, want := range map[string]bool{
		"http://a.test/": true, "HTTPS://a.test/x": true, "file:///tmp/x.html": true, "data:text/html,hi": true,
		"about:blank": false, "chrome://newtab/": false, "chrome-error://chromewebdata/": false, "devtools://x": false, "": false,
	} {
		if got := capturable(u); got != want {
			t.Errorf("capturable(%q) = %v", u, got)
		}
	}
	for u, want := range map[string]bool{
		"http://a.test/doc.PDF": true, "http://a.test/doc.pdf?x=1#p=2": true, "http://a.test/pdf": false, "http://a.test/x.pdf.html": false, "%zz": false,
	} {
		if got := isPDFURL(u); got != want {
			t.Errorf("isPDF(%q) = %v", u, got)
		}
	}
}

// TestDOMWPageInfo checks the geometry derived from layout metrics.
func TestDOMWPageInfo(t *testing.T) {
	m := &page.GetLayoutMetricsResult{
		CSSLayoutViewport: &page.LayoutViewport{PageX: 10, PageY: 300, ClientWidth: 800, ClientHeight: 600},
		CSSVisualViewport: &page.VisualViewport{PageX: 10, PageY: 300, ClientWidth: 800, ClientHeight: 600},
		CSSContentSize:    &cdpdom.Rect{Width: 1000, Height: 2000},
	}
	got := pageInfo(m)
	want := events.PageInfo{ViewportWidth: 800, ViewportHeight: 600, PageWidth: 1000, PageHeight: 2000,
		ScrollX: 10, ScrollY: 300, PixelsAbove: 300, PixelsBelow: 1100, PixelsLeft: 10, PixelsRight: 190}
	if got != want {
		t.Fatalf("page info %+v, want %+v", got, want)
	}
}
