// Package crash is the crash watchdog: it makes browser failures visible to
// the agent and the trace, and restores a dropped connection to a remote
// browser.
//
// It handles TargetCrashed (dispatched by the session), BrowserConnected
// (it starts watching the browser process and the connection) and
// BrowserStopped (it stops reconnecting). It emits BrowserError events, each
// with Details["watchdog"] = "crash":
//   - "TargetCrashed" when a tab's (or cross-site iframe's) renderer
//     crashed, then applies its Policy;
//   - "BrowserExited" when a browser the session launched exited (with the
//     exit status), and "ConnectionLost" when the connection to it was lost
//     while the process still runs;
//   - for a dropped connection to a remote browser (Profile.CDPURL):
//     BrowserReconnecting before each attempt's backoff (Session.Reconnect
//     follows), then BrowserReconnected (with the downtime), or
//     "ReconnectionFailed" after the last attempt ("ConnectionLost" if
//     reconnecting is disabled).
//
// Whenever it gives the browser up ("BrowserExited", "ConnectionLost",
// "ReconnectionFailed") it also emits BrowserLost, on which the session's
// Ready stops waiting and the agent ends its run.
//
// It never relaunches a browser or restarts the session. Calls pending on a
// dead connection or tab fail on their own (cdp.ErrConnectionLost,
// cdp.ErrTargetCrashed); this watchdog reports the cause.
package crash

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// Name is the crash watchdog's name and the name of its handlers.
const Name = "crash"

// Policy says what the crash watchdog does after a tab's renderer crashed.
// Every policy reports the crash first.
type Policy string

const (
	// ReportOnly reports the crash (BrowserError TargetCrashed) and leaves
	// the dead tab open: calls on it fail with cdp.ErrTargetCrashed until
	// the agent closes it. The default.
	ReportOnly Policy = "report"
	// CloseTab reports the crash and closes the crashed tab (dispatching
	// events.CloseTab), so the session's focus moves to another tab.
	CloseTab Policy = "close_tab"
)

// Reconnect and exit defaults (browser-use's reconnect: 3 attempts, 1/2/4 s,
// 15 s each).
const (
	DefaultReconnectAttempts = 3
	DefaultReconnectTimeout  = 15 * time.Second
	// DefaultExitGrace is how long a lost connection to a launched browser
	// waits for the process to end before it is reported as a connection
	// loss rather than an exit.
	DefaultExitGrace = 5 * time.Second
)

// DefaultReconnectBackoff is the wait before each reconnect attempt. The
// first is short: a dropped websocket (a proxy or load balancer restarting)
// usually accepts a new connection at once, and the agent's next step waits
// for it.
var DefaultReconnectBackoff = []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second}

// ErrUnknownPolicy is wrapped by the Attach error of a crash watchdog
// configured with a Policy it does not know.
var ErrUnknownPolicy = errors.New("crash: unknown policy")

// Config configures the crash watchdog. The zero value is usable.
type Config struct {
	// Policy after a tab crash. Default ReportOnly.
	Policy Policy
	// ReconnectAttempts bounds the reconnects after the connection to a
	// remote browser (Profile.CDPURL) dropped; negative: never reconnect
	// (report the loss only). Default DefaultReconnectAttempts.
	ReconnectAttempts int
	// ReconnectBackoff is the wait before attempt i (the last value repeats).
	// Default DefaultReconnectBackoff.
	ReconnectBackoff []time.Duration
	// ReconnectTimeout bounds one attempt. Default DefaultReconnectTimeout.
	ReconnectTimeout time.Duration
	// ExitGrace is how long a lost connection to a launched browser waits
	// for the process to end. Default DefaultExitGrace.
	ExitGrace time.Duration
	// Logger receives debug messages. Default: the session's logger, named
	// "crash".
	Logger *zap.Logger
}

// Watchdog is the crash watchdog; see the package documentation.
type Watchdog struct {
	cfg Config

	mu      sync.Mutex
	sess    *session.Session
	log     *zap.Logger
	group   *routine.Group     // the monitor; nil before Attach
	quit    context.Context    // the monitor's: ends on BrowserStopped or Detach
	halt    context.CancelFunc // ends quit
	crashed []string
}

