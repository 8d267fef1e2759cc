package watchdogs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// DownloadsName is the name of the downloads watchdog and of its handlers.
const DownloadsName = "downloads"

// DefaultMaxPDFBytes bounds a PDF fetched by the auto-download.
const DefaultMaxPDFBytes = 64 << 20

// ErrDownloadNotFound is returned by [Downloads.Cancel] for a download id
// that is not in progress.
var ErrDownloadNotFound = errors.New("watchdogs: download not in progress")

// DownloadsConfig configures [NewDownloads]. The zero value is usable.
type DownloadsConfig struct {
	// Dir receives the downloads. Default: the session profile's
	// DownloadsDir; when both are empty, a temporary directory created at
	// Attach and removed (with its files) on Detach. A directory given here
	// or in the profile is created if missing and never removed.
	Dir string
	// AutoDownloadPDFs saves a PDF that a session navigation opened in a
	// tab. It is on when this or the profile's AutoDownloadPDFs is true.
	AutoDownloadPDFs bool
	// MaxPDFBytes bounds an auto-downloaded PDF. Default DefaultMaxPDFBytes.
	MaxPDFBytes int64
	// ProgressInterval is the minimum time between two DownloadProgress
	// events of one download while it is in progress (the first and the
	// final state are always reported). Default 500 ms.
	ProgressInterval time.Duration
}

// Downloads saves the browser's downloads into one directory.
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
// completed files ([Downloads.Files]).
//
// PDF auto-download: when enabled, a session navigation (NavigationComplete)
// that leaves a tab on a PDF — the URL path ends in .pdf or the document's
// content type is application/pdf — and that the browser did not already
// save as a download is fetched with fetch() inside the page (same origin,
// the page's cookies) and written as a file, reported with AutoDownload set.
// Headless Chromium has no PDF viewer and saves PDFs as ordinary downloads,
// which are reported as such.
type Downloads struct {
	cfg DownloadsConfig

	mu      sync.Mutex
	sess    *session.Session
	dir     string
	tempDir bool
	autoPDF bool
	log     *zap.Logger
	stop    chan struct{}
	wg      sync.WaitGroup
	active  map[string]*dlActive
	files   []events.FileDownloadedEvent
	loop    *cdp.Conn // the connection the event loop listens on
}

// dlActive is a download in progress.
type dlActive struct {
	guid, url, name string
	lastEmit        time.Time
}

// NewDownloads returns the downloads watchdog.
func NewDownloads(cfg DownloadsConfig) *Downloads {
	return &Downloads{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *Downloads) Name() string { return DownloadsName }

// Dir returns the download directory in use ("" before Attach).
func (w *Downloads) Dir() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dir
}

// Files returns the completed downloads of the current run, oldest first.
// The agent offers them to the model as available files. A temporary
// directory's files are removed on Detach.
func (w *Downloads) Files() []events.FileDownloadedEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]events.FileDownloadedEvent(nil), w.files...)
}

// Attach implements session.Watchdog: it prepares the directory and
// registers the BrowserConnected and NavigationComplete handlers.
func (w *Downloads) Attach(s *session.Session) error {
	prof := s.Profile()
	dir, temp := w.cfg.Dir, false
	if dir == "" {
		dir = prof.DownloadsDir
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "browseragent-downloads-")
		if err != nil {
			return fmt.Errorf("watchdogs: downloads directory: %w", err)
		}
		dir, temp = d, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("watchdogs: downloads directory: %w", err)
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
		return fmt.Errorf("watchdogs: downloads directory: %w", err)
	}
	w.mu.Lock()
	w.sess = s
	w.dir, w.tempDir = abs, temp
	w.autoPDF = w.cfg.AutoDownloadPDFs || prof.AutoDownloadPDFs
	w.log = s.Logger().Named(DownloadsName)
	w.stop = make(chan struct{})
	w.active = map[string]*dlActive{}
	w.files = nil
	w.loop = nil
	w.mu.Unlock()

	b := s.Bus()
	if err := register(b, DownloadsName, events.BrowserConnected, w.dlOnConnected); err != nil {
		return err
	}
	if err := register(b, DownloadsName, events.BrowserReconnected, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
		return w.dlOnConnected(ctx, events.BrowserConnectedEvent{})
	}); err != nil {
		return err
	}
	return register(b, DownloadsName, events.NavigationComplete, w.dlOnNavigationComplete)
}

