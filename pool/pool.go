// Package pool runs many browser sessions on one host with bounded
// concurrency. A Pool hands out leases; each lease is one started
// session.Session with the default watchdogs, and Release stops it.
//
// Two modes:
//   - SharedBrowser (the default): the pool launches one Chromium, lazily
//     on the first Acquire, and every session connects to it and works in
//     a browser context of its own (session.Profile.IsolatedContext):
//     cookies, storage, cache, permissions and downloads are not shared,
//     and each context's pages get their own renderer processes, so a
//     renderer crash stays in its lease. The browser, GPU and network
//     processes are shared: a browser crash ends every lease on it (their
//     sessions' Ready then returns an error wrapping events.ErrBrowserGone)
//     and the next Acquire launches a new browser.
//   - BrowserPerSession: every Acquire launches a Chromium of its own (a
//     plain session that launches its browser), as isolated as two runs of
//     the command line; it costs a browser process tree per session and a
//     launch per Acquire.
//
// docs/scaling.md compares the two with measured numbers (cmd/benchpool).
package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// Errors of the pool.
var (
	// ErrClosed is returned by Acquire once Close began, also to callers
	// that were waiting for a slot.
	ErrClosed = errors.New("pool: closed")
	// ErrBadConfig is wrapped by New's error for a Config it refuses.
	ErrBadConfig = errors.New("pool: bad config")
)

// Mode says how the pool's sessions get their browsers.
type Mode int

const (
	// SharedBrowser runs every session in a browser context of its own in
	// one Chromium that the pool launches (or Profile.CDPURL names).
	SharedBrowser Mode = iota
	// BrowserPerSession launches one Chromium per session.
	BrowserPerSession
)

// String returns the mode's name as ParseMode reads it.
func (m Mode) String() string {
	switch m {
	case SharedBrowser:
		return "shared"
	case BrowserPerSession:
		return "per-session"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "shared" or "per-session" (as Mode.String writes them);
// any other value is an error wrapping ErrBadConfig.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "shared":
		return SharedBrowser, nil
	case "per-session":
		return BrowserPerSession, nil
	}
	return 0, fmt.Errorf("%w: unknown mode %q (want \"shared\" or \"per-session\")", ErrBadConfig, s)
}

// DefaultMaxSessions is Config.MaxSessions' default. It is a fixed number,
// not one per CPU: what bounds sessions on a host is mostly memory (one
// renderer per session in SharedBrowser mode, a whole browser per session in
// BrowserPerSession mode; docs/scaling.md has the measured cost), and a
// session waits on its model far more than it computes.
const DefaultMaxSessions = 4

// Config configures a Pool. The zero value is usable: a SharedBrowser pool
// of DefaultMaxSessions headless sessions with the default watchdogs.
type Config struct {
	// Mode is SharedBrowser (the default) or BrowserPerSession.
	Mode Mode
	// MaxSessions bounds the leases out at once; Acquire waits for a free
	// one. Default DefaultMaxSessions; negative is an error.
	MaxSessions int
	// Profile is every session's profile. In SharedBrowser mode the
	// browser's own settings (ExecutablePath, Headful, UserDataDir,
	// ExtraFlags, UserAgent, the viewport as window size) are used to
	// launch the shared browser, and each session gets CDPURL = that
	// browser's endpoint and IsolatedContext = true; a Profile.CDPURL given
	// here is used as the shared browser instead (the pool then launches,
	// relaunches and closes nothing). In BrowserPerSession mode each session
	// launches its browser with this profile, so CDPURL and UserDataDir (two
	// browsers cannot share a profile directory) are errors.
	//
	// Profile.StorageStatePath needs MaxSessions 1 (an error otherwise):
	// every session would load the file and save it on Stop, the last one
	// winning. For a state per lease, pass AcquireWith a storagestate
	// watchdog with its own Config.Path.
	//
	// In SharedBrowser mode the security watchdog's network guard (see
	// Profile.PolicyScope) is each session's context proxy rather than a
	// launch flag; ExtraFlags that set a proxy turn it off (docs/scaling.md).
	// When the profile's policy runs the guard, the shared browser the pool
	// launches keeps WebRTC to proxied paths in every context
	// (security.BrowserPreferences); a custom policy given through Options
	// needs PolicyScope "requests" here for that.
	Profile session.Profile
	// Options, when set, is called for every session and its options are
	// applied after the default watchdogs (watchdogs.Defaults), so they can
	// replace a default by name (session.WithWatchdogs), remove one
	// (session.WithoutWatchdogs) or add observers. It must return fresh
	// watchdogs on each call: a watchdog belongs to one session.
	Options func() []session.Option
	// MaxStarting bounds the sessions starting at once (a launch, a
	// connection and the first tab); the other Acquire calls that have a
	// slot wait their turn. Default runtime.NumCPU(): a Chromium launch is
	// CPU-bound, and eight at once on two busy cores made a browser's first
	// tab miss the session's attach wait (measured with cmd/benchpool).
	// Negative is an error.
	MaxStarting int
	// Logger receives the pool's logs and is the sessions' logger. Default
	// zap.NewNop().
	Logger *zap.Logger
}

