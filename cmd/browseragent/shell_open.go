package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// serveCommand is the hidden command the background process runs: the same
// binary, started by open.
const serveCommand = "__serve-session"

// defaultIdle is how long a background session waits for a command before
// it closes itself.
const defaultIdle = 30 * time.Minute

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// openFlags are open's flags; the background process parses the same
// (open passes them on as given) plus its own hidden ones.
type openFlags struct {
	drive   driveFlags
	sess    sessionFlags
	idle    time.Duration
	uploads stringsFlag

	// The background process's own.
	log       string
	readyFD   int
	readyFile string
}

func (f *openFlags) register(fs *flag.FlagSet) {
	f.drive.register(fs)
	f.sess.register(fs)
	fs.DurationVar(&f.idle, "idle", defaultIdle, "close the session after this long without a command (0: never)")
	fs.Var(&f.uploads, "upload-file", "a local file the session may upload (repeatable); 'upload' refuses any other")
}

// sessionOnlyFlags are open's flags that do not configure the session, so
// giving them to a running one is no surprise.
var sessionOnlyFlags = map[string]bool{"session": true, "json": true, "timeout": true}

func runOpen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var of openFlags
	fs := flag.NewFlagSet("open", flag.ContinueOnError)
	of.register(fs)
	of.sess.command = "open"
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent open URL [--session NAME] [--idle D] [browser and session flags]")
		fmt.Fprintln(stderr, "Starts a background session (a browser of its own, or --cdp-url) and opens URL in it, or, when the named session runs already, opens URL in it. It returns once the page is open and prints what happened.")
		fmt.Fprintln(stderr, "Then: state, click N, type N \"text\", select, scroll, keys, screenshot, tabs, back, text, close ... (docs/shell.md). Exit codes: 0 ok, 1 failed, 2 usage, 3 the session is not running.")
		fs.PrintDefaults()
	}
	pos, flagArgs, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want the URL to open")
	}
	if _, err := risks(of.drive.deny); err != nil {
		return err
	}
	p, err := of.sess.paths()
	if err != nil {
		return err
	}
	if err := of.ensure(ctx, fs, p, flagArgs, stderr); err != nil {
		return err
	}
	return of.sess.do(ctx, stdout, "navigate", map[string]any{"url": pos[0]})
}

