// Package storagestate is the storage-state watchdog: it keeps the
// browser's cookies and localStorage in a Playwright-compatible JSON file,
// loads it into a new session and saves the session's state back into it.
//
// Handles: BrowserConnected (the configured file's cookies are set),
// LoadStorageState and SaveStorageState (on demand, any path), BrowserStop
// (save, unless forced or disabled) and NavigationComplete (the origins
// visited, for the save's log). It adds a target hook that seeds
// localStorage in every new tab and cross-site iframe before its scripts
// run.
//
// Emits: StorageStateLoaded and StorageStateSaved.
//
// It never overwrites a file it cannot parse, never writes a state file
// readable by others (mode 0600), and never deletes from the file what
// only the file has (a cookie deleted in the browser stays in the file).
package storagestate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// seedJS is the function the localStorage seed script calls with the seed.
//
//go:embed js/seed_local_storage.js
var seedJS string

// readJS reads a document's origin and localStorage.
//
//go:embed js/read_local_storage.js
var readJS string

// ErrBadStorageState is wrapped by errors about a storage state file that
// cannot be used (not JSON, wrong shape, a cookie without name or domain).
// Such a file is never overwritten.
var ErrBadStorageState = errors.New("storagestate: malformed storage state file")

// ErrNoPath is returned by LoadStorageState and SaveStorageState when
// neither the event, the Config nor the profile names a file.
var ErrNoPath = errors.New("storagestate: no storage state file (set the event's Path, Config.Path or Profile.StorageStatePath)")

// Config configures the storage-state watchdog. The zero value is usable.
type Config struct {
	// Logger receives debug and warning messages. Default: the session's
	// logger, named after the watchdog.
	Logger *zap.Logger
	// Path overrides the profile's StorageStatePath. Default empty: the
	// profile's; both empty: nothing is loaded or saved unless an event
	// names a path.
	Path string
	// NoSaveOnStop skips the save on BrowserStop. Default false: save.
	NoSaveOnStop bool
}

// Name is the storagestate watchdog's name and the name of its handlers.
const Name = "storagestate"

// Watchdog is the storage-state watchdog (name Name). It keeps
// cookies and localStorage in a Playwright-compatible JSON file:
//
//	{"cookies": [{"name","value","domain","path","expires","httpOnly","secure","sameSite"}],
//	 "origins": [{"origin": "https://x.com", "localStorage": [{"name","value"}]}]}
//
// Load: the file is read and checked in Attach (a malformed file fails Start
// with an error naming it, wrapping ErrBadStorageState). Cookies are set with
// Storage.setCookies on BrowserConnected; expired ones are dropped, session
// cookies (expires -1) are kept. localStorage is seeded by a script added to
// every tab and cross-site iframe before it runs (Page.addScriptToEvaluate
// OnNewDocument), guarded by origin, that sets the keys the origin does not
// have yet: values exist before the page's own scripts run, and a value the
// page changed is not overwritten by the next document. LoadStorageState
// loads another file at any time (also into the open tabs); its values win
// over those of an earlier seed that the page has not changed.
//
// Save (SaveStorageState, and BrowserStop unless Force or NoSaveOnStop):
// cookies come from Storage.getCookies (every cookie of the browser's default
// context), localStorage from every open tab and cross-site iframe (main
// frames only; an origin visited but no longer open keeps the values the file
// had). The result is merged into the existing file: cookies by
// name+domain+path and localStorage per origin and key, the browser winning;
// entries only the file has are kept (a cookie deleted in the browser is
// therefore not deleted from the file). Writing is atomic: path.tmp is
// written and synced, the old file is copied to path.bak, then path.tmp is
// renamed over path. A malformed existing file is left untouched: the state
// goes to path.tmp and the save fails, naming both.
//
// Files are written with mode 0600: they hold session cookies.
type Watchdog struct {
	cfg Config

	mu      sync.Mutex
	sess    *session.Session
	log     *zap.Logger
	group   *routine.Group    // awaits the seed commands; created in Attach, stopped in Detach
	initial *stateFile        // parsed in Attach, applied on BrowserConnected
	seed    map[string][]item // origin → items injected into new documents
	seedSrc string            // the init script for seed ("" when seed is empty)
	visited map[string]bool   // http(s) origins navigated to in this run
}

