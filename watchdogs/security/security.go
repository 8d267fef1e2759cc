package watchdogs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// SecurityName is the name of the security watchdog and of its bus handlers.
const SecurityName = "security"

// Security enforces a [URLPolicy] before anything loads:
//
//   - NavigateToURL: a guard registered first refuses a forbidden URL before
//     the session's navigation handler runs; the caller gets the
//     *BlockedURLError (errors.Is(err, ErrURLBlocked)).
//   - Every tab, popup and cross-site iframe target gets request interception
//     (Fetch, Document requests only) from a target hook, set up while the
//     target is still paused. Each document request — a navigation, every
//     redirect hop, an iframe's document, the first document of a popup — is
//     checked and, when refused, failed with BlockedByClient before it reaches
//     the network. A navigation the session started then fails with a
//     *session.NavigationError (net::ERR_BLOCKED_BY_CLIENT); [Security.LastBlock]
//     and a BrowserError event (Type "NavigationBlocked") say why.
//   - A popup whose first document was refused (or whose URL is refused when
//     TabCreated reports it) is closed with CloseTab: a blocked popup would
//     otherwise stay as an empty error page the model could switch to.
//   - NavigationComplete re-checks the tab's final URL, and every URL change
//     of a session tab (Target.targetInfoChanged) is checked after commit
//     (defence in depth): a tab found on a refused URL is sent to
//     about:blank — a popup that never showed an allowed page is closed
//     instead — and reported.
//
// Scheme coverage: data:, blob:, javascript: and other non-network URLs
// never reach request interception, so they are stopped by the
// NavigateToURL guard (navigations the runtime makes), by Chromium itself
// (renderer-initiated top-level data: navigations are refused by the
// browser) and, for anything that still commits in a tab (a blob: page the
// page navigated to), by the after-commit check — which acts after the
// document started, not before. Iframes on such URLs are not policed.
//
// Policy errors that are not a *BlockedURLError are wrapped into one (the
// policy failing closed). A refused redirect or popup is known only after
// the session's navigation returned; [Security.LastBlock] has the reason.
//
// Every decision is reported as a BrowserError event with Type
// "NavigationBlocked" and Details url, kind, target, reason and action
// (what was done about it).
type Security struct {
	policy URLPolicy
	log    *zap.Logger

	mu       sync.Mutex
	sess     *session.Session
	active   URLPolicy
	stop     chan struct{}
	wg       sync.WaitGroup
	blocks   map[string]*BlockedURLError // last block per target id
	closing  map[string]bool             // popups whose close was requested
	shown    map[string]bool             // tabs that committed an allowed page
	targets  map[string]*secTarget       // intercepted targets by session id
	removeFn func()
	watching *cdp.Conn // the connection the commit watcher listens on
}

// secTarget is the interception state of one target.
type secTarget struct {
	sess     *cdp.Session
	kind     session.TargetKind
	opener   string
	firstDoc bool                     // a main-frame document was seen
	seen     map[fetch.RequestID]bool // request ids paused before (redirect hops)
}

// NewSecurity returns the security watchdog enforcing policy. A nil policy
// means a [DomainPolicy] built at Attach from the session profile's
// AllowedDomains, ProhibitedDomains, BlockIPAddresses and AllowedSchemes.
// The policy must be safe for concurrent use; it is called from the bus and
// from the watchdog's interception goroutines.
func NewSecurity(policy URLPolicy) *Security {
	return &Security{policy: policy}
}

// Name implements session.Watchdog.
func (w *Security) Name() string { return SecurityName }

// Policy returns the policy in force (nil before the first Attach when
// NewSecurity was given nil).
func (w *Security) Policy() URLPolicy {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active != nil {
		return w.active
	}
	return w.policy
}

// LastBlock returns the last refusal of a document request in the target
// (a tab or iframe target id), or nil. It explains a navigation that failed
// with net::ERR_BLOCKED_BY_CLIENT.
func (w *Security) LastBlock(targetID string) *BlockedURLError {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.blocks[targetID]; b != nil {
		c := *b
		return &c
	}
	return nil
}