// ensure makes the session run: it is running (the flags that configure a
// session are then ignored, and said so), or it is started. A session
// that is starting or stopping is waited for first.
func (of *openFlags) ensure(ctx context.Context, fs *flag.FlagSet, p control.Paths, flagArgs []string, stderr io.Writer) error {
	c := p.Client(30 * time.Second)
	deadline := time.Now().Add(of.drive.browser.timeout + time.Minute)
	wait := 10 * time.Millisecond
	for {
		_, err := c.Call(ctx, control.Request{Op: control.OpInfo})
		switch {
		case err == nil:
			var ignored []string
			fs.Visit(func(f *flag.Flag) {
				if !sessionOnlyFlags[f.Name] {
					ignored = append(ignored, "--"+f.Name)
				}
			})
			if len(ignored) > 0 {
				fmt.Fprintf(stderr, "session %q is running already: opening the URL in it; it keeps its browser and settings (ignored: %s)\n", p.Name, strings.Join(ignored, " "))
			}
			return nil
		case !errors.Is(err, control.ErrNotRunning):
			return &exitError{exitFailed, err}
		}
		if nr := p.Diagnose(); nr.State != control.Busy {
			err := of.start(ctx, fs, p, flagArgs, stderr)
			if !errors.Is(err, errSessionBusy) {
				return err // started, or failed to
			}
			// Another open started it meanwhile: use that one.
		}
		if time.Now().After(deadline) {
			return &exitError{exitFailed, fmt.Errorf("session %q is starting or stopping and did not answer in time", p.Name)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// start runs the background process and waits until it listens.
func (of *openFlags) start(ctx context.Context, fs *flag.FlagSet, p control.Paths, flagArgs []string, stderr io.Writer) error {
	for _, u := range of.uploads {
		if _, err := os.Stat(u); err != nil {
			return usagef("--upload-file: %v", err)
		}
	}
	out := of.drive.outDir
	if out == "" {
		base, err := stateDir()
		if err != nil {
			return err
		}
		out = filepath.Join(base, "shell-"+p.Name+"-"+time.Now().UTC().Format("20060102-150405.000"))
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	if cdp := of.drive.browser.cdpURL; cdp != "" && fs.Lookup("new-tab") != nil && !flagGiven(fs, "new-tab") {
		if other := sharingBrowser(ctx, cdp); other != "" {
			// Two sessions in one tab would take each other's pages.
			fmt.Fprintf(stderr, "session %q uses this browser already: session %q works in a new tab of its own\n", other, p.Name)
			flagArgs = append(flagArgs, "--new-tab")
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(out, "session.log")
	argv := append([]string{serveCommand}, flagArgs...)
	argv = append(argv, "--session", p.Name, "--out", out, "--log", logPath)
	bound := of.drive.browser.timeout + 30*time.Second
	var pid int
	if p.Transport == control.TransportTCP {
		// Windows passes no extra file to a child: it says it is ready in
		// a file instead (the same way on Unix with this transport, so
		// that the tests there run this path).
		ready := filepath.Join(out, "session.ready")
		pid, err = spawnPolled(exe, append(argv, "--ready-file", ready), logPath, ready, bound)
	} else {
		pid, err = spawnSession(exe, append(argv, "--ready-fd", "3"), logPath, bound)
	}
	if errors.Is(err, errSessionBusy) && of.drive.outDir == "" {
		os.RemoveAll(out) // ours, and holding only the loser's log line
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "session %q started (pid %d); its files: %s\n", p.Name, pid, out)
	return nil
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// sharingBrowser returns the name of a running session connected to the
// browser at cdpURL, or "".
func sharingBrowser(ctx context.Context, cdpURL string) string {
	dir, err := control.OpenDir(control.DefaultDir())
	if err != nil {
		return ""
	}
	names, _ := dir.Names()
	for _, n := range names {
		p, err := dir.Session(n)
		if err != nil {
			continue
		}
		c := p.Client(5 * time.Second)
		if resp, err := c.Call(ctx, control.Request{Op: control.OpInfo}); err == nil && resp.Info != nil &&
			strings.TrimRight(resp.Info.CDPURL, "/") == strings.TrimRight(cdpURL, "/") {
			return n
		}
	}
	return ""
}

// spawnPolled starts the background process detached from this one
// (detachedAttr; stdin and stdout on the null device; stderr appended to
// logPath) and polls for readyPath, which it creates once it listens
// ("ok") or when another process holds its session ("busy"), until it
// does, the process exits, or bound passes. On success the process is
// left running and readyPath removed; otherwise it is reaped (killed at
// the deadline). One goroutine waits for the process and ends with it.
func spawnPolled(exe string, argv []string, logPath, readyPath string, bound time.Duration) (int, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	os.Remove(readyPath)
	cmd := exec.Command(exe, argv...)
	cmd.Stderr = logf
	cmd.SysProcAttr = detachedAttr()
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return 0, fmt.Errorf("starting the session's process: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	said := func() string {
		b, _ := os.ReadFile(readyPath)
		return strings.TrimSpace(string(b))
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	wait := 10 * time.Millisecond
	for {
		switch said() {
		case "ok":
			os.Remove(readyPath)
			return pid, nil
		case "busy":
			<-exited
			os.Remove(readyPath)
			return 0, errSessionBusy
		}
		select {
		case werr := <-exited:
			if said() == "busy" {
				os.Remove(readyPath)
				return 0, errSessionBusy
			}
			os.Remove(readyPath)
			return 0, fmt.Errorf("the session's process (pid %d) ended before it was ready (%v); its log %s ends with:\n%s", pid, werr, logPath, logTail(logPath, 15))
		case <-deadline.C:
			cmd.Process.Kill()
			<-exited
			os.Remove(readyPath)
			return 0, fmt.Errorf("the session's process (pid %d) did not start within %s; its log %s ends with:\n%s", pid, bound, logPath, logTail(logPath, 15))
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// logTail is the end of a log file, for an error message.
func logTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func runClose(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("close", "", "Ends the session: its browser stops (a browser it connected to with --cdp-url keeps running) and its history, trace and report are written; prints where.", &sf, stderr)
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("close takes no arguments (the session is --session NAME)")
	}
	resp, err := sf.call(ctx, control.Request{Op: control.OpClose})
	r := sf.result(resp, err)
	if resp != nil && resp.Info != nil {
		in := resp.Info
		r.Text = fmt.Sprintf("Closed session %q.\ntrace:   %s (check it with: browseragent verify %s)\nreport:  %s\nhistory: %s", sf.name, in.Trace, in.Trace, in.Report, in.History)
		if err != nil {
			err = &exitError{exitFailed, fmt.Errorf("session %q closed with errors: %w", sf.name, err)}
			r.Error = err.Error()
		}
	}
	return sf.finish(stdout, r, r.Text, err)
}

func runSessions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("sessions", "", "Lists the running sessions: name, pid, idle time and URL. Sockets left by sessions whose process died are removed, and said so on stderr.", &sf, stderr)
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("sessions takes no arguments")
	}
	dir, err := control.OpenDir(control.DefaultDir())
	if err != nil {
		return err
	}
	names, err := dir.Names()
	if err != nil {
		return err
	}
	r := shellResult{OK: true, Command: "sessions", Sessions: []control.Info{}}
	for _, n := range names {
		p, err := dir.Session(n)
		if err != nil {
			continue
		}
		c := p.Client(10 * time.Second)
		resp, err := c.Call(ctx, control.Request{Op: control.OpInfo})
		switch {
		case err == nil && resp.Info != nil:
			r.Sessions = append(r.Sessions, *resp.Info)
		case errors.Is(err, control.ErrNotRunning):
			nr := p.Diagnose()
			if nr.State == control.Busy {
				in := control.Info{Name: n}
				if m, err := p.ReadMeta(); err == nil {
					in.PID, in.Started, in.Dir, in.Log = m.PID, m.Started, m.Dir, m.Log
				}
				r.Sessions = append(r.Sessions, in)
			} else if nr.State != control.Absent {
				fmt.Fprintln(stderr, nr)
			}
		default:
			fmt.Fprintf(stderr, "session %q: %v\n", n, err)
		}
	}
	var b strings.Builder
	if len(r.Sessions) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPID\tIDLE\tURL")
		for _, in := range r.Sessions {
			idle, url := in.Idle.Round(time.Second).String(), in.URL
			if in.Version == 0 {
				idle, url = "-", "(starting or stopping)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", in.Name, in.PID, idle, url)
		}
		tw.Flush()
	}
	if !sf.json && len(r.Sessions) == 0 {
		fmt.Fprintln(stderr, "no session is running")
	}
	return sf.finish(stdout, r, b.String(), nil)
}

// errSessionBusy: the background process found its session's lock held by
// another (started by another open at the same time).
var errSessionBusy = errors.New("the session is being started by another process")

// shellDriver is the Driver a background session serves: the agent's
// Driver plus screenshots that keep the last state's indexes.
type shellDriver struct {
	*agent.Driver
	s *session.Session
}

// Screenshot takes a PNG of the focused tab.
func (d shellDriver) Screenshot(ctx context.Context) ([]byte, error) {
	b := d.s.Bus()
	if b == nil {
		return nil, session.ErrNotStarted
	}
	res, err := bus.Call(ctx, b, events.Screenshot, events.ScreenshotEvent{})
	return res.Data, err
}

// runServeSession is the background process of a session (started by
// open; not for people).
func runServeSession(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var of openFlags
	fs := flag.NewFlagSet(serveCommand, flag.ContinueOnError)
	of.register(fs)
	fs.StringVar(&of.log, "log", "", "where this process's stderr goes (for the session's Meta)")
	fs.IntVar(&of.readyFD, "ready-fd", 0, "write \"ok\" to this file descriptor once listening")
	fs.StringVar(&of.readyFile, "ready-file", "", "write \"ok\" to this new file once listening")
	if _, _, err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	ready := &readySignal{path: of.readyFile}
	if of.readyFD > 0 {
		ready.f = readyPipe(of.readyFD)
	}
	defer ready.close()
	// The session ends cleanly on SIGTERM and SIGINT: history, trace and
	// report written.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	p, err := of.sess.paths()
	if err != nil {
		return err
	}
	lock, err := lockSession(ctx, p)
	if errors.Is(err, control.ErrLocked) {
		ready.tell("busy")
		return fmt.Errorf("session %q: %w", p.Name, errSessionBusy)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	// Paths the session uses later are taken as given now; then it leaves
	// the directory it was started from, as a daemon does, so that it
	// holds no mount busy.
	for i, u := range of.uploads {
		if of.uploads[i], err = filepath.Abs(u); err != nil {
			return err
		}
	}
	if c := of.drive.browser.chrome; strings.ContainsRune(c, filepath.Separator) {
		if of.drive.browser.chrome, err = filepath.Abs(c); err != nil {
			return err
		}
	}
	if of.drive.outDir != "" {
		if of.drive.outDir, err = filepath.Abs(of.drive.outDir); err != nil {
			return err
		}
	}
	os.Chdir("/")
	bg := &background{flags: &of, paths: p, lock: lock, log: stderr}
	return bg.run(ctx, ready)
}

// readySignal is how the background process tells open it listens ("ok")
// or lost the race for its session ("busy"): a line on the pipe open gave
// (Unix sockets), or a new file open polls for (TCP: Windows has no
// inherited pipe to give). Neither carries the token.
type readySignal struct {
	f    *os.File
	path string
}

// tell says line once.
func (r *readySignal) tell(line string) {
	switch {
	case r.f != nil:
		r.f.WriteString(line + "\n")
		r.close()
	case r.path != "":
		// O_EXCL: never written through a planted file or link.
		if f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.WriteString(line + "\n")
			f.Close()
		}
		r.path = ""
	}
}

func (r *readySignal) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// lockSession takes the session's lock, waiting briefly for a prober
// (Diagnose holds it for an instant) but not for a live session.
func lockSession(ctx context.Context, p control.Paths) (*control.Lock, error) {
	deadline := time.Now().Add(3 * time.Second)
	wait := 5 * time.Millisecond
	for {
		l, err := p.TryLock()
		if err == nil || !errors.Is(err, control.ErrLocked) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// background is a running background session.
type background struct {
	flags *openFlags
	paths control.Paths
	lock  *control.Lock
	log   io.Writer

	d    *driven
	meta control.Meta
}

func (bg *background) run(ctx context.Context, ready *readySignal) error {
	f, p := bg.flags, bg.paths
	// Left by a process that died: we hold the lock.
	os.Remove(p.Socket)
	os.Remove(p.Endpoint)
	set := agent.Settings{AvailableFilePaths: f.uploads}
	bg.meta = control.Meta{Name: p.Name, PID: os.Getpid(), Version: control.Version, Started: time.Now().UTC(), Log: f.log, CDPURL: f.drive.browser.cdpURL}
	if err := p.WriteMeta(bg.meta); err != nil {
		return err
	}
	fmt.Fprintf(bg.log, "%s session %q (pid %d) starting\n", time.Now().Format(time.RFC3339), p.Name, os.Getpid())
	d, err := startDriven(ctx, drivenConfig{flags: &f.drive, kind: "shell", settings: set})
	if err != nil {
		os.Remove(p.Meta)
		return err
	}
	bg.d = d
	bg.meta.Dir, bg.meta.Trace, bg.meta.Report = d.Dir, d.Trace, d.Report
	ln, err := p.Listen()
	if err == nil {
		err = p.WriteMeta(bg.meta)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		os.Remove(p.Meta)
		return errors.Join(err, d.Close())
	}

	// The browser gone (its process exited, or the connection lost for
	// good) ends the session.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var watch sync.WaitGroup
	if b := d.Session.Browser(); b != nil {
		watch.Add(1)
		go func() {
			defer watch.Done()
			select {
			case <-b.Done():
				cancel(fmt.Errorf("%w: the browser process (pid %d) exited", events.ErrBrowserGone, b.PID()))
			case <-sctx.Done():
			}
		}()
	}
	if reg, err := bus.Handle(d.Session.Bus(), events.BrowserLost, "shell-session", func(_ context.Context, ev events.BrowserLostEvent) (events.None, error) {
		cancel(fmt.Errorf("%w: %s", events.ErrBrowserGone, ev.Reason))
		return events.None{}, nil
	}); err == nil {
		defer reg.Remove()
	}

	info := control.Info{Name: p.Name, Started: bg.meta.Started, Dir: d.Dir, Trace: d.Trace, Report: d.Report,
		History: filepath.Join(d.Dir, "history.json"), Log: f.log, CDPURL: f.drive.browser.cdpURL}
	if b := d.Session.Browser(); b != nil {
		info.BrowserPID = b.PID()
	}
	srv := control.NewServer(shellDriver{Driver: d.Driver, s: d.Session}, control.ServerOptions{
		Info:        info,
		IdleTimeout: f.idle,
		Health: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return d.Session.Ready(ctx)
		},
		OnStop: func(_ context.Context, reason control.StopReason) error {
			return bg.stop(reason, context.Cause(sctx))
		},
	})
	// The address only: the token stays in its file.
	fmt.Fprintf(bg.log, "%s session %q listening on %s; files in %s\n", time.Now().Format(time.RFC3339), p.Name, ln.Addr(), d.Dir)
	ready.tell("ok")
	_, err = srv.Serve(sctx, ln)
	cancel(nil)
	watch.Wait()
	return err
}

// stop ends the session once Serve stopped: it closes the Driver, the
// browser and the trace, then leaves the Meta saying why (unless closed on
// request) and releases the lock, all before a close request is answered.
func (bg *background) stop(reason control.StopReason, cause error) error {
	why := "closed"
	switch reason {
	case control.StopIdle:
		why = fmt.Sprintf("idle for %s", bg.flags.idle)
	case control.StopContext:
		why = "stopped by a signal"
		if errors.Is(cause, events.ErrBrowserGone) {
			why = cause.Error()
		}
	}
	fmt.Fprintf(bg.log, "%s session %q ending: %s\n", time.Now().Format(time.RFC3339), bg.paths.Name, why)
	err := bg.d.Close()
	if err != nil {
		fmt.Fprintf(bg.log, "closing: %v\n", err)
	}
	if reason == control.StopClose {
		os.Remove(bg.paths.Meta)
	} else {
		now := time.Now().UTC()
		bg.meta.Ended, bg.meta.Reason = &now, why
		if werr := bg.paths.WriteMeta(bg.meta); werr != nil {
			fmt.Fprintf(bg.log, "writing %s: %v\n", bg.paths.Meta, werr)
		}
	}
	fmt.Fprintf(bg.log, "%s session %q ended; trace %s\n", time.Now().Format(time.RFC3339), bg.paths.Name, bg.d.Trace)
	bg.lock.Unlock()
	return err
}
