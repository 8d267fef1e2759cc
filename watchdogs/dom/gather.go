package dom

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domsnapshot"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// probeResult is what one cheap evaluation in the page's main world reports
// next to the DOM capture.
type probeResult struct {
	URL         string   `json:"url"`
	Title       string   `json:"title"`
	ReadyState  string   `json:"readyState"`
	ContentType string   `json:"contentType"`
	DPR         float64  `json:"dpr"`
	Pending     []string `json:"pending"`
}

// probeJS reads page metadata and the resources still loading.
//
//go:embed js/probe.js
var probeJS string

// clickListenersJS is a function (limit, maxHits) returning the elements
// with click-like listeners.
//
//go:embed js/click_listeners.js
var clickListenersJS string

const (
	listenerGroup   = "browseragent-domw-listeners"
	describeBatch   = 20
	maxListenerHits = 100
)

// targetCapture is what was captured from one target.
type targetCapture struct {
	in      dom.FrameInput
	metrics *page.GetLayoutMetricsResult
	probe   *probeResult // page target only
	// wk is the walk when the target was captured by the viewport walker
	// (nil after a full capture): the tree's ids are synthetic until
	// resolved through it.
	wk *walker
}

// captureWalk captures one target with the viewport walker: the walk, layout
// metrics, the probe (page only) and the click-listener scan, the last
// three pipelined as in captureTarget. margin is how far beyond the
// viewport nodes are listed.
func captureWalk(ctx context.Context, cs *cdp.Session, isPage bool, listenerLimit int, margin float64, warmAX bool) (*targetCapture, error) {
	metR := cs.Send(ctx, page.CommandGetLayoutMetrics, cdpproto.Empty{})
	var probeR *cdp.Reply
	if isPage {
		probeR = cs.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: probeJS, ReturnByValue: pagejs.Ptr(true)})
	}
	var listeners []cdpproto.BackendNodeID
	var lwg sync.WaitGroup
	if listenerLimit > 0 {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			listeners = clickListeners(ctx, cs, listenerLimit)
		}()
	}
	wk, werr := walkTarget(ctx, cs, margin, warmAX)
	out := &targetCapture{in: dom.FrameInput{
		TargetID:  string(cs.TargetID()),
		SessionID: string(cs.ID()),
		FrameID:   string(cs.TargetID()),
	}}
	var met page.GetLayoutMetricsResult
	if metR.Wait(ctx, &met) == nil {
		out.metrics = &met
	}
	out.probe = waitProbe(ctx, probeR)
	lwg.Wait()
	if werr != nil {
		if wk != nil {
			wk.release(ctx)
		}
		if !errors.Is(werr, ErrWalk) {
			werr = fmt.Errorf("%w: %w", ErrWalk, werr)
		}
		return nil, werr
	}
	doc, snap, err := wk.input()
	if err != nil {
		wk.release(ctx)
		return nil, err
	}
	out.wk = wk
	out.in.Document = doc
	out.in.Snapshot = snap
	out.in.ClickListeners = wk.listeners(ctx, listeners)
	out.in.Unlisted = wk.Unlisted
	if out.metrics != nil {
		out.in.Viewport = viewport(out.metrics)
	}
	if out.probe != nil {
		out.in.Viewport.DPR = out.probe.DPR
	}
	return out, nil
}

