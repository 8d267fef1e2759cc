// Package security is the security watchdog (name "security"): it enforces
// a [URLPolicy] — by default a [DomainPolicy] built from the session
// profile's AllowedDomains, ProhibitedDomains, BlockIPAddresses and
// AllowedSchemes — before anything loads. docs/security.md is the threat
// model; in short:
//
//   - NavigateToURL: a guard registered first refuses a forbidden URL before
//     the session's navigation handler runs; the caller gets the
//     *BlockedURLError (errors.Is(err, ErrURLBlocked)).
//   - Request interception (Fetch, at the Request stage) on every tab,
//     popup and cross-site iframe target, set up from a target hook while
//     the target is still paused. In [ScopeRequests] (the default with a
//     domain list) every request is judged, and dedicated, shared and
//     service workers are intercepted too; in [ScopeNavigations] only
//     documents (navigations, redirect hops, iframes, a popup's first
//     document) — and nothing when the profile's policy restricts no host,
//     since enabling interception slows every load (docs/performance.md). A refused request is failed with BlockedByClient before it
//     reaches the network. A navigation the session started then fails
//     with a *session.NavigationError (net::ERR_BLOCKED_BY_CLIENT);
//     [Watchdog.LastBlock] and a BrowserError (Type "NavigationBlocked")
//     say why.
//   - The network guard ([ScopeRequests]; a launched browser, or a browser
//     context of the session's own, Profile.IsolatedContext, in a connected
//     one): the browser sends every connection of the session through a
//     proxy on loopback that asks the policy before it connects, so what
//     interception cannot see — WebSocket handshakes, preconnects — never
//     reaches a refused host, and the browser resolves no names itself. A
//     launched browser gets it as launch flags and keeps WebRTC to proxied
//     paths by a profile preference (no UDP of its own); an isolated
//     context gets it as the context's proxy, which replaces the one the
//     connected browser was started with (WebRTC there is kept to proxied
//     paths only if the browser was launched with [BrowserPreferences], as
//     a pool's shared browser is). A connected browser without
//     IsolatedContext, or a profile whose ExtraFlags set a proxy, runs
//     without it (reported once as a BrowserError "PolicyGuardOff").
//   - A popup whose first document was refused (or whose URL is refused when
//     TabCreated reports it) is closed with CloseTab: a blocked popup would
//     otherwise stay as an empty error page the model could switch to.
//   - NavigationComplete re-checks the tab's final URL, and every URL change
//     of a session tab (Target.targetInfoChanged) is checked after commit
//     (defence in depth): a tab found on a refused URL is sent to
//     about:blank — a popup that never showed an allowed page is closed
//     instead — and reported. When that watcher loses events it re-reads
//     every tab's current URL.
//   - A tab already open on a refused page when the session attaches it (a
//     browser the session connected to) is concealed (session.ConcealTab):
//     not navigated, since it is the user's, but its URL, title and content
//     are kept from the model until it commits an allowed URL.
//
// Scheme coverage: data:, blob:, javascript: and other non-network URLs
// never reach request interception, so they are stopped by the
// NavigateToURL guard (navigations the runtime makes), by Chromium itself
// (renderer-initiated top-level data: navigations are refused by the
// browser) and, for anything that still commits (a blob: page the page
// navigated to, a data: iframe), by the after-commit checks — which act
// after the document started, not before. The requests such documents make
// are intercepted like any other.
//
// Policy errors that are not a *BlockedURLError are wrapped into one (the
// policy failing closed). A refused redirect or popup is known only after
// the session's navigation returned; [Watchdog.LastBlock] has the reason.
//
// Handles: NavigateToURL (guard), TabCreated, NavigationComplete, TabClosed,
// BrowserConnected, BrowserReconnected. Emits: RequestBlocked for every
// refusal (one record per decision, with the resource type, the initiator
// as far as the Referer says, and the layer), BrowserError (Type
// "NavigationBlocked", Details url, kind, target, reason and action — what
// was done about it) for refused documents, BrowserError
// "PolicyGuardOff", and CloseTab for refused popups. It never touches an
// allowed page and never lets a paused request continue without a decision.
package security

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/browseragent/browseragent/internal/follow"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/urlmatch"
)

// Name is the name of the security watchdog and of its bus handlers.
const Name = "security"

// callTimeout bounds one policy decision and the CDP calls that act on it:
// a policy or a browser that hangs must not hold a request for ever.
const callTimeout = 10 * time.Second