// Detach implements session.Detacher: it stops the event loop, resets the
// browser's download behaviour (best effort) and removes the directory if
// the watchdog created it.
func (w *Downloads) Detach(ctx context.Context) error {
	w.mu.Lock()
	stop, s, dir, temp := w.stop, w.sess, w.dir, w.tempDir
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if s != nil {
		if conn := s.Conn(); conn != nil && conn.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _ = cdpproto.Call(cctx, conn.Browser(), browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDefault})
			cancel()
		}
	}
	if temp && dir != "" {
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("watchdogs: removing downloads directory: %w", rerr))
		}
	}
	return err
}

// Cancel cancels a download in progress; its DownloadProgress reports
// state canceled and its partial file is removed.
func (w *Downloads) Cancel(ctx context.Context, guid string) error {
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
	_, err := cdpproto.Call(ctx, conn.Browser(), browser.CancelDownload, browser.CancelDownloadParams{GUID: guid})
	return err
}

// dlOnConnected starts the event loop (once per connection) and sets the
// download behaviour. It also runs on BrowserReconnected.
func (w *Downloads) dlOnConnected(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	conn := s.Conn()
	w.mu.Lock()
	dir, stop := w.dir, w.stop
	fresh := conn != nil && conn != w.loop
	if fresh {
		w.loop = conn
	}
	w.mu.Unlock()
	if conn == nil {
		return events.None{}, session.ErrNotStarted
	}
	if fresh {
		// Subscribe before enabling, so the first event is not missed.
		sub := conn.Browser().SubscribeEvents(browser.DownloadWillBegin.Method, browser.DownloadProgress.Method)
		w.wg.Add(1)
		go w.dlLoop(stop, conn, sub)
	}
	_, err := cdpproto.Call(ctx, conn.Browser(), browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior:      browser.SetDownloadBehaviorBehaviorAllowAndName,
		DownloadPath:  dir,
		EventsEnabled: ptr(true),
	})
	if err != nil {
		return events.None{}, fmt.Errorf("watchdogs: setting download behaviour: %w", err)
	}
	return events.None{}, nil
}

// dlLoop handles the browser's download events until Detach or the
// connection ends. File moves happen here, never on the CDP reader.
func (w *Downloads) dlLoop(stop <-chan struct{}, conn *cdp.Conn, sub *cdp.Subscription) {
	defer w.wg.Done()
	defer func() { sub.Cancel() }()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-sub.C():
			if !ok {
				if errors.Is(sub.Err(), cdp.ErrSubscriptionOverflow) {
					w.log.Warn("download events fell behind; resubscribing", zap.Error(sub.Err()))
					sub = conn.Browser().SubscribeEvents(browser.DownloadWillBegin.Method, browser.DownloadProgress.Method)
					continue
				}
				return
			}
			switch ev.Method {
			case browser.DownloadWillBegin.Method:
				var e browser.EventDownloadWillBegin
				if ev.Decode(&e) == nil {
					w.dlBegin(&e)
				}
			case browser.DownloadProgress.Method:
				var e browser.EventDownloadProgress
				if ev.Decode(&e) == nil {
					w.dlProgress(stop, &e)
				}
			}
		}
	}
}

func (w *Downloads) dlEmitCtx() (context.Context, *bus.Bus) {
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	if s == nil {
		return context.Background(), nil
	}
	return context.Background(), s.Bus()
}

func (w *Downloads) dlBegin(e *browser.EventDownloadWillBegin) {
	w.mu.Lock()
	w.active[e.GUID] = &dlActive{guid: e.GUID, url: e.URL, name: e.SuggestedFilename}
	w.mu.Unlock()
	ctx, b := w.dlEmitCtx()
	if b != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadStarted, events.DownloadStartedEvent{GUID: e.GUID, URL: e.URL, SuggestedFilename: e.SuggestedFilename})
	}
}

func (w *Downloads) dlProgress(stop <-chan struct{}, e *browser.EventDownloadProgress) {
	interval := w.cfg.ProgressInterval
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	w.mu.Lock()
	a := w.active[e.GUID]
	if a == nil {
		// Began before we subscribed (or belongs to someone else's run).
		a = &dlActive{guid: e.GUID}
		w.active[e.GUID] = a
	}
	now := time.Now()
	report := e.State != browser.DownloadProgressStateInProgress || a.lastEmit.IsZero() || now.Sub(a.lastEmit) >= interval
	if report {
		a.lastEmit = now
	}
	if e.State != browser.DownloadProgressStateInProgress {
		delete(w.active, e.GUID)
	}
	dir := w.dir
	w.mu.Unlock()

	ctx, b := w.dlEmitCtx()
	if report && b != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{
			GUID: e.GUID, ReceivedBytes: int64(e.ReceivedBytes), TotalBytes: int64(e.TotalBytes), State: string(e.State),
		})
	}
	switch e.State {
	case browser.DownloadProgressStateCompleted:
		f, err := w.dlFinish(stop, dir, a)
		if err != nil {
			w.log.Warn("saving download", zap.String("guid", e.GUID), zap.Error(err))
			if b != nil {
				_, _ = bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
					Type: "DownloadFailed", Message: err.Error(),
					Details: map[string]string{"guid": e.GUID, "url": a.url},
				})
			}
			return
		}
		w.dlRecord(ctx, b, f)
	case browser.DownloadProgressStateCanceled:
		// Chromium removes its partial file; make sure nothing is left.
		for _, p := range []string{a.guid, a.guid + ".crdownload"} {
			if dlValidGUID(a.guid) {
				os.Remove(filepath.Join(dir, p))
			}
		}
	}
}

