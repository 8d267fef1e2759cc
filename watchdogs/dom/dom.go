package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Defaults of DOMConfig.
const (
	domwDefaultTimeout           = 20 * time.Second
	domwDefaultListenerScanLimit = 10000
	domwDefaultFullAXMaxElements = 1000
)

// domwDialogSource is what the popups watchdog offers: the dialogs it
// handled since the last call (each returned once).
type domwDialogSource interface {
	TakeHandled() []events.DialogInfo
}

// DOMConfig configures the DOM watchdog. The zero value means the
// documented defaults.
type DOMConfig struct {
	// Logger receives debug and warning messages. Default zap.NewNop().
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
	// Build and Serialize tune the dom package (zero: its defaults).
	Build     dom.Options
	Serialize dom.SerializeOptions
	// Dialogs, when set, is asked for the dialogs handled since the last
	// observation (the popups watchdog). Nil: ClosedDialogs stays empty.
	Dialogs domwDialogSource
}

// DOMWatchdog answers events.BrowserStateRequest: it captures the focused
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
// tab yields an error (wrapping session.ErrNoTab).
type DOMWatchdog struct {
	cfg DOMConfig
	log *zap.Logger

	mu   sync.Mutex
	prev map[string]*dom.SelectorMap // by tab id
}

// NewDOM returns a DOM watchdog.
func NewDOM(cfg DOMConfig) *DOMWatchdog {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = domwDefaultTimeout
	}
	if cfg.ListenerScanLimit == 0 {
		cfg.ListenerScanLimit = domwDefaultListenerScanLimit
	}
	if cfg.FullAXMaxElements == 0 {
		cfg.FullAXMaxElements = domwDefaultFullAXMaxElements
	}
	return &DOMWatchdog{cfg: cfg, log: cfg.Logger, prev: map[string]*dom.SelectorMap{}}
}

// Name implements session.Watchdog.
func (w *DOMWatchdog) Name() string { return "dom" }

// Attach implements session.Watchdog.
func (w *DOMWatchdog) Attach(s *session.Session) error {
	w.mu.Lock()
	w.prev = map[string]*dom.SelectorMap{}
	w.mu.Unlock()
	if err := register(s.Bus(), w.Name(), events.BrowserStateRequest,
		func(ctx context.Context, ev events.BrowserStateRequestEvent) (events.BrowserState, error) {
			return w.observe(ctx, s, ev)
		}); err != nil {
		return err
	}
	return register(s.Bus(), w.Name(), events.AgentFocusChanged,
		func(context.Context, events.AgentFocusChangedEvent) (events.None, error) {
			w.mu.Lock()
			w.prev = map[string]*dom.SelectorMap{}
			w.mu.Unlock()
			return events.None{}, nil
		})
}

// domwObservation is the result of one capture and build.
type domwObservation struct {
	input   *dom.PageInput // with the AX nodes that were merged
	tree    *dom.Tree
	res     *dom.Result
	page    *domwCapture
	metrics events.PageInfo
	elapsed time.Duration
}

