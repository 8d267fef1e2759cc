package cdp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// EnvChrome names the environment variable that overrides the browser
// binary.
const EnvChrome = "BROWSERAGENT_CHROME"

// ProfilePrefix is the name prefix of temporary profile directories made by
// Launch under os.TempDir(). Launch reaps leftovers with this prefix whose
// owner process is dead.
const ProfilePrefix = "browseragent-profile-"

// TempDirPrefix is the name prefix of the directory Launch makes under
// os.TempDir() to be the browser's TMPDIR when the caller gives a
// UserDataDir (with a temporary profile, the TMPDIR is the profile's "tmp"
// folder instead). Close removes it; Launch reaps leftovers with this prefix
// whose owner process is dead, like profiles.
const TempDirPrefix = "browseragent-tmp-"

// ownerFile is written in every temporary profile and private TMPDIR; it
// holds the PID of the Go process that owns the browser.
const ownerFile = "browseragent-owner"

// profileTmp is the browser's TMPDIR inside a temporary profile.
const profileTmp = "tmp"

// Launch defaults.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultWindowWidth  = 1280
	DefaultWindowHeight = 800
	// DefaultGracefulClose bounds how long Close waits for the browser to
	// quit by itself before killing it. Chromium 156 quits on SIGINT in
	// 0.3–1 s on an idle machine and took up to 2.6 s on a loaded 2-core
	// one (measured); a browser that takes longer is killed, which loses
	// nothing of ours (Close removes the temporary directories either way)
	// but may lose the last writes to a caller's UserDataDir.
	DefaultGracefulClose = 3 * time.Second
)

// cleanupTimeout bounds, after the browser was reaped, the wait for the
// rest of its process group and the removal of the temporary directories.
const cleanupTimeout = 15 * time.Second

// debianRealChromium is the binary that Debian's /usr/bin/chromium shell
// wrapper execs. Starting it directly skips the wrapper's extra flags from
// /etc/chromium.d (extensions, GPU switches) and its noisy dev-shm check.
const debianRealChromium = "/usr/lib/chromium/chromium"

// FindChrome returns the browser binary to launch: the first usable place
// of ChromeCandidates for this OS (see there for the order per OS). When
// $BROWSERAGENT_CHROME is set, it is the only place tried and must exist.
// A path must be a file, executable (an .exe on Windows); a name is looked
// up on PATH. When none is usable, the error wraps ErrBrowserNotFound and
// lists the places looked at; FindChromeReport says why each failed.
func FindChrome() (string, error) {
	return hostSystem().find(hostCandidates())
}

// LaunchOptions configure Launch. The zero value launches a headless browser
// with a temporary profile and the default flags.
type LaunchOptions struct {
	// ExecPath is the browser binary; "" means FindChrome.
	ExecPath string
	// Headful shows a window (needs a display). Default headless (--headless=new).
	Headful bool
	// UserDataDir is the profile directory; "" makes a temporary one under
	// os.TempDir() (named ProfilePrefix*) that Close removes. A given
	// directory is kept, and Launch writes nothing into it but the
	// Preferences below (Chromium writes the rest).
	UserDataDir string
	// Preferences are profile preferences set before the browser starts,
	// by dotted name ("webrtc.ip_handling_policy"), for the settings that
	// have no command-line switch. They are written into the profile's
	// Default/Preferences file, merged with what the file of a given
	// UserDataDir holds (its other preferences are kept; these win).
	Preferences map[string]any
	// WindowWidth and WindowHeight set --window-size; 0 means
	// DefaultWindowWidth x DefaultWindowHeight.
	WindowWidth, WindowHeight int
	// Flags are extra command-line switches ("--name" or "--name=value"),
	// appended after the defaults (a later switch wins in Chromium).
	Flags []string
	// NoDefaultFlags drops DefaultFlags (the debugging port, profile, headless,
	// sandbox and window flags are still set).
	NoDefaultFlags bool
	// Env is added to the browser's environment. Launch sets TMPDIR (TMP
	// and TEMP on Windows) to a directory of its own (see Launch); the
	// same variable in Env wins over it.
	Env []string
	// StartTimeout bounds the wait for DevToolsActivePort; 0 means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger receives the browser's stdout/stderr at debug level; nil is Nop.
	Logger *zap.Logger
	// GracefulClose is how long Close lets the browser quit by itself after
	// asking it to (SIGINT on Unix) before it kills the process group; 0
	// means DefaultGracefulClose, a negative value kills at once.
	GracefulClose time.Duration
}