// Stats is a snapshot of the pool.
type Stats struct {
	// MaxSessions is the bound (defaults applied).
	MaxSessions int
	// InUse counts the leases out (started sessions not yet released, or
	// released and still stopping in the background) and Acquire calls
	// that have a slot and are starting their session.
	InUse int
	// Waiting counts Acquire calls waiting for a slot.
	Waiting int
	// Browsers counts the browser processes the pool runs now (a browser
	// named by Profile.CDPURL is not counted).
	Browsers int
	// Launches counts the browsers launched since New: shared browsers,
	// and in BrowserPerSession mode the browsers of sessions that started
	// (a launch whose session then failed to start is not counted).
	Launches int
	// Crashes counts the browsers that exited while the pool still used
	// them (not by Release or Close).
	Crashes int
}

// Pool hands out sessions. Its methods are safe for concurrent use.
type Pool struct {
	cfg  Config
	log  *zap.Logger
	max  int
	slot chan struct{} // a token per lease out (or starting)

	// closeCtx ends when Close begins: it wakes waiters and cancels the
	// sessions being started.
	closeCtx    context.Context
	closeCancel context.CancelFunc
	closeDone   chan struct{}
	closeErr    error // set before closeDone closes

	launchLock chan struct{} // one launch of the shared browser at a time
	startSem   chan struct{} // a token per session starting (MaxStarting)

	mu       sync.Mutex
	closed   bool
	waiting  int
	leases   map[*Lease]struct{}
	shared   *cdp.Browser // the shared browser the pool launched, nil when none runs
	launches int
	crashes  int
	seq      int

	starting sync.WaitGroup // Acquire calls starting a session
	wg       sync.WaitGroup // browser watchers and background stops
}

// New checks cfg and returns a pool. Nothing is launched until Acquire.
func New(cfg Config) (*Pool, error) {
	switch cfg.Mode {
	case SharedBrowser:
	case BrowserPerSession:
		if cfg.Profile.CDPURL != "" {
			return nil, fmt.Errorf("%w: Profile.CDPURL with BrowserPerSession (each session launches its own browser; use SharedBrowser to share a running one)", ErrBadConfig)
		}
		if cfg.Profile.UserDataDir != "" {
			return nil, fmt.Errorf("%w: Profile.UserDataDir with BrowserPerSession (browsers cannot share a profile directory)", ErrBadConfig)
		}
	default:
		return nil, fmt.Errorf("%w: unknown Mode %d", ErrBadConfig, int(cfg.Mode))
	}
	if cfg.MaxSessions < 0 {
		return nil, fmt.Errorf("%w: MaxSessions %d is negative", ErrBadConfig, cfg.MaxSessions)
	}
	if cfg.MaxStarting < 0 {
		return nil, fmt.Errorf("%w: MaxStarting %d is negative", ErrBadConfig, cfg.MaxStarting)
	}
	max := cfg.MaxSessions
	if max == 0 {
		max = DefaultMaxSessions
	}
	if cfg.Profile.StorageStatePath != "" && max > 1 {
		// Every session would load it and save it on Stop, the last
		// one winning over the others' cookies.
		return nil, fmt.Errorf("%w: Profile.StorageStatePath with MaxSessions %d (each session saves the file on Stop, the last one winning); give each lease a file of its own with AcquireWith and a storagestate watchdog, or use a pool of one session", ErrBadConfig, max)
	}
	starting := cfg.MaxStarting
	if starting == 0 {
		starting = runtime.NumCPU()
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{
		cfg:         cfg,
		log:         log.Named("pool"),
		max:         max,
		slot:        make(chan struct{}, max),
		closeCtx:    ctx,
		closeCancel: cancel,
		closeDone:   make(chan struct{}),
		launchLock:  make(chan struct{}, 1),
		startSem:    make(chan struct{}, starting),
		leases:      map[*Lease]struct{}{},
	}, nil
}

// Mode returns the pool's mode.
func (p *Pool) Mode() Mode { return p.cfg.Mode }

// Acquire waits for a free slot (bounded by ctx: its error then wraps
// ctx.Err()), starts a session and returns its lease. In SharedBrowser mode
// the first Acquire, and the first after the shared browser died, launches
// the browser. A session that fails to start frees its slot and the error
// says why. After Close began Acquire fails with ErrClosed, also when it
// was waiting. ctx bounds the start too; cancelling it later does not stop
// the session: Release does.
func (p *Pool) Acquire(ctx context.Context) (*Lease, error) { return p.AcquireWith(ctx) }

// AcquireWith is Acquire with options for this lease's session only,
// applied after the default watchdogs and Config.Options' (so they may
// replace a watchdog by name). They are in place before the session
// starts: a bus hook (session.WithBusHook) sees the session's start-up
// — its connection, the watchdogs' first reports — which a hook added to
// the leased session's bus later would miss. Like Config.Options, they
// must be fresh: a watchdog belongs to one session.
func (p *Pool) AcquireWith(ctx context.Context, opts ...session.Option) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pool: acquire: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	p.waiting++
	p.mu.Unlock()
	got := false
	select {
	case p.slot <- struct{}{}:
		got = true
	case <-ctx.Done():
	case <-p.closeCtx.Done():
	}
	p.mu.Lock()
	p.waiting--
	if got && p.closed {
		<-p.slot
		got = false
	}
	if !got {
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("pool: waiting for one of %d sessions to be released: %w", p.max, ctx.Err())
	}
	p.starting.Add(1)
	p.seq++
	id := p.seq
	p.mu.Unlock()
	defer p.starting.Done()

	l, err := p.start(ctx, id, opts)
	if err != nil {
		<-p.slot
		if p.closeCtx.Err() != nil {
			return nil, fmt.Errorf("%w (while starting a session: %v)", ErrClosed, err)
		}
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		// Close began while the session started; Close does not know it.
		_ = l.release(context.Background())
		return nil, ErrClosed
	}
	p.leases[l] = struct{}{}
	p.mu.Unlock()
	return l, nil
}