// Config configures the security watchdog. The zero value is usable.
type Config struct {
	// Policy decides which URLs may load. It must be safe for concurrent
	// use: it is called from the bus and from the watchdog's goroutines. A
	// policy with a Validate() error method is validated at Attach. Default
	// (nil): a [DomainPolicy] built at Attach from the session profile's
	// AllowedDomains, ProhibitedDomains, BlockIPAddresses and AllowedSchemes.
	Policy URLPolicy
	// Logger receives the blocks and the interception's troubles. Default:
	// the session's logger, named "security".
	Logger *zap.Logger
	// Scope says which requests the policy judges; see [Scope]. Default:
	// the session profile's PolicyScope, and when that is empty
	// [ScopeRequests] if the policy restricts hosts (Policy is set, or the
	// profile has AllowedDomains, ProhibitedDomains or BlockIPAddresses),
	// [ScopeNavigations] otherwise.
	Scope Scope
	// Dial opens the network guard's upstream connections. Default: a
	// net.Dialer with a 30 s timeout. Tests and deployments with their own
	// name resolution set it; it is called only for allowed hosts.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Scope says which requests a [URLPolicy] judges.
type Scope string

const (
	// ScopeRequests judges every request of every target — documents,
	// sub-resources, the requests of dedicated, shared and service
	// workers — by request interception before it is sent. When the
	// session launches the browser, a network guard (a proxy on loopback
	// the browser must use) also refuses connections to refused hosts, which
	// covers what interception cannot see: WebSocket handshakes,
	// preconnects, DNS prefetch. See docs/security.md.
	ScopeRequests Scope = "requests"
	// ScopeNavigations judges documents only: navigations, redirects,
	// popups and iframes (the mode before the requests scope existed).
	ScopeNavigations Scope = "navigations"
)

// ErrUnknownScope is returned by Attach for a scope other than the two.
var ErrUnknownScope = errors.New("security: unknown policy scope")

// Watchdog enforces a [URLPolicy]; see the package documentation.
type Watchdog struct {
	cfg Config

	mu          sync.Mutex
	sess        *session.Session
	log         *zap.Logger
	active      URLPolicy
	group       *routine.Group              // interception consumers and the commit watcher
	blocks      map[string]*BlockedURLError // last block per target id
	closing     map[string]bool             // popups whose close was requested
	shown       map[string]bool             // tabs that committed an allowed page
	removeHook  func()
	watching    *cdp.Conn // the connection the commit watcher listens on
	scope       Scope
	noIntercept bool   // navigations scope, no host restricted: no interception at all
	guard       *guard // nil unless the requests scope runs the guard (launch flags or the context's proxy)
	guardOff    string // why the requests scope runs without the guard
}

// intercepted is the interception state of one target. Only its consumer
// goroutine touches it.
type intercepted struct {
	sess     *cdp.Session
	kind     session.TargetKind
	tab      string // the tab the target belongs to ("" for shared and service workers)
	opener   string
	firstDoc bool                     // a main-frame document was seen
	seen     map[fetch.RequestID]bool // request ids paused before (redirect hops)
}

// New returns the security watchdog.
func New(cfg Config) *Watchdog {
	return &Watchdog{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Policy returns the policy in force: Config.Policy, or the one built from
// the profile at Attach (nil before the first Attach when Config.Policy is
// nil).
func (w *Watchdog) Policy() URLPolicy {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active != nil {
		return w.active
	}
	return w.cfg.Policy
}

// LastBlock returns the last refusal of a document request in the target
// (a tab or iframe target id), or nil. It explains a navigation that failed
// with net::ERR_BLOCKED_BY_CLIENT.
func (w *Watchdog) LastBlock(targetID string) *BlockedURLError {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.blocks[targetID]; b != nil {
		c := *b
		return &c
	}
	return nil
}

// Attach implements session.Watchdog: it validates the policy, then
// registers the NavigateToURL guard (first), the TabCreated,
// NavigationComplete, TabClosed and connection handlers and the target hook
// that installs request interception. An invalid policy (a domain pattern
// that does not parse) fails Attach, and so the session's Start, with an
// error wrapping urlmatch.ErrInvalidPattern that names the pattern.
func (w *Watchdog) Attach(s *session.Session) (err error) {
	p := w.cfg.Policy
	if p == nil {
		prof := s.Profile()
		dp := &DomainPolicy{
			Allowed:          append([]string(nil), prof.AllowedDomains...),
			Prohibited:       append([]string(nil), prof.ProhibitedDomains...),
			BlockIPAddresses: prof.BlockIPAddresses,
			AllowedSchemes:   append([]string(nil), prof.AllowedSchemes...),
		}
		// Named as the profile's fields, which is what the user wrote.
		if _, _, err := dp.compile("AllowedDomains", "ProhibitedDomains"); err != nil {
			return err
		}
		p = dp
	} else if v, ok := p.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	scope, err := w.scopeFor(s.Profile())
	if err != nil {
		return err
	}
	var (
		g        *guard
		guardOff string
	)
	if scope == ScopeRequests {
		switch {
		case !s.Launches() && !s.Profile().IsolatedContext:
			guardOff = "the session connected to a browser it did not launch, so its proxy setting cannot be changed"
		case proxyFlag(s.Profile().ExtraFlags) != "":
			// Also when connecting: a pool's shared browser is launched
			// with the profile's flags, and its proxy is the user's choice.
			guardOff = "Profile.ExtraFlags sets " + proxyFlag(s.Profile().ExtraFlags) + ", which the guard would replace"
		default:
			g, err = newGuard(w.cfg.Dial, w.guardDecide, w.guardRefused, log.Named("guard"))
			if err != nil {
				return fmt.Errorf("security: starting the network guard: %w", err)
			}
			defer func() {
				if err != nil { // not attached: no Detach will close it
					_ = g.close(context.Background())
				}
			}()
			if s.Launches() {
				s.AddLaunchFlags(g.flags()...)
				s.AddLaunchPreference(webRTCPolicyPref, webRTCProxiedOnly)
			} else {
				// A context of the session's own in a browser it connected
				// to takes a proxy of its own (Target.createBrowserContext).
				s.SetContextProxy(g.proxyServer(), guardBypass)
			}
		}
	}
	w.mu.Lock()
	w.sess = s
	w.active = p
	w.log = log
	w.scope = scope
	// Enabling Fetch, even for documents only, slows every page load by
	// about a quarter (docs/performance.md). A policy that restricts no
	// host refuses only URLs that never reach the network (schemes), which
	// the NavigateToURL guard and the after-commit checks judge, so
	// interception is left off.
	w.noIntercept = scope == ScopeNavigations && w.cfg.Policy == nil && !restrictsHosts(s.Profile())
	w.guard = g
	w.guardOff = guardOff
	w.group = routine.New(context.Background())
	w.blocks = map[string]*BlockedURLError{}
	w.closing = map[string]bool{}
	w.shown = map[string]bool{}
	w.watching = nil
	w.mu.Unlock()

	if err := session.Handle(s, events.NavigateToURL, Name, w.onNavigate, bus.Guard(), bus.First()); err != nil {
		return err
	}
	if err := session.Handle(s, events.TabCreated, Name, w.onTabCreated); err != nil {
		return err
	}
	if err := session.Handle(s, events.NavigationComplete, Name, w.onNavigationComplete); err != nil {
		return err
	}
	if err := session.Handle(s, events.TabClosed, Name, w.onTabClosed); err != nil {
		return err
	}
	if err := session.Handle(s, events.BrowserConnected, Name, w.onConnected); err != nil {
		return err
	}
	if err := session.Handle(s, events.BrowserReconnected, Name, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
		return w.onConnected(ctx, events.BrowserConnectedEvent{})
	}); err != nil {
		return err
	}
	remove := s.AddTargetHook(w.hook)
	w.mu.Lock()
	w.removeHook = remove
	w.mu.Unlock()
	return nil
}

// Detach implements session.Detacher: it removes the target hook, stops
// (and waits for) the interception consumers and the commit watcher, and
// closes the network guard.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g, remove, gd := w.group, w.removeHook, w.guard
	w.removeHook, w.guard = nil, nil
	w.mu.Unlock()
	if remove != nil {
		remove()
	}
	var errs []error
	if g != nil {
		errs = append(errs, g.Stop(ctx))
	}
	if gd != nil {
		errs = append(errs, gd.close(ctx))
	}
	return errors.Join(errs...)
}

// Scope returns the scope in force since the last Attach ("" before).
func (w *Watchdog) Scope() Scope {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scope
}

// scopeFor resolves Config.Scope and the profile's PolicyScope.
func (w *Watchdog) scopeFor(prof session.Profile) (Scope, error) {
	scope := w.cfg.Scope
	if scope == "" {
		scope = Scope(strings.ToLower(strings.TrimSpace(prof.PolicyScope)))
	}
	switch scope {
	case ScopeRequests, ScopeNavigations:
		return scope, nil
	case "":
		if w.cfg.Policy != nil || restrictsHosts(prof) {
			return ScopeRequests, nil
		}
		return ScopeNavigations, nil
	}
	return "", fmt.Errorf("%w %q (want %q or %q)", ErrUnknownScope, scope, ScopeRequests, ScopeNavigations)
}

// BrowserPreferences are the profile preferences a browser needs for the
// network guard of sessions in contexts of their own (Profile.
// IsolatedContext in a browser they connect to, such as a pool's shared
// browser) to hold for WebRTC too, which a context's proxy cannot do: set
// them when launching that browser (cdp.LaunchOptions.Preferences). Nil
// when a session with profile p and the default Config would not run the
// guard (the "navigations" scope, or ExtraFlags that set a proxy). They
// apply to every context of the browser.
func BrowserPreferences(p session.Profile) map[string]any {
	if proxyFlag(p.ExtraFlags) != "" {
		return nil
	}
	if scope, err := New(Config{}).scopeFor(p); err != nil || scope != ScopeRequests {
		return nil
	}
	return map[string]any{webRTCPolicyPref: webRTCProxiedOnly}
}

// restrictsHosts reports whether the profile's policy refuses any host.
func restrictsHosts(prof session.Profile) bool {
	return len(prof.AllowedDomains) > 0 || len(prof.ProhibitedDomains) > 0 || prof.BlockIPAddresses
}

// proxyFlag returns the user's proxy switch in flags, if any.
func proxyFlag(flags []string) string {
	for _, f := range flags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch name {
		case "proxy-server", "proxy-pac-url", "proxy-auto-detect", "no-proxy-server":
			return "--" + name
		}
	}
	return ""
}

