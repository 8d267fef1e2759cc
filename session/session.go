// Package session owns one browser — launched or connected — with its CDP
// connection, its event bus and its watchdogs. Its public methods dispatch
// events on the bus; watchdogs and the session's own handlers do the work.
//
// Lifecycle: New, then Start; Stop ends everything Start began (browser
// process, goroutines, temporary profile) and Start may be called again.
// Each Start makes a fresh bus and attaches the watchdogs to it, so handlers
// registered directly on a previous bus do not survive a restart; register
// them through a [Watchdog] instead.
package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/follow"
)

// Option configures a Session.
type Option func(*Session)

// WithLogger sets the logger; the default is zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return func(s *Session) {
		if l != nil {
			s.log = l
		}
	}
}

// WithWatchdogs adds watchdogs, attached in the order given on every Start.
// A watchdog replaces an earlier one of the same name at its position.
func WithWatchdogs(ws ...Watchdog) Option {
	return func(s *Session) {
		for _, w := range ws {
			if i := slices.IndexFunc(s.watchdogs, func(o Watchdog) bool { return o.Name() == w.Name() }); i >= 0 {
				s.watchdogs[i] = w
				continue
			}
			s.watchdogs = append(s.watchdogs, w)
		}
	}
}

// WithoutWatchdogs removes watchdogs by name (for example a default one).
func WithoutWatchdogs(names ...string) Option {
	return func(s *Session) {
		s.watchdogs = slices.DeleteFunc(s.watchdogs, func(w Watchdog) bool { return slices.Contains(names, w.Name()) })
	}
}

// WithBusOptions passes options (observers, history size) to the bus made
// on every Start.
func WithBusOptions(opts ...bus.Option) Option {
	return func(s *Session) { s.busOpts = append(s.busOpts, opts...) }
}

// WithBusHook calls fn with every new bus right after Start creates it,
// before any event is dispatched: the place to attach a trace observer so
// that it sees the start-up events too.
func WithBusHook(fn func(*bus.Bus)) Option {
	return func(s *Session) { s.busHooks = append(s.busHooks, fn) }
}

// Session is one browser session. Its methods are safe for concurrent use.
type Session struct {
	profile   Profile
	log       *zap.Logger
	watchdogs []Watchdog
	busOpts   []bus.Option
	busHooks  []func(*bus.Bus)

	// life serialises Start, Stop, Restart and Reconnect: a one-slot
	// semaphore, so that waiting for it honours a context (a reconnect
	// attempt cancelled by Stop must not wait for Stop to finish).
	life chan struct{}

	mu      sync.Mutex
	running bool
	bus     *bus.Bus
	browser *cdp.Browser // nil when connected to a remote browser
	conn    *cdp.Conn
	// bctx is the browser context the session made for itself
	// (Profile.IsolatedContext), "" for the default context.
	bctx cdpproto.BrowserContextID
	// ctxProxy and ctxBypass are the proxy a watchdog set for that
	// context (SetContextProxy).
	ctxProxy, ctxBypass string

	attached []Watchdog
	hooks    []hookEntry
	hookSeq  int
	flags    []string       // launch flags watchdogs added in Attach
	prefs    map[string]any // launch preferences watchdogs added in Attach
	tabs     map[target.ID]*tab
	tabOrder []target.ID // creation order
	frames   map[target.SessionID]*AttachedTarget
	focus    target.ID
	focusLog []target.ID        // earlier focused tabs, most recent last
	gone     map[target.ID]bool // targets destroyed (possibly before attaching)
	quiet    map[target.ID]bool // tabs re-attached by Reconnect: not reported as new
	created  map[target.ID]bool // tabs the session created (closed on Stop when remote)
	// own holds the session's tabs, open or since closed, from Start on
	// (see Owns): every tab of a launched browser; in a connected one the
	// tabs it created or adopted and those they opened. It survives a
	// Reconnect, as created does.
	own       map[target.ID]bool
	reopening bool          // the last own tab closed: a replacement is being opened
	changed   chan struct{} // closed and replaced on every tab-model change
	selector  *SelectorMap
	stopCh    chan struct{} // closed by Stop: ends the tracker
	// Health of the connection, for Ready: when it was found lost, whether
	// a reconnect is under way (BrowserReconnecting), and why the browser
	// is gone for good (BrowserLost), all reset by a successful Reconnect.
	lostAt        time.Time
	reconnecting  bool
	lostFor       string
	restoring     bool                    // Reconnect swapped the connection and attaches the tabs again
	interrupts    map[target.ID][]string  // why a tab's script was stopped, until taken
	lastInterrupt map[target.ID]time.Time // when a tab's script was last interrupted
	scriptsOff    map[target.ID]bool      // tabs whose scripts DisableScripts turned off
	net           *netLog                 // the requests of the session's targets (network.go)
	wg            sync.WaitGroup
}

type hookEntry struct {
	id int
	fn TargetHook
}