func (w *Downloads) dlRecord(ctx context.Context, b *bus.Bus, f events.FileDownloadedEvent) {
	w.mu.Lock()
	w.files = append(w.files, f)
	w.mu.Unlock()
	if b != nil {
		_, _ = bus.Emit(ctx, b, events.FileDownloaded, f)
	}
}

// dlValidGUID accepts the GUIDs Chromium uses (hex and dashes), so a GUID
// never names a path outside the directory.
func dlValidGUID(g string) bool {
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

// dlFinish moves <dir>/<guid> to its sanitized name.
func (w *Downloads) dlFinish(stop <-chan struct{}, dir string, a *dlActive) (events.FileDownloadedEvent, error) {
	var out events.FileDownloadedEvent
	if !dlValidGUID(a.guid) {
		return out, fmt.Errorf("download id %q is not a guid", a.guid)
	}
	src := filepath.Join(dir, a.guid)
	// The completed event can precede the final rename on a busy machine.
	var fi fs.FileInfo
	var err error
	for i := 0; ; i++ {
		fi, err = os.Lstat(src)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || i >= 100 {
			break
		}
		select {
		case <-stop:
			return out, errors.New("stopped while waiting for the downloaded file")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return out, err
	}
	if !fi.Mode().IsRegular() {
		return out, fmt.Errorf("download %s is not a regular file (%s)", a.guid, fi.Mode())
	}
	name := a.name
	if name == "" {
		name = dlNameFromURL(a.url)
	}
	dst, err := dlMoveInto(dir, src, dlSanitizeName(name))
	if err != nil {
		return out, err
	}
	return dlFileEvent(a.guid, a.url, dst, fi.Size(), false), nil
}

func dlFileEvent(guid, rawURL, p string, size int64, auto bool) events.FileDownloadedEvent {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")
	mt := ""
	if ext != "" {
		mt = mime.TypeByExtension("." + ext)
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = strings.TrimSpace(mt[:i])
		}
	}
	return events.FileDownloadedEvent{
		GUID: guid, URL: rawURL, Path: p, FileName: filepath.Base(p), Size: size,
		FileType: ext, MIMEType: mt, AutoDownload: auto,
	}
}

// dlContained reports whether p is dir itself or inside it, lexically
// after Clean.
func dlContained(dir, p string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	if err != nil || rel == "." {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) && !strings.ContainsRune(rel, filepath.Separator)
}

// dlReserve creates an empty file dir/name (or name (1), name (2), …) with
// O_EXCL, which never follows or replaces an existing entry (symlinks
// included), and returns its path.
func dlReserve(dir, name string) (string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	for i := 0; i < 10000; i++ {
		cand := name
		if i > 0 {
			cand = stem + " (" + strconv.Itoa(i) + ")" + ext
		}
		p := filepath.Join(dir, cand)
		if !dlContained(dir, p) {
			return "", fmt.Errorf("download name %q escapes the directory", cand)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name for %q", name)
}

// dlMoveInto renames src to a free, sanitized name inside dir.
func dlMoveInto(dir, src, name string) (string, error) {
	dst, err := dlReserve(dir, name)
	if err != nil {
		return "", err
	}
	// Rename replaces the empty placeholder we own.
	if err := os.Rename(src, dst); err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}

// dlWriteInto writes data to a free, sanitized name inside dir.
func dlWriteInto(dir, name string, data []byte) (string, error) {
	dst, err := dlReserve(dir, name)
	if err != nil {
		return "", err
	}
	// The placeholder is ours (O_EXCL); open it without O_CREATE.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		os.Remove(dst)
		return "", err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}

// dlMaxName caps a file name in bytes (most file systems allow 255).
const dlMaxName = 200

var dlReserved = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// dlSanitizeName turns a page-supplied file name into a safe base name:
// only the last path element (either separator), no control or
// Windows-reserved characters, no leading dots or spaces, no trailing dots or
// spaces, no device names, at most dlMaxName bytes (extension kept), and
// "download" when nothing usable is left.
func dlSanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r):
			// dropped: control and invisible formatting (bidi overrides)
		case strings.ContainsRune(`<>:"|?*`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name = strings.TrimLeft(b.String(), ". ")
	name = strings.TrimRight(name, ". ")
	if name == "" {
		return "download"
	}
	stem := name
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	if dlReserved[strings.ToLower(strings.TrimSpace(stem))] {
		name = "_" + name
	}
	if len(name) > dlMaxName {
		ext := filepath.Ext(name)
		if len(ext) > 20 || !utf8.ValidString(ext) {
			ext = ""
		}
		stem := strings.TrimSuffix(name, ext)
		keep := dlMaxName - len(ext)
		for keep > 0 && !utf8.RuneStart(stem[keep]) {
			keep--
		}
		name = strings.TrimRight(stem[:keep], ". ") + ext
	}
	return name
}

// dlNameFromURL is the last path element of a URL, for downloads without a
// suggested name.
func dlNameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "download"
	}
	return path.Base(u.Path)
}