// guardDecide is the guard's question to the policy.
func (w *Watchdog) guardDecide(ctx context.Context, rawURL string) *BlockedURLError {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return w.check(cctx, rawURL, KindConnection, "")
}

// guardRefused reports a connection the guard refused.
func (w *Watchdog) guardRefused(be *BlockedURLError, what string) {
	g := w.routines()
	if g == nil {
		return
	}
	w.reportRequest(g.Context(), be, requestInfo{resourceType: "Connection", layer: "guard", note: what})
}

// routines returns the group of the current attachment (nil before Attach).
func (w *Watchdog) routines() *routine.Group {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.group
}

// check asks the policy; a non-nil result is the refusal as a
// *BlockedURLError (a policy's other errors are wrapped into one).
func (w *Watchdog) check(ctx context.Context, u string, kind NavigationKind, targetID string) *BlockedURLError {
	return w.checkRequest(ctx, URLRequest{URL: u, Kind: kind, TargetID: targetID})
}

// checkRequest is check with every field of the request.
func (w *Watchdog) checkRequest(ctx context.Context, req URLRequest) *BlockedURLError {
	u, kind := req.URL, req.Kind
	p := w.Policy()
	if p == nil {
		return nil
	}
	err := p.CheckURL(ctx, req)
	if err == nil {
		return nil
	}
	var be *BlockedURLError
	if errors.As(err, &be) {
		return be
	}
	return &BlockedURLError{URL: u, Kind: kind, Reason: err.Error()}
}