// New returns a crash watchdog.
func New(cfg Config) *Watchdog {
	if cfg.Policy == "" {
		cfg.Policy = ReportOnly
	}
	if cfg.ReconnectAttempts == 0 {
		cfg.ReconnectAttempts = DefaultReconnectAttempts
	}
	if len(cfg.ReconnectBackoff) == 0 {
		cfg.ReconnectBackoff = DefaultReconnectBackoff
	}
	if cfg.ReconnectTimeout <= 0 {
		cfg.ReconnectTimeout = DefaultReconnectTimeout
	}
	if cfg.ExitGrace <= 0 {
		cfg.ExitGrace = DefaultExitGrace
	}
	return &Watchdog{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog: it checks the policy and registers
// the handlers.
func (w *Watchdog) Attach(s *session.Session) error {
	switch w.cfg.Policy {
	case ReportOnly, CloseTab:
	default:
		return fmt.Errorf("%w %q (want %q or %q)", ErrUnknownPolicy, w.cfg.Policy, ReportOnly, CloseTab)
	}
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	g := routine.New(context.Background())
	quit, halt := context.WithCancel(g.Context())
	w.mu.Lock()
	w.sess, w.log, w.group, w.quit, w.halt = s, log, g, quit, halt
	w.crashed = nil
	w.mu.Unlock()
	return errors.Join(
		session.Handle(s, events.TargetCrashed, Name, w.onTargetCrashed),
		session.Handle(s, events.BrowserConnected, Name, w.onConnected),
		session.Handle(s, events.BrowserStopped, Name, w.onStopped),
	)
}

// Detach implements session.Detacher: it stops the monitor (and a reconnect
// in progress) and waits for it until ctx ends.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g := w.group
	w.mu.Unlock()
	if g == nil {
		return nil
	}
	if err := g.Stop(ctx); err != nil {
		return fmt.Errorf("crash: stopping: %w", err)
	}
	return nil
}

// Crashed returns the targets whose renderer crashed since Start.
func (w *Watchdog) Crashed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.crashed)
}

func (w *Watchdog) emitError(ctx context.Context, s *session.Session, typ, msg string, details map[string]string) {
	b := s.Bus()
	if b == nil {
		return
	}
	d := map[string]string{"watchdog": Name}
	maps.Copy(d, details)
	bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{Type: typ, Message: msg, Details: d})
}

// giveUp reports the browser gone for good: BrowserError for the record,
// then BrowserLost, on which the session's Ready stops waiting.
func (w *Watchdog) giveUp(ctx context.Context, s *session.Session, typ, msg string, details map[string]string) {
	w.emitError(ctx, s, typ, msg, details)
	if b := s.Bus(); b != nil {
		bus.Emit(ctx, b, events.BrowserLost, events.BrowserLostEvent{Reason: msg})
	}
}

func (w *Watchdog) onTargetCrashed(ctx context.Context, ev events.TargetCrashedEvent) (events.None, error) {
	w.mu.Lock()
	s := w.sess
	// The session may report one crash twice (Inspector.targetCrashed and
	// Target.targetCrashed).
	if slices.Contains(w.crashed, ev.TargetID) {
		w.mu.Unlock()
		return events.None{}, nil
	}
	w.crashed = append(w.crashed, ev.TargetID)
	w.mu.Unlock()

	isTab := slices.ContainsFunc(s.Tabs(), func(t events.TabInfo) bool { return t.TargetID == ev.TargetID })
	what := "a cross-site frame"
	if isTab {
		what = "the tab"
	}
	closeIt := w.cfg.Policy == CloseTab && isTab
	msg := fmt.Sprintf("%s %s crashed (%s): its page is gone and actions on it fail", what, shortID(ev.TargetID), ev.Error)
	if closeIt {
		msg += "; closing it"
	} else if isTab {
		msg += "; close it or switch to another tab"
	}
	w.emitError(ctx, s, "TargetCrashed", msg, map[string]string{"target_id": ev.TargetID, "error": ev.Error})
	if closeIt {
		if _, err := bus.Call(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: ev.TargetID}); err != nil {
			return events.None{}, fmt.Errorf("crash: closing crashed tab %s: %w", ev.TargetID, err)
		}
	}
	return events.None{}, nil
}

// shortID is the tail of a target id, as tabs are named to the model.
func shortID(id string) string {
	if len(id) > 4 {
		return id[len(id)-4:]
	}
	return id
}

// onConnected starts the monitor of the browser and the connection.
func (w *Watchdog) onConnected(_ context.Context, ev events.BrowserConnectedEvent) (events.None, error) {
	w.mu.Lock()
	s, g, quit := w.sess, w.group, w.quit
	w.mu.Unlock()
	endpoint := s.Profile().CDPURL
	if endpoint == "" {
		endpoint = ev.CDPURL
	}
	// Fails only once Detach began: nothing left to watch then.
	_ = g.Go("crash monitor", func(context.Context) { w.monitor(quit, s, endpoint) })
	return events.None{}, nil
}