// dlOnNavigationComplete auto-downloads a PDF a session navigation opened.
func (w *Downloads) dlOnNavigationComplete(ctx context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	w.mu.Lock()
	auto, s, dir := w.autoPDF, w.sess, w.dir
	w.mu.Unlock()
	if !auto || ev.ErrorMessage != "" || ev.TargetID == "" || s == nil {
		return events.None{}, nil
	}
	u, err := url.Parse(ev.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		return events.None{}, nil
	}
	if w.dlSeenURL(ev.URL) {
		return events.None{}, nil // the browser saved it as a download
	}
	cs, err := s.PageSession(ev.TargetID)
	if err != nil {
		return events.None{}, nil
	}
	// Only a tab really showing a PDF counts: a navigation that became a
	// download leaves the tab on its previous page.
	var ct string
	if err := evaluate(ctx, cs, "document.contentType", &ct); err != nil || !strings.EqualFold(ct, "application/pdf") {
		return events.None{}, nil
	}
	max := w.cfg.MaxPDFBytes
	if max <= 0 {
		max = DefaultMaxPDFBytes
	}
	guid := "pdf-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	name := dlNameFromURL(ev.URL)
	if !strings.HasSuffix(strings.ToLower(name), ".pdf") {
		name += ".pdf"
	}
	b := s.Bus()
	_, _ = bus.Emit(ctx, b, events.DownloadStarted, events.DownloadStartedEvent{GUID: guid, URL: ev.URL, SuggestedFilename: name, AutoDownload: true})
	// Fetched inside the page: same origin, the page's cookies and
	// credentials, and the bytes the user would get.
	expr := fmt.Sprintf(`(async () => {
		const r = await fetch(%s, {credentials: "include"});
		if (!r.ok) throw new Error("HTTP " + r.status);
		const buf = await r.arrayBuffer();
		if (buf.byteLength > %d) throw new Error("PDF larger than %d bytes");
		const bytes = new Uint8Array(buf);
		let s = "";
		for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
		return btoa(s);
	})()`, dlJSString(ev.URL), max, max)
	var b64 string
	if err := evaluate(ctx, cs, expr, &b64); err != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{GUID: guid, State: string(browser.DownloadProgressStateCanceled)})
		return events.None{}, fmt.Errorf("watchdogs: auto-downloading PDF %s: %w", ev.URL, err)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return events.None{}, fmt.Errorf("watchdogs: auto-downloading PDF %s: %w", ev.URL, err)
	}
	dst, err := dlWriteInto(dir, dlSanitizeName(name), data)
	if err != nil {
		return events.None{}, fmt.Errorf("watchdogs: saving PDF %s: %w", ev.URL, err)
	}
	n := int64(len(data))
	_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{GUID: guid, ReceivedBytes: n, TotalBytes: n, State: string(browser.DownloadProgressStateCompleted)})
	f := dlFileEvent(guid, ev.URL, dst, n, true)
	f.MIMEType = "application/pdf"
	w.dlRecord(ctx, b, f)
	return events.None{}, nil
}

// dlSeenURL reports whether a browser download of rawURL is in progress or
// done in this run.
func (w *Downloads) dlSeenURL(rawURL string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.active {
		if a.url == rawURL {
			return true
		}
	}
	for _, f := range w.files {
		if f.URL == rawURL && !f.AutoDownload {
			return true
		}
	}
	return false
}

// dlJSString quotes s as a JavaScript string literal (JSON escapes
// U+2028/2029 and every control character).
func dlJSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