// captureTarget captures one target: getDocument and captureSnapshot
// (the floor), layout metrics, the probe (page only) and the click-listener
// scan, all pipelined on the session so the renderer sees them back to back.
// Only the document and the snapshot are required; the rest degrade to
// "unknown" when they fail.
func captureTarget(ctx context.Context, cs *cdp.Session, isPage bool, listenerLimit int, warmAX bool) (*targetCapture, error) {
	docR := cs.Send(ctx, cdpdom.CommandGetDocument, cdpdom.GetDocumentParams{Depth: pagejs.Ptr(int64(-1)), Pierce: pagejs.Ptr(true)})
	snapR := cs.Send(ctx, domsnapshot.CommandCaptureSnapshot, domsnapshot.CaptureSnapshotParams{
		ComputedStyles:    dom.RequiredComputedStyles,
		IncludePaintOrder: pagejs.Ptr(true),
		IncludeDOMRects:   pagejs.Ptr(true),
	})
	metR := cs.Send(ctx, page.CommandGetLayoutMetrics, cdpproto.Empty{})
	var probeR *cdp.Reply
	if isPage {
		probeR = cs.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: probeJS, ReturnByValue: pagejs.Ptr(true)})
	}
	var listeners []cdpproto.BackendNodeID
	var lwg sync.WaitGroup
	if listenerLimit > 0 {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			listeners = clickListeners(ctx, cs, listenerLimit)
		}()
	}

	out := &targetCapture{in: dom.FrameInput{
		TargetID:  string(cs.TargetID()),
		SessionID: string(cs.ID()),
		FrameID:   string(cs.TargetID()),
	}}
	var doc cdpdom.GetDocumentResult
	var snap domsnapshot.CaptureSnapshotResult
	var met page.GetLayoutMetricsResult
	errDoc := docR.Wait(ctx, &doc)
	if errDoc == nil && doc.Root != nil && warmAX {
		// Warm the renderer's accessibility cache: this request queues
		// behind the snapshot, so the renderer builds the cache while we
		// decode the snapshot and build the tree; the per-candidate AX
		// requests that follow are then cheap. Its answer is not needed.
		cs.Send(ctx, accessibility.CommandGetPartialAXTree, accessibility.GetPartialAXTreeParams{
			BackendNodeID: doc.Root.BackendNodeID, FetchRelatives: pagejs.Ptr(false)})
	}
	errSnap := snapR.Wait(ctx, &snap)
	if metR.Wait(ctx, &met) == nil {
		out.metrics = &met
	}
	out.probe = waitProbe(ctx, probeR)
	lwg.Wait()
	if err := errors.Join(errDoc, errSnap); err != nil {
		return nil, err
	}
	if doc.Root == nil {
		return nil, dom.ErrNoDocument
	}
	out.in.Document = doc.Root
	out.in.Snapshot = &snap
	out.in.ClickListeners = listeners
	if out.metrics != nil {
		out.in.Viewport = viewport(out.metrics)
	}
	if out.probe != nil {
		out.in.Viewport.DPR = out.probe.DPR
	}
	return out, nil
}

// viewport converts layout metrics (CSS pixels) to dom's viewport.
func viewport(m *page.GetLayoutMetricsResult) dom.Viewport {
	var v dom.Viewport
	if lv := m.CSSLayoutViewport; lv != nil {
		v.Width, v.Height = float64(lv.ClientWidth), float64(lv.ClientHeight)
		v.ScrollX, v.ScrollY = float64(lv.PageX), float64(lv.PageY)
	}
	if vv := m.CSSVisualViewport; vv != nil {
		v.ScrollX, v.ScrollY = vv.PageX, vv.PageY
		if v.Width == 0 || v.Height == 0 {
			v.Width, v.Height = vv.ClientWidth, vv.ClientHeight
		}
	}
	return v
}