// Attach implements session.Watchdog: it registers the NavigateToURL guard
// (first), the TabCreated and NavigationComplete handlers and the target
// hook that installs request interception.
func (w *Security) Attach(s *session.Session) error {
	p := w.policy
	if p == nil {
		prof := s.Profile()
		p = &DomainPolicy{
			Allowed:          append([]string(nil), prof.AllowedDomains...),
			Prohibited:       append([]string(nil), prof.ProhibitedDomains...),
			BlockIPAddresses: prof.BlockIPAddresses,
			AllowedSchemes:   append([]string(nil), prof.AllowedSchemes...),
		}
	}
	w.mu.Lock()
	w.sess = s
	w.active = p
	w.log = s.Logger().Named(SecurityName)
	w.stop = make(chan struct{})
	w.blocks = map[string]*BlockedURLError{}
	w.closing = map[string]bool{}
	w.shown = map[string]bool{}
	w.targets = map[string]*secTarget{}
	w.watching = nil
	w.mu.Unlock()

	b := s.Bus()
	if err := register(b, SecurityName, events.NavigateToURL, w.secOnNavigate, bus.Guard(), bus.First()); err != nil {
		return err
	}
	if err := register(b, SecurityName, events.TabCreated, w.secOnTabCreated); err != nil {
		return err
	}
	if err := register(b, SecurityName, events.NavigationComplete, w.secOnNavigationComplete); err != nil {
		return err
	}
	if err := register(b, SecurityName, events.TabClosed, w.secOnTabClosed); err != nil {
		return err
	}
	if err := register(b, SecurityName, events.BrowserConnected, w.secOnConnected); err != nil {
		return err
	}
	if err := register(b, SecurityName, events.BrowserReconnected, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
		return w.secOnConnected(ctx, events.BrowserConnectedEvent{})
	}); err != nil {
		return err
	}
	remove := s.AddTargetHook(w.secHook)
	w.mu.Lock()
	w.removeFn = remove
	w.mu.Unlock()
	return nil
}

// Detach implements session.Detacher: it stops the interception goroutines.
func (w *Security) Detach(ctx context.Context) error {
	w.mu.Lock()
	stop, remove := w.stop, w.removeFn
	w.removeFn = nil
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	w.mu.Unlock()
	if remove != nil {
		remove()
	}
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// secCheck asks the policy; a non-nil result is the refusal as a
// *BlockedURLError (a policy's other errors are wrapped into one).
func (w *Security) secCheck(ctx context.Context, u string, kind NavigationKind, targetID string) *BlockedURLError {
	p := w.Policy()
	if p == nil {
		return nil
	}
	err := p.CheckURL(ctx, URLRequest{URL: u, Kind: kind, TargetID: targetID})
	if err == nil {
		return nil
	}
	var be *BlockedURLError
	if errors.As(err, &be) {
		return be
	}
	return &BlockedURLError{URL: u, Kind: kind, Reason: err.Error()}
}

// secReport records a block and emits the BrowserError the trace and the
// model see.
func (w *Security) secReport(ctx context.Context, be *BlockedURLError, targetID, how string) {
	w.mu.Lock()
	if targetID != "" && w.blocks != nil {
		w.blocks[targetID] = be
	}
	s := w.sess
	log := w.log
	w.mu.Unlock()
	if log != nil {
		log.Info("url blocked", zap.String("url", be.URL), zap.String("kind", string(be.Kind)), zap.String("target", targetID), zap.String("reason", be.Reason), zap.String("how", how))
	}
	if s == nil || s.Bus() == nil {
		return
	}
	_, _ = bus.Emit(ctx, s.Bus(), events.BrowserError, events.BrowserErrorEvent{
		Type:    "NavigationBlocked",
		Message: be.Error(),
		Details: map[string]string{
			"url":    be.URL,
			"kind":   string(be.Kind),
			"target": targetID,
			"reason": be.Reason,
			"action": how,
		},
	})
}

// secOnNavigate is the NavigateToURL guard: a refused URL stops the chain.
func (w *Security) secOnNavigate(ctx context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
	tid := ""
	if s := w.secSession(); s != nil && !ev.NewTab {
		tid = s.FocusedTab()
	}
	if be := w.secCheck(ctx, ev.URL, KindNavigate, tid); be != nil {
		w.secReport(ctx, be, tid, "navigation refused before it started")
		return events.NavigateResult{TargetID: tid}, be
	}
	return events.NavigateResult{}, nil
}

func (w *Security) secSession() *session.Session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sess
}

