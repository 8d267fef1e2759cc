package dom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domsnapshot"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/wdtest"
)

// benchSizes are the /generated page sizes of the benchmarks.
var benchSizes = []int{1000, 10000, 50000}

// floor is the raw cost floor of an observation: DOM.getDocument and
// DOMSnapshot.captureSnapshot issued together on the same page.
func floor(ctx context.Context, cs *cdp.Session) error {
	d := cs.Send(ctx, cdpdom.CommandGetDocument, cdpdom.GetDocumentParams{Depth: pagejs.Ptr(int64(-1)), Pierce: pagejs.Ptr(true)})
	sn := cs.Send(ctx, domsnapshot.CommandCaptureSnapshot, domsnapshot.CaptureSnapshotParams{
		ComputedStyles: dom.RequiredComputedStyles, IncludePaintOrder: pagejs.Ptr(true), IncludeDOMRects: pagejs.Ptr(true),
	})
	var doc cdpdom.GetDocumentResult
	var snap domsnapshot.CaptureSnapshotResult
	return errorsJoin(d.Wait(ctx, &doc), sn.Wait(ctx, &snap))
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// benchPages lists the benchmark pages: /generated at each size and a
// large real document (Go's language specification from GOROOT, served by a
// test-local server) when it is present.
func benchPages(b *testing.B, base func(string) string) ([][2]string, func()) {
	var pages [][2]string
	for _, n := range benchSizes {
		pages = append(pages, [2]string{fmt.Sprintf("generated-%d", n), base(fmt.Sprintf("/generated?n=%d", n))})
	}
	spec := filepath.Join(runtime.GOROOT(), "doc", "go_spec.html")
	data, err := os.ReadFile(spec)
	if err != nil {
		b.Logf("no real document (%v); benchmarking generated pages only", err)
		return pages, func() {}
	}
	// go_spec.html is a template fragment; wrap it as a page.
	html := "<!doctype html><html><head><meta charset=utf-8><title>Go spec</title></head><body>" + string(data) + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	}))
	pages = append(pages, [2]string{"go-spec", srv.URL + "/go_spec.html"})
	return pages, srv.Close
}

// BenchmarkDOMWState compares a full BrowserStateRequest (no screenshot)
// with the raw floor on the same page. Run bounded:
//
//	go test -run '^$' -bench DOMWState -benchtime=3x ./watchdogs/
func BenchmarkDOMWState(b *testing.B) {
	env, s, _ := start(b, Config{Timeout: 2 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pages, stop := benchPages(b, env.URL)
	defer stop()
	for _, p := range pages {
		wdtest.Navigate(b, ctx, s, p[1])
		cs, err := s.PageSession("")
		if err != nil {
			b.Fatal(err)
		}
		// Warm: repeated observations of a loaded page.
		b.Run(p[0]+"/floor", func(b *testing.B) {
			for b.Loop() {
				if err := floor(ctx, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Cold: right after a (re)load, as the agent's first observation of
		// a page is; layout and the renderer's AX cache are built then.
		b.Run(p[0]+"/floor-cold", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				wdtest.Navigate(b, ctx, s, p[1])
				cs, err := s.PageSession("")
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := floor(ctx, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p[0]+"/state-cold", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				wdtest.Navigate(b, ctx, s, p[1])
				b.StartTimer()
				st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true},
					bus.WithTimeout(3*time.Minute))
				if err != nil || st.Error != "" {
					b.Fatalf("%v %s", err, st.Error)
				}
			}
		})
		b.Run(p[0]+"/state", func(b *testing.B) {
			var st events.BrowserState
			for b.Loop() {
				var err error
				st, err = bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true},
					bus.WithTimeout(3*time.Minute))
				if err != nil || st.Error != "" {
					b.Fatalf("%v %s", err, st.Error)
				}
			}
			b.ReportMetric(float64(st.Stats.Nodes), "nodes")
			b.ReportMetric(float64(len(st.Elements)), "indexed")
		})
	}
}

// BenchmarkDOMWAX measures the accessibility options on the same pages:
// the full tree, one getPartialAXTree per index candidate, and
// queryAXTree per candidate. Each iteration runs on a freshly loaded page
// so that no AX state is left from the previous one, and the capture that
// finds the candidates (untimed) does not warm the AX cache (AXWait -1), so
// each option pays Chrome's accessibility cache build.
func BenchmarkDOMWAX(b *testing.B) {
	env, s, w := start(b, Config{Timeout: 2 * time.Minute, AXWait: -1, FullCapture: true}) // the candidates need real ids
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pages, stop := benchPages(b, env.URL)
	defer stop()
	for _, p := range pages {
		for _, o := range []string{"full", "partial", "query"} {
			b.Run(p[0]+"/"+o, func(b *testing.B) {
				var got, cands int
				for b.Loop() {
					b.StopTimer()
					// Reload so that each run starts without an AX cache, and
					// take the candidates of this very document.
					wdtest.Navigate(b, ctx, s, p[1])
					cs, err := s.PageSession("")
					if err != nil {
						b.Fatal(err)
					}
					in, _, _, err := w.gather(ctx, cs, nil)
					if err != nil {
						b.Fatal(err)
					}
					tree, err := dom.Build(in, dom.Options{})
					if err != nil {
						b.Fatal(err)
					}
					ids := dom.AXCandidates(tree)[string(cs.TargetID())]
					cands = len(ids)
					b.StartTimer()
					switch o {
					case "full":
						var n []*accessibility.Node
						n, err = fullAX(ctx, cs, nil)
						got = len(n)
					case "partial":
						var n []*accessibility.Node
						n, err = partialAX(ctx, cs, ids)
						got = len(n)
					case "query":
						got, err = queryAX(ctx, cs, ids)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cands), "candidates")
				b.ReportMetric(float64(got), "axnodes")
			})
		}
	}
}

// queryAX fetches AX nodes with queryAXTree rooted at each candidate
// (the measured alternative to getPartialAXTree).
func queryAX(ctx context.Context, cs *cdp.Session, ids []cdpproto.BackendNodeID) (int, error) {
	var mu sync.Mutex
	total := 0
	for start := 0; start < len(ids); start += axWindow {
		end := min(start+axWindow, len(ids))
		replies := make([]*cdp.Reply, 0, end-start)
		for _, id := range ids[start:end] {
			replies = append(replies, cs.Send(ctx, accessibility.CommandQueryAXTree, accessibility.QueryAXTreeParams{BackendNodeID: id}))
		}
		for _, r := range replies {
			var res accessibility.QueryAXTreeResult
			if err := r.Wait(ctx, &res); err != nil {
				if strings.Contains(err.Error(), "context") {
					return total, err
				}
				continue
			}
			mu.Lock()
			total += len(res.Nodes)
			mu.Unlock()
		}
	}
	return total, nil
}