// report records a block and emits the BrowserError the trace and the
// model see.
func (w *Watchdog) report(ctx context.Context, be *BlockedURLError, targetID, how string) {
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

// requestInfo describes a refused request for its RequestBlocked record.
type requestInfo struct {
	targetID, tab, resourceType, initiator string
	layer                                  string // "policy", "interception" or "guard"
	note                                   string // for the log: what was refused ("tunnel", "http")
}

// reportRequest emits the RequestBlocked record of one refusal (emitted,
// not awaited: it may come from an interception goroutine while the bus is
// busy with the action that caused the request).
func (w *Watchdog) reportRequest(ctx context.Context, be *BlockedURLError, ri requestInfo) {
	s := w.session()
	if ce := w.logger().Check(zap.DebugLevel, "request blocked"); ce != nil {
		ce.Write(zap.String("url", be.URL), zap.String("type", ri.resourceType), zap.String("layer", ri.layer),
			zap.String("target", ri.targetID), zap.String("reason", be.Reason), zap.String("what", ri.note))
	}
	if s == nil || s.Bus() == nil {
		return
	}
	_, _ = bus.Emit(ctx, s.Bus(), events.RequestBlocked, events.RequestBlockedEvent{
		TargetID:     ri.targetID,
		TabID:        ri.tab,
		URL:          be.URL,
		Host:         urlmatch.Host(be.URL),
		ResourceType: ri.resourceType,
		Initiator:    ri.initiator,
		Reason:       be.Reason,
		Layer:        ri.layer,
	})
}

// onNavigate is the NavigateToURL guard: a refused URL stops the chain.
func (w *Watchdog) onNavigate(ctx context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
	tid := ""
	if s := w.session(); s != nil && !ev.NewTab {
		tid = s.FocusedTab()
	}
	if be := w.check(ctx, ev.URL, KindNavigate, tid); be != nil {
		w.report(ctx, be, tid, "navigation refused before it started")
		w.reportRequest(ctx, be, requestInfo{targetID: tid, tab: tid, resourceType: "Document", initiator: "agent", layer: "policy"})
		return events.NavigateResult{TargetID: tid}, be
	}
	return events.NavigateResult{}, nil
}

func (w *Watchdog) session() *session.Session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sess
}

