// Package dom is the DOM watchdog: it answers events.BrowserStateRequest
// with the indexed view of the focused tab that the model reads, and the
// page queries that need no model: events.PageText (a tab's visible text),
// events.SearchPage (a pattern in that text) and events.FindElements (a CSS
// selector's matches). It captures the tab and its
// cross-site iframes over CDP, builds the tree and the text with the
// perception package (github.com/browseragent/browseragent/dom), stores the
// selector map in the session, and asks for the observation's screenshot
// through the bus (events.Screenshot, as a child event), so that the image
// comes from whichever watchdog answers Screenshot. The dialogs handled
// since the previous observation come from the DialogHandled events on the
// bus, whoever answers dialogs, and the requests the URL policy refused
// from the RequestBlocked events, whoever enforces the policy. It acts on
// nothing.
//
// Handles: BrowserStateRequest (the observation), PageText, SearchPage,
// FindElements, AgentFocusChanged (forgets the previous selector maps), DialogHandled
// (the next observation's ClosedDialogs) and RequestBlocked (the next
// observation's Blocked, by host).
//
// Emits: Screenshot, as a child of BrowserStateRequest.
package dom

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// Name is the DOM watchdog's name and the name of its handlers.
const Name = "dom"

// Defaults of Config.
const (
	DefaultTimeout           = 20 * time.Second
	DefaultListenerScanLimit = 10000
	DefaultFullAXMaxElements = 1000
	// MaxClosedDialogs bounds the dialogs remembered between two
	// observations (a page looping on alert() must not grow memory).
	MaxClosedDialogs = 20
)

// Config configures the DOM watchdog. The zero value means the
// documented defaults.
type Config struct {
	// Logger receives debug and warning messages. Default: the session's
	// logger, named "dom".
	Logger *zap.Logger
	// Timeout bounds the capture (all targets), the AX fetch and the build
	// of one observation. Default 20 s. A build that runs out
	// of time yields a BrowserState whose Error says so.
	Timeout time.Duration
	// ListenerScanLimit: the JS click-listener scan runs only on targets
	// with at most this many elements. 0 means 10,000 (upstream's limit);
	// negative disables the scan.
	ListenerScanLimit int
	// FullAXMaxElements: targets whose DOM has at most this many nodes fetch
	// the full AX tree (Accessibility.getFullAXTree); larger ones fetch one
	// AX node per index candidate (getPartialAXTree, fetchRelatives false),
	// which keeps the cost proportional to what is visible. 0 means
	// 1,000; negative means never the full tree.
	FullAXMaxElements int
	// AXWait bounds how long an observation waits for the per-candidate AX
	// nodes after the capture. 0 means adaptive: half the time the capture
	// took, at least one second, so that on a page seen for the first time
	// (when Chrome builds its accessibility cache, seconds on a 50k-element
	// page) AX cannot make an observation more than about 1.5 times the
	// cost of the raw capture. Elements whose AX node did not arrive in time
	// are still indexed, without role and accessible name; the cache keeps
	// building, so the next observation has them. Negative: no AX at all.
	AXWait time.Duration
	// FullCapture turns the viewport walker off. By default (false) each
	// target is read by an in-page walker (walk.go, in an isolated world)
	// that lists only the nodes within Build.ViewportThreshold (+ WalkSlack)
	// of the viewport, their ancestors, iframes and file inputs, and counts
	// the rest; a target whose walk fails is captured in full, as with
	// FullCapture true: DOM.getDocument + DOMSnapshot.captureSnapshot of the
	// whole document. A negative Build.ViewportThreshold (no viewport test)
	// always captures in full.
	FullCapture bool
	// AlwaysCapture turns the unchanged re-observe off. By default (false)
	// an observation first reads a probe in an isolated world of every
	// target of the tab (unchanged.go); when nothing it watches changed
	// since the previous capture of the same tab and no dialog was handled
	// nor request refused since, that capture is served again (fresh
	// screenshot, dialogs and refusals; same indexes) instead of capturing.
	// A page with a closed shadow root is always captured.
	AlwaysCapture bool
	// Build and Serialize tune the dom package (zero: its defaults).
	Build     dom.Options
	Serialize dom.SerializeOptions
}

