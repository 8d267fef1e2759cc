package actions

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// phaseTimes sums the phases an action reports (session.WithPhases).
type phaseTimes struct {
	mu  sync.Mutex
	sum map[string]time.Duration
}

func (p *phaseTimes) add(phase string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum[phase] += d
}

// BenchmarkActionPhases breaks each kind of action the demo replays into
// its phases, on the demo's careers site (internal/demosite): navigate,
// a click that navigates (the job link), a checkbox click, input text,
// select, upload. Each iteration starts on a freshly loaded page (not
// timed), as a replayed step does. Against each action, in the same run
// and on the same kind of fresh page, it times the raw CDP floor: the
// same input sent directly (the mouse events; DOM.focus and
// Input.insertText; one call setting the select's value; DOM.setFileInputFiles;
// Page.navigate), plus, for a navigation, the wait for the new
// document's load event. Metrics: ns/op is the action; floor-ms/op, the
// floor; x-floor, their ratio; <phase>-ms/op, each phase's mean (an
// evidence read inside settle/load counts as evidence).
func BenchmarkActionPhases(b *testing.B) {
	site, err := demosite.Start(demosite.Original)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = site.Close() })
	cv := filepath.Join(b.TempDir(), demosite.CVName)
	if err := os.WriteFile(cv, []byte(demosite.CVText), 0o600); err != nil {
		b.Fatal(err)
	}
	at := startSite(b, session.Profile{}, site.URL()+"/")
	// Every case loads two pages per iteration: more than startSite's
	// two minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	b.Cleanup(cancel)
	at.ctx = ctx
	index, job, apply := site.URL()+"/", site.URL()+"/jobs/go-engineer.html", site.URL()+"/apply.html"
	goTo := func(u string) {
		if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u}); err != nil {
			b.Fatalf("navigate %s: %v", u, err)
		}
	}
	type bench struct {
		name  string
		page  string                                     // loaded before each action and each floor
		act   func(ctx context.Context) error            // through the bus
		floor func(ctx context.Context, ps *cdp.Session) // raw CDP
	}
	cases := []bench{
		{
			name: "navigate", page: index,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: job})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				lc := ps.SubscribeEvents("Page.lifecycleEvent")
				defer lc.Cancel()
				if _, err := cdpproto.Call(ctx, ps, page.Navigate, page.NavigateParams{URL: job}); err != nil {
					b.Fatal(err)
				}
				awaitLoad(b, ctx, lc, ps)
			},
		},
		{
			name: "click_navigate", page: index,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el(`a[href$="go-engineer.html"]`)})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				x, y := center(b, ctx, ps, at, `a[href$="go-engineer.html"]`)
				lc := ps.SubscribeEvents("Page.lifecycleEvent")
				defer lc.Cancel()
				rawClick(b, ctx, ps, x, y)
				awaitLoad(b, ctx, lc, ps)
			},
		},
		{
			name: "click_checkbox", page: apply,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#consent")})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				x, y := center(b, ctx, ps, at, "#consent")
				rawClick(b, ctx, ps, x, y)
			},
		},
		{
			name: "input", page: apply,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#name"), Text: "Ada Lovelace", Clear: true})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				id := backend(at.el("#name"))
				if _, err := cdpproto.Call(ctx, ps, dom.Focus, dom.FocusParams{BackendNodeID: id}); err != nil {
					b.Fatal(err)
				}
				if _, err := cdpproto.Call(ctx, ps, input.InsertText, input.InsertTextParams{Text: "Ada Lovelace"}); err != nil {
					b.Fatal(err)
				}
			},
		},
		{
			name: "select", page: apply,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#experience"), Text: "5 to 10 years"})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				if err := pagejs.Evaluate(ctx, ps, `(() => { const s = document.querySelector('#experience'); s.value = '5-10'; s.dispatchEvent(new Event('change', {bubbles: true})); return s.value })()`, new(string)); err != nil {
					b.Fatal(err)
				}
			},
		},
		{
			name: "upload", page: apply,
			act: func(ctx context.Context) error {
				_, err := bus.Call(ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#cv"), Paths: []string{cv}})
				return err
			},
			floor: func(ctx context.Context, ps *cdp.Session) {
				if _, err := cdpproto.Call(ctx, ps, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: []string{cv}, BackendNodeID: backend(at.el("#cv"))}); err != nil {
					b.Fatal(err)
				}
			},
		},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			times := &phaseTimes{sum: map[string]time.Duration{}}
			ctx := session.WithPhases(at.ctx, times.add)
			var floor time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				goTo(c.page)
				ps := at.page()
				t0 := time.Now()
				c.floor(at.ctx, ps)
				floor += time.Since(t0)
				goTo(c.page)
				b.StartTimer()
				if err := c.act(ctx); err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
			b.ReportMetric(ms(floor), "floor-ms/op")
			if floor > 0 {
				b.ReportMetric(float64(b.Elapsed())/float64(floor), "x-floor")
			}
			names := make([]string, 0, len(times.sum))
			for k := range times.sum {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				b.ReportMetric(ms(times.sum[k]), strings.ReplaceAll(k, " ", "_")+"-ms/op")
			}
		})
	}
}

// backend is the backend node id of a Target made by harness.el.
func backend(t events.Target) cdpproto.BackendNodeID {
	return cdpproto.BackendNodeID(t.Element.BackendNodeID)
}

// center is the middle of the element's first content quad.
func center(b *testing.B, ctx context.Context, ps *cdp.Session, at *harness, selector string) (float64, float64) {
	q, err := cdpproto.Call(ctx, ps, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: backend(at.el(selector))})
	if err != nil || len(q.Quads) == 0 {
		b.Fatalf("quads of %s: %v", selector, err)
	}
	return (q.Quads[0][0] + q.Quads[0][4]) / 2, (q.Quads[0][1] + q.Quads[0][5]) / 2
}

// rawClick sends the three mouse events of a left click.
func rawClick(b *testing.B, ctx context.Context, ps *cdp.Session, x, y float64) {
	for _, p := range []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	} {
		if _, err := cdpproto.Call(ctx, ps, input.DispatchMouseEvent, p); err != nil {
			b.Fatal(err)
		}
	}
}

// awaitLoad waits for the main frame's next load lifecycle event.
func awaitLoad(b *testing.B, ctx context.Context, lc *cdp.Subscription, ps *cdp.Session) {
	for {
		select {
		case ev, ok := <-lc.C():
			if !ok {
				b.Fatal("lifecycle subscription closed")
			}
			var e page.EventLifecycleEvent
			if ev.Decode(&e) == nil && e.Name == "load" && string(e.FrameID) == string(ps.TargetID()) {
				return
			}
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	}
}