// DefaultFlags are passed to every launched browser unless
// LaunchOptions.NoDefaultFlags. They keep an automated browser quiet and
// deterministic: no background network traffic, updates, sync, first-run UI,
// throttling of background tabs, or popup blocking (the agent decides about
// popups). Site isolation stays on, so cross-site iframes are OOPIFs.
var DefaultFlags = []string{
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-dev-shm-usage",
	"--disable-breakpad",
	"--disable-client-side-phishing-detection",
	"--disable-default-apps",
	"--disable-extensions",
	"--disable-hang-monitor",
	"--disable-popup-blocking",
	"--disable-prompt-on-repost",
	"--disable-background-timer-throttling",
	"--disable-backgrounding-occluded-windows",
	"--disable-renderer-backgrounding",
	"--disable-ipc-flooding-protection",
	"--disable-features=Translate,MediaRouter,OptimizationHints",
	"--metrics-recording-only",
	"--password-store=basic",
	"--use-mock-keychain",
	"--force-color-profile=srgb",
	"--mute-audio",
}

// Browser is a launched browser process. Its owner must call Close, also
// after the process died by itself: Close removes what Launch made.
//
// A Browser owns one goroutine, run, which starts the process, waits for it
// and, once Close was called and the process reaped, removes the temporary
// directories. If the process exited before Close, Close starts a
// goroutine of the Browser to do that removal. Both end by themselves,
// within cleanupTimeout of the reap.
type Browser struct {
	cmd     *exec.Cmd
	pid     int
	group   *procGroup // set by run before started is sent, read after
	wsURL   string
	profile string
	tempDir bool   // profile is temporary: removed (with tmpDir inside it)
	tmpDir  string // the browser's TMPDIR
	ownTmp  bool   // tmpDir is a separate directory of ours, removed on its own
	grace   time.Duration
	log     *zap.Logger
	done    chan struct{}
	waitErr error // set before done closes

	mu             sync.Mutex
	exited         bool // run saw the process reaped
	closeRequested bool // Close began
	cleaned        chan struct{}
	cleanErr       error // set before cleaned closes
}

// WebSocketURL returns the browser's DevTools websocket URL
// (ws://127.0.0.1:PORT/devtools/browser/UUID).
func (b *Browser) WebSocketURL() string { return b.wsURL }

// PID returns the browser's process id (also its process group id).
func (b *Browser) PID() int { return b.pid }

// UserDataDir returns the profile directory.
func (b *Browser) UserDataDir() string { return b.profile }

// Done is closed when the browser process has exited and been reaped.
func (b *Browser) Done() <-chan struct{} { return b.done }

// Wait blocks until the process exits and returns its exit error (nil for
// a clean exit).
func (b *Browser) Wait() error {
	<-b.done
	return b.waitErr
}