// tab is the session's view of one page target.
type tab struct {
	id     target.ID
	sess   *cdp.Session
	url    string
	title  string
	opener target.ID
	// concealed replaces the tab's URL and title in Tabs (a tab found on
	// a refused origin); "" shows the tab as it is.
	concealed string
	ready     bool // attach hooks ran
	closed    bool
	// setupErr is set when the tab's setup commands got no answer in
	// time: its renderer is gone or hung (a crashed tab of a browser we
	// connected to attaches but never answers).
	setupErr error
}

// New returns a stopped session for the profile. Nothing starts until Start.
func New(p Profile, opts ...Option) *Session {
	s := &Session{profile: p.withDefaults(), log: zap.NewNop(), life: make(chan struct{}, 1), net: newNetLog()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Profile returns the session's profile, defaults applied.
func (s *Session) Profile() Profile { return s.profile }

// BrowserContextID is the browser context the session works in while it
// runs with Profile.IsolatedContext, "" for the browser's default context
// (and before Start).
func (s *Session) BrowserContextID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.bctx)
}

// Logger returns the session's logger (never nil).
func (s *Session) Logger() *zap.Logger { return s.log }

// Bus returns the bus of the running session, nil before the first Start.
// It changes on every Start.
func (s *Session) Bus() *bus.Bus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bus
}

// Conn returns the CDP connection of the running session, or nil.
func (s *Session) Conn() *cdp.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Browser returns the launched browser process, or nil when the session is
// connected to a browser it did not launch.
func (s *Session) Browser() *cdp.Browser {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.browser
}

// Running reports whether Start succeeded and Stop has not run since.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// AddTargetHook registers a hook run for every target attached from now on
// (tabs, popups, cross-site iframes) before it resumes. Watchdogs call it
// from Attach; the hooks are dropped on Stop. The returned func removes it.
func (s *Session) AddTargetHook(h TargetHook) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookSeq++
	id := s.hookSeq
	s.hooks = append(s.hooks, hookEntry{id: id, fn: h})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.hooks = slices.DeleteFunc(s.hooks, func(e hookEntry) bool { return e.id == id })
	}
}

// AddLaunchFlags adds command-line switches to the browser the session
// launches. Watchdogs call it from Attach, which runs before the launch;
// the flags come after Profile.ExtraFlags (a later switch wins in
// Chromium). They are dropped on Stop, and ignored when the session
// connects to a running browser (check [Session.Launches]).
func (s *Session) AddLaunchFlags(flags ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flags = append(s.flags, flags...)
}

// AddLaunchPreference sets a profile preference (dotted name, such as
// "webrtc.ip_handling_policy") of the browser the session launches, for
// settings that have no switch (see cdp.LaunchOptions.Preferences; a
// Profile.UserDataDir keeps it). Like AddLaunchFlags: called from Attach,
// dropped on Stop, ignored when the session connects to a running browser.
func (s *Session) AddLaunchPreference(name string, value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefs == nil {
		s.prefs = map[string]any{}
	}
	s.prefs[name] = value
}

// Launches reports whether Start launches the browser (no Profile.CDPURL),
// so that launch flags take effect.
func (s *Session) Launches() bool { return s.profile.CDPURL == "" }

// Start launches (or connects to) the browser, attaches the watchdogs to a
// new bus, opens or adopts a tab and focuses it, then dispatches
// BrowserConnected and waits for its handlers (storage state is loaded and
// permissions granted before Start returns). On error everything begun is
// undone. ctx bounds the start; cancelling it later does not stop the session.
func (s *Session) Start(ctx context.Context) (err error) {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrAlreadyStarted
	}
	s.mu.Unlock()

	timeouts, err := events.Timeouts(s.profile.EventTimeouts).Option()
	if err != nil {
		return fmt.Errorf("session: Profile.EventTimeouts: %w", err)
	}
	if err := s.profile.checkConnectTab(); err != nil {
		return err
	}
	b := bus.New(append([]bus.Option{timeouts}, s.busOpts...)...)
	for _, fn := range s.busHooks {
		fn(b)
	}
	s.mu.Lock()
	s.bus = b
	s.tabs = map[target.ID]*tab{}
	s.tabOrder = nil
	s.frames = map[target.SessionID]*AttachedTarget{}
	s.created = map[target.ID]bool{}
	s.own = map[target.ID]bool{}
	s.reopening = false
	s.changed = make(chan struct{})
	s.focus = ""
	s.focusLog = nil
	s.gone = map[target.ID]bool{}
	s.lostAt, s.reconnecting, s.lostFor, s.restoring = time.Time{}, false, "", false
	s.interrupts = map[target.ID][]string{}
	s.lastInterrupt = map[target.ID]time.Time{}
	s.scriptsOff = map[target.ID]bool{}
	s.selector = nil
	s.stopCh = make(chan struct{})
	s.mu.Unlock()

	defer func() {
		if err != nil {
			s.teardown(context.Background(), false)
		}
	}()

	if err := s.registerHandlers(b); err != nil {
		return fmt.Errorf("session: registering handlers: %w", err)
	}
	for _, w := range s.watchdogs {
		if err := w.Attach(s); err != nil {
			return fmt.Errorf("session: attaching watchdog %s: %w", w.Name(), err)
		}
		s.mu.Lock()
		s.attached = append(s.attached, w)
		s.mu.Unlock()
	}

	if err := s.connect(ctx); err != nil {
		return err
	}
	if err := s.adoptTabs(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.running = true
	focus := s.focus
	s.mu.Unlock()

	url := s.tabURL(focus)
	endpoint := s.profile.CDPURL
	if s.browser != nil {
		endpoint = s.browser.WebSocketURL()
	}
	if _, err := bus.Call(ctx, b, events.BrowserConnected, events.BrowserConnectedEvent{CDPURL: endpoint}); err != nil && !errors.Is(err, bus.ErrNoHandler) {
		return fmt.Errorf("session: BrowserConnected: %w", err)
	}
	emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(focus), URL: url})
	return nil
}