// Watchdog answers events.BrowserStateRequest: it captures the focused
// tab and its cross-site iframes over CDP, builds the indexed text view
// with package dom, stores the selector map in the session and returns the
// observation. It keeps the previous selector map per tab (to mark new
// elements with *), dropped on every focus change.
//
// Failure is honest: when the capture or the build fails or times out, the
// handler still returns a BrowserState (and a nil error) whose Error says
// that the DOM build failed and that no index is valid, with the session's
// selector map cleared so that stale indexes fail; URL, title, tabs and the
// screenshot are filled when they are available. Only a session without a
// tab yields an error (wrapping session.ErrNoTab). A screenshot that fails
// leaves Screenshot nil and the failure in Hints.
type Watchdog struct {
	cfg Config
	log *zap.Logger

	mu     sync.Mutex
	prev   map[string]*dom.SelectorMap // by tab id
	closed []events.DialogInfo         // dialogs handled since the last observation
	block  blockedLog                  // requests refused since the last observation
	unch   unchangedCache              // the unchanged re-observe's baseline per tab
}

// New returns a DOM watchdog.
func New(cfg Config) *Watchdog {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ListenerScanLimit == 0 {
		cfg.ListenerScanLimit = DefaultListenerScanLimit
	}
	if cfg.FullAXMaxElements == 0 {
		cfg.FullAXMaxElements = DefaultFullAXMaxElements
	}
	return &Watchdog{cfg: cfg, log: zap.NewNop(), prev: map[string]*dom.SelectorMap{}}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog: BrowserStateRequest, PageText,
// SearchPage and FindElements (query.go),
// plus AgentFocusChanged (drops the previous maps), DialogHandled
// (remembers the dialog for the next observation) and RequestBlocked
// (counts the refusal, by host, for the next observation's Blocked).
func (w *Watchdog) Attach(s *session.Session) error {
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	w.mu.Lock()
	w.log = log
	w.prev = map[string]*dom.SelectorMap{}
	w.closed = nil
	w.block = blockedLog{}
	w.mu.Unlock()
	return errors.Join(
		session.Handle(s, events.BrowserStateRequest, Name, func(ctx context.Context, ev events.BrowserStateRequestEvent) (events.BrowserState, error) {
			return w.observe(ctx, s, ev)
		}),
		session.Handle(s, events.PageText, Name, func(ctx context.Context, ev events.PageTextEvent) (events.PageTextResult, error) {
			return pageText(ctx, s, ev.TargetID)
		}),
		session.Handle(s, events.SearchPage, Name, func(ctx context.Context, ev events.SearchPageEvent) (events.SearchPageResult, error) {
			return searchPage(ctx, s, ev)
		}),
		session.Handle(s, events.FindElements, Name, func(ctx context.Context, ev events.FindElementsEvent) (events.FindElementsResult, error) {
			return findElements(ctx, s, ev)
		}),
		session.Handle(s, events.AgentFocusChanged, Name, func(context.Context, events.AgentFocusChangedEvent) (events.None, error) {
			w.mu.Lock()
			w.prev = map[string]*dom.SelectorMap{}
			w.mu.Unlock()
			return events.None{}, nil
		}),
		session.Handle(s, events.DialogHandled, Name, func(_ context.Context, ev events.DialogHandledEvent) (events.None, error) {
			w.mu.Lock()
			if len(w.closed) < MaxClosedDialogs {
				w.closed = append(w.closed, events.DialogInfo{Type: ev.Type, Message: ev.Message, URL: ev.URL, Accepted: ev.Accepted})
			}
			w.mu.Unlock()
			return events.None{}, nil
		}),
		session.Handle(s, events.RequestBlocked, Name, func(_ context.Context, ev events.RequestBlockedEvent) (events.None, error) {
			if ev.Layer == "guard" && ev.TabID == "" {
				// A connection the network guard refused belongs to no tab
				// it can name: under an allow list most are the browser's
				// own background requests, noise to the model. The trace
				// and the report keep them.
				return events.None{}, nil
			}
			if ev.TabID != "" && !s.Owns(ev.TabID) {
				// A refusal in a foreign tab of a connected browser (the
				// user's, another session's): none of the model's business.
				return events.None{}, nil
			}
			w.mu.Lock()
			w.block.add(ev)
			w.mu.Unlock()
			return events.None{}, nil
		}),
	)
}

// takeClosed returns the dialogs handled since the last call.
func (w *Watchdog) takeClosed() []events.DialogInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.closed
	w.closed = nil
	return c
}