// Close ends the browser and removes what Launch made:
//
//  1. it asks the browser to quit (SIGINT to the browser process on Unix:
//     Chromium then shuts down cleanly, closing its pages and removing its
//     own temporary files; SIGTERM would take its fast "session ending"
//     path, which leaves them; on Windows there is no such request) and
//     waits up to LaunchOptions.GracefulClose;
//  2. it kills the whole process group, on Windows the job object holding
//     the browser and its helpers (at once if GracefulClose is negative,
//     or when the grace or ctx ends first);
//  3. once the process is reaped and no process of its group runs any
//     more, the temporary profile and the browser's private TMPDIR are
//     removed (retrying briefly while dying helpers still write there).
//
// Step 3 happens in every case, bounded by cleanupTimeout after the reap:
// if ctx ends before it is done, the browser has been killed and Close
// returns ctx's error (wrapped) at once, while the Browser's own goroutine
// finishes the removal. Close is idempotent and safe for concurrent use:
// every call waits (bounded by its ctx) for the same end and returns its
// result.
func (b *Browser) Close(ctx context.Context) error {
	b.mu.Lock()
	first := !b.closeRequested
	b.closeRequested = true
	exited := b.exited
	b.mu.Unlock()
	if first {
		if exited {
			// Died before Close; run has ended. Its PID may be reused, so
			// only the group is killed.
			killGroup(-b.pid, b.group)
			go b.cleanup()
		} else {
			b.terminate(ctx)
		}
	}
	select {
	case <-b.cleaned:
		return b.cleanErr
	default:
	}
	if ctx.Err() == nil {
		select {
		case <-b.cleaned:
			return b.cleanErr
		case <-ctx.Done():
		}
	}
	b.kill() // the removal must not wait for a browser that ignores us
	return fmt.Errorf("cdp: closing browser %d (killed; its temporary directories are removed once it is gone): %w", b.pid, ctx.Err())
}

// terminate asks the browser to quit, waits for the grace (or ctx), then
// kills the group.
func (b *Browser) terminate(ctx context.Context) {
	if b.grace > 0 && ctx.Err() == nil {
		if err := interruptProcess(b.pid); err != nil {
			b.log.Debug("asking the browser to quit", zap.Int("pid", b.pid), zap.Error(err))
		} else {
			t := time.NewTimer(b.grace)
			defer t.Stop()
			select {
			case <-b.done:
				b.log.Debug("browser quit", zap.Int("pid", b.pid))
			case <-t.C:
				b.log.Info("browser did not quit within the grace period; killing it",
					zap.Int("pid", b.pid), zap.Duration("grace", b.grace))
			case <-ctx.Done():
			}
		}
	}
	b.kill()
}

// kill SIGKILLs the process group, and the browser process too unless it
// was reaped (its PID may have been reused then).
func (b *Browser) kill() {
	select {
	case <-b.done:
		killGroup(-b.pid, b.group)
	default:
		killGroup(b.pid, b.group)
	}
}

// cleanup runs once, after both the reap and Close: it waits for the rest
// of the process group, removes the temporary directories and closes
// cleaned. Helpers (zygote, renderers) die a little after the leader; the
// profile is theirs too until they have stopped running (their zombies,
// which init reaps in its own time, are not waited for).
func (b *Browser) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := waitGroupGone(ctx, b.pid, b.group); err != nil {
		b.log.Warn("browser helpers still alive after SIGKILL", zap.Int("pgid", b.pid), zap.Error(err))
	}
	b.cleanErr = b.removeTemp(ctx)
	if b.cleanErr != nil {
		b.log.Warn("removing the browser's temporary directories", zap.Error(b.cleanErr))
	}
	close(b.cleaned)
}

// removeTemp removes the temporary profile and the private TMPDIR.
func (b *Browser) removeTemp(ctx context.Context) error {
	var errs []error
	if b.tempDir {
		errs = append(errs, removeAllRetry(ctx, b.profile))
	}
	if b.ownTmp {
		errs = append(errs, removeAllRetry(ctx, b.tmpDir))
	}
	return errors.Join(errs...)
}