// claimClose reports whether the caller is the first to close targetID.
func (w *Watchdog) claimClose(targetID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing == nil || w.closing[targetID] {
		return false
	}
	w.closing[targetID] = true
	return true
}

// onTabCreated closes the session's popups whose URL is refused or whose
// first document was already blocked by interception.
func (w *Watchdog) onTabCreated(ctx context.Context, ev events.TabCreatedEvent) (events.None, error) {
	if ev.OpenerID == "" {
		return events.None{}, nil
	}
	s := w.session()
	if s == nil {
		return events.None{}, nil
	}
	// A foreign popup (a connected browser's tab that a tab of the user or
	// of another session opened) is not the session's to close: its
	// refused requests are blocked, and the commit watcher blanks it if a
	// refused page commits anyway.
	own := s.Owns(ev.TargetID)
	refused := false
	if ev.URL != "" {
		if be := w.check(ctx, ev.URL, KindNewTab, ev.TargetID); be != nil {
			action := "popup closed"
			if !own {
				action = "popup of a foreign tab: left open, its requests refused"
			}
			w.report(ctx, be, ev.TargetID, action)
			refused = true
		}
	}
	if !refused {
		if b := w.LastBlock(ev.TargetID); b != nil && b.Kind == KindNewTab {
			refused = true
		}
	}
	if !refused || !own || !w.claimClose(ev.TargetID) {
		return events.None{}, nil
	}
	_, err := bus.Call(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: ev.TargetID})
	if err != nil && errors.Is(err, session.ErrTabNotFound) {
		err = nil // already gone
	}
	return events.None{}, err
}

// onNavigationComplete re-checks where the tab really is and leaves a
// refused page for about:blank.
func (w *Watchdog) onNavigationComplete(ctx context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	s := w.session()
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
		be := w.check(ctx, u, KindNavigate, ev.TargetID)
		if be == nil {
			continue
		}
		if last := w.LastBlock(ev.TargetID); last == nil || last.URL != u {
			// Not already reported (and recorded more precisely) by the
			// interception.
			w.report(ctx, be, ev.TargetID, "tab left for about:blank")
		}
		if _, err := cdpproto.Call(ctx, cs, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
			return events.None{}, err
		}
		return events.None{}, nil
	}
	return events.None{}, nil
}

// hook installs request interception on a tab, frame or (in the requests
// scope) worker target while it is paused: Document requests only in the
// navigations scope, every request in the requests scope. Fetch is handled
// by the browser process, so Fetch.enable is answered before the target
// resumes (checked by test), and its first request is already judged.
func (w *Watchdog) hook(ctx context.Context, at session.AttachedTarget) error {
	all := w.Scope() == ScopeRequests
	if at.Kind == session.TargetOther && (!all || !interceptable(at.Session)) {
		return nil
	}
	g := w.routines()
	if g == nil || g.Stopped() {
		return nil
	}
	if at.Kind == session.TargetPage {
		w.checkAdopted(ctx, at)
	}
	w.mu.Lock()
	noIntercept := w.noIntercept
	w.mu.Unlock()
	t := &intercepted{sess: at.Session, kind: at.Kind, tab: tabOf(at.Session), opener: at.OpenerID, seen: map[fetch.RequestID]bool{}}
	// Subscribed before Fetch.enable, so that the first paused request (a
	// popup's first document) cannot be missed. Without interception the
	// consumer still checks the frames that commit without a request.
	sub := at.Session.SubscribeEvents(targetEvents...)
	if !noIntercept {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		pattern := &fetch.RequestPattern{URLPattern: "*", RequestStage: fetch.RequestStageRequest}
		if !all {
			pattern.ResourceType = network.ResourceTypeDocument
		}
		_, err := cdpproto.Call(cctx, at.Session, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{pattern}})
		if err != nil {
			sub.Cancel()
			return fmt.Errorf("security: enabling request interception in target %s: %w", at.Session.TargetID(), err)
		}
	}
	name := "security interception " + string(at.Session.TargetID())
	if err := g.Go(name, func(ctx context.Context) { w.intercept(ctx, t, sub) }); err != nil {
		// Detached meanwhile (the session is stopping): the target's
		// requests stay paused, undecided, until the connection closes.
		sub.Cancel()
	}
	return nil
}