// connect launches or dials the browser and starts the target tracker.
func (s *Session) connect(ctx context.Context) error {
	var (
		conn    *cdp.Conn
		browser *cdp.Browser
		err     error
	)
	if s.profile.CDPURL != "" {
		conn, err = cdp.Connect(ctx, s.profile.CDPURL, s.connOptions()...)
		if err != nil {
			return fmt.Errorf("session: connecting to %s: %w", s.profile.CDPURL, err)
		}
	} else {
		flags := slices.Clone(s.profile.ExtraFlags)
		if s.profile.UserAgent != "" {
			flags = append(flags, "--user-agent="+s.profile.UserAgent)
		}
		s.mu.Lock()
		flags = append(flags, s.flags...)
		prefs := maps.Clone(s.prefs)
		s.mu.Unlock()
		browser, err = cdp.Launch(ctx, cdp.LaunchOptions{
			ExecPath:     s.profile.ExecutablePath,
			Headful:      s.profile.Headful,
			UserDataDir:  s.profile.UserDataDir,
			WindowWidth:  s.profile.ViewportWidth,
			WindowHeight: s.profile.ViewportHeight,
			Flags:        flags,
			Preferences:  prefs,
			Logger:       s.log.Named("chrome"),
		})
		if err != nil {
			return fmt.Errorf("session: launching browser: %w", err)
		}
		conn, err = cdp.Dial(ctx, browser.WebSocketURL(), s.connOptions()...)
		if err != nil {
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			browser.Close(closeCtx)
			return fmt.Errorf("session: connecting to launched browser: %w", err)
		}
	}
	s.mu.Lock()
	s.conn, s.browser = conn, browser
	s.mu.Unlock()

	if s.profile.IsolatedContext {
		// Before discovery: onAttach tells the session's targets from the
		// others' by this id.
		if err := s.makeContext(ctx, conn); err != nil {
			return err
		}
	}
	s.attachConn(conn)
	return s.discover(ctx, conn)
}

// connOptions are the options of every connection the session opens.
func (s *Session) connOptions() []cdp.Option {
	return []cdp.Option{
		cdp.WithHeader(s.profile.CDPHeaders),
		cdp.WithLogger(s.log.Named("cdp")),
		cdp.WithKeepalive(0, s.profile.StallTimeout),
	}
}

// attachConn starts the target tracker on a new connection. It subscribes
// before discovery starts, so no target event is missed.
func (s *Session) attachConn(conn *cdp.Conn) {
	sub := conn.SubscribeEvents(trackedEvents...)
	s.mu.Lock()
	stop := s.stopCh
	s.mu.Unlock()
	s.wg.Add(1)
	go s.track(stop, sub, conn)
	if !s.profile.NoRequestEvidence {
		s.wg.Add(1)
		go s.recordNetwork(stop, conn)
	}
}

// discover turns on target discovery and auto-attach: every tab and
// cross-site iframe, existing or new, goes through onAttach.
func (s *Session) discover(ctx context.Context, conn *cdp.Conn) error {
	if err := conn.SetDiscoverTargets(ctx, true); err != nil {
		return fmt.Errorf("session: discovering targets: %w", err)
	}
	if err := conn.Browser().AutoAttach(ctx, s.onAttach); err != nil {
		return fmt.Errorf("session: auto-attach: %w", err)
	}
	return nil
}