// takeBlocked returns the refused requests since the last call, by host
// (see blockedLog.take), and the hint for those beyond the bound.
func (w *Watchdog) takeBlocked() ([]events.BlockedRequests, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.block.take()
}

//go:embed js/page_text.js
var pageTextJS string

// pageText reads a tab's visible text, fresh.
func pageText(ctx context.Context, s *session.Session, tab string) (events.PageTextResult, error) {
	var r events.PageTextResult
	cs, err := queryTab(s, tab)
	if err != nil {
		return r, fmt.Errorf("dom: page text: %w", err)
	}
	if err := pagejs.Evaluate(ctx, cs, pageTextJS, &r); err != nil {
		return r, fmt.Errorf("dom: page text: %w", err)
	}
	return r, nil
}

// observation is the result of one capture and build.
type observation struct {
	input   *dom.PageInput // with the AX nodes that were merged
	tree    *dom.Tree
	res     *dom.Result
	page    *targetCapture
	metrics events.PageInfo
	elapsed time.Duration
}

// observe answers one BrowserStateRequest. st is a named result so that the
// deferred join of the screenshot fills the state that is returned.
func (w *Watchdog) observe(ctx context.Context, s *session.Session, ev events.BrowserStateRequestEvent) (st events.BrowserState, _ error) {
	start := time.Now()
	var (
		shot    events.ScreenshotResult
		shotErr error
	)
	tab := s.FocusedTab()
	cs, err := s.PageSession(tab)
	if err != nil || tab == "" {
		if err == nil {
			err = session.ErrNoTab
		}
		return events.BrowserState{}, fmt.Errorf("dom: browser state: %w", err)
	}
	if err := s.RefreshTabs(ctx); err != nil {
		w.log.Debug("refreshing tabs", zap.Error(err))
	}
	st = events.BrowserState{FocusedTarget: tab, Tabs: s.Tabs()}
	for _, t := range st.Tabs {
		if t.TargetID == tab {
			st.URL, st.Title = t.URL, t.Title
		}
	}
	// Taken before any return below: every state returned carries the
	// refusals since the previous one, a failed observation included.
	st.ClosedDialogs = w.takeClosed()
	var more string
	if st.Blocked, more = w.takeBlocked(); more != "" {
		st.Hints = append(st.Hints, more)
	}
	if note := s.Concealed(tab); note != "" {
		// A tab the URL policy refuses (found open on connecting): nothing
		// of it — text, elements, screenshot — reaches the model.
		st.Hints = append(st.Hints, "The focused tab is concealed "+note+".")
		return st, nil
	}

	// A page whose script never yields would hold every capture command
	// (and the screenshot) until its timeout: the session interrupts such a
	// script first, and the model is told.
	var unresponsive error
	if _, rerr := s.EnsureResponsive(ctx, tab); errors.Is(rerr, session.ErrPageUnresponsive) {
		unresponsive = rerr
	} else if rerr != nil {
		w.log.Debug("probing the page", zap.Error(rerr))
	}
	for _, why := range s.TakeInterrupts(tab) {
		st.Hints = append(st.Hints, "The page's script was stopped because "+why+"; the page may not work as its author intended.")
	}

	// The screenshot is asked for through the bus, as a child of this
	// event, on its own goroutine while the DOM is captured; it is joined
	// before returning. Whoever answers Screenshot provides the image.
	var shotDone chan struct{}
	if ev.IncludeScreenshot && unresponsive == nil {
		shotDone = make(chan struct{})
		go func() {
			defer close(shotDone)
			res, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{TargetID: tab, ImageOptions: ev.Screenshot})
			if err != nil {
				w.log.Debug("screenshot failed", zap.Error(err))
				shotErr = err
				return
			}
			shot = res
		}()
	}
	defer func() {
		if shotDone == nil {
			return
		}
		<-shotDone
		if shotErr != nil {
			st.Hints = append(st.Hints, "No screenshot this step: "+shotErr.Error())
		}
		st.Screenshot, st.ScreenshotType, st.ScreenshotScale = shot.Data, shot.MediaType, shot.Scale
		st.ScreenshotWidth, st.ScreenshotHeight = shot.Width, shot.Height
	}()
	if !ev.IncludeDOM {
		return st, nil
	}

	var obs *observation
	if unresponsive != nil {
		err = unresponsive
	} else {
		obs, err = w.observeTab(ctx, s, tab, cs, len(st.ClosedDialogs) > 0 || len(st.Blocked) > 0)
	}
	// Read right after the capture so that it is comparable with the
	// fingerprint the agent's mutation fence takes before each action (not
	// from a page that does not answer).
	if unresponsive == nil {
		if fp, ferr := s.Fingerprint(ctx, tab); ferr == nil {
			st.Fingerprint = fp.String()
		}
	}
	if obs != nil && obs.page != nil && obs.page.probe != nil {
		p := obs.page.probe
		st.URL, st.Title = p.URL, p.Title
		st.PendingRequests = p.Pending
		st.IsPDFViewer = p.ContentType == "application/pdf"
	}
	st.IsPDFViewer = st.IsPDFViewer || isPDFURL(st.URL)
	if st.IsPDFViewer && unresponsive == nil {
		// The PDF watchdog, when there is one, counts the pages (cached:
		// read_pdf after this costs no second fetch). Without it, or when
		// the document cannot be read, the count stays 0.
		if info, perr := bus.Call(ctx, s.Bus(), events.ReadPDF, events.ReadPDFEvent{InfoOnly: true}, bus.WithTimeout(pdfInfoTimeout)); perr == nil {
			st.PDFPages = info.Pages
		} else {
			w.log.Debug("counting the PDF's pages", zap.Error(perr))
		}
	}
	if err != nil {
		s.SetSelectorMap(nil)
		w.forget(tab)
		st.Error = fmt.Sprintf("DOM build failed: %v; no element indexes are valid this step", err)
		w.log.Warn("build failed", zap.String("url", st.URL), zap.Error(err))
		return st, nil
	}
	st.Page = obs.metrics
	st.Frames = frames(obs.tree)
	if obs.res == nil {
		// about:blank, chrome://, error pages: nothing the model can act on.
		st.DOMText = fmt.Sprintf("(%s is not a web page: nothing to index here; navigate to a URL to continue)", st.URL)
		s.SetSelectorMap(&session.SelectorMap{TargetID: tab, Fingerprint: st.Fingerprint, Elements: map[int]events.ElementInfo{}})
		w.forget(tab)
		st.Stats = events.DOMStats{Nodes: obs.tree.NodeCount(), BuildTime: time.Since(start)}
		return st, nil
	}
	st.DOMText = obs.res.Text
	st.Elements = elements(obs.tree, obs.res.Map)
	ps := obs.res.Stats
	st.Stats = events.DOMStats{
		Nodes:            obs.tree.NodeCount() + obs.tree.Unlisted.Elements, // what a walk left out counts
		Interactive:      obs.res.Map.Len(),
		Iframes:          ps.Iframes,
		Links:            ps.Links,
		Inputs:           ps.Inputs,
		ScrollContainers: ps.ScrollContainers,
		MediaCoverage:    mediaCoverage(obs.tree),
		BuildTime:        time.Since(start),
	}
	// Pages above/below are in Page; keep the hints that say something else.
	if ps.AppearsEmpty {
		st.Hints = append(st.Hints, "The page appears empty.")
	}
	if ps.MayBeLoading {
		st.Hints = append(st.Hints, "The page may still be loading; consider waiting.")
	}
	s.SetSelectorMap(&session.SelectorMap{TargetID: tab, Fingerprint: st.Fingerprint, Elements: st.Elements})
	w.mu.Lock()
	w.prev[tab] = obs.res.Map
	w.mu.Unlock()
	return st, nil
}