// interceptable reports whether a target other than a page or frame makes
// requests of its own that interception can see: workers of every kind.
func interceptable(cs *cdp.Session) bool {
	info := cs.TargetInfo()
	if info == nil {
		return false
	}
	switch info.Type {
	case "worker", "shared_worker", "service_worker":
		return true
	}
	return false
}

// tabOf returns the tab a target belongs to: itself for a tab, the nearest
// page above it for a frame or dedicated worker, "" for a target of the
// browser's own (shared and service workers).
func tabOf(cs *cdp.Session) string {
	for c := cs; c != nil; c = c.Parent() {
		if info := c.TargetInfo(); info != nil && info.Type == "page" {
			return string(c.TargetID())
		}
	}
	return ""
}

// checkAdopted judges a tab that was already on a page when the session
// attached it (a browser the session connected to): a refused one is
// concealed — its URL and title hidden from the model — rather than
// navigated, since it is not the session's to change. It is shown again
// when it commits an allowed URL.
func (w *Watchdog) checkAdopted(ctx context.Context, at session.AttachedTarget) {
	u := at.URL
	if u == "" || blankPages[strings.ToLower(u)] || strings.HasPrefix(u, "chrome-error:") {
		return // a new tab, judged when it loads
	}
	s := w.session()
	if s == nil {
		return
	}
	if at.OpenerID != "" && s.Running() {
		// A popup of the session's tabs, judged when it loads. One found
		// at connect is the user's, and judged now like any other tab.
		return
	}
	tid := string(at.Session.TargetID())
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	be := w.check(cctx, u, KindNavigate, tid)
	if be == nil {
		return
	}
	s.ConcealTab(tid, "(a tab on a page the URL policy refuses; navigate it elsewhere to use it)")
	w.report(ctx, be, tid, "tab found open on a refused page: concealed")
}

// intercept answers the target's paused requests until the
// target goes away or the watchdog detaches. It runs on its own goroutine so
// that the CDP reader never waits for a policy.
func (w *Watchdog) intercept(ctx context.Context, t *intercepted, first *cdp.Subscription) {
	handle := func(ev cdp.Event) {
		if ev.Method == page.FrameNavigated.Method {
			var e page.EventFrameNavigated
			if ev.Decode(&e) == nil && e.Frame != nil {
				w.checkFrame(ctx, t, e.Frame)
			}
			return
		}
		var e fetch.EventRequestPaused
		if ev.Decode(&e) != nil || e.Request == nil {
			return
		}
		w.decide(ctx, t, &e)
	}
	_ = follow.Run(ctx, first,
		func() *cdp.Subscription { return t.sess.SubscribeEvents(targetEvents...) },
		handle,
		follow.Options{Name: "security interception", Logger: w.logger(), Resync: func(ctx context.Context) { w.resyncTarget(ctx, t) }})
}

// resyncTarget runs after the target's event subscription overflowed and
// was replaced. What was lost, and what can be made up for:
//
//   - Fetch.requestPaused: not recoverable. CDP has no call that lists
//     paused requests, and one can be answered only with its id, so a lost
//     request stays paused: nothing was sent (the loss fails closed), but
//     the load hangs until the session's navigation times out or a new
//     navigation of the frame (or closing the tab) cancels it. Fetch is not
//     disabled to release them: a request released that way would go on
//     without a decision. The loss is logged as an error so that it is seen.
//   - The bookkeeping fed by those events (redirect hops, a popup's first
//     document) may be off: a later hop counts as a navigation, which a
//     policy treats no more leniently.
//   - Page.frameNavigated: recoverable. Every frame's committed URL is read
//     from Page.getFrameTree and checked as if its commit had been seen.
func (w *Watchdog) resyncTarget(ctx context.Context, t *intercepted) {
	tid := string(t.sess.TargetID())
	w.logger().Error("request interception lost events: a document request whose pause was lost stays paused "+
		"(never sent) until its frame navigates again or the tab closes",
		zap.String("target", tid))
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	tree, err := cdpproto.Call(cctx, t.sess, page.GetFrameTree, cdpproto.Empty{})
	cancel()
	if err != nil {
		w.logger().Warn("resynchronising frames after lost events", zap.String("target", tid), zap.Error(err))
		return
	}
	var walk func(n *page.FrameTree)
	walk = func(n *page.FrameTree) {
		if n == nil || ctx.Err() != nil {
			return
		}
		if n.Frame != nil {
			w.checkFrame(ctx, t, n.Frame)
		}
		for _, c := range n.ChildFrames {
			walk(c)
		}
	}
	walk(tree.FrameTree)
}