// adoptTabs waits until the existing pages are attached, opens one when the
// browser has none, and focuses one: in a browser the session launched, the
// first; in a browser it connected to, the tab Profile.ConnectTab names
// (see chooseConnectTab).
func (s *Session) adoptTabs(ctx context.Context) error {
	if s.BrowserContextID() != "" {
		// A fresh context has no tab: work in one of our own.
		_, err := s.focusNewTab(ctx)
		return err
	}
	infos, err := cdpproto.Call(ctx, s.conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return fmt.Errorf("session: listing targets: %w", err)
	}
	var pages []target.ID
	for _, ti := range infos.TargetInfos {
		if ti.Type == "page" {
			pages = append(pages, ti.TargetID)
		}
	}
	s.mu.Lock()
	remote := s.browser == nil
	s.mu.Unlock()
	if len(pages) == 0 && remote {
		// A connected browser without a tab: work in one of our own.
		_, err := s.focusNewTab(ctx)
		return err
	}
	if len(pages) == 0 {
		id, err := s.createTarget(ctx, s.conn)
		if err != nil {
			return fmt.Errorf("session: opening a tab: %w", err)
		}
		s.mu.Lock()
		s.created[id] = true
		s.own[id] = true
		s.mu.Unlock()
		pages = append(pages, id)
	}
	var wait context.Context
	var cancel context.CancelFunc
	if remote {
		// The user's tabs are running already: one that does not attach
		// within the default wait is crashed or hung, and a long start
		// deadline must not make the session wait for it (or adopt it).
		wait, cancel = context.WithTimeout(ctx, defaultAttachWait)
	} else {
		wait, cancel = attachWait(ctx)
	}
	defer cancel()
	var ready []target.ID
	var firstErr error
	for _, id := range pages {
		// A page listed while it was closing never attaches: skip it.
		err := s.waitTabReady(wait, id)
		if err == nil {
			err = s.tabSetupErr(id)
		}
		if err != nil {
			s.log.Debug("page did not attach", zap.String("target", string(id)), zap.Error(err))
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		ready = append(ready, id)
	}
	if len(ready) == 0 && !remote {
		return fmt.Errorf("session: no tab attached: %w", firstErr)
	}
	if !remote {
		s.mu.Lock()
		if s.focus == "" {
			s.focus = ready[0]
		}
		s.mu.Unlock()
		return nil
	}
	if len(ready) == 0 {
		// None of the user's tabs attached in time (crashed, or hung):
		// work in a tab of our own rather than fail.
		s.log.Info("session: no tab of the browser attached; working in a new tab", zap.Error(firstErr))
	}
	id, err := s.chooseConnectTab(ctx, ready)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.focus = id
	s.mu.Unlock()
	return nil
}

// focusNewTab opens a tab of the session's own (see openTab) and focuses it.
func (s *Session) focusNewTab(ctx context.Context) (target.ID, error) {
	id, err := s.openTab(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.focus = id
	s.mu.Unlock()
	return id, nil
}

// chooseConnectTab returns the tab to work in when the session connected
// to someone's browser, made one of the session's tabs: the user's active
// tab (Profile.ConnectTab "active"), or a tab of our own ("new", or an
// active tab the URL policy concealed). The browser's other tabs stay
// foreign.
func (s *Session) chooseConnectTab(ctx context.Context, ready []target.ID) (target.ID, error) {
	if s.profile.ConnectTab == ConnectTabActive && len(ready) > 0 {
		pick := s.activeTab(ctx, ready)
		note := s.Concealed(string(pick.id))
		if note == "" {
			s.mu.Lock()
			s.own[pick.id] = true // adopted: the session's from now on
			s.notifyLocked()
			s.mu.Unlock()
			s.log.Info("session: working in the browser's active tab",
				zap.String("target", string(pick.id)), zap.String("url", s.tabURL(pick.id)), zap.String("found_by", pick.by))
			if !pick.visible {
				// Not in front (no tab reported itself visible): bring it
				// there, as switching tabs does, so that it is painted.
				if err := s.conn.ActivateTarget(ctx, pick.id); err != nil {
					s.log.Debug("activating the adopted tab", zap.String("target", string(pick.id)), zap.Error(err))
				}
			}
			return pick.id, nil
		}
		// Its content must not reach the model, and it is not ours to
		// navigate away: work in a tab of our own beside it.
		s.log.Info("session: the browser's active tab shows a page the URL policy refuses; working in a new tab instead",
			zap.String("target", string(pick.id)), zap.String("note", note))
	}
	// Work in a tab of our own and leave the user's as they are.
	return s.openTab(ctx)
}

// onAttach prepares every auto-attached target while it is paused. Commands
// the renderer handles are not answered before the target resumes, so they
// are sent here (in order, before the resume) and awaited by a goroutine
// that then marks the tab ready and reports it.
func (s *Session) onAttach(ctx context.Context, cs *cdp.Session) error {
	info := cs.TargetInfo()
	if s.otherContext(cs) {
		s.letGo(ctx, cs)
		return nil
	}
	at := AttachedTarget{Kind: TargetOther, Session: cs}
	if info != nil {
		at.URL = info.URL
		at.OpenerID = string(info.OpenerID)
		switch info.Type {
		case "page":
			at.Kind = TargetPage
		case "iframe":
			at.Kind = TargetFrame
		}
	}
	if p := cs.Parent(); p != nil && at.Kind == TargetFrame {
		at.ParentSessionID = string(p.ID())
	}
	var replies []*cdp.Reply
	switch at.Kind {
	case TargetPage:
		s.mu.Lock()
		if _, ok := s.tabs[cs.TargetID()]; !ok {
			s.tabs[cs.TargetID()] = &tab{id: cs.TargetID(), sess: cs, url: at.URL, opener: target.ID(at.OpenerID)}
			s.tabOrder = append(s.tabOrder, cs.TargetID())
		}
		if s.browser != nil || s.bctx != "" || s.own[target.ID(at.OpenerID)] {
			// Decided here, before any hook runs or the tab is listed:
			// every tab of a launched browser or of the session's own
			// context is the session's (the others never get here), and
			// in a connected one so is a tab one of its tabs opened (a popup,
			// a target=_blank link). A tab the session creates itself is
			// claimed by openTab. The rest is foreign.
			s.own[cs.TargetID()] = true
		}
		if s.created[target.ID(at.OpenerID)] {
			// Opened by a tab of ours: ours too, closed on Stop.
			s.created[cs.TargetID()] = true
		}
		owned := s.browser != nil || s.bctx != "" || s.created[cs.TargetID()]
		s.mu.Unlock()
		replies = s.preparePage(ctx, cs, owned)
	case TargetFrame:
		s.mu.Lock()
		s.frames[cs.ID()] = &at
		s.mu.Unlock()
		replies = append(replies, cs.Send(ctx, page.CommandEnable, page.EnableParams{}))
		if r := s.networkSetup(ctx, cs); r != nil {
			replies = append(replies, r)
		}
	}
	s.runHooks(ctx, at)
	s.mu.Lock()
	stop := s.stopCh
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.finishAttach(ctx, stop, at, replies)
	}()
	return nil
}

// finishAttach waits, after the target resumed, for its setup commands, then
// marks a tab ready and reports it.
func (s *Session) finishAttach(ctx context.Context, stop <-chan struct{}, at AttachedTarget, replies []*cdp.Reply) {
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cancelOnStop(wait, cancel, stop)
	var setupErr error
	for _, r := range replies {
		if err := r.Wait(wait, nil); err != nil {
			s.log.Debug("target setup", zap.String("target", string(at.Session.TargetID())), zap.Error(err))
			if setupErr == nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				setupErr = fmt.Errorf("%w: tab %s did not answer its setup: %w", ErrPageGone, at.Session.TargetID(), err)
			}
		}
	}
	if at.Kind != TargetPage {
		return
	}
	id := at.Session.TargetID()
	s.mu.Lock()
	t := s.tabs[id]
	if t == nil {
		s.mu.Unlock()
		return
	}
	t.ready = true
	t.setupErr = setupErr
	s.notifyLocked()
	running := s.running && !t.closed && !s.quiet[id]
	s.mu.Unlock()
	if running {
		emit(ctx, s, events.TabCreated, events.TabCreatedEvent{TargetID: string(id), URL: at.URL, OpenerID: at.OpenerID})
	}
}