// Launch starts a browser and waits until its DevTools endpoint is up. It
// first reaps leftovers of earlier runs whose owner died (see ReapLeftovers).
// ctx bounds the start only; the browser lives until Close (or until this Go
// process dies: on Linux the browser gets SIGKILL then, and on Windows its
// job object ends it with all its helpers).
//
// The browser gets a TMPDIR of its own, so that its temporary files (such
// as the org.chromium.Chromium.* directory of its singleton socket, which
// Chromium leaves behind when it is killed) land in a directory that Close
// removes: the "tmp" folder of a temporary profile, or, with a given
// UserDataDir, a directory TempDirPrefix* under os.TempDir().
func Launch(ctx context.Context, opts LaunchOptions) (*Browser, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("chrome")
	bin := opts.ExecPath
	if bin == "" {
		var err error
		if bin, err = FindChrome(); err != nil {
			return nil, err
		}
	}
	if n, err := ReapLeftovers(); err != nil {
		log.Debug("reaping leftovers", zap.Error(err))
	} else if n > 0 {
		log.Info("reaped leftover browsers of dead owners", zap.Int("count", n))
	}

	b := &Browser{log: log, done: make(chan struct{}), cleaned: make(chan struct{}),
		profile: opts.UserDataDir, grace: opts.GracefulClose}
	if b.grace == 0 {
		b.grace = DefaultGracefulClose
	}
	cleanup := func() { _ = b.removeTemp(context.Background()) }
	if b.profile == "" {
		dir, err := makeOwnedTemp(ProfilePrefix)
		if err != nil {
			return nil, fmt.Errorf("cdp: making profile dir: %w", err)
		}
		b.profile, b.tempDir = dir, true
		b.tmpDir = filepath.Join(dir, profileTmp)
		if err := os.Mkdir(b.tmpDir, 0o700); err != nil {
			cleanup()
			return nil, fmt.Errorf("cdp: making the browser's TMPDIR: %w", err)
		}
	} else {
		if err := os.MkdirAll(b.profile, 0o700); err != nil {
			return nil, fmt.Errorf("cdp: making profile dir: %w", err)
		}
		dir, err := makeOwnedTemp(TempDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("cdp: making the browser's TMPDIR: %w", err)
		}
		b.tmpDir, b.ownTmp = dir, true
	}
	if err := writePreferences(b.profile, opts.Preferences); err != nil {
		cleanup()
		return nil, err
	}
	portFile := filepath.Join(b.profile, "DevToolsActivePort")
	_ = os.Remove(portFile) // stale from an earlier run of a given profile

	args := buildArgs(opts, b.profile)
	cmd := exec.Command(bin, args...)
	// exec keeps the last value of a duplicated key: opts.Env wins.
	cmd.Env = append(append(os.Environ(), tempDirEnv(b.tmpDir)...), opts.Env...)
	out := &logWriter{log: log}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipe must not hang Wait
	setProcAttrs(cmd)
	b.cmd = cmd

	started := make(chan error, 1)
	go b.run(started) // owns the process: starts it and waits for it
	if err := <-started; err != nil {
		cleanup()
		return nil, fmt.Errorf("cdp: starting %s: %w", bin, err)
	}
	b.pid = cmd.Process.Pid
	log.Debug("browser started", zap.Int("pid", b.pid), zap.String("bin", bin), zap.Strings("args", args))

	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	ws, err := waitPortFile(ctx, portFile, timeout, b.done)
	if err != nil {
		b.grace = -1
		_ = b.Close(context.Background()) // kills, reaps, removes; bounded by cleanupTimeout
		if errors.Is(err, ErrBrowserExited) {
			return nil, fmt.Errorf("%w (%v); output: %s", err, b.waitErr, out.tail())
		}
		return nil, err
	}
	b.wsURL = ws
	return b, nil
}

// run starts the process and waits for it on one goroutine that stays locked
// to its OS thread: Pdeathsig fires when the *thread* that forked the child
// exits (go.dev/issue/27505), so that thread must live as long as the child.
// If Close was called by the time the process is reaped, run then does the
// cleanup (see Close); otherwise Close will.
func (b *Browser) run(started chan<- error) {
	lockThread()
	defer unlockThread()
	if err := b.cmd.Start(); err != nil {
		started <- err
		close(b.done)
		return
	}
	var err error
	if b.group, err = adoptProcess(b.cmd.Process); err != nil {
		b.log.Warn("browser helpers may outlive Close", zap.Int("pid", b.cmd.Process.Pid), zap.Error(err))
	}
	started <- nil
	b.waitErr = b.cmd.Wait()
	b.log.Debug("browser exited", zap.Int("pid", b.cmd.Process.Pid), zap.NamedError("status", b.waitErr))
	b.mu.Lock()
	b.exited = true
	closing := b.closeRequested
	b.mu.Unlock()
	close(b.done)
	if closing {
		b.cleanup()
	}
}