// stateFile is the Playwright storage state format.
type stateFile struct {
	Cookies []cookie `json:"cookies"`
	Origins []origin `json:"origins"`
}

// cookie is one cookie of the file.
type cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"` // seconds since the epoch; -1 = session cookie
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite,omitempty"` // Strict, Lax, None
}

// origin is the localStorage of one origin.
type origin struct {
	Origin       string `json:"origin"`
	LocalStorage []item `json:"localStorage"`
}

// item is one localStorage key and value.
type item struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// New returns the storage-state watchdog.
func New(cfg Config) *Watchdog { return &Watchdog{cfg: cfg} }

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog. It reads the configured file (a
// missing file is a first run, not an error).
func (w *Watchdog) Attach(s *session.Session) error {
	path := w.statePath(s, "")
	var initial *stateFile
	if path != "" {
		f, exists, err := readFile(path)
		if err != nil {
			return err
		}
		if exists {
			initial = f
		}
	}
	seed := map[string][]item{}
	if initial != nil {
		mergeOrigins(seed, initial.Origins)
	}
	src, err := seedScript(seed)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.sess = s
	w.log = w.cfg.Logger
	if w.log == nil {
		w.log = s.Logger().Named(Name)
	}
	w.group = routine.New(context.Background())
	w.initial = initial
	w.seed, w.seedSrc = seed, src
	w.visited = map[string]bool{}
	w.mu.Unlock()

	s.AddTargetHook(w.hook)
	return errors.Join(
		session.Handle(s, events.BrowserConnected, Name, w.onConnected),
		session.Handle(s, events.LoadStorageState, Name, w.onLoad),
		session.Handle(s, events.SaveStorageState, Name, w.onSave),
		session.Handle(s, events.BrowserStop, Name, w.onStop),
		session.Handle(s, events.NavigationComplete, Name, w.onNavigated),
	)
}

// Detach implements session.Detacher: it stops the goroutines awaiting
// seed commands and returns the group's Stop error.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g := w.group
	w.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.Stop(ctx)
}

// statePath is the file to use: p (an event's Path), else Config.Path, else
// the profile's StorageStatePath.
func (w *Watchdog) statePath(s *session.Session, p string) string {
	switch {
	case p != "":
		return p
	case w.cfg.Path != "":
		return w.cfg.Path
	default:
		return s.Profile().StorageStatePath
	}
}

// currentSession is the session of the last Attach.
func (w *Watchdog) currentSession() *session.Session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sess
}

func (w *Watchdog) logger() *zap.Logger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return zap.NewNop()
	}
	return w.log
}

// hook adds the localStorage seed to a new tab or cross-site iframe
// while it is paused. The command is sent now (before the target resumes)
// and its reply awaited by a goroutine of the group.
func (w *Watchdog) hook(ctx context.Context, t session.AttachedTarget) error {
	if t.Kind != session.TargetPage && t.Kind != session.TargetFrame {
		return nil
	}
	w.mu.Lock()
	src, g := w.seedSrc, w.group
	w.mu.Unlock()
	if src == "" || g == nil || g.Stopped() {
		return nil
	}
	r := t.Session.Send(ctx, page.CommandAddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
	target := string(t.Session.TargetID())
	// ErrStopped: Detach began, nobody needs the reply.
	_ = g.Go("seed localStorage "+target, func(gctx context.Context) {
		wait, cancel := context.WithTimeout(gctx, 30*time.Second)
		defer cancel()
		if err := r.Wait(wait, nil); err != nil {
			w.logger().Debug("seeding localStorage", zap.String("target", target), zap.Error(err))
		}
	})
	return nil
}

// seedScript is the init script that seeds localStorage from seed ("" for
// an empty seed). Page.addScriptToEvaluateOnNewDocument takes source text
// only, so the seed goes in as a JSON literal (encoding/json's output is
// data, a valid JavaScript expression) passed as the argument of the
// embedded function; nothing of the seed is spliced into code.
func seedScript(seed map[string][]item) (string, error) {
	if len(seed) == 0 {
		return "", nil
	}
	m := make(map[string][][2]string, len(seed))
	for o, items := range seed {
		m[o] = [][2]string{}
		for _, it := range items {
			m[o] = append(m[o], [2]string{it.Name, it.Value})
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("storagestate: encoding the localStorage seed: %w", err)
	}
	return "(" + seedJS + ")(" + string(data) + ");", nil
}

// onConnected sets the cookies of the file read in Attach.
func (w *Watchdog) onConnected(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	s := w.currentSession()
	w.mu.Lock()
	f := w.initial
	w.initial = nil
	w.mu.Unlock()
	if f == nil {
		return events.None{}, nil
	}
	path := w.statePath(s, "")
	n, err := w.setCookies(ctx, s, f.Cookies)
	if err != nil {
		return events.None{}, fmt.Errorf("storagestate: loading %s: %w", path, err)
	}
	w.emitLoaded(ctx, s, path, n, len(f.Origins))
	return events.None{}, nil
}

// emitLoaded reports a load.
func (w *Watchdog) emitLoaded(ctx context.Context, s *session.Session, path string, cookies, origins int) {
	if b := s.Bus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.StorageStateLoaded, events.StorageStateLoadedEvent{Path: path, Cookies: cookies, Origins: origins})
	}
}