// preparePage sends a page's setup commands; the caller waits for them.
func (s *Session) preparePage(ctx context.Context, cs *cdp.Session, owned bool) []*cdp.Reply {
	r := []*cdp.Reply{
		cs.Send(ctx, page.CommandEnable, page.EnableParams{}),
		cs.Send(ctx, page.CommandSetLifecycleEventsEnabled, page.SetLifecycleEventsEnabledParams{Enabled: true}),
		cs.Send(ctx, page.CommandAddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: mutationCounterJS}),
	}
	if n := s.networkSetup(ctx, cs); n != nil {
		r = append(r, n)
	}
	if owned {
		// A tab of a browser we only connected to keeps its own viewport.
		p := s.profile
		r = append(r, cs.Send(ctx, emulation.CommandSetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(p.ViewportWidth), Height: int64(p.ViewportHeight), DeviceScaleFactor: p.DeviceScaleFactor,
		}))
	}
	return r
}

func (s *Session) runHooks(ctx context.Context, at AttachedTarget) {
	s.mu.Lock()
	hooks := slices.Clone(s.hooks)
	s.mu.Unlock()
	for _, h := range hooks {
		if err := callHook(ctx, h.fn, at); err != nil {
			s.log.Warn("target hook failed", zap.String("target", string(at.Session.TargetID())), zap.Error(err))
		}
	}
}

func callHook(ctx context.Context, h TargetHook, at AttachedTarget) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("target hook panicked: %v", r)
		}
	}()
	return h(ctx, at)
}

// notifyLocked wakes everyone waiting for a tab-model change.
func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// tabSetupErr reports why a ready tab's setup went unanswered, or nil.
func (s *Session) tabSetupErr(id target.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tabs[id]; t != nil {
		return t.setupErr
	}
	return nil
}

