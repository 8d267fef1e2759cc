// Package downloads is the downloads watchdog: it saves the browser's
// downloads into one directory under names that cannot leave it, and
// reports them.
//
// Handles: BrowserConnected and BrowserReconnected (download behaviour and
// the download event loop of the new connection) and NavigationComplete
// (the PDF auto-download, when enabled).
//
// Emits: DownloadStarted, DownloadProgress (inProgress, completed,
// canceled) and FileDownloaded for every download, and BrowserError (type
// DownloadFailed) when a completed download cannot be saved under its name.
//
// It never lets the browser or the page choose a path: Chromium writes each
// download to <dir>/<guid> (Browser.setDownloadBehavior allowAndName) and
// the watchdog itself moves it to a sanitized base name inside the
// directory, never following or replacing an existing entry. It never
// removes a directory it did not create.
package downloads

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/follow"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// Name is the name of the downloads watchdog and of its handlers.
const Name = "downloads"

// Defaults of Config.
const (
	// DefaultMaxPDFBytes bounds a PDF fetched by the auto-download.
	DefaultMaxPDFBytes = 64 << 20
	// DefaultProgressInterval is the minimum time between two in-progress
	// DownloadProgress events of one download.
	DefaultProgressInterval = 500 * time.Millisecond
)

// fileWait bounds the wait for <dir>/<guid> after its completed event (the
// event can precede the browser's final rename on a busy machine); fileTick
// is the polling period of that wait.
const (
	fileWait = 5 * time.Second
	fileTick = 50 * time.Millisecond
	// stableWait separates the two size checks Resync makes before it takes
	// a download whose completed event was lost as finished.
	stableWait = 200 * time.Millisecond
)

// ErrDownloadNotFound is returned by [Watchdog.Cancel] for a download id
// that is not in progress.
var ErrDownloadNotFound = errors.New("downloads: download not in progress")

// Config configures [New]. The zero value is usable.
type Config struct {
	// Logger receives debug and warning messages. Default: the session's
	// logger, named after the watchdog.
	Logger *zap.Logger
	// Dir receives the downloads. Default: the session profile's
	// DownloadsDir; when both are empty, a temporary directory created at
	// Attach and removed (with its files) on Detach. A directory given here
	// or in the profile is created if missing and never removed.
	Dir string
	// AutoDownloadPDFs saves a PDF that a session navigation opened in a
	// tab. Default false; it is on when this or the profile's
	// AutoDownloadPDFs is true.
	AutoDownloadPDFs bool
	// MaxPDFBytes bounds an auto-downloaded PDF. Default DefaultMaxPDFBytes.
	MaxPDFBytes int64
	// ProgressInterval is the minimum time between two DownloadProgress
	// events of one download while it is in progress (the first and the
	// final state are always reported). Default DefaultProgressInterval.
	ProgressInterval time.Duration
}

// Watchdog saves the browser's downloads into one directory.
//
// On BrowserConnected it sets Browser.setDownloadBehavior to allowAndName:
// Chromium writes every download to <dir>/<guid>, so no name the page
// supplies is ever used as a path by the browser. When a download completes
// the watchdog moves it to <dir>/<sanitized suggested name> (base name only;
// separators, "..", control characters, leading dots and reserved device
// names removed; length capped; "download" when nothing is left), adding
// " (1)", " (2)" … on collisions, and checks that the result stays inside
// the directory. It reports DownloadStarted, DownloadProgress (inProgress,
// completed, canceled) and FileDownloaded events, and keeps the list of
// completed files ([Watchdog.Files]).
//
// The download events are read through follow.Run: when the watchdog falls
// behind and events are lost, the downloads it knows to be in progress are
// looked up on disk; those the browser finished meanwhile (<guid> present,
// no <guid>.crdownload, size stable) are saved, and those with neither file
// are logged as possibly lost.
//
// PDF auto-download: when enabled, a session navigation (NavigationComplete)
// that leaves a tab on a PDF (the document's content type is
// application/pdf) and that the browser did not already save as a download
// is fetched with fetch() inside the page (same origin, the page's cookies)
// and written as a file, reported with AutoDownload set. Headless Chromium
// has no PDF viewer and saves PDFs as ordinary downloads, which are reported
// as such.
type Watchdog struct {
	cfg Config

	mu       sync.Mutex
	sess     *session.Session
	group    *routine.Group // the event loops; created in Attach, stopped in Detach
	dir      string
	tempDir  bool
	autoPDF  bool
	log      *zap.Logger
	active   map[string]*active
	done     map[string]bool // guids finished or canceled: their late events are ignored
	others   map[string]bool // guids of another browser context's downloads: ignored
	files    []events.FileDownloadedEvent
	loopConn *cdp.Conn // the connection the event loop listens on
}