// secClaimClose reports whether the caller is the first to close targetID.
func (w *Security) secClaimClose(targetID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing == nil || w.closing[targetID] {
		return false
	}
	w.closing[targetID] = true
	return true
}

// secOnTabCreated closes popups whose URL is refused or whose first document
// was already blocked by interception.
func (w *Security) secOnTabCreated(ctx context.Context, ev events.TabCreatedEvent) (events.None, error) {
	if ev.OpenerID == "" {
		return events.None{}, nil
	}
	refused := false
	if ev.URL != "" {
		if be := w.secCheck(ctx, ev.URL, KindNewTab, ev.TargetID); be != nil {
			w.secReport(ctx, be, ev.TargetID, "popup closed")
			refused = true
		}
	}
	if !refused {
		if b := w.LastBlock(ev.TargetID); b != nil && b.Kind == KindNewTab {
			refused = true
		}
	}
	if !refused || !w.secClaimClose(ev.TargetID) {
		return events.None{}, nil
	}
	s := w.secSession()
	if s == nil {
		return events.None{}, nil
	}
	_, err := bus.Call(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: ev.TargetID})
	if err != nil && errors.Is(err, session.ErrTabNotFound) {
		err = nil // already gone
	}
	return events.None{}, err
}

// secOnNavigationComplete re-checks where the tab really is and leaves a
// refused page for about:blank.
func (w *Security) secOnNavigationComplete(ctx context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	s := w.secSession()
	if s == nil || ev.TargetID == "" {
		return events.None{}, nil
	}
	cs, err := s.PageSession(ev.TargetID)
	if err != nil {
		return events.None{}, nil // tab gone: nothing to protect
	}
	urls := []string{ev.URL}
	if h, err := cdpproto.Call(ctx, cs, page.GetNavigationHistory, cdpproto.Empty{}); err == nil &&
		h.CurrentIndex >= 0 && int(h.CurrentIndex) < len(h.Entries) {
		urls = append(urls, h.Entries[h.CurrentIndex].URL)
	}
	for _, u := range urls {
		if u == "" || strings.HasPrefix(u, "chrome-error:") {
			continue
		}
		be := w.secCheck(ctx, u, KindNavigate, ev.TargetID)
		if be == nil {
			continue
		}
		if last := w.LastBlock(ev.TargetID); last == nil || last.URL != u {
			// Not already reported (and recorded more precisely) by the
			// interception.
			w.secReport(ctx, be, ev.TargetID, "tab left for about:blank")
		}
		if _, err := cdpproto.Call(ctx, cs, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
			return events.None{}, err
		}
		return events.None{}, nil
	}
	return events.None{}, nil
}

// secHook installs Document-request interception on a tab or frame target
// while it is paused. Fetch is handled by the browser process, so
// Fetch.enable is answered before the target resumes (checked by test).
func (w *Security) secHook(ctx context.Context, at session.AttachedTarget) error {
	if at.Kind != session.TargetPage && at.Kind != session.TargetFrame {
		return nil
	}
	w.mu.Lock()
	stop := w.stop
	if stop == nil {
		w.mu.Unlock()
		return nil
	}
	t := &secTarget{sess: at.Session, kind: at.Kind, opener: at.OpenerID, seen: map[fetch.RequestID]bool{}}
	w.targets[string(at.Session.ID())] = t
	w.mu.Unlock()

	sub := at.Session.SubscribeEvents(secTargetEvents...)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := cdpproto.Call(cctx, at.Session, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{
			URLPattern:   "*",
			ResourceType: network.ResourceTypeDocument,
			RequestStage: fetch.RequestStageRequest,
		}},
	})
	if err != nil {
		sub.Cancel()
		return err
	}
	w.wg.Add(1)
	go w.secIntercept(stop, t, sub)
	return nil
}