func (w *Watchdog) forget(tab string) {
	w.mu.Lock()
	delete(w.prev, tab)
	w.mu.Unlock()
}

// capture gathers every target of the tab concurrently, builds the tree,
// merges AX data and serializes, all under the configured timeout.
func (w *Watchdog) capture(parent context.Context, s *session.Session, tab string, cs *cdp.Session) (*observation, error) {
	ctx, cancel := context.WithTimeout(parent, w.cfg.Timeout)
	defer cancel()
	start := time.Now()
	in, main, walks, err := w.gather(ctx, cs, s.FrameTargets(tab))
	if err != nil {
		return nil, w.timeoutErr(ctx, err)
	}
	defer releaseWalks(ctx, walks)
	obs := &observation{input: in, page: main}
	if main.metrics != nil {
		obs.metrics = pageInfo(main.metrics)
	}
	tGather := time.Since(start)
	tree, err := dom.Build(in, w.cfg.Build)
	if err != nil {
		return obs, err
	}
	obs.tree = tree
	tBuild := time.Since(start)
	for _, warn := range tree.Warnings {
		w.log.Debug("dom: build warning", zap.String("warning", warn))
	}
	if !capturable(in.URL) {
		return obs, nil
	}
	// Walked targets: the nodes AX and the index need get their real ids.
	resolveWalks(ctx, tree, walks, w.cfg.FullAXMaxElements, w.cfg.AXWait >= 0)
	tResolve := time.Since(start)
	if w.cfg.AXWait >= 0 {
		wait := w.cfg.AXWait
		if wait == 0 {
			wait = max(time.Second, time.Since(start)/2)
		}
		if err := w.mergeAX(ctx, wait, tree, in, cs, s.FrameTargets(tab)); err != nil {
			return obs, w.timeoutErr(ctx, err)
		}
	}
	tAX := time.Since(start)
	if err := ctx.Err(); err != nil {
		return obs, w.timeoutErr(ctx, err)
	}
	w.mu.Lock()
	prev := w.prev[tab]
	w.mu.Unlock()
	res, err := dom.Serialize(tree, prev, w.cfg.Serialize)
	if err != nil {
		return obs, err
	}
	if resolveIndexed(ctx, res, walks) {
		// An element indexed without a real id (one no rule foresaw):
		// its id is resolved now and the text rendered again.
		if res, err = dom.Serialize(tree, prev, w.cfg.Serialize); err != nil {
			return obs, err
		}
	}
	obs.res = res
	for i := range in.Frames {
		if wk := walks[in.Frames[i].TargetID]; wk != nil {
			wk.patchInput(&in.Frames[i])
		}
	}
	obs.elapsed = time.Since(start)
	w.log.Debug("dom: observation", zap.Int("nodes", tree.NodeCount()), zap.Int("indexed", res.Map.Len()),
		zap.Duration("gather", tGather), zap.Duration("build", tBuild-tGather),
		zap.Duration("resolve", tResolve-tBuild), zap.Duration("ax", tAX-tResolve), zap.Duration("serialize", obs.elapsed-tAX))
	return obs, nil
}

