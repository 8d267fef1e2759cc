package actions

import (
	"fmt"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// BenchmarkClickByIndex measures a click end to end: bus.Call ClickElement
// by index → selector map → CDP (resolve, scroll, quads, metrics, hit test,
// three mouse events) → evidence before and after → verdict.
func BenchmarkClickByIndex(b *testing.B) {
	at := start(b, "/actions-click.html", Config{})
	btn := at.el("#btn")
	at.s.SetSelectorMap(&session.SelectorMap{TargetID: at.s.FocusedTab(), Elements: map[int]events.ElementInfo{
		1: {Index: 1, ElementRef: *btn.Element},
	}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: 1}})
		if err != nil || res.Method != "mouse" {
			b.Fatalf("click: %v (%s)", err, res.Method)
		}
	}
}

// BenchmarkClickRawCDP makes the same CDP calls directly on the same
// element: DOM.scrollIntoViewIfNeeded, DOM.getContentQuads,
// DOM.getNodeForLocation and three Input.dispatchMouseEvent.
func BenchmarkClickRawCDP(b *testing.B) {
	at := start(b, "/actions-click.html", Config{})
	btn := at.el("#btn")
	ps := at.page()
	id := cdpproto.BackendNodeID(btn.Element.BackendNodeID)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx := at.ctx
		if _, err := cdpproto.Call(ctx, ps, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id}); err != nil {
			b.Fatal(err)
		}
		q, err := cdpproto.Call(ctx, ps, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
		if err != nil || len(q.Quads) == 0 {
			b.Fatal(err)
		}
		x, y := (q.Quads[0][0]+q.Quads[0][4])/2, (q.Quads[0][1]+q.Quads[0][5])/2
		hit, err := cdpproto.Call(ctx, ps, dom.GetNodeForLocation, dom.GetNodeForLocationParams{X: int64(x), Y: int64(y), IncludeUserAgentShadowDOM: pagejs.Ptr(true)})
		if err != nil || hit.BackendNodeID != id {
			b.Fatalf("hit test: %v", err)
		}
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
}

// BenchmarkClickNetwork measures what recording requests (Network.enable
// on every target, the outcome's request look) costs a click that sends
// no request: "changed" adds an element (no settle wait), "no_change"
// does nothing (the 150 ms settle look), "image" sends a tracking pixel's
// request and changes nothing (not awaited: no second look), each with
// the recording on and off (Profile.NoRequestEvidence).
func BenchmarkClickNetwork(b *testing.B) {
	srv := formSite(b)
	for _, c := range []struct{ name, sel string }{{"changed", "#grow"}, {"no_change", "#noop"}, {"image", "#pixel"}} {
		for _, off := range []bool{false, true} {
			name := c.name + "/recording"
			if off {
				name = c.name + "/off"
			}
			b.Run(name, func(b *testing.B) {
				at := startSite(b, session.Profile{NoRequestEvidence: off}, srv.URL+"/xhr")
				el := at.el(c.sel)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: el})
					if err != nil || len(res.Outcome.Requests) != 0 && c.name != "image" {
						b.Fatalf("click: %v (%+v)", err, res.Outcome)
					}
				}
			})
		}
	}
}

// BenchmarkNavigateNetwork measures a navigation to a page of 40 images
// (fresh URLs, so nothing is cached) with request recording on and off.
func BenchmarkNavigateNetwork(b *testing.B) {
	srv := formSite(b)
	for _, off := range []bool{false, true} {
		name := "recording"
		if off {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			at := startSite(b, session.Profile{NoRequestEvidence: off}, srv.URL+"/xhr")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				u := fmt.Sprintf("%s/many?v=%s-%d", srv.URL, name, i)
				if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