// onLoad loads a file at run time: its cookies, and its localStorage into
// the seed of new documents and into the open tabs.
func (w *Watchdog) onLoad(ctx context.Context, ev events.LoadStorageStateEvent) (events.StorageStateResult, error) {
	s := w.currentSession()
	path := w.statePath(s, ev.Path)
	if path == "" {
		return events.StorageStateResult{}, ErrNoPath
	}
	f, exists, err := readFile(path)
	if err != nil {
		return events.StorageStateResult{}, err
	}
	if !exists {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: loading %s: %w", path, fs.ErrNotExist)
	}
	n, err := w.setCookies(ctx, s, f.Cookies)
	if err != nil {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: loading %s: %w", path, err)
	}
	w.mu.Lock()
	mergeOrigins(w.seed, f.Origins)
	src, err := seedScript(w.seed)
	if err == nil {
		w.seedSrc = src
	}
	w.mu.Unlock()
	if err != nil {
		return events.StorageStateResult{}, err
	}
	// Open tabs get the seed too, run at once in their current documents.
	for _, t := range s.Tabs() {
		if src == "" {
			break
		}
		cs, err := s.PageSession(t.TargetID)
		if err != nil {
			continue
		}
		if _, err := cdpproto.Call(ctx, cs, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src, RunImmediately: pagejs.Ptr(true)}); err != nil {
			w.logger().Debug("seeding open tab", zap.String("target", t.TargetID), zap.Error(err))
		}
	}
	w.emitLoaded(ctx, s, path, n, len(f.Origins))
	return events.StorageStateResult{Path: path, Cookies: n, Origins: len(f.Origins)}, nil
}

// setCookies sets the unexpired cookies and returns how many.
func (w *Watchdog) setCookies(ctx context.Context, s *session.Session, cookies []cookie) (int, error) {
	now := float64(time.Now().Unix())
	var params []*network.CookieParam
	for _, c := range cookies {
		if c.Expires > 0 && c.Expires < now {
			continue
		}
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: network.CookieSameSite(c.SameSite)}
		if p.Path == "" {
			p.Path = "/"
		}
		if c.Expires > 0 {
			p.Expires = cdpproto.TimeSinceEpoch(c.Expires)
		}
		params = append(params, p)
	}
	if len(params) == 0 {
		return 0, nil
	}
	conn := s.Conn()
	if conn == nil {
		return 0, session.ErrNotStarted
	}
	if _, err := cdpproto.Call(ctx, conn.Browser(), storage.SetCookies, storage.SetCookiesParams{Cookies: params, BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID())}); err != nil {
		return 0, err
	}
	return len(params), nil
}

// onNavigated records the origin a navigation reached.
func (w *Watchdog) onNavigated(_ context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	if o := originOf(ev.URL); o != "" {
		w.mu.Lock()
		w.visited[o] = true
		w.mu.Unlock()
	}
	return events.None{}, nil
}

// onStop saves the state before the browser stops (see Config.NoSaveOnStop).
func (w *Watchdog) onStop(ctx context.Context, ev events.BrowserStopEvent) (events.None, error) {
	s := w.currentSession()
	if ev.Force || w.cfg.NoSaveOnStop || w.statePath(s, "") == "" {
		return events.None{}, nil
	}
	_, err := w.onSave(ctx, events.SaveStorageStateEvent{})
	return events.None{}, err
}