// onStopped ends reconnecting as soon as the session stops: Session.Reconnect
// would wait for Stop, and Stop waits for this watchdog's Detach.
func (w *Watchdog) onStopped(context.Context, events.BrowserStoppedEvent) (events.None, error) {
	w.mu.Lock()
	halt := w.halt
	w.mu.Unlock()
	halt()
	return events.None{}, nil
}

// monitor watches the browser process and the connection until ctx ends.
func (w *Watchdog) monitor(ctx context.Context, s *session.Session, endpoint string) {
	browser := s.Browser()
	var exited <-chan struct{}
	if browser != nil {
		exited = browser.Done()
	}
	for {
		conn := s.Conn()
		if conn == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-exited:
			w.reportExit(ctx, s, browser)
			return
		case <-conn.Done():
		}
		lost := conn.Err()
		if !errors.Is(lost, cdp.ErrConnectionLost) {
			return // closed by Stop
		}
		if browser != nil {
			w.launchedLost(ctx, s, browser, exited, lost)
			return
		}
		if !w.reconnect(ctx, s, endpoint, lost) {
			return
		}
		// Reconnected: watch the new connection.
	}
}

// launchedLost reports a lost connection to a launched browser: usually its
// death, reported as such if the process ends within ExitGrace.
func (w *Watchdog) launchedLost(ctx context.Context, s *session.Session, browser *cdp.Browser, exited <-chan struct{}, lost error) {
	grace := time.NewTimer(w.cfg.ExitGrace)
	defer grace.Stop()
	select {
	case <-ctx.Done():
	case <-exited:
		w.reportExit(ctx, s, browser)
	case <-grace.C:
		w.giveUp(ctx, s, "ConnectionLost",
			fmt.Sprintf("the connection to the launched browser (pid %d) was lost while the process still runs: %v; restart the session", browser.PID(), lost),
			map[string]string{"pid": strconv.Itoa(browser.PID())})
	}
}

func (w *Watchdog) reportExit(ctx context.Context, s *session.Session, browser *cdp.Browser) {
	status := "exited"
	if err := browser.Wait(); err != nil {
		status = err.Error()
	}
	w.giveUp(ctx, s, "BrowserExited",
		fmt.Sprintf("the browser process (pid %d) ended (%s): every tab is gone and actions fail; restart the session", browser.PID(), status),
		map[string]string{"pid": strconv.Itoa(browser.PID()), "status": status})
}

// reconnect runs the bounded reconnect attempts after lost. It reports
// whether the session is connected again.
func (w *Watchdog) reconnect(ctx context.Context, s *session.Session, endpoint string, lost error) bool {
	n := w.cfg.ReconnectAttempts
	if n < 0 {
		w.giveUp(ctx, s, "ConnectionLost", fmt.Sprintf("the connection to %s was lost: %v", endpoint, lost), map[string]string{"cdp_url": endpoint})
		return false
	}
	b := s.Bus()
	start := time.Now()
	var last error
	for attempt := 1; attempt <= n; attempt++ {
		// Announced before the backoff: whoever waits for the browser
		// (Session.Ready) learns at once that a reconnect is under way.
		if b != nil {
			bus.Emit(ctx, b, events.BrowserReconnecting, events.BrowserReconnectingEvent{CDPURL: endpoint, Attempt: attempt, MaxAttempts: n})
		}
		if !sleep(ctx, w.cfg.ReconnectBackoff[min(attempt-1, len(w.cfg.ReconnectBackoff)-1)]) {
			return false
		}
		actx, cancel := context.WithTimeout(ctx, w.cfg.ReconnectTimeout)
		last = s.Reconnect(actx)
		cancel()
		if ctx.Err() != nil || errors.Is(last, session.ErrNotStarted) {
			return false // the session is stopping or stopped
		}
		if last == nil {
			if b != nil {
				bus.Emit(ctx, b, events.BrowserReconnected, events.BrowserReconnectedEvent{CDPURL: endpoint, Attempt: attempt, Downtime: time.Since(start)})
			}
			return true
		}
		w.log.Debug("reconnect attempt failed", zap.Int("attempt", attempt), zap.Error(last))
	}
	w.giveUp(ctx, s, "ReconnectionFailed",
		fmt.Sprintf("the connection to %s was lost (%v) and %d reconnect attempts failed, the last with: %v", endpoint, lost, n, last),
		map[string]string{"cdp_url": endpoint, "attempts": strconv.Itoa(n)})
	return false
}

// sleep waits d, or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