// clickListeners runs the listener scan and maps the elements it found
// to backend node ids. It is best effort: any failure yields what was
// found so far (the listener only widens what counts as clickable).
func clickListeners(ctx context.Context, cs *cdp.Session, limit int) []cdpproto.BackendNodeID {
	ev, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:            "(" + strings.TrimSpace(clickListenersJS) + ")(" + strconv.Itoa(limit) + ", " + strconv.Itoa(maxListenerHits) + ")",
		ObjectGroup:           listenerGroup,
		IncludeCommandLineAPI: pagejs.Ptr(true),
		Silent:                pagejs.Ptr(true),
	})
	if err != nil || ev.ExceptionDetails != nil || ev.Result == nil || ev.Result.ObjectID == "" {
		return nil
	}
	defer func() {
		// Release on a context of its own: the capture's may be cancelled,
		// and leaking the group would pin the elements in the page.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2e9)
		defer cancel()
		_ = cs.Call(rctx, runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: listenerGroup}, nil)
	}()
	props, err := cdpproto.Call(ctx, cs, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: ev.Result.ObjectID, OwnProperties: pagejs.Ptr(true)})
	if err != nil {
		return nil
	}
	var ids []runtime.RemoteObjectID
	for _, p := range props.Result {
		if p != nil && p.Value != nil && p.Value.ObjectID != "" && p.Value.Subtype == "node" {
			ids = append(ids, p.Value.ObjectID)
		}
	}
	var out []cdpproto.BackendNodeID
	for start := 0; start < len(ids); start += describeBatch {
		end := min(start+describeBatch, len(ids))
		replies := make([]*cdp.Reply, 0, end-start)
		for _, id := range ids[start:end] {
			replies = append(replies, cs.Send(ctx, cdpdom.CommandDescribeNode, cdpdom.DescribeNodeParams{ObjectID: id}))
		}
		for _, r := range replies {
			var d cdpdom.DescribeNodeResult
			if r.Wait(ctx, &d) == nil && d.Node != nil && d.Node.BackendNodeID != 0 {
				out = append(out, d.Node.BackendNodeID)
			}
		}
	}
	return out
}

// axWindow bounds the getPartialAXTree requests in flight per target.
const axWindow = 64

// partialAX fetches the AX node of each candidate (no relatives),
// keeping at most axWindow requests in flight. Nodes that fail (gone
// since the capture) are skipped.
func partialAX(ctx context.Context, cs *cdp.Session, ids []cdpproto.BackendNodeID) ([]*accessibility.Node, error) {
	var out []*accessibility.Node
	for start := 0; start < len(ids); start += axWindow {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		end := min(start+axWindow, len(ids))
		replies := make([]*cdp.Reply, 0, end-start)
		for _, id := range ids[start:end] {
			replies = append(replies, cs.Send(ctx, accessibility.CommandGetPartialAXTree,
				accessibility.GetPartialAXTreeParams{BackendNodeID: id, FetchRelatives: pagejs.Ptr(false)}))
		}
		for _, r := range replies {
			var res accessibility.GetPartialAXTreeResult
			if err := r.Wait(ctx, &res); err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				continue
			}
			for _, n := range res.Nodes {
				if n != nil && n.BackendDOMNodeID != 0 {
					out = append(out, n)
				}
			}
		}
	}
	return out, nil
}

// fullAX fetches the whole AX tree of a target: its root frame's, plus
// one per same-process child frame in frameIDs (getFullAXTree without a
// frameId covers the root frame only). The requests are pipelined on the
// session. A child frame that fails (detached since the capture) is
// skipped; the root frame failing is an error.
func fullAX(ctx context.Context, cs *cdp.Session, frameIDs []string) ([]*accessibility.Node, error) {
	replies := make([]*cdp.Reply, 0, 1+len(frameIDs))
	replies = append(replies, cs.Send(ctx, accessibility.CommandGetFullAXTree, accessibility.GetFullAXTreeParams{}))
	for _, id := range frameIDs {
		replies = append(replies, cs.Send(ctx, accessibility.CommandGetFullAXTree,
			accessibility.GetFullAXTreeParams{FrameID: cdpproto.FrameID(id)}))
	}
	var out []*accessibility.Node
	for i, r := range replies {
		var res accessibility.GetFullAXTreeResult
		if err := r.Wait(ctx, &res); err != nil {
			if i == 0 || ctx.Err() != nil {
				return out, err
			}
			continue
		}
		out = append(out, res.Nodes...)
	}
	return out, nil
}

// waitProbe reads the page probe's answer; nil when it was not sent or
// failed (the probe only adds hints).
func waitProbe(ctx context.Context, r *cdp.Reply) *probeResult {
	if r == nil {
		return nil
	}
	var ev runtime.EvaluateResult
	if r.Wait(ctx, &ev) != nil || ev.ExceptionDetails != nil || ev.Result == nil || len(ev.Result.Value) == 0 {
		return nil
	}
	var p probeResult
	if jsonv2.Unmarshal(ev.Result.Value, &p) != nil {
		return nil
	}
	return &p
}