func (w *Watchdog) logger() *zap.Logger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return zap.NewNop()
	}
	return w.log
}

// targetEvents are what a target's interception goroutine consumes:
// paused document requests, and committed frames (for documents that never
// reach the network).
var targetEvents = []string{fetch.RequestPaused.Method, page.FrameNavigated.Method}

// checkFrame re-checks a sub-frame's committed URL. data:, blob: and
// similar documents never reach Fetch, so a refused one is replaced by
// about:blank right after it committed (its scripts may have started) and
// the replacement is reported. Main frames are checked by watchCommits.
func (w *Watchdog) checkFrame(ctx context.Context, t *intercepted, f *cdpproto.Frame) {
	if f.ParentID == "" || f.URL == "" || strings.HasPrefix(f.URL, "http:") || strings.HasPrefix(f.URL, "https:") {
		return // main frame, or a network URL Fetch already decided
	}
	u := f.URL + f.URLFragment
	tid := string(t.sess.TargetID())
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	be := w.check(cctx, u, KindSubframe, tid)
	if be == nil {
		return
	}
	if _, err := cdpproto.Call(cctx, t.sess, page.Navigate, page.NavigateParams{URL: "about:blank", FrameID: f.ID}); err != nil {
		w.logger().Debug("blanking a refused frame", zap.String("url", u), zap.Error(err))
	}
	w.report(ctx, be, tid, "frame replaced with about:blank after it committed")
}

// classify classifies a paused document request.
func classify(t *intercepted, e *fetch.EventRequestPaused) (kind NavigationKind, mainFrame bool) {
	if e.ResourceType != network.ResourceTypeDocument {
		return KindSubresource, false
	}
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

// decide checks one paused request and fails or continues it.
func (w *Watchdog) decide(ctx context.Context, t *intercepted, e *fetch.EventRequestPaused) {
	kind, mainFrame := classify(t, e)
	if len(t.seen) >= 4096 {
		// Bound the memory of a long-lived tab; an old redirect chain then
		// counts as a navigation, which policies treat no more leniently.
		clear(t.seen)
	}
	if kind != KindSubresource {
		t.seen[e.RequestID] = true
	}
	firstPopupDoc := mainFrame && t.opener != "" && !t.firstDoc
	if mainFrame {
		t.firstDoc = true
	}
	u := e.Request.URL + e.Request.URLFragment
	tid := string(t.sess.TargetID())
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	be := w.checkRequest(cctx, URLRequest{URL: u, Kind: kind, TargetID: tid, ResourceType: string(e.ResourceType)})
	// The answer is sent, not awaited: a page with hundreds of requests
	// would otherwise wait a round trip per request, one after another.
	// Sends from this goroutine reach the browser in order.
	if be == nil {
		if r := t.sess.Send(cctx, fetch.CommandContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID}); r.Err() != nil {
			w.logger().Debug("continue request", zap.String("url", u), zap.Error(r.Err()))
		}
		return
	}
	if r := t.sess.Send(cctx, fetch.CommandFailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); r.Err() != nil {
		w.logger().Debug("fail request", zap.String("url", u), zap.Error(r.Err()))
	}
	w.reportRequest(ctx, be, requestInfo{targetID: tid, tab: t.tab, resourceType: string(e.ResourceType), initiator: referer(e.Request.Headers), layer: "interception"})
	if kind == KindSubresource {
		return // reported by RequestBlocked alone: a page may make hundreds
	}
	how := "request failed before it was sent"
	if firstPopupDoc {
		how = "popup closed"
	}
	w.report(ctx, be, tid, how)
	if !firstPopupDoc || !w.claimClose(tid) {
		return
	}
	// A popup the page opened at a refused URL: close it. Emitted, not
	// awaited: the bus may be busy with the action that opened it.
	if s := w.session(); s != nil && s.Bus() != nil {
		_, _ = bus.Emit(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: tid})
	}
}