// onSave reads the browser's state and merges it into the file (see
// Watchdog).
func (w *Watchdog) onSave(ctx context.Context, ev events.SaveStorageStateEvent) (events.StorageStateResult, error) {
	s := w.currentSession()
	path := w.statePath(s, ev.Path)
	if path == "" {
		return events.StorageStateResult{}, ErrNoPath
	}
	conn := s.Conn()
	if conn == nil {
		return events.StorageStateResult{}, session.ErrNotStarted
	}
	res, err := cdpproto.Call(ctx, conn.Browser(), storage.GetCookies, storage.GetCookiesParams{BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID())})
	if err != nil {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: reading cookies: %w", err)
	}
	cur := stateFile{}
	for _, c := range res.Cookies {
		exp := c.Expires
		if c.Session {
			exp = -1
		}
		cur.Cookies = append(cur.Cookies, cookie{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: exp,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite),
		})
	}
	read := w.readLocalStorage(ctx, s)
	w.mu.Lock()
	var unread []string
	for o := range w.visited {
		if _, ok := read[o]; !ok {
			unread = append(unread, o)
		}
	}
	w.mu.Unlock()
	if len(unread) > 0 {
		sort.Strings(unread)
		w.logger().Debug("origins not open at save: the file's values are kept", zap.Strings("origins", unread))
	}
	for o, items := range read {
		cur.Origins = append(cur.Origins, origin{Origin: o, LocalStorage: items})
	}

	old, exists, rerr := readFile(path)
	if rerr != nil {
		// Never overwrite what we cannot read: leave it, write beside it.
		tmp := path + ".tmp"
		if err := writeFile(tmp, normalize(&cur)); err != nil {
			return events.StorageStateResult{}, fmt.Errorf("%w; writing the state to %s failed too: %w", rerr, tmp, err)
		}
		return events.StorageStateResult{}, fmt.Errorf("%w; %s was left unchanged and the current state was written to %s", rerr, path, tmp)
	}
	merged := &cur
	if exists {
		merged = merge(old, &cur)
	}
	data := normalize(merged)
	if err := writeAtomic(path, data, exists); err != nil {
		return events.StorageStateResult{}, err
	}
	out := events.StorageStateResult{Path: path, Cookies: len(merged.Cookies), Origins: len(merged.Origins)}
	if b := s.Bus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.StorageStateSaved, events.StorageStateSavedEvent(out))
	}
	return out, nil
}