// observe answers one BrowserStateRequest. st is a named result so that the
// deferred join of the screenshot fills the state that is returned.
func (w *DOMWatchdog) observe(ctx context.Context, s *session.Session, ev events.BrowserStateRequestEvent) (st events.BrowserState, _ error) {
	start := time.Now()
	tab := s.FocusedTab()
	cs, err := s.PageSession(tab)
	if err != nil || tab == "" {
		if err == nil {
			err = session.ErrNoTab
		}
		return events.BrowserState{}, fmt.Errorf("dom: browser state: %w", err)
	}
	if err := s.RefreshTabs(ctx); err != nil {
		w.cfg.Logger.Debug("dom: refreshing tabs", zap.Error(err))
	}
	st = events.BrowserState{FocusedTarget: tab, Tabs: s.Tabs()}
	for _, t := range st.Tabs {
		if t.TargetID == tab {
			st.URL, st.Title = t.URL, t.Title
		}
	}

	// The screenshot is taken on its own goroutine while the DOM is
	// captured; it is joined before returning.
	type shot struct {
		png []byte
		err error
	}
	var shotC chan shot
	if ev.IncludeScreenshot {
		shotC = make(chan shot, 1)
		go func() {
			png, err := shotCapture(ctx, cs, events.ScreenshotEvent{})
			shotC <- shot{png, err}
		}()
	}
	defer func() {
		if shotC != nil {
			if r := <-shotC; r.err == nil {
				st.Screenshot = r.png
			} else {
				w.log.Debug("dom: screenshot failed", zap.Error(r.err))
			}
		}
	}()
	if w.cfg.Dialogs != nil {
		st.ClosedDialogs = w.cfg.Dialogs.TakeHandled()
	}
	if !ev.IncludeDOM {
		return st, nil
	}

	obs, err := w.capture(ctx, s, tab, cs)
	// Read right after the capture so that it is comparable with the
	// fingerprint the agent's mutation fence takes before each action.
	if fp, ferr := s.Fingerprint(ctx, tab); ferr == nil {
		st.Fingerprint = fp.String()
	}
	if obs != nil && obs.page != nil && obs.page.probe != nil {
		p := obs.page.probe
		st.URL, st.Title = p.URL, p.Title
		st.PendingRequests = p.Pending
		st.IsPDFViewer = p.ContentType == "application/pdf"
	}
	st.IsPDFViewer = st.IsPDFViewer || domwIsPDFURL(st.URL)
	if err != nil {
		s.SetSelectorMap(nil)
		w.forget(tab)
		st.Error = fmt.Sprintf("DOM build failed: %v; no element indexes are valid this step", err)
		w.log.Warn("dom: build failed", zap.String("url", st.URL), zap.Error(err))
		return st, nil
	}
	st.Page = obs.metrics
	if obs.res == nil {
		// about:blank, chrome://, error pages: nothing the model can act on.
		st.DOMText = fmt.Sprintf("(%s is not a web page: nothing to index here; navigate to a URL to continue)", st.URL)
		s.SetSelectorMap(&session.SelectorMap{TargetID: tab, Fingerprint: st.Fingerprint, Elements: map[int]events.ElementInfo{}})
		w.forget(tab)
		st.Stats = events.DOMStats{Nodes: obs.tree.NodeCount(), BuildTime: time.Since(start)}
		return st, nil
	}
	st.DOMText = obs.res.Text
	st.Elements = domwElements(obs.tree, obs.res.Map)
	ps := obs.res.Stats
	st.Stats = events.DOMStats{
		Nodes:            obs.tree.NodeCount(),
		Interactive:      obs.res.Map.Len(),
		Iframes:          ps.Iframes,
		Links:            ps.Links,
		Inputs:           ps.Inputs,
		ScrollContainers: ps.ScrollContainers,
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

func (w *DOMWatchdog) forget(tab string) {
	w.mu.Lock()
	delete(w.prev, tab)
	w.mu.Unlock()
}

// capture gathers every target of the tab concurrently, builds the tree,
// merges AX data and serializes, all under the configured timeout.
func (w *DOMWatchdog) capture(parent context.Context, s *session.Session, tab string, cs *cdp.Session) (*domwObservation, error) {
	ctx, cancel := context.WithTimeout(parent, w.cfg.Timeout)
	defer cancel()
	start := time.Now()
	in, main, err := w.gather(ctx, cs, s.FrameTargets(tab))
	if err != nil {
		return nil, w.timeoutErr(ctx, err)
	}
	obs := &domwObservation{input: in, page: main}
	if main.metrics != nil {
		obs.metrics = domwPageInfo(main.metrics)
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
	if !domwCapturable(in.URL) {
		return obs, nil
	}
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
	obs.res = res
	obs.elapsed = time.Since(start)
	w.log.Debug("dom: observation", zap.Int("nodes", tree.NodeCount()), zap.Int("indexed", res.Map.Len()),
		zap.Duration("gather", tGather), zap.Duration("build", tBuild-tGather),
		zap.Duration("ax", tAX-tBuild), zap.Duration("serialize", obs.elapsed-tAX))
	return obs, nil
}

func (w *DOMWatchdog) timeoutErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v (%w)", w.cfg.Timeout, err)
	}
	return err
}

// gather captures the page target and each cross-site iframe target in
// parallel. A frame target that fails (detached meanwhile) is left out; the
// page target failing is an error.
func (w *DOMWatchdog) gather(ctx context.Context, cs *cdp.Session, frames []session.AttachedTarget) (*dom.PageInput, *domwCapture, error) {
	caps := make([]*domwCapture, 1+len(frames))
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
			caps[i], errs[i] = domwCaptureTarget(ctx, sess, isPage, w.cfg.ListenerScanLimit, w.cfg.AXWait >= 0)
		}()
	}
	wg.Wait()
	if errs[0] != nil {
		return nil, nil, errs[0]
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
	return in, main, nil
}