// active is a download in progress.
type active struct {
	guid, url, name string
	lastEmit        time.Time
}

// New returns the downloads watchdog.
func New(cfg Config) *Watchdog {
	return &Watchdog{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Dir returns the download directory in use ("" before Attach).
func (w *Watchdog) Dir() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dir
}

// Files returns the completed downloads of the current run, oldest first.
// The agent offers them to the model as available files. A temporary
// directory's files are removed on Detach.
func (w *Watchdog) Files() []events.FileDownloadedEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]events.FileDownloadedEvent(nil), w.files...)
}

// Attach implements session.Watchdog: it prepares the directory and
// registers the BrowserConnected, BrowserReconnected and
// NavigationComplete handlers.
func (w *Watchdog) Attach(s *session.Session) error {
	prof := s.Profile()
	dir, temp := w.cfg.Dir, false
	if dir == "" {
		dir = prof.DownloadsDir
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "browseragent-downloads-")
		if err != nil {
			return fmt.Errorf("downloads: creating a temporary directory: %w", err)
		}
		dir, temp = d, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("downloads: creating the directory %s: %w", dir, err)
	}
	// Resolve symlinks once: every containment check compares against the
	// real directory.
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		if temp {
			os.RemoveAll(dir)
		}
		return fmt.Errorf("downloads: resolving the directory %s: %w", dir, err)
	}
	w.mu.Lock()
	w.sess = s
	w.group = routine.New(context.Background())
	w.dir, w.tempDir = abs, temp
	w.autoPDF = w.cfg.AutoDownloadPDFs || prof.AutoDownloadPDFs
	w.log = w.cfg.Logger
	if w.log == nil {
		w.log = s.Logger().Named(Name)
	}
	w.active = map[string]*active{}
	w.done = map[string]bool{}
	w.others = map[string]bool{}
	w.files = nil
	w.loopConn = nil
	w.mu.Unlock()

	return errors.Join(
		session.Handle(s, events.BrowserConnected, Name, w.onConnected),
		session.Handle(s, events.BrowserReconnected, Name, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
			return w.onConnected(ctx, events.BrowserConnectedEvent{})
		}),
		session.Handle(s, events.NavigationComplete, Name, w.onNavigationComplete),
	)
}

// Detach implements session.Detacher: it stops the event loop (and any
// wait for a downloaded file), resets the browser's download behaviour
// (best effort) and removes the directory if the watchdog created it. It
// returns the group's Stop error when a goroutine did not end within ctx.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g, s, dir, temp := w.group, w.sess, w.dir, w.tempDir
	w.mu.Unlock()
	var err error
	if g != nil {
		err = g.Stop(ctx)
	}
	if s != nil {
		if conn := s.Conn(); conn != nil && conn.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _ = cdpproto.Call(cctx, conn.Browser(), browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorDefault, BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID()),
			})
			cancel()
		}
	}
	if temp && dir != "" {
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("downloads: removing the temporary directory %s: %w", dir, rerr))
		}
	}
	return err
}

// Cancel cancels a download in progress; its DownloadProgress reports
// state canceled and its partial file is removed.
func (w *Watchdog) Cancel(ctx context.Context, guid string) error {
	w.mu.Lock()
	_, ok := w.active[guid]
	s := w.sess
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrDownloadNotFound, guid)
	}
	conn := s.Conn()
	if conn == nil {
		return session.ErrNotStarted
	}
	_, err := cdpproto.Call(ctx, conn.Browser(), browser.CancelDownload, browser.CancelDownloadParams{GUID: guid, BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID())})
	return err
}

// downloadEvents are the browser events the loop follows.
var downloadEvents = []string{browser.DownloadWillBegin.Method, browser.DownloadProgress.Method}