// start makes and starts lease id's session; Close cancels it. In
// SharedBrowser mode a start that failed because the shared browser died
// under it is tried once more on a new browser.
func (p *Pool) start(ctx context.Context, id int, extra []session.Option) (*Lease, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.closeCtx, cancel)
	defer stop()
	select {
	case p.startSem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pool: waiting for other sessions to start: %w", ctx.Err())
	}
	defer func() { <-p.startSem }()
	for attempt := 0; ; attempt++ {
		prof := p.cfg.Profile
		var shared *cdp.Browser
		if p.cfg.Mode == SharedBrowser {
			url, b, err := p.sharedEndpoint(ctx)
			if err != nil {
				return nil, err
			}
			prof.CDPURL, prof.IsolatedContext, shared = url, true, b
		}
		log := p.log.With(zap.Int("lease", id))
		opts := []session.Option{session.WithLogger(log)}
		if p.cfg.Options != nil {
			opts = append(opts, p.cfg.Options()...)
		}
		opts = append(opts, extra...)
		s := watchdogs.NewSession(prof, opts...)
		err := s.Start(ctx)
		if err == nil {
			l := &Lease{pool: p, id: id, sess: s, shared: shared, stopWatch: make(chan struct{}), done: make(chan struct{})}
			if p.cfg.Mode == BrowserPerSession {
				l.own = s.Browser()
				p.mu.Lock()
				p.launches++
				p.mu.Unlock()
				l.watch.Add(1)
				go l.watchBrowser()
			}
			return l, nil
		}
		if shared != nil && exited(shared) && attempt == 0 && ctx.Err() == nil {
			p.log.Info("pool: the shared browser died while a session started; launching a new one", zap.Int("lease", id), zap.Error(err))
			continue
		}
		return nil, fmt.Errorf("pool: starting a %s session: %w", p.cfg.Mode, err)
	}
}