// waitTabReady waits until the tab id is attached and its hooks ran.
func (s *Session) waitTabReady(ctx context.Context, id target.ID) error {
	for {
		s.mu.Lock()
		t := s.tabs[id]
		ready, closed := t != nil && t.ready, (t != nil && t.closed) || s.gone[id]
		ch := s.changed
		conn := s.conn
		s.mu.Unlock()
		if ready {
			return nil
		}
		if closed {
			return ErrTabNotFound
		}
		var lost <-chan struct{}
		if conn != nil {
			lost = conn.Done()
		}
		select {
		case <-ch:
		case <-lost:
			return conn.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cancelOnStop cancels ctx through cancel when stop closes. Its goroutine
// ends with ctx, so the caller's deferred cancel reaps it.
func cancelOnStop(ctx context.Context, cancel context.CancelFunc, stop <-chan struct{}) {
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
}

// track keeps the tab model current from target events until Stop (or
// until the connection ends: the crash watchdog reports that, Reconnect
// starts a new tracker). If it falls behind, it resynchronises the tab
// model from Target.getTargets.
func (s *Session) track(stop <-chan struct{}, sub *cdp.Subscription, conn *cdp.Conn) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelOnStop(ctx, cancel, stop)
	err := follow.Run(ctx, sub, func() *cdp.Subscription { return conn.SubscribeEvents(trackedEvents...) },
		s.handleTargetEvent, follow.Options{Name: "session target tracker", Logger: s.log, Resync: s.resyncTabs})
	if err != nil && conn.Err() != nil {
		// The connection ended under the session: Ready waits from here.
		s.mu.Lock()
		if s.conn == conn && s.lostAt.IsZero() {
			s.lostAt = time.Now()
			s.notifyLocked()
		}
		s.mu.Unlock()
	}
}

// resyncTabs reconciles the tab model with the browser after target events
// were lost: titles and URLs are refreshed, and tabs that no longer exist
// are removed (and reported) as if their destruction had been seen.
func (s *Session) resyncTabs(ctx context.Context) {
	conn := s.Conn()
	if conn == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := cdpproto.Call(cctx, conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		s.log.Warn("session: resynchronising tabs", zap.Error(err))
		return
	}
	alive := map[target.ID]bool{}
	s.mu.Lock()
	for _, ti := range res.TargetInfos {
		alive[ti.TargetID] = true
		if t := s.tabs[ti.TargetID]; t != nil {
			t.url, t.title = ti.URL, ti.Title
		}
	}
	var gone []target.ID
	for id := range s.tabs {
		if !alive[id] {
			gone = append(gone, id)
		}
	}
	s.mu.Unlock()
	for _, id := range gone {
		s.tabGone(id)
	}
}

// trackedEvents keep the tab model current.
var trackedEvents = []string{
	"Target.targetInfoChanged", "Target.targetDestroyed", "Target.detachedFromTarget",
	"Target.targetCrashed", "Inspector.targetCrashed",
}

func (s *Session) handleTargetEvent(ev cdp.Event) {
	ctx := context.Background()
	switch ev.Method {
	case "Target.targetInfoChanged":
		var e target.EventTargetInfoChanged
		if ev.Decode(&e) != nil || e.TargetInfo == nil {
			return
		}
		s.mu.Lock()
		if t := s.tabs[e.TargetInfo.TargetID]; t != nil {
			t.url, t.title = e.TargetInfo.URL, e.TargetInfo.Title
		}
		s.mu.Unlock()
	case "Target.targetDestroyed":
		var e target.EventTargetDestroyed
		if ev.Decode(&e) == nil {
			s.mu.Lock()
			if s.gone != nil {
				s.gone[e.TargetID] = true
				s.notifyLocked()
			}
			s.mu.Unlock()
			s.tabGone(e.TargetID)
		}
	case "Target.detachedFromTarget":
		var e target.EventDetachedFromTarget
		if ev.Decode(&e) != nil {
			return
		}
		s.mu.Lock()
		delete(s.frames, e.SessionID)
		var gone target.ID
		for id, t := range s.tabs {
			if t.sess.ID() == e.SessionID {
				gone = id
			}
		}
		s.mu.Unlock()
		if gone != "" {
			s.tabGone(gone)
		}
	case "Target.targetCrashed":
		var e target.EventTargetCrashed
		if ev.Decode(&e) == nil && !s.foreign(e.TargetID) {
			emit(ctx, s, events.TargetCrashed, events.TargetCrashedEvent{TargetID: string(e.TargetID), Error: fmt.Sprintf("target crashed (%s, code %d)", e.Status, e.ErrorCode)})
		}
	case "Inspector.targetCrashed":
		if ev.Session != nil && ev.Session.TargetID() != "" && !s.foreign(pageOf(ev.Session)) {
			emit(ctx, s, events.TargetCrashed, events.TargetCrashedEvent{TargetID: string(ev.Session.TargetID()), Error: "renderer crashed"})
		}
	}
}

// foreign reports whether id is an attached tab that is not the session's:
// what happens to it (a crash) is its owner's business, not reported.
func (s *Session) foreign(id target.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, attached := s.tabs[id]
	if s.bctx != "" && !attached {
		// Target.targetCrashed reaches every client of the browser: a
		// target the session never attached is another context's.
		return !s.own[id]
	}
	return attached && !s.own[id]
}

// pageOf returns the tab a target session belongs to: itself for a tab,
// the nearest page above it for a frame, "" when there is none.
func pageOf(cs *cdp.Session) target.ID {
	for c := cs; c != nil; c = c.Parent() {
		if info := c.TargetInfo(); info != nil && info.Type == "page" {
			return c.TargetID()
		}
	}
	return ""
}

// tabGone removes a closed tab, reports it, and moves the focus away from it.
func (s *Session) tabGone(id target.ID) {
	ctx := context.Background()
	s.mu.Lock()
	t := s.tabs[id]
	if t == nil || t.closed {
		s.mu.Unlock()
		return
	}
	t.closed = true
	delete(s.tabs, id)
	s.tabOrder = slices.DeleteFunc(s.tabOrder, func(o target.ID) bool { return o == id })
	delete(s.created, id)
	s.gone[id] = true
	refocus := s.focus == id
	if refocus {
		// The focus goes back to the tab focused before, else to the
		// newest, and only ever to one of the session's own tabs.
		s.focus = ""
		for len(s.focusLog) > 0 && s.focus == "" {
			prev := s.focusLog[len(s.focusLog)-1]
			s.focusLog = s.focusLog[:len(s.focusLog)-1]
			if _, open := s.tabs[prev]; open && s.own[prev] {
				s.focus = prev
			}
		}
		if s.focus == "" {
			if own := s.ownTabsLocked(); len(own) > 0 {
				s.focus = own[len(own)-1]
			}
		}
	}
	focus := s.focus
	if refocus {
		s.selector = nil
	}
	running := s.running
	// In a browser it launched, where every tab is the session's, none
	// left means the browser is closing (its window was closed): no new
	// tab then, as before — unless the session works in a context of its
	// own, whose last tab may close while the browser runs on.
	reopen := running && refocus && focus == "" && !s.reopening && (s.browser == nil || s.bctx != "")
	if reopen {
		s.reopening = true // Ready waits for the replacement
		s.wg.Add(1)
	}
	stop := s.stopCh
	s.notifyLocked()
	s.mu.Unlock()
	if reopen {
		go s.replaceLastTab(stop)
	}
	if !running {
		return
	}
	emit(ctx, s, events.TabClosed, events.TabClosedEvent{TargetID: string(id)})
	if refocus && focus != "" {
		emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(focus), URL: s.tabURL(focus)})
	}
}