// onConnected starts the event loop (once per connection) and sets the
// download behaviour. It also runs on BrowserReconnected.
func (w *Watchdog) onConnected(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	w.mu.Lock()
	s, g, dir := w.sess, w.group, w.dir
	w.mu.Unlock()
	conn := s.Conn()
	if conn == nil {
		return events.None{}, session.ErrNotStarted
	}
	w.mu.Lock()
	fresh := conn != w.loopConn
	if fresh {
		w.loopConn = conn
	}
	w.mu.Unlock()
	if fresh {
		// Subscribe before enabling, so the first event is not missed.
		sub := conn.Browser().SubscribeEvents(downloadEvents...)
		err := g.Go("download events", func(gctx context.Context) {
			err := follow.Run(gctx, sub,
				func() *cdp.Subscription { return conn.Browser().SubscribeEvents(downloadEvents...) },
				func(ev cdp.Event) { w.handle(gctx, ev) },
				follow.Options{Name: "download events", Logger: w.log, Resync: w.resync})
			if err != nil {
				w.log.Debug("download event loop ended", zap.Error(err))
			}
		})
		if err != nil {
			sub.Cancel()
			return events.None{}, fmt.Errorf("downloads: starting the event loop: %w", err)
		}
	}
	_, err := cdpproto.Call(ctx, conn.Browser(), browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior:      browser.SetDownloadBehaviorBehaviorAllowAndName,
		DownloadPath:  dir,
		EventsEnabled: pagejs.Ptr(true),
		// A session in a context of its own (Profile.IsolatedContext) sets
		// that context's downloads only; "" is the default context.
		BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID()),
	})
	if err != nil {
		return events.None{}, fmt.Errorf("downloads: setting the download behaviour: %w", err)
	}
	return events.None{}, nil
}

// handle is the event loop's consumer. File moves happen here, on the
// group's goroutine, never on the CDP reader.
func (w *Watchdog) handle(ctx context.Context, ev cdp.Event) {
	switch ev.Method {
	case browser.DownloadWillBegin.Method:
		var e browser.EventDownloadWillBegin
		if ev.Decode(&e) == nil {
			w.begin(ctx, &e)
		}
	case browser.DownloadProgress.Method:
		var e browser.EventDownloadProgress
		if ev.Decode(&e) == nil {
			w.progress(ctx, &e)
		}
	}
}

// currentBus returns the session's bus, nil before Attach.
func (w *Watchdog) currentBus() *bus.Bus {
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Bus()
}

func (w *Watchdog) logger() *zap.Logger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return zap.NewNop()
	}
	return w.log
}

func (w *Watchdog) begin(ctx context.Context, e *browser.EventDownloadWillBegin) {
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	if s != nil && !ours(ctx, s, e.FrameID) {
		w.mu.Lock()
		w.others[e.GUID] = true
		w.mu.Unlock()
		return
	}
	w.mu.Lock()
	if w.done[e.GUID] {
		w.mu.Unlock()
		return
	}
	w.active[e.GUID] = &active{guid: e.GUID, url: e.URL, name: e.SuggestedFilename}
	w.mu.Unlock()
	if b := w.currentBus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadStarted, events.DownloadStartedEvent{GUID: e.GUID, URL: e.URL, SuggestedFilename: e.SuggestedFilename})
	}
}

func (w *Watchdog) progress(ctx context.Context, e *browser.EventDownloadProgress) {
	interval := w.cfg.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	isolated := s != nil && s.BrowserContextID() != ""
	w.mu.Lock()
	if w.done[e.GUID] || w.others[e.GUID] {
		// Already finished by resync, a duplicate final event, or another
		// context's download.
		w.mu.Unlock()
		return
	}
	a := w.active[e.GUID]
	if a == nil && isolated {
		// In a context of its own the session set the download behaviour
		// after subscribing: a download it did not see begin is another
		// context's.
		w.others[e.GUID] = true
		w.mu.Unlock()
		return
	}
	if a == nil {
		// Began before we subscribed (or while events were lost).
		a = &active{guid: e.GUID}
		w.active[e.GUID] = a
	}
	now := time.Now()
	report := e.State != browser.DownloadProgressStateInProgress || a.lastEmit.IsZero() || now.Sub(a.lastEmit) >= interval
	if report {
		a.lastEmit = now
	}
	if e.State != browser.DownloadProgressStateInProgress {
		delete(w.active, e.GUID)
		w.done[e.GUID] = true
	}
	dir := w.dir
	w.mu.Unlock()

	b := w.currentBus()
	if report && b != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{
			GUID: e.GUID, ReceivedBytes: int64(e.ReceivedBytes), TotalBytes: int64(e.TotalBytes), State: string(e.State),
		})
	}
	switch e.State {
	case browser.DownloadProgressStateCompleted:
		w.save(ctx, dir, a)
	case browser.DownloadProgressStateCanceled:
		// Chromium removes its partial file; make sure nothing is left.
		if validGUID(a.guid) {
			for _, p := range []string{a.guid, a.guid + ".crdownload"} {
				os.Remove(filepath.Join(dir, p))
			}
		}
	}
}

