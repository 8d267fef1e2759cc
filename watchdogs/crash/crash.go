package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// CrashPolicy says what the crash watchdog does after a tab's renderer
// crashed. Every policy reports the crash first.
type CrashPolicy string

const (
	// CrashReportOnly reports the crash (BrowserError TargetCrashed) and
	// leaves the dead tab open: calls on it fail with cdp.ErrTargetCrashed
	// until the agent closes it. The default.
	CrashReportOnly CrashPolicy = "report"
	// CrashCloseTab also closes the crashed tab (CloseTab), so the session's
	// focus moves to another tab.
	CrashCloseTab CrashPolicy = "close_tab"
)

// Crash watchdog defaults (browser-use's reconnect: 3 attempts, 1/2/4 s,
// 15 s each).
const (
	DefaultReconnectAttempts = 3
	DefaultReconnectTimeout  = 15 * time.Second
	// DefaultExitGrace is how long a lost connection to a launched browser
	// waits for the process to be reaped before reporting a connection loss
	// rather than an exit.
	DefaultExitGrace = 5 * time.Second
)

// DefaultReconnectBackoff is the wait before each reconnect attempt.
var DefaultReconnectBackoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// CrashConfig configures the crash watchdog. The zero value is usable.
type CrashConfig struct {
	// Policy after a tab crash. Default CrashReportOnly.
	Policy CrashPolicy
	// ReconnectAttempts bounds the reconnects after the websocket to a remote
	// browser (Profile.CDPURL) dropped. Default DefaultReconnectAttempts;
	// negative: never reconnect (report the loss only).
	ReconnectAttempts int
	// ReconnectBackoff is the wait before attempt i (the last value repeats).
	// Default DefaultReconnectBackoff.
	ReconnectBackoff []time.Duration
	// ReconnectTimeout bounds one attempt. Default DefaultReconnectTimeout.
	ReconnectTimeout time.Duration
	// ExitGrace: see DefaultExitGrace.
	ExitGrace time.Duration
}

// crashReconnector is what the crash watchdog needs from the session to
// restore a dropped connection: redial the same endpoint, re-run target
// discovery and auto-attach, re-adopt the tabs that still exist and restore
// the focus if its tab still exists. Without it, an attempt only probes
// whether the endpoint answers again.
type crashReconnector interface {
	Reconnect(ctx context.Context) error
}

// errCrashNoReconnect is an attempt's error when the endpoint answers but
// the session cannot re-attach to it.
var errCrashNoReconnect = errors.New("crash: the browser endpoint answers again, but this session cannot reconnect (session.Session has no Reconnect method)")

// Crash is the crash watchdog (name "crash"). It reports, as BrowserError
// events the agent and the trace see:
//   - a tab's renderer crash (Type "TargetCrashed", from the session's
//     TargetCrashed event), then applies its CrashPolicy;
//   - the exit of a browser the session launched (Type "BrowserExited",
//     with the exit status);
//   - a dropped websocket to a remote browser: BrowserReconnecting for each
//     attempt, then BrowserReconnected (with the downtime) or BrowserError
//     "ReconnectionFailed".
//
// Its BrowserError events carry Details["watchdog"] = "crash". Calls pending
// on a dead connection or tab fail on their own (cdp.ErrConnectionLost,
// cdp.ErrTargetCrashed); this watchdog makes the cause visible.
type Crash struct {
	cfg CrashConfig

	mu      sync.Mutex
	sess    *session.Session
	crashed []string
	ctx     context.Context
	cancel  context.CancelFunc
	stopped bool
	wg      sync.WaitGroup
}

// NewCrash returns the crash watchdog.
func NewCrash(cfg CrashConfig) *Crash {
	if cfg.Policy == "" {
		cfg.Policy = CrashReportOnly
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
	return &Crash{cfg: cfg}
}

// Name implements session.Watchdog.
func (c *Crash) Name() string { return "crash" }

// Attach implements session.Watchdog.
func (c *Crash) Attach(s *session.Session) error {
	switch c.cfg.Policy {
	case CrashReportOnly, CrashCloseTab:
	default:
		return fmt.Errorf("crash: unknown policy %q (want %q or %q)", c.cfg.Policy, CrashReportOnly, CrashCloseTab)
	}
	c.mu.Lock()
	c.sess = s
	c.crashed = nil
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.stopped = false
	c.mu.Unlock()
	return errors.Join(
		register(s.Bus(), c.Name(), events.TargetCrashed, c.crashOnTargetCrashed),
		register(s.Bus(), c.Name(), events.BrowserConnected, c.crashOnConnected),
	)
}

// Detach implements session.Detacher: it stops the monitor (and any
// reconnect in progress).
func (c *Crash) Detach(context.Context) error {
	c.mu.Lock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// Crashed returns the targets whose renderer crashed since Start.
func (c *Crash) Crashed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.crashed)
}

func (c *Crash) crashLog() *zap.Logger {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return zap.NewNop()
	}
	return c.sess.Logger().Named("crash")
}

func (c *Crash) crashEmitError(ctx context.Context, s *session.Session, typ, msg string, details map[string]string) {
	b := s.Bus()
	if b == nil {
		return
	}
	d := map[string]string{"watchdog": "crash"}
	for k, v := range details {
		d[k] = v
	}
	bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{Type: typ, Message: msg, Details: d})
}