func (w *Watchdog) timeoutErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v (%w)", w.cfg.Timeout, err)
	}
	return err
}

// gather captures the page target and each cross-site iframe target in
// parallel. A frame target that fails (detached meanwhile) is left out; the
// page target failing is an error.
func (w *Watchdog) gather(ctx context.Context, cs *cdp.Session, frames []session.AttachedTarget) (*dom.PageInput, *targetCapture, map[string]*walker, error) {
	caps := make([]*targetCapture, 1+len(frames))
	errs := make([]error, len(caps))
	var wg sync.WaitGroup
	for i := range caps {
		sess, isPage := cs, i == 0
		if i > 0 {
			sess = frames[i-1].Session
		}
		if sess == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.cfg.FullCapture && w.cfg.Build.ViewportThreshold >= 0 {
				margin := w.cfg.Build.ViewportThreshold
				if margin == 0 {
					margin = domDefaultThreshold
				}
				caps[i], errs[i] = captureWalk(ctx, sess, isPage, w.cfg.ListenerScanLimit, margin+WalkSlack, w.cfg.AXWait >= 0)
				if errs[i] == nil {
					return
				}
				// A weird page must not become an empty one.
				w.log.Debug("dom: walker failed; full capture", zap.Error(errs[i]))
			}
			caps[i], errs[i] = captureTarget(ctx, sess, isPage, w.cfg.ListenerScanLimit, w.cfg.AXWait >= 0)
		}()
	}
	wg.Wait()
	walks := map[string]*walker{}
	for _, c := range caps {
		if c != nil && c.wk != nil {
			walks[c.in.TargetID] = c.wk
		}
	}
	if errs[0] != nil {
		releaseWalks(ctx, walks)
		return nil, nil, nil, errs[0]
	}
	main := caps[0]
	in := &dom.PageInput{Frames: []dom.FrameInput{main.in}}
	if p := main.probe; p != nil {
		in.URL, in.Title, in.ReadyState = p.URL, p.Title, p.ReadyState
	}
	for i := 1; i < len(caps); i++ {
		if errs[i] != nil || caps[i] == nil {
			if errs[i] != nil {
				w.log.Debug("dom: iframe target capture failed", zap.Error(errs[i]))
			}
			continue
		}
		in.Frames = append(in.Frames, caps[i].in)
	}
	if in.URL == "" && main.in.Document != nil {
		in.URL = main.in.Document.DocumentURL
	}
	return in, main, walks, nil
}