// secIntercept answers the target's paused Document requests until the
// target goes away or the watchdog detaches. It runs on its own goroutine so
// that the CDP reader never waits for a policy.
func (w *Security) secIntercept(stop <-chan struct{}, t *secTarget, sub *cdp.Subscription) {
	defer w.wg.Done()
	defer func() { sub.Cancel() }()
	ctx, cancel := secStopContext(stop)
	defer cancel()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-sub.C():
			if !ok {
				err := sub.Err()
				if errors.Is(err, cdp.ErrSubscriptionOverflow) {
					// Paused requests we never saw stay paused; log loudly
					// and keep answering the new ones.
					w.log.Warn("request interception fell behind; resubscribing", zap.Error(err))
					sub = t.sess.SubscribeEvents(secTargetEvents...)
					continue
				}
				w.mu.Lock()
				if w.targets != nil {
					delete(w.targets, string(t.sess.ID()))
				}
				w.mu.Unlock()
				return
			}
			if ev.Method == page.FrameNavigated.Method {
				var e page.EventFrameNavigated
				if ev.Decode(&e) == nil && e.Frame != nil {
					w.secCheckFrame(ctx, t, e.Frame)
				}
				continue
			}
			var e fetch.EventRequestPaused
			if ev.Decode(&e) != nil || e.Request == nil {
				continue
			}
			w.secDecide(ctx, t, &e)
		}
	}
}

// secTargetEvents are what a target's interception goroutine consumes:
// paused document requests, and committed frames (for documents that never
// reach the network).
var secTargetEvents = []string{fetch.RequestPaused.Method, page.FrameNavigated.Method}

// secCheckFrame re-checks a sub-frame's committed URL. data:, blob: and
// similar documents never reach Fetch, so a refused one is replaced by
// about:blank right after it committed (its scripts may have started) and
// the replacement is reported. Main frames are checked by secWatchCommits.
func (w *Security) secCheckFrame(ctx context.Context, t *secTarget, f *cdpproto.Frame) {
	if f.ParentID == "" || f.URL == "" || strings.HasPrefix(f.URL, "http:") || strings.HasPrefix(f.URL, "https:") {
		return // main frame, or a network URL Fetch already decided
	}
	u := f.URL + f.URLFragment
	tid := string(t.sess.TargetID())
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	be := w.secCheck(cctx, u, KindSubframe, tid)
	if be == nil {
		return
	}
	if _, err := cdpproto.Call(cctx, t.sess, page.Navigate, page.NavigateParams{URL: "about:blank", FrameID: f.ID}); err != nil {
		w.log.Debug("blanking a refused frame", zap.String("url", u), zap.Error(err))
	}
	w.secReport(ctx, be, tid, "frame replaced with about:blank after it committed")
}

// secKind classifies a paused document request.
func secKind(t *secTarget, e *fetch.EventRequestPaused) (kind NavigationKind, mainFrame bool) {
	mainFrame = t.kind == session.TargetPage && string(e.FrameID) == string(t.sess.TargetID())
	switch {
	case e.RedirectedRequestID != "" || t.seen[e.RequestID]:
		kind = KindRedirect
	case !mainFrame:
		kind = KindSubframe
	case t.opener != "" && !t.firstDoc:
		kind = KindNewTab
	default:
		kind = KindNavigate
	}
	return kind, mainFrame
}

// secDecide checks one paused request and fails or continues it.
func (w *Security) secDecide(ctx context.Context, t *secTarget, e *fetch.EventRequestPaused) {
	kind, mainFrame := secKind(t, e)
	if len(t.seen) >= 4096 {
		// Bound the memory of a long-lived tab; an old redirect chain then
		// counts as a navigation, which policies treat no more leniently.
		clear(t.seen)
	}
	t.seen[e.RequestID] = true
	firstPopupDoc := mainFrame && t.opener != "" && !t.firstDoc
	if mainFrame {
		t.firstDoc = true
	}
	u := e.Request.URL + e.Request.URLFragment
	tid := string(t.sess.TargetID())
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	be := w.secCheck(cctx, u, kind, tid)
	if be == nil {
		if _, err := cdpproto.Call(cctx, t.sess, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID}); err != nil {
			w.log.Debug("continue request", zap.String("url", u), zap.Error(err))
		}
		return
	}
	if _, err := cdpproto.Call(cctx, t.sess, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); err != nil {
		w.log.Debug("fail request", zap.String("url", u), zap.Error(err))
	}
	how := "request failed before it was sent"
	if firstPopupDoc {
		how = "popup closed"
	}
	w.secReport(ctx, be, tid, how)
	if !firstPopupDoc || !w.secClaimClose(tid) {
		return
	}
	// A popup the page opened at a refused URL: close it. Emitted, not
	// awaited: the bus may be busy with the action that opened it.
	if s := w.secSession(); s != nil && s.Bus() != nil {
		_, _ = bus.Emit(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: tid})
	}
}