// ours reports whether a download that began in frame is the session's.
// Chromium reports every context's downloads to every client that enabled
// download events, so a session in a context of its own
// (Profile.IsolatedContext, whose targets are the only ones it attaches)
// keeps a download only when frame is one of its tabs or of their frames.
// In the default context every download is the session's.
func ours(ctx context.Context, s *session.Session, frame cdpproto.FrameID) bool {
	if s.BrowserContextID() == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.HasFrame(ctx, string(frame))
}

// save moves a completed download to its name and records it, or reports
// why it could not.
func (w *Watchdog) save(ctx context.Context, dir string, a *active) {
	f, err := w.finish(ctx, dir, a)
	if err != nil {
		w.logger().Warn("saving download", zap.String("guid", a.guid), zap.String("url", a.url), zap.Error(err))
		if b := w.currentBus(); b != nil {
			_, _ = bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
				Type: "DownloadFailed", Message: err.Error(),
				Details: map[string]string{"guid": a.guid, "url": a.url},
			})
		}
		return
	}
	w.record(ctx, f)
}

func (w *Watchdog) record(ctx context.Context, f events.FileDownloadedEvent) {
	w.mu.Lock()
	w.files = append(w.files, f)
	w.mu.Unlock()
	if b := w.currentBus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.FileDownloaded, f)
	}
}

// finish moves <dir>/<guid> to its sanitized name. It waits (bounded by
// fileWait and ctx) for the file, which can appear after the completed
// event.
func (w *Watchdog) finish(ctx context.Context, dir string, a *active) (events.FileDownloadedEvent, error) {
	var out events.FileDownloadedEvent
	if !validGUID(a.guid) {
		return out, fmt.Errorf("downloads: download id %q is not a guid, so it cannot name a file", a.guid)
	}
	src := filepath.Join(dir, a.guid)
	fi, err := waitForFile(ctx, src, fileWait)
	if err != nil {
		return out, err
	}
	if !fi.Mode().IsRegular() {
		return out, fmt.Errorf("downloads: download %s is not a regular file (%s)", a.guid, fi.Mode())
	}
	name := a.name
	if name == "" {
		name = nameFromURL(a.url)
	}
	dst, err := moveInto(dir, src, sanitizeName(name))
	if err != nil {
		return out, fmt.Errorf("downloads: saving download %s as %q: %w", a.guid, name, err)
	}
	return fileEvent(a.guid, a.url, dst, fi.Size(), false), nil
}

// waitForFile returns p's Lstat once p exists, polling every fileTick for
// at most bound; it gives up when ctx ends.
func waitForFile(ctx context.Context, p string, bound time.Duration) (fs.FileInfo, error) {
	fi, err := os.Lstat(p)
	if !errors.Is(err, fs.ErrNotExist) {
		return fi, err
	}
	tick := time.NewTicker(fileTick)
	defer tick.Stop()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("downloads: stopped while waiting for %s: %w", p, ctx.Err())
		case <-deadline.C:
			return nil, fmt.Errorf("downloads: the browser reported the download complete but %s did not appear within %s: %w", p, bound, err)
		case <-tick.C:
			fi, err = os.Lstat(p)
			if !errors.Is(err, fs.ErrNotExist) {
				return fi, err
			}
		}
	}
}