// mergeAX attaches accessibility data: the full tree for small targets
// (the root frame's and each same-process child frame's, which
// getFullAXTree only returns when asked by frame id), else one node per
// index candidate (getPartialAXTree resolves nodes of any frame of the
// target).
func (w *Watchdog) mergeAX(ctx context.Context, wait time.Duration, tree *dom.Tree, in *dom.PageInput, cs *cdp.Session, frames []session.AttachedTarget) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sessions := map[string]*cdp.Session{string(cs.TargetID()): cs}
	for _, f := range frames {
		if f.Session != nil {
			sessions[string(f.Session.TargetID())] = f.Session
		}
	}
	counts := map[string]int{}
	tree.Walk(func(n *dom.Node) bool {
		if n.Frame != nil {
			counts[n.Frame.TargetID]++
		}
		return true
	})
	candidates := dom.AXCandidates(tree)
	childFrames := sameProcessChildFrames(tree)
	type axResult struct {
		frame  int
		target string
		nodes  []*accessibility.Node
		err    error
	}
	var mu sync.Mutex
	var results []axResult
	var wg sync.WaitGroup
	for i, fi := range in.Frames {
		target := fi.TargetID
		sess := sessions[target]
		if sess == nil {
			continue
		}
		// A walked target's size includes what the walk left out.
		full := w.cfg.FullAXMaxElements > 0 && counts[target]+fi.Unlisted.Elements <= w.cfg.FullAXMaxElements
		ids := candidates[target]
		children := childFrames[target]
		if !full && len(ids) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var nodes []*accessibility.Node
			var err error
			if full {
				nodes, err = fullAX(ctx, sess, children)
			} else {
				nodes, err = partialAX(ctx, sess, ids)
			}
			mu.Lock()
			results = append(results, axResult{i, target, nodes, err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			if parent.Err() != nil {
				return fmt.Errorf("accessibility: %w", r.err)
			}
			// AX only adds roles and names; the observation stands without
			// (or with the nodes that arrived within the wait).
			w.log.Debug("dom: AX fetch incomplete", zap.String("target", r.target), zap.Int("nodes", len(r.nodes)), zap.Error(r.err))
		}
		tree.MergeAX(r.target, r.nodes)
		in.Frames[r.frame].AX = r.nodes
	}
	return nil
}

// sameProcessChildFrames lists, per target id, the frame ids of the
// same-process child frames in the tree: their documents belong to the
// target's AX tree but getFullAXTree returns them only when asked by
// frame id.
func sameProcessChildFrames(tree *dom.Tree) map[string][]string {
	out := map[string][]string{}
	for _, f := range tree.Frames {
		if f.Parent != nil && !f.OOPIF && f.FrameID != "" {
			out[f.TargetID] = append(out[f.TargetID], f.FrameID)
		}
	}
	return out
}