// readLocalStorage reads localStorage of the main frame of every open
// tab and cross-site iframe, by origin.
func (w *Watchdog) readLocalStorage(ctx context.Context, s *session.Session) map[string][]item {
	var sessions []*cdp.Session
	for _, t := range s.Tabs() {
		if cs, err := s.PageSession(t.TargetID); err == nil {
			sessions = append(sessions, cs)
		}
	}
	for _, f := range s.FrameTargets("") {
		sessions = append(sessions, f.Session)
	}
	out := map[string][]item{}
	for _, cs := range sessions {
		var got struct {
			Origin string      `json:"origin"`
			Items  [][2]string `json:"items"`
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := pagejs.Evaluate(rctx, cs, readJS, &got)
		cancel()
		if err != nil {
			w.logger().Debug("reading localStorage", zap.String("target", string(cs.TargetID())), zap.Error(err))
			continue
		}
		if originOf(got.Origin) == "" {
			continue
		}
		items := make([]item, 0, len(got.Items))
		for _, kv := range got.Items {
			items = append(items, item{Name: kv[0], Value: kv[1]})
		}
		// Two tabs of one origin share localStorage: either read will do.
		out[got.Origin] = items
	}
	return out
}

// originOf returns scheme://host[:port] of an http(s) URL, else "".
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// readFile reads and checks a state file. exists is false for a missing
// file (no error).
func readFile(path string) (f *stateFile, exists bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("storagestate: reading %s: %w", path, err)
	}
	f = &stateFile{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(f); err != nil {
		return nil, true, fmt.Errorf("%w %s: %v", ErrBadStorageState, path, err)
	}
	if dec.More() {
		return nil, true, fmt.Errorf("%w %s: data after the JSON object", ErrBadStorageState, path)
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("null")) {
		return nil, true, fmt.Errorf("%w %s: null instead of an object", ErrBadStorageState, path)
	}
	for i, c := range f.Cookies {
		if c.Name == "" || c.Domain == "" {
			return nil, true, fmt.Errorf("%w %s: cookie %d has no name or domain", ErrBadStorageState, path, i)
		}
		switch c.SameSite {
		case "", "Strict", "Lax", "None":
		default:
			return nil, true, fmt.Errorf("%w %s: cookie %q has sameSite %q (want Strict, Lax or None)", ErrBadStorageState, path, c.Name, c.SameSite)
		}
	}
	for i, o := range f.Origins {
		if originOf(o.Origin) != o.Origin {
			return nil, true, fmt.Errorf("%w %s: origins[%d] %q is not an http(s) origin like https://example.com", ErrBadStorageState, path, i, o.Origin)
		}
	}
	return f, true, nil
}

// mergeOrigins merges origins into m, the later value winning per key.
func mergeOrigins(m map[string][]item, origins []origin) {
	for _, o := range origins {
		for _, it := range o.LocalStorage {
			items := m[o.Origin]
			if i := slices.IndexFunc(items, func(x item) bool { return x.Name == it.Name }); i >= 0 {
				items[i] = it
			} else {
				items = append(items, it)
			}
			m[o.Origin] = items
		}
		if _, ok := m[o.Origin]; !ok {
			m[o.Origin] = nil
		}
	}
}

// merge merges the browser's state into the file's: browser wins per
// cookie (name+domain+path) and per localStorage key; expired file cookies
// are dropped.
func merge(old, cur *stateFile) *stateFile {
	now := float64(time.Now().Unix())
	type key struct{ name, domain, path string }
	idx := map[key]int{}
	out := &stateFile{}
	for _, c := range old.Cookies {
		if c.Expires > 0 && c.Expires < now {
			continue
		}
		idx[key{c.Name, c.Domain, c.Path}] = len(out.Cookies)
		out.Cookies = append(out.Cookies, c)
	}
	for _, c := range cur.Cookies {
		k := key{c.Name, c.Domain, c.Path}
		if i, ok := idx[k]; ok {
			out.Cookies[i] = c
			continue
		}
		idx[k] = len(out.Cookies)
		out.Cookies = append(out.Cookies, c)
	}
	m := map[string][]item{}
	mergeOrigins(m, old.Origins)
	mergeOrigins(m, cur.Origins)
	for o, items := range m {
		out.Origins = append(out.Origins, origin{Origin: o, LocalStorage: items})
	}
	return out
}

// normalize sorts for stable files and encodes.
func normalize(f *stateFile) []byte {
	if f.Cookies == nil {
		f.Cookies = []cookie{}
	}
	if f.Origins == nil {
		f.Origins = []origin{}
	}
	sort.SliceStable(f.Cookies, func(i, j int) bool {
		a, b := f.Cookies[i], f.Cookies[j]
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Name < b.Name
	})
	sort.Slice(f.Origins, func(i, j int) bool { return f.Origins[i].Origin < f.Origins[j].Origin })
	for i := range f.Origins {
		if f.Origins[i].LocalStorage == nil {
			f.Origins[i].LocalStorage = []item{}
		}
	}
	data, _ := json.MarshalIndent(f, "", "  ") // plain structs: cannot fail
	return append(data, '\n')
}

// writeFile writes data to path with mode 0600 and syncs it.
func writeFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("storagestate: creating the directory of %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storagestate: creating %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("storagestate: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("storagestate: syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storagestate: closing %s: %w", path, err)
	}
	return nil
}

// writeAtomic replaces path with data: path.tmp first, the old file
// copied to path.bak, then a rename, so path always holds a whole file.
func writeAtomic(path string, data []byte, backup bool) error {
	tmp := path + ".tmp"
	if err := writeFile(tmp, data); err != nil {
		return err
	}
	if backup {
		old, err := os.ReadFile(path)
		if err == nil {
			err = writeFile(path+".bak", old)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storagestate: keeping %s.bak: %w", path, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storagestate: replacing %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}