// secOnConnected starts the after-commit URL watcher, once per connection
// (it also runs on BrowserReconnected).
func (w *Security) secOnConnected(_ context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	s := w.secSession()
	if s == nil {
		return events.None{}, nil
	}
	conn := s.Conn()
	w.mu.Lock()
	stop := w.stop
	if conn == nil || stop == nil || conn == w.watching {
		w.mu.Unlock()
		return events.None{}, nil
	}
	w.watching = conn
	w.mu.Unlock()
	sub := conn.SubscribeEvents(target.TargetInfoChanged.Method)
	w.wg.Add(1)
	go w.secWatchCommits(stop, conn, sub)
	return events.None{}, nil
}

// secWatchCommits checks every committed URL of the session's tabs.
func (w *Security) secWatchCommits(stop <-chan struct{}, conn *cdp.Conn, sub *cdp.Subscription) {
	defer w.wg.Done()
	defer func() { sub.Cancel() }()
	ctx, cancel := secStopContext(stop)
	defer cancel()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-sub.C():
			if !ok {
				if errors.Is(sub.Err(), cdp.ErrSubscriptionOverflow) {
					sub = conn.SubscribeEvents(target.TargetInfoChanged.Method)
					continue
				}
				return
			}
			var e target.EventTargetInfoChanged
			if ev.Decode(&e) != nil || e.TargetInfo == nil || e.TargetInfo.Type != "page" {
				continue
			}
			w.secCheckCommitted(ctx, e.TargetInfo)
		}
	}
}

func (w *Security) secCheckCommitted(ctx context.Context, ti *target.Info) {
	u := ti.URL
	if u == "" || strings.HasPrefix(u, "chrome-error:") {
		return
	}
	s := w.secSession()
	if s == nil {
		return
	}
	tid := string(ti.TargetID)
	cs, err := s.PageSession(tid)
	if err != nil {
		return // not one of the session's tabs
	}
	kind := KindNavigate
	if ti.OpenerID != "" {
		kind = KindNewTab
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	be := w.secCheck(cctx, u, kind, tid)
	w.mu.Lock()
	if be == nil {
		if w.shown != nil && !blankPages[strings.ToLower(u)] {
			w.shown[tid] = true
		}
		w.mu.Unlock()
		return
	}
	var last *BlockedURLError
	if w.blocks != nil {
		last = w.blocks[tid]
	}
	shown := w.shown[tid]
	w.mu.Unlock()
	if last == nil || last.URL != u {
		// Not already reported by the interception (a non-network URL).
		w.secReport(ctx, be, tid, "refused after commit; tab left for about:blank")
	}
	if ti.OpenerID != "" && !shown && w.secClaimClose(tid) {
		// A popup that never showed an allowed page: close it.
		_, _ = bus.Emit(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: tid})
		return
	}
	if _, err := cdpproto.Call(cctx, cs, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
		w.log.Debug("leaving refused page", zap.String("url", u), zap.Error(err))
	}
}

// secOnTabClosed forgets a closed tab's records.
func (w *Security) secOnTabClosed(_ context.Context, ev events.TabClosedEvent) (events.None, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.blocks, ev.TargetID)
	delete(w.closing, ev.TargetID)
	delete(w.shown, ev.TargetID)
	return events.None{}, nil
}

// secStopContext returns a context cancelled when stop closes or cancel is
// called, whichever comes first; its helper goroutine ends with it.
func secStopContext(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