// mergeAX attaches accessibility data: the full tree for small targets,
// else one node per index candidate.
func (w *DOMWatchdog) mergeAX(ctx context.Context, wait time.Duration, tree *dom.Tree, in *dom.PageInput, cs *cdp.Session, frames []session.AttachedTarget) error {
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
		full := w.cfg.FullAXMaxElements > 0 && counts[target] <= w.cfg.FullAXMaxElements
		ids := candidates[target]
		if !full && len(ids) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var nodes []*accessibility.Node
			var err error
			if full {
				nodes, err = domwFullAX(ctx, sess)
			} else {
				nodes, err = domwPartialAX(ctx, sess, ids)
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

// domwElements converts dom's selector map to the session's plain form.
func domwElements(tree *dom.Tree, m *dom.SelectorMap) map[int]events.ElementInfo {
	out := make(map[int]events.ElementInfo, m.Len())
	xp := domwXPather{}
	sx, sy := tree.Viewport.ScrollX, tree.Viewport.ScrollY
	for _, idx := range m.Indexes() {
		e, ok := m.Get(idx)
		if !ok || e.Node == nil {
			continue
		}
		n := e.Node
		info := events.ElementInfo{
			Index:         int(idx),
			BackendNodeID: int64(e.BackendNodeID),
			TargetID:      e.TargetID,
			SessionID:     e.SessionID,
			FrameID:       e.FrameID,
			Tag:           n.Tag,
			XPath:         xp.xpath(n),
		}
		if n.AX != nil {
			info.Role, info.Name = n.AX.Role, n.AX.Name
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

// domwPageInfo derives the page geometry from layout metrics.
func domwPageInfo(m *page.GetLayoutMetricsResult) events.PageInfo {
	var p events.PageInfo
	v := domwViewport(m)
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

// domwCapturable reports whether a URL is a web document worth indexing:
// http(s), file and data pages; not about:, chrome:, devtools: or error
// pages.
func domwCapturable(u string) bool {
	switch domwSchemeOf(u) {
	case "http", "https", "file", "data", "blob":
		return true
	}
	return false
}

func domwSchemeOf(u string) string {
	if i := strings.Index(u, ":"); i > 0 {
		return strings.ToLower(u[:i])
	}
	return u
}

// domwIsPDFURL reports a URL whose path ends in .pdf.
func domwIsPDFURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	return strings.HasSuffix(strings.ToLower(pu.Path), ".pdf")
}

// domwXPather computes the same paths as dom.XPath, remembering the
// positions of each parent's children: dom.XPath scans all siblings for
// every element, which is quadratic on wide pages (60,000 children of
// <body> took minutes).
type domwXPather map[*dom.Node]string

func (x domwXPather) position(n *dom.Node) string {
	p := n.Parent
	if p == nil {
		return ""
	}
	if s, ok := x[n]; ok {
		return s
	}
	same := map[string]int{}
	for _, c := range p.Children {
		if c.Type == dom.ElementNode {
			same[c.Tag]++
		}
	}
	seen := map[string]int{}
	for _, c := range p.Children {
		if c.Type != dom.ElementNode {
			continue
		}
		seen[c.Tag]++
		if same[c.Tag] > 1 {
			x[c] = "[" + strconv.Itoa(seen[c.Tag]) + "]"
		} else {
			x[c] = ""
		}
	}
	if s, ok := x[n]; ok {
		return s
	}
	x[n] = "" // not among its parent's children (a shadow root's host)
	return ""
}

func (x domwXPather) xpath(n *dom.Node) string {
	var segs []string
	for c := n; c != nil; c = c.Parent {
		if c.Type == dom.DocumentFragmentNode {
			continue
		}
		if c.Type != dom.ElementNode {
			break
		}
		segs = append(segs, c.Tag+x.position(c))
		if c.Parent != nil && c.Parent.Type == dom.ElementNode && (c.Parent.Tag == "iframe" || c.Parent.Tag == "frame") {
			break
		}
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/")
}