// referer is the request's Referer header: the document or script that
// made it, which is as much as a paused request says of its initiator.
func referer(h network.Headers) string {
	for k, v := range h {
		if strings.EqualFold(k, "Referer") {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	return ""
}

// onConnected starts the after-commit URL watcher, once per connection
// (it also runs on BrowserReconnected).
func (w *Watchdog) onConnected(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	s := w.session()
	if s == nil {
		return events.None{}, nil
	}
	conn := s.Conn()
	w.mu.Lock()
	g := w.group
	if conn == nil || g == nil || conn == w.watching {
		w.mu.Unlock()
		return events.None{}, nil
	}
	w.watching = conn
	guardOff := w.guardOff
	w.guardOff = "" // reported once per Attach
	w.mu.Unlock()
	if guardOff != "" {
		w.logger().Warn("URL policy: requests are intercepted, but the network guard is off: WebSocket handshakes and preconnects to refused hosts are not stopped", zap.String("why", guardOff))
		_, _ = bus.Emit(ctx, s.Bus(), events.BrowserError, events.BrowserErrorEvent{
			Type:    "PolicyGuardOff",
			Message: "the URL policy's network guard is off: " + guardOff,
			Details: map[string]string{"reason": guardOff},
		})
	}
	// Subscribed here, not on the goroutine, so that no commit after the
	// connection was reported is missed.
	sub := conn.SubscribeEvents(target.TargetInfoChanged.Method)
	if err := g.Go("security commit watcher", func(ctx context.Context) { w.watchCommits(ctx, conn, sub) }); err != nil {
		sub.Cancel()
	}
	return events.None{}, nil
}

// watchCommits checks every committed URL of the session's tabs until the
// connection ends or the watchdog detaches.
func (w *Watchdog) watchCommits(ctx context.Context, conn *cdp.Conn, first *cdp.Subscription) {
	_ = follow.Run(ctx, first,
		func() *cdp.Subscription { return conn.SubscribeEvents(target.TargetInfoChanged.Method) },
		func(ev cdp.Event) {
			var e target.EventTargetInfoChanged
			if ev.Decode(&e) != nil || e.TargetInfo == nil || e.TargetInfo.Type != "page" {
				return
			}
			w.checkCommitted(ctx, e.TargetInfo)
		},
		follow.Options{Name: "security commit watcher", Logger: w.logger(), Resync: func(ctx context.Context) { w.resyncCommits(ctx, conn) }})
}

// resyncCommits makes up for commits the watcher lost: it lists the
// browser's tabs (Target.getTargets) and checks each of the session's tabs
// on its current URL as if its commit had been seen — a tab on a refused
// URL is left for about:blank (a popup that never showed an allowed page
// is closed) and reported. Intermediate URLs a tab passed through while
// events were lost cannot be recovered; the one it is on now is what
// matters.
func (w *Watchdog) resyncCommits(ctx context.Context, conn *cdp.Conn) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := cdpproto.Call(cctx, conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	cancel()
	if err != nil {
		w.logger().Warn("listing tabs to re-check their URLs after lost events", zap.Error(err))
		return
	}
	for _, ti := range res.TargetInfos {
		if ctx.Err() != nil {
			return
		}
		if ti.Type == "page" {
			w.checkCommitted(ctx, ti) // skips targets that are not the session's tabs
		}
	}
}

func (w *Watchdog) checkCommitted(ctx context.Context, ti *target.Info) {
	u := ti.URL
	if u == "" || strings.HasPrefix(u, "chrome-error:") {
		return
	}
	s := w.session()
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
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	be := w.check(cctx, u, kind, tid)
	if s.Concealed(tid) != "" {
		if be == nil {
			s.ConcealTab(tid, "") // navigated away from the refused page
		}
		return // not the session's tab to navigate
	}
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
		w.report(ctx, be, tid, "refused after commit; tab left for about:blank")
	}
	if ti.OpenerID != "" && !shown && s.Owns(tid) && w.claimClose(tid) {
		// A popup of the session's that never showed an allowed page:
		// close it. A foreign one is left for about:blank.
		_, _ = bus.Emit(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: tid})
		return
	}
	if _, err := cdpproto.Call(cctx, cs, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
		w.logger().Debug("leaving refused page", zap.String("url", u), zap.Error(err))
	}
}

// onTabClosed forgets a closed tab's records.
func (w *Watchdog) onTabClosed(_ context.Context, ev events.TabClosedEvent) (events.None, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.blocks, ev.TargetID)
	delete(w.closing, ev.TargetID)
	delete(w.shown, ev.TargetID)
	return events.None{}, nil
}
