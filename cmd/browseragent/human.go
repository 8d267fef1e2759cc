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
	humanAuto     = "auto"     // live when stdin is a terminal, off otherwise
	humanLive     = "live"     // the live view; Enter too when stdin is a terminal
	humanTerminal = "terminal" // Enter only (a --headful window, or another screen)
	humanOff      = "off"      // no person: request_human fails with ErrNoHuman
)

// humanFlags are --human, --human-timeout and --live-addr.
type humanFlags struct {
	mode     string
	timeout  time.Duration
	liveAddr string
}

func (f *humanFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "human", humanAuto, "hand the browser to a person when the model or a policy asks: live (a live view on loopback: its URL is printed, click Done there or press Enter here), terminal (press Enter here; with --headful, use the window), off (the model is told no person is available), auto (live when stdin is a terminal, off otherwise, so an unattended run never waits for a person)")
	fs.DurationVar(&f.timeout, "human-timeout", 0, "how long one hand-off waits for the person (0: the agent's default, "+agent.DefaultHumanTimeout.String()+")")
	fs.StringVar(&f.liveAddr, "live-addr", liveview.DefaultAddr, "the live view's listen address (loopback only; port 0 picks a free one)")
}

// check validates the flags and resolves auto; stdinTTY says whether stdin
// is a terminal.
func (f *humanFlags) check(stdinTTY bool) error {
	switch f.mode {
	case humanAuto:
		f.mode = humanOff
		if stdinTTY {
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
// reader goroutine lives until stdin ends, like the process reading it.
func (f *humanFlags) setup(s *session.Session, stdin io.Reader, stdinTTY bool, w io.Writer) (*humanSetup, error) {
	if f.mode == humanOff || f.mode == "" {
		return &humanSetup{}, nil
	}
	var lines <-chan string
	if stdinTTY {
		lines = readLines(stdin)
	}
	if f.mode == humanTerminal {
		return &humanSetup{handler: agent.HumanHandlerFunc(func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
			drain(lines)
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
		Announce: func(a liveview.Announcement) { announce(w, a, stdinTTY) },
	}}, nil
}

// announce tells the person what is asked and where to act.
func announce(w io.Writer, a liveview.Announcement, enter bool) {
	fmt.Fprintf(w, "\n>>> A person is needed: %s\n", a.Request.Reason)
	if a.Request.URL != "" {
		fmt.Fprintf(w, "    page: %s\n", a.Request.URL)
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
}

// readLines sends each line of r until it ends. Its goroutine cannot be
// interrupted (a blocked read on a terminal): it ends with r.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
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
	fs.StringVar(&f.mode, "human", "elicit", "hand the browser to the client's user when run_task's model or a policy asks: elicit (a live view on loopback, its URL sent to the user by MCP elicitation; accept when done) or off (the model is told no person is available); a client without elicitation gets the same answer as off")
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