// makeOwnedTemp makes a directory prefix* under os.TempDir() holding the
// owner marker (this process's PID), for ReapLeftovers.
func makeOwnedTemp(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix+"*")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("writing owner marker: %w", err)
	}
	return dir, nil
}

func buildArgs(opts LaunchOptions, profile string) []string {
	var args []string
	args = append(args, "--remote-debugging-port=0", "--user-data-dir="+profile)
	if !opts.NoDefaultFlags {
		args = append(args, DefaultFlags...)
	}
	if !opts.Headful {
		args = append(args, "--headless=new", "--disable-gpu", "--hide-scrollbars")
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium refuses to run as root with the sandbox
	}
	w, h := opts.WindowWidth, opts.WindowHeight
	if w <= 0 {
		w = DefaultWindowWidth
	}
	if h <= 0 {
		h = DefaultWindowHeight
	}
	args = append(args, fmt.Sprintf("--window-size=%d,%d", w, h))
	args = append(args, opts.Flags...)
	return append(args, "about:blank")
}

// waitPortFile polls DevToolsActivePort ("PORT\n/devtools/browser/UUID").
func waitPortFile(ctx context.Context, path string, timeout time.Duration, exited <-chan struct{}) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) == 2 {
				if port, err := strconv.Atoi(strings.TrimSpace(lines[0])); err == nil && port > 0 {
					return fmt.Sprintf("ws://127.0.0.1:%d%s", port, strings.TrimSpace(lines[1])), nil
				}
			}
		}
		select {
		case <-tick.C:
		case <-exited:
			return "", ErrBrowserExited
		case <-deadline.C:
			return "", fmt.Errorf("%w (%s)", ErrLaunchTimeout, timeout)
		case <-ctx.Done():
			return "", fmt.Errorf("cdp: launching browser: %w", ctx.Err())
		}
	}
}

func removeAllRetry(ctx context.Context, dir string) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cdp: removing profile %s: %w", dir, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("cdp: removing profile %s: %w", dir, err)
}

// logWriter turns the browser's output into debug log lines and keeps the
// last few lines for error messages. It never blocks the browser.
type logWriter struct {
	log  *zap.Logger
	mu   sync.Mutex
	buf  bytes.Buffer
	last []string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err == io.EOF {
			w.buf.Reset()
			if len(line) > 64<<10 {
				line = line[:64<<10] // a runaway line must not grow without bound
			}
			w.buf.WriteString(line) // partial line, keep
			break
		}
		line = strings.TrimRight(line, "\r\n")
		w.log.Debug(line)
		w.last = append(w.last, line)
		if len(w.last) > 10 {
			w.last = w.last[1:]
		}
	}
	return len(p), nil
}

func (w *logWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.last, " | ")
}

// writePreferences sets prefs in profile's Default/Preferences, keeping the
// file's other preferences; the file is replaced by a rename, so a reader
// never sees half of it.
func writePreferences(profile string, prefs map[string]any) error {
	if len(prefs) == 0 {
		return nil
	}
	dir := filepath.Join(profile, "Default")
	file := filepath.Join(dir, "Preferences")
	doc := map[string]any{}
	switch raw, err := os.ReadFile(file); {
	case err == nil:
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("cdp: reading the profile's preferences %s: %w", file, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cdp: reading the profile's preferences: %w", err)
	}
	for name, value := range prefs {
		parts := strings.Split(name, ".")
		m := doc
		for _, part := range parts[:len(parts)-1] {
			next, ok := m[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[part] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = value
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("cdp: encoding the profile's preferences: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cdp: writing the profile's preferences: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "Preferences.*")
	if err != nil {
		return fmt.Errorf("cdp: writing the profile's preferences: %w", err)
	}
	_, werr := tmp.Write(out)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cdp: writing the profile's preferences: %w", werr)
	}
	return nil
}
