package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/liveview"
	"github.com/browseragent/browseragent/mcpserver"
	"github.com/browseragent/browseragent/session"
)

// Values of --human.
const (
	humanAuto     = "auto"     // live when stdin (in the foreground) and stderr are terminals, off otherwise
	humanLive     = "live"     // the live view; Enter too when stdin is a terminal
	humanTerminal = "terminal" // Enter only (a --headful window, or another screen)
	humanOff      = "off"      // no person: request_human is not offered
)

// stdinIsTerminal reports whether stdin is a terminal this process may
// read: in the foreground (a background read stops the process).
func stdinIsTerminal() bool { return fdIsTerminal(0) && inForeground(0) }

// stderrIsTerminal reports whether stderr, where hand-offs are announced,
// is a terminal someone watches.
func stderrIsTerminal() bool { return fdIsTerminal(2) }

// humanFlags are --human, --human-timeout and --live-addr.
type humanFlags struct {
	mode     string
	timeout  time.Duration
	liveAddr string
}

func (f *humanFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "human", humanAuto, "hand the browser to a person when the model or a policy asks: live (a live view on loopback: its URL is printed, click Done there or press Enter here), terminal (press Enter here; with --headful, use the window), off (request_human is not offered; a hand-off policy tells the model no person is available), auto (live when stdin, in the foreground, and stderr are terminals, off otherwise, so an unattended or backgrounded run never waits for a person)")
	fs.DurationVar(&f.timeout, "human-timeout", 0, "how long one hand-off waits for the person (0: the agent's default, "+agent.DefaultHumanTimeout.String()+")")
	fs.StringVar(&f.liveAddr, "live-addr", liveview.DefaultAddr, "the live view's listen address (loopback only; port 0 picks a free one)")
}

// check validates the flags and resolves auto; stdinTTY says whether stdin
// is a terminal in the foreground, stderrTTY whether stderr (where the
// live view's URL is printed) is a terminal.
func (f *humanFlags) check(stdinTTY, stderrTTY bool) error {
	switch f.mode {
	case humanAuto:
		f.mode = humanOff
		if stdinTTY && stderrTTY {
			f.mode = humanLive
		}
	case humanLive, humanTerminal, humanOff:
	default:
		return usagef("--human %q: want auto, live, terminal or off", f.mode)
	}
	if f.mode == humanTerminal && !stdinTTY {
		return usagef("--human terminal needs stdin to be a terminal (use --human live, or off)")
	}
	if f.timeout < 0 {
		return usagef("--human-timeout must not be negative")
	}
	return nil
}

// humanSetup is a run's hand-off handler and what it started.
type humanSetup struct {
	handler agent.HumanHandler // nil: off
	live    *liveview.Server
}

// close stops the live view, if any.
func (h *humanSetup) close() error {
	if h == nil || h.live == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.live.Close(ctx)
}

// setup builds the handler for s. Announcements go to w. With a terminal
// stdin, Enter (after an optional note) also ends a hand-off: the line
// reader starts at the first hand-off (not before: a run moved to the
// background meanwhile must not be stopped for reading its terminal) and
// lives until stdin ends, like the process reading it.
func (f *humanFlags) setup(s *session.Session, stdin io.Reader, stdinTTY bool, w io.Writer) (*humanSetup, error) {
	if f.mode == humanOff || f.mode == "" {
		return &humanSetup{}, nil
	}
	var lines <-chan string
	start := func() {}
	if stdinTTY {
		lines, start = lazyLines(stdin)
	}
	if f.mode == humanTerminal {
		return &humanSetup{handler: agent.HumanHandlerFunc(func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
			drain(lines)
			start()
			announce(w, liveview.Announcement{Request: req, Headful: s.Profile().Headful}, true)
			for {
				select {
				case note, ok := <-lines:
					if !ok {
						return agent.HumanResponse{}, fmt.Errorf("%w: stdin closed", agent.ErrNoHuman)
					}
					return agent.HumanResponse{Via: liveview.ViaSignal, Note: note}, nil
				case <-ctx.Done():
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						return agent.HumanResponse{}, fmt.Errorf("%w: %w", agent.ErrHumanTimeout, ctx.Err())
					}
					return agent.HumanResponse{}, ctx.Err()
				}
			}
		})}, nil
	}
	v, err := liveview.New(s, liveview.Config{Addr: f.liveAddr})
	if err != nil {
		return nil, usagef("--live-addr: %v", err)
	}
	return &humanSetup{live: v, handler: &liveview.Handler{
		Server:   v,
		Signal:   lines,
		Announce: func(a liveview.Announcement) { start(); announce(w, a, stdinTTY) },
	}}, nil
}