// replaceLastTab opens a tab of the session's own and focuses it when the
// last one closed in a browser the session connected to (the focus never
// moves to a foreign tab), so that the agent has a tab to act on; Ready
// waits for it. It ends early on
// Stop; a tab it opened after the session stopped is closed again.
func (s *Session) replaceLastTab(stop <-chan struct{}) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cancelOnStop(ctx, cancel, stop)
	id, err := s.openTab(ctx)
	s.mu.Lock()
	s.reopening = false
	focused := err == nil && s.running && s.focus == ""
	if focused {
		s.focus = id
		s.selector = nil
	}
	stopped := err == nil && !s.running
	conn := s.conn
	s.notifyLocked()
	s.mu.Unlock()
	switch {
	case err != nil:
		s.log.Warn("session: the last tab closed and no new one could be opened", zap.Error(err))
	case stopped && conn != nil:
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = conn.CloseTarget(cctx, id)
		ccancel()
	case focused:
		s.log.Info("session: the last of the session's tabs closed; working in a new tab", zap.String("target", string(id)))
		emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(id), URL: s.tabURL(id)})
	}
}

// emit dispatches a report event without waiting. Its handlers' errors reach
// the bus's observers (the trace), never the emitter.
func emit[E, R any](ctx context.Context, s *Session, k bus.Kind[E, R], ev E) {
	if b := s.Bus(); b != nil {
		bus.Emit(context.WithoutCancel(ctx), b, k, ev)
	}
}

// Stop dispatches BrowserStop (watchdogs save state) and BrowserStopped,
// closes the bus, detaches the watchdogs, closes the connection, and — if
// the session launched the browser — asks it to quit, kills what is left
// and removes its temporary profile. A browser the session connected to is
// left running; the tabs the session created are closed (and waited for)
// and the others left as they were. Every phase has its own budget
// (Profile.StopBudgets): Stop ends even with context.Background() and
// handlers or watchdogs that ignore cancellation; those are abandoned and
// named in the returned error, and cleanup still happens. Stop on a stopped
// session returns nil.
func (s *Session) Stop(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("session: stop: %w", err)
	}
	defer s.unlock()
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if !running {
		return nil
	}
	return s.teardown(ctx, true)
}

// lock takes the lifecycle lock, or returns ctx's error.
func (s *Session) lock(ctx context.Context) error {
	select {
	case s.life <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) unlock() { <-s.life }

// Restart stops the session and starts it again with the same profile and
// watchdogs.
func (s *Session) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.Start(ctx)
}