// elements converts dom's selector map to the session's plain form.
func elements(tree *dom.Tree, m *dom.SelectorMap) map[int]events.ElementInfo {
	out := make(map[int]events.ElementInfo, m.Len())
	xp := dom.NewXPaths()
	frames := frameNames{}
	sx, sy := tree.Viewport.ScrollX, tree.Viewport.ScrollY
	for _, idx := range m.Indexes() {
		e, ok := m.Get(idx)
		if !ok || e.Node == nil {
			continue
		}
		n := e.Node
		info := events.ElementInfo{
			Index: int(idx),
			ElementRef: events.ElementRef{
				BackendNodeID: int64(e.BackendNodeID),
				TargetID:      e.TargetID,
				SessionID:     e.SessionID,
				FrameID:       e.FrameID,
			},
			Tag:   n.Tag,
			XPath: xp.Of(n),
			Frame: frames.name(n.Frame),
		}
		if n.AX != nil {
			info.Role, info.Name = n.AX.Role, n.AX.Name
		}
		if c := n.Control; c != nil && c.StandIn == n && c.AX != nil && !c.AX.Ignored && c.AX.Role != "" {
			// A label standing in for a hidden control: the model was told
			// the control's role, so the table says it too.
			info.Role, info.Name = c.AX.Role, c.AX.Name
		}
		if n.NumAttrs() > 0 {
			info.Attributes = make(map[string]string, n.NumAttrs())
			password := n.Tag == "input" && strings.EqualFold(n.Attr("type"), "password")
			n.EachAttr(func(k, v string) {
				if password && k == "value" {
					return // never carry a password around
				}
				if len(v) > 200 {
					v = v[:200]
				}
				info.Attributes[k] = v
			})
		}
		if b := n.Bounds; !b.Empty() {
			info.Bounds = &events.Rect{X: b.X - sx, Y: b.Y - sy, Width: b.W, Height: b.H}
		}
		out[int(idx)] = info
	}
	return out
}

// frameNames computes events.ElementInfo.Frame once per frame of a tree.
type frameNames map[*dom.Frame]string

// name is f's stable name: "" for the page, else each enclosing frame's
// document URL without query and fragment, outermost first, joined by
// " > "; a frame on the page's origin is named by its path alone, so a
// replay on another host (rebased) still finds it.
func (fn frameNames) name(f *dom.Frame) string {
	if f == nil || f.Parent == nil {
		return ""
	}
	if s, ok := fn[f]; ok {
		return s
	}
	top := f
	for top.Parent != nil {
		top = top.Parent
	}
	part := frameURL(f.URL, top.URL)
	if p := fn.name(f.Parent); p != "" {
		part = p + " > " + part
	}
	fn[f] = part
	return part
}

// frameURL is u without query and fragment, and without its origin when
// it is page's.
func frameURL(u, page string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	fu, err1 := url.Parse(u)
	pu, err2 := url.Parse(page)
	if err1 == nil && err2 == nil && fu.Host != "" && fu.Scheme == pu.Scheme && fu.Host == pu.Host {
		if fu.Path == "" {
			return "/"
		}
		return fu.Path
	}
	if u == "" {
		return "about:blank"
	}
	return u
}

// pageInfo derives the page geometry from layout metrics.
func pageInfo(m *page.GetLayoutMetricsResult) events.PageInfo {
	var p events.PageInfo
	v := viewport(m)
	p.ViewportWidth, p.ViewportHeight = int(math.Round(v.Width)), int(math.Round(v.Height))
	p.ScrollX, p.ScrollY = int(math.Round(v.ScrollX)), int(math.Round(v.ScrollY))
	if c := m.CSSContentSize; c != nil {
		p.PageWidth, p.PageHeight = int(math.Round(c.Width)), int(math.Round(c.Height))
	}
	p.PixelsAbove, p.PixelsLeft = p.ScrollY, p.ScrollX
	p.PixelsBelow = max(0, p.PageHeight-p.ScrollY-p.ViewportHeight)
	p.PixelsRight = max(0, p.PageWidth-p.ScrollX-p.ViewportWidth)
	return p
}

// capturable reports whether a URL is a web document worth indexing:
// http(s), file and data pages; not about:, chrome:, devtools: or error
// pages.
func capturable(u string) bool {
	switch schemeOf(u) {
	case "http", "https", "file", "data", "blob":
		return true
	}
	return false
}

func schemeOf(u string) string {
	if i := strings.Index(u, ":"); i > 0 {
		return strings.ToLower(u[:i])
	}
	return u
}

// pdfInfoTimeout bounds an observation's wait for a PDF's page count.
const pdfInfoTimeout = 10 * time.Second

// isPDFURL reports a URL whose path ends in .pdf.
func isPDFURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	return strings.HasSuffix(strings.ToLower(pu.Path), ".pdf")
}