func (c *Crash) crashOnTargetCrashed(ctx context.Context, ev events.TargetCrashedEvent) (events.None, error) {
	c.mu.Lock()
	s := c.sess
	// The session may report one crash twice (Inspector.targetCrashed and
	// Target.targetCrashed).
	if slices.Contains(c.crashed, ev.TargetID) {
		c.mu.Unlock()
		return events.None{}, nil
	}
	c.crashed = append(c.crashed, ev.TargetID)
	c.mu.Unlock()

	isTab := slices.ContainsFunc(s.Tabs(), func(t events.TabInfo) bool { return t.TargetID == ev.TargetID })
	what := "a cross-site frame"
	if isTab {
		what = "the tab"
	}
	msg := fmt.Sprintf("%s %s crashed (%s): its page is gone and actions on it fail", what, crashShort(ev.TargetID), ev.Error)
	if c.cfg.Policy == CrashCloseTab && isTab {
		msg += "; closing it"
	} else if isTab {
		msg += "; close it or switch to another tab"
	}
	c.crashEmitError(ctx, s, "TargetCrashed", msg, map[string]string{"target_id": ev.TargetID, "error": ev.Error})
	if c.cfg.Policy == CrashCloseTab && isTab {
		if _, err := bus.Call(ctx, s.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: ev.TargetID}); err != nil {
			return events.None{}, fmt.Errorf("crash: closing crashed tab %s: %w", ev.TargetID, err)
		}
	}
	return events.None{}, nil
}

func crashShort(id string) string {
	if len(id) > 4 {
		return id[len(id)-4:]
	}
	return id
}

func (c *Crash) crashOnConnected(_ context.Context, ev events.BrowserConnectedEvent) (events.None, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.sess == nil {
		return events.None{}, nil
	}
	s := c.sess
	endpoint := s.Profile().CDPURL
	if endpoint == "" {
		endpoint = ev.CDPURL
	}
	c.wg.Add(1)
	go c.crashMonitor(c.ctx, s, endpoint)
	return events.None{}, nil
}

// crashMonitor watches the browser process and the connection until Detach.
func (c *Crash) crashMonitor(ctx context.Context, s *session.Session, endpoint string) {
	defer c.wg.Done()
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
			c.crashReportExit(ctx, s, browser)
			return
		case <-conn.Done():
		}
		lost := conn.Err()
		if !errors.Is(lost, cdp.ErrConnectionLost) {
			return // closed by Stop
		}
		if browser != nil {
			// A launched browser: the usual cause is its death.
			select {
			case <-ctx.Done():
			case <-exited:
				c.crashReportExit(ctx, s, browser)
			case <-time.After(c.cfg.ExitGrace):
				c.crashEmitError(ctx, s, "ConnectionLost",
					fmt.Sprintf("the connection to the launched browser (pid %d) was lost while the process still runs: %v; restart the session", browser.PID(), lost),
					map[string]string{"pid": strconv.Itoa(browser.PID())})
			}
			return
		}
		if !c.crashReconnect(ctx, s, endpoint, lost) {
			return
		}
		// Reconnected: watch the new connection.
	}
}

func (c *Crash) crashReportExit(ctx context.Context, s *session.Session, browser *cdp.Browser) {
	status := "exited"
	if err := browser.Wait(); err != nil {
		status = err.Error()
	}
	c.crashEmitError(ctx, s, "BrowserExited",
		fmt.Sprintf("the browser process (pid %d) ended (%s): every tab is gone and actions fail; restart the session", browser.PID(), status),
		map[string]string{"pid": strconv.Itoa(browser.PID()), "status": status})
}

// crashReconnect runs the bounded reconnect attempts after lost. It reports
// whether the session is connected again.
func (c *Crash) crashReconnect(ctx context.Context, s *session.Session, endpoint string, lost error) bool {
	n := c.cfg.ReconnectAttempts
	if n < 0 {
		c.crashEmitError(ctx, s, "ConnectionLost", fmt.Sprintf("the connection to %s was lost: %v", endpoint, lost), map[string]string{"cdp_url": endpoint})
		return false
	}
	b := s.Bus()
	start := time.Now()
	rec, canReconnect := any(s).(crashReconnector)
	var last error
	for attempt := 1; attempt <= n; attempt++ {
		wait := c.cfg.ReconnectBackoff[min(attempt-1, len(c.cfg.ReconnectBackoff)-1)]
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		if b != nil {
			bus.Emit(ctx, b, events.BrowserReconnecting, events.BrowserReconnectingEvent{CDPURL: endpoint, Attempt: attempt, MaxAttempts: n})
		}
		actx, cancel := context.WithTimeout(ctx, c.cfg.ReconnectTimeout)
		if canReconnect {
			last = rec.Reconnect(actx)
		} else {
			last = crashProbe(actx, endpoint, s.Profile().CDPHeaders)
		}
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if last == nil {
			if b != nil {
				bus.Emit(ctx, b, events.BrowserReconnected, events.BrowserReconnectedEvent{CDPURL: endpoint, Attempt: attempt, Downtime: time.Since(start)})
			}
			return true
		}
		c.crashLog().Debug("reconnect attempt failed", zap.Int("attempt", attempt), zap.Error(last))
	}
	c.crashEmitError(ctx, s, "ReconnectionFailed",
		fmt.Sprintf("the connection to %s was lost (%v) and %d reconnect attempts failed, the last with: %v", endpoint, lost, n, last),
		map[string]string{"cdp_url": endpoint, "attempts": strconv.Itoa(n)})
	return false
}

// crashProbe dials the endpoint and hangs up: without the session's help an
// attempt can only tell whether the browser answers.
func crashProbe(ctx context.Context, endpoint string, h map[string][]string) error {
	conn, err := cdp.Connect(ctx, endpoint, cdp.WithHeader(h))
	if err != nil {
		return err
	}
	conn.Close()
	return errCrashNoReconnect
}