func (s *Session) teardown(ctx context.Context, graceful bool) error {
	s.mu.Lock()
	b, conn, browser := s.bus, s.conn, s.browser
	attached := s.attached
	s.attached = nil
	created := make([]target.ID, 0, len(s.created))
	for id := range s.created {
		created = append(created, id)
	}
	bctx := s.bctx
	if bctx != "" {
		// Disposing the context closes every tab in it.
		created = created[:0]
		for id := range s.tabs {
			created = append(created, id)
		}
	}
	s.mu.Unlock()

	var errs []error
	if graceful && b != nil {
		ectx, cancel := context.WithTimeout(ctx, s.profile.StopBudgets.Events)
		if conn != nil && conn.Err() == nil {
			if _, err := bus.Call(ectx, b, events.BrowserStop, events.BrowserStopEvent{}); err != nil && !errors.Is(err, bus.ErrNoHandler) {
				errs = append(errs, fmt.Errorf("BrowserStop: %w", err))
			}
		}
		reason := "stopped"
		if conn != nil && conn.Err() != nil {
			reason = "stopped after the connection ended: " + conn.Err().Error()
		}
		if _, err := bus.Call(ectx, b, events.BrowserStopped, events.BrowserStoppedEvent{Reason: reason}); err != nil && !errors.Is(err, bus.ErrNoHandler) {
			errs = append(errs, fmt.Errorf("BrowserStopped: %w", err))
		}
		cancel()
	}
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
	switch {
	case browser == nil && conn != nil && conn.Err() == nil && bctx != "":
		// Remote browser, a context of our own: dispose of it (its tabs
		// close), leave the browser and its other contexts running.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.profile.StopBudgets.Browser)
		if err := s.disposeContext(cctx, conn, bctx, created); err != nil {
			errs = append(errs, err)
		}
		cancel()
	case browser == nil && conn != nil && conn.Err() == nil && len(created) > 0:
		// Remote browser: close what we opened, leave the rest.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.profile.StopBudgets.Browser)
		if err := s.closeCreated(cctx, conn, created); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if b != nil {
		bctx, cancel := context.WithTimeout(ctx, s.profile.StopBudgets.Bus)
		if err := b.Close(bctx); err != nil {
			s.log.Warn("session: stop abandoned bus handlers that ignore cancellation", zap.Error(err))
			errs = append(errs, fmt.Errorf("closing bus: %w", err))
		}
		cancel()
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.profile.StopBudgets.Detach)
	for i := len(attached) - 1; i >= 0; i-- {
		if d, ok := attached[i].(Detacher); ok {
			if err := detach(dctx, d); err != nil {
				s.log.Warn("session: detach did not finish", zap.String("watchdog", attached[i].Name()), zap.Error(err))
				errs = append(errs, fmt.Errorf("detaching %s: %w", attached[i].Name(), err))
			}
		}
	}
	cancel()
	s.mu.Lock()
	stopCh := s.stopCh
	s.mu.Unlock()
	if stopCh != nil {
		select {
		case <-stopCh:
		default:
			close(stopCh)
		}
	}
	if conn != nil {
		conn.Close()
	}
	s.wg.Wait()
	if browser != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.profile.StopBudgets.Browser)
		if err := browser.Close(cctx); err != nil {
			errs = append(errs, fmt.Errorf("closing browser: %w", err))
		}
		cancel()
	}
	s.mu.Lock()
	s.conn, s.browser, s.bctx = nil, nil, ""
	s.hooks = nil
	s.flags, s.prefs = nil, nil
	s.ctxProxy, s.ctxBypass = "", ""
	s.tabs, s.tabOrder, s.focus, s.selector = nil, nil, "", nil
	s.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("session: stop: %w", errors.Join(errs...))
	}
	return nil
}

// detach calls d.Detach(ctx) and returns its error, or ctx's error when
// ctx ends first: a Detach that ignores its context is abandoned (its
// goroutine ends whenever Detach returns), not waited for.
func detach(ctx context.Context, d Detacher) error {
	done := make(chan error, 1)
	go func() { done <- d.Detach(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("abandoned: Detach ignores its context: %w", ctx.Err())
	}
}

// closeCreated closes the tabs the session opened in a browser it only
// connected to, and waits until the browser destroyed them: closing a
// target returns before the target is gone.
func (s *Session) closeCreated(ctx context.Context, conn *cdp.Conn, ids []target.ID) error {
	for _, id := range ids {
		if err := conn.CloseTarget(ctx, id); err != nil {
			s.log.Debug("closing created tab", zap.String("target", string(id)), zap.Error(err))
		}
	}
	return s.waitGone(ctx, conn, ids)
}

// waitGone waits until the browser destroyed the tabs ids (or the
// connection ended, taking them along).
func (s *Session) waitGone(ctx context.Context, conn *cdp.Conn, ids []target.ID) error {
	for {
		s.mu.Lock()
		var left []target.ID
		for _, id := range ids {
			if !s.gone[id] {
				left = append(left, id)
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-conn.Done():
			return nil // the browser closes everything with the connection
		case <-ctx.Done():
			return fmt.Errorf("tabs %v of the session were not destroyed: %w", left, ctx.Err())
		}
	}
}