// resync runs after download events were lost (follow.Run re-subscribed).
// Nothing needs re-reading for a download already announced and still
// running: its next downloadProgress comes on the new subscription. What
// can be lost is a final event, so each download known to be in progress
// is looked up on disk:
//   - <guid> with no <guid>.crdownload, the same size twice stableWait
//     apart: Chromium renames the intermediate file when the download
//     completes, so it finished; it is reported completed and saved;
//   - <guid>.crdownload: still running, its events will follow;
//   - neither: it may have been canceled or have failed (Chromium removes
//     the partial file), or not have created its file yet; this cannot be
//     told apart, so it is logged as possibly lost and kept in progress.
//
// Files named like a download id that no event announced (downloads that
// began and ended while events were lost) are logged, not moved: their
// suggested name and URL are unknown, and a directory given by the caller
// may hold such files from another run.
func (w *Watchdog) resync(ctx context.Context) {
	w.mu.Lock()
	dir := w.dir
	pending := make([]*active, 0, len(w.active))
	for _, a := range w.active {
		pending = append(pending, a)
	}
	w.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].guid < pending[j].guid })
	log := w.logger()
	for _, a := range pending {
		if ctx.Err() != nil {
			return // stopping: nothing will handle what is found
		}
		if !validGUID(a.guid) {
			continue
		}
		switch st, size := fileState(ctx, dir, a.guid); st {
		case stateComplete:
			w.mu.Lock()
			if w.done[a.guid] {
				w.mu.Unlock()
				continue
			}
			delete(w.active, a.guid)
			w.done[a.guid] = true
			w.mu.Unlock()
			log.Info("download completed while its events were lost; saving it",
				zap.String("guid", a.guid), zap.String("url", a.url), zap.Int64("bytes", size))
			if b := w.currentBus(); b != nil {
				_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{
					GUID: a.guid, ReceivedBytes: size, TotalBytes: size, State: string(browser.DownloadProgressStateCompleted),
				})
			}
			w.save(ctx, dir, a)
		case stateRunning:
			log.Debug("download still in progress after lost events", zap.String("guid", a.guid))
		case stateMissing:
			log.Warn("download may be lost: its final event was missed and neither its file nor its partial file exists "+
				"(canceled, failed, or not started writing); it stays in progress until an event arrives",
				zap.String("guid", a.guid), zap.String("url", a.url), zap.String("suggested_name", a.name))
		case stateUnknown:
			// ctx ended, or the file changed between the checks: the
			// next event, if any, settles it.
		}
	}
	if ctx.Err() != nil {
		return
	}
	if orphans := w.unannounced(dir); len(orphans) > 0 {
		log.Warn("files named like download ids that no event announced (downloads begun while events were lost) are left as they are",
			zap.String("dir", dir), zap.Strings("files", orphans))
	}
}

type diskState int

const (
	stateUnknown diskState = iota
	stateComplete
	stateRunning
	stateMissing
)

// fileState looks up download guid in dir (see resync); for a complete
// download it also returns its size.
func fileState(ctx context.Context, dir, guid string) (diskState, int64) {
	final, partial := filepath.Join(dir, guid), filepath.Join(dir, guid+".crdownload")
	look := func() (fs.FileInfo, bool) {
		fi, err := os.Lstat(final)
		_, perr := os.Lstat(partial)
		if err != nil || !errors.Is(perr, fs.ErrNotExist) || !fi.Mode().IsRegular() {
			return nil, perr == nil
		}
		return fi, false
	}
	first, running := look()
	if running {
		return stateRunning, 0
	}
	if first == nil {
		if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
			return stateMissing, 0
		}
		return stateUnknown, 0 // not a regular file: finish would refuse it anyway
	}
	t := time.NewTimer(stableWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return stateUnknown, 0
	case <-t.C:
	}
	second, running := look()
	switch {
	case running:
		return stateRunning, 0
	case second == nil || second.Size() != first.Size() || !second.ModTime().Equal(first.ModTime()):
		return stateUnknown, 0
	}
	return stateComplete, second.Size()
}

// unannounced lists the entries of dir named like a download id (or its
// partial file) that are neither in progress nor finished.
func (w *Watchdog) unannounced(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range entries {
		g := e.Name()
		if ext := filepath.Ext(g); ext == ".crdownload" {
			g = g[:len(g)-len(ext)]
		}
		if !isUUID(g) || w.done[g] || w.active[g] != nil {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// validGUID accepts the GUIDs Chromium uses (hex and dashes), so a GUID
// never names a path outside the directory.
func validGUID(g string) bool {
	if g == "" || len(g) > 64 {
		return false
	}
	for _, r := range g {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// isUUID reports whether s has the 8-4-4-4-12 shape of Chromium's download
// GUIDs (stricter than validGUID, for recognising files on disk).
func isUUID(s string) bool {
	if len(s) != 36 || !validGUID(s) {
		return false
	}
	for i, r := range s {
		if (i == 8 || i == 13 || i == 18 || i == 23) != (r == '-') {
			return false
		}
	}
	return true
}