// sharedEndpoint returns the shared browser's endpoint, launching the
// browser when none runs. b is nil for a browser named by Profile.CDPURL.
func (p *Pool) sharedEndpoint(ctx context.Context) (url string, b *cdp.Browser, err error) {
	if p.cfg.Profile.CDPURL != "" {
		return p.cfg.Profile.CDPURL, nil, nil
	}
	select {
	case p.launchLock <- struct{}{}:
	case <-ctx.Done():
		return "", nil, fmt.Errorf("pool: waiting for the shared browser's launch: %w", ctx.Err())
	}
	defer func() { <-p.launchLock }()
	p.mu.Lock()
	b = p.shared
	p.mu.Unlock()
	if b != nil && !exited(b) {
		return b.WebSocketURL(), b, nil
	}
	pr := p.cfg.Profile
	flags := slices.Clone(pr.ExtraFlags)
	if pr.UserAgent != "" {
		flags = append(flags, "--user-agent="+pr.UserAgent)
	}
	b, err = cdp.Launch(ctx, cdp.LaunchOptions{
		ExecPath:     pr.ExecutablePath,
		Headful:      pr.Headful,
		UserDataDir:  pr.UserDataDir,
		WindowWidth:  pr.ViewportWidth,
		WindowHeight: pr.ViewportHeight,
		Flags:        flags,
		Preferences:  security.BrowserPreferences(pr),
		Logger:       p.log,
	})
	if err != nil {
		return "", nil, fmt.Errorf("pool: launching the shared browser: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cctx, cancel := context.WithTimeout(context.Background(), session.DefaultStopBrowser)
		defer cancel()
		_ = b.Close(cctx)
		return "", nil, ErrClosed
	}
	p.shared = b
	p.launches++
	p.wg.Add(1)
	p.mu.Unlock()
	go p.watchShared(b)
	p.log.Info("pool: launched the shared browser", zap.Int("pid", b.PID()))
	return b.WebSocketURL(), b, nil
}

// watchShared notices the shared browser's death: it is counted as a
// crash, forgotten (the next Acquire launches another) and closed, which
// removes its temporary profile. It ends when the browser exits or Close
// begins (Close closes the browser then).
func (p *Pool) watchShared(b *cdp.Browser) {
	defer p.wg.Done()
	select {
	case <-b.Done():
	case <-p.closeCtx.Done():
		return
	}
	p.mu.Lock()
	crashed := !p.closed
	if p.shared == b {
		p.shared = nil
	}
	if crashed {
		p.crashes++
	}
	p.mu.Unlock()
	if !crashed {
		return // Close closes it
	}
	p.log.Warn("pool: the shared browser exited; its sessions are gone, the next Acquire launches a new one",
		zap.Int("pid", b.PID()), zap.NamedError("exit", b.Wait()))
	ctx, cancel := context.WithTimeout(context.Background(), session.DefaultStopBrowser)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		p.log.Warn("pool: cleaning up after the shared browser", zap.Error(err))
	}
}

// exited reports whether the browser process has ended.
func exited(b *cdp.Browser) bool {
	select {
	case <-b.Done():
		return true
	default:
		return false
	}
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{MaxSessions: p.max, InUse: len(p.slot), Waiting: p.waiting, Launches: p.launches, Crashes: p.crashes}
	if p.shared != nil && !exited(p.shared) {
		st.Browsers++
	}
	for l := range p.leases {
		if l.own != nil && !exited(l.own) {
			st.Browsers++
		}
	}
	return st
}

// BrowserPIDs returns the process ids of the browsers the pool runs now,
// each the leader of its process group (the shared browser, or one per
// lease in BrowserPerSession mode), for measuring what they cost.
func (p *Pool) BrowserPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	if p.shared != nil && !exited(p.shared) {
		pids = append(pids, p.shared.PID())
	}
	for l := range p.leases {
		if l.own != nil && !exited(l.own) {
			pids = append(pids, l.own.PID())
		}
	}
	slices.Sort(pids)
	return pids
}

// Close stops the pool: Acquire fails with ErrClosed from now on (waiting
// callers too), sessions being started are cancelled, the leases still out
// are released (their holders see their sessions stop; a later Release
// returns nil), and the shared browser the pool launched is closed. When it
// returns, no goroutine of the pool is left. ctx bounds the sessions' Stop
// and the browser's close as Release does (cleanup still happens, see
// Release). Close may be called again; it waits for the first and returns
// nil.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		select {
		case <-p.closeDone:
		case <-ctx.Done():
			return fmt.Errorf("pool: close: %w", ctx.Err())
		}
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.closeCancel()
	p.starting.Wait()

	p.mu.Lock()
	leases := make([]*Lease, 0, len(p.leases))
	for l := range p.leases {
		leases = append(leases, l)
	}
	shared := p.shared
	p.shared = nil
	p.mu.Unlock()

	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() { errs[i] = l.Release(ctx) })
	}
	wg.Wait()
	if shared != nil {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), session.DefaultStopBrowser)
		if err := shared.Close(bctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the shared browser: %w", err))
		}
		cancel()
	}
	p.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.closeErr = fmt.Errorf("pool: close: %w", err)
	}
	close(p.closeDone)
	return p.closeErr
}

// stopLater stops a session whose Stop could not run in its caller's
// context (it ended first, or a reconnect held the session), then frees
// the lease's slot. The session's StopBudgets bound it; Close waits for it.
func (p *Pool) stopLater(l *Lease) {
	defer p.wg.Done()
	defer func() { <-p.slot }()
	if err := l.sess.Stop(context.Background()); err != nil {
		p.log.Warn("pool: stopping a released session", zap.Int("lease", l.id), zap.Error(err))
	}
}