// announce tells the person what is asked and where to act: the trusted
// lines (who asks, the site, where to act) first; the reason, in the
// model's words which a page may have inspired, last, quoted and cleaned
// of control characters (it cannot clear the screen or fake a line).
func announce(w io.Writer, a liveview.Announcement, enter bool) {
	fmt.Fprintf(w, "\n>>> browseragent needs a person to take over the browser\n")
	fmt.Fprintf(w, "    asked by: %s\n", liveview.Asker(a.Request.By))
	if o := liveview.Origin(a.Request.URL); o != "" {
		fmt.Fprintf(w, "    site: %s\n", liveview.CleanText(o, 200))
	}
	if a.URL != "" {
		fmt.Fprintf(w, "    open the live view: %s\n", a.URL)
	}
	if a.Headful {
		fmt.Fprintln(w, "    or use the browser window")
	}
	switch {
	case a.URL != "" && enter:
		fmt.Fprintln(w, "    when done, click Done in the live view, or type an optional note here and press Enter")
	case a.URL != "":
		fmt.Fprintln(w, "    when done, click Done in the live view")
	default:
		fmt.Fprintln(w, "    when done, type an optional note here and press Enter")
	}
	if !a.Request.Deadline.IsZero() {
		fmt.Fprintf(w, "    the agent waits until %s\n", a.Request.Deadline.Format(time.Kitchen))
	}
	fmt.Fprintln(w, "    never type a password or payment details for a site you did not expect")
	fmt.Fprintf(w, "    reason given: “%s”\n", liveview.CleanText(a.Request.Reason, 300))
}

// lazyLines returns a channel of r's lines and the func that starts
// reading (once; later calls do nothing). The reader's goroutine cannot be
// interrupted (a blocked read on a terminal): it ends with r.
func lazyLines(r io.Reader) (<-chan string, func()) {
	ch := make(chan string)
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			go func() {
				defer close(ch)
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					ch <- sc.Text()
				}
			}()
		})
	}
}

// drain discards lines typed before a hand-off began.
func drain(lines <-chan string) {
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// mcpHumanFlags are mcp's --human, --human-timeout and --live-addr.
type mcpHumanFlags struct {
	mode     string
	timeout  time.Duration
	liveAddr string
}

func (f *mcpHumanFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "human", "elicit", "hand the browser to the client's user when run_task's model or a policy asks: elicit (a live view on loopback, its URL sent to the user by MCP elicitation; accept when done) or off (request_human is not offered); a client that cannot be asked (no elicitation, or protocol 2026-07-28) is treated as off. The live view listens on loopback: a user on another machine (--http-allow-remote) must forward its port (ssh -L)")
	fs.DurationVar(&f.timeout, "human-timeout", 0, "how long one hand-off waits for the user (0: the agent's default, "+agent.DefaultHumanTimeout.String()+")")
	fs.StringVar(&f.liveAddr, "live-addr", liveview.DefaultAddr, "the live view's listen address (loopback only; port 0 picks a free one)")
}

// apply checks the flags and puts the timeout into set.
func (f *mcpHumanFlags) apply(set *agent.Settings) error {
	if f.mode != "elicit" && f.mode != humanOff {
		return usagef("--human %q: want elicit or off", f.mode)
	}
	if f.timeout < 0 {
		return usagef("--human-timeout must not be negative")
	}
	set.HumanTimeout = f.timeout
	return nil
}

// handoff returns the hand-off handler of one browser (nil when off); bind
// it to the browser's session once started.
func (f *mcpHumanFlags) handoff() *mcpHandoff {
	if f.mode == humanOff {
		return nil
	}
	return &mcpHandoff{addr: f.liveAddr}
}

// mcpHandoff is the MCP server's hand-off: a live view of the session,
// announced to the client's user by elicitation. It is made before the
// Driver (whose Settings hold it) and bound to the session after it
// started, before any tool call can hand off.
type mcpHandoff struct {
	addr string

	mu sync.Mutex
	h  *liveview.Handler
}

// Handoff implements agent.HumanHandler.
func (m *mcpHandoff) Handoff(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
	m.mu.Lock()
	h := m.h
	m.mu.Unlock()
	if h == nil {
		return mcpserver.AskHuman(ctx, req, "")
	}
	return h.Handoff(ctx, req)
}

// bind starts the live view of s.
func (m *mcpHandoff) bind(s *session.Session) error {
	if m == nil {
		return nil
	}
	v, err := liveview.New(s, liveview.Config{Addr: m.addr})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.h = &liveview.Handler{Server: v, Ask: func(ctx context.Context, a liveview.Announcement) (agent.HumanResponse, error) {
		return mcpserver.AskHuman(ctx, a.Request, a.URL)
	}}
	m.mu.Unlock()
	return nil
}

// close stops the live view.
func (m *mcpHandoff) close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	h := m.h
	m.h = nil
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.Server.Close(ctx)
}
