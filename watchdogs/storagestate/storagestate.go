package watchdogs

import (
	"bytes"
	"context"
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
	"github.com/browseragent/browseragent/session"
)

// ErrBadStorageState is wrapped by errors about a storage state file that
// cannot be used (not JSON, wrong shape, a cookie without name or domain).
// Such a file is never overwritten.
var ErrBadStorageState = errors.New("storagestate: malformed storage state file")

// StorageStateConfig configures the storage-state watchdog.
type StorageStateConfig struct {
	// Path overrides the profile's StorageStatePath. Empty: the profile's;
	// both empty: nothing is loaded or saved unless an event names a path.
	Path string
	// NoSaveOnStop skips the save on BrowserStop (default: save).
	NoSaveOnStop bool
}

// StorageState is the storage-state watchdog (name "storagestate"). It keeps
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
// loads another file at any time (also into the open tabs).
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
type StorageState struct {
	cfg StorageStateConfig

	mu      sync.Mutex
	sess    *session.Session
	initial *storeFile             // parsed in Attach, applied on BrowserConnected
	seed    map[string][]storeItem // origin → items injected into new documents
	visited map[string]bool
	ctx     context.Context
	cancel  context.CancelFunc
	stopped bool
	wg      sync.WaitGroup
}

// storeFile is the Playwright storage state format.
type storeFile struct {
	Cookies []storeCookie `json:"cookies"`
	Origins []storeOrigin `json:"origins"`
}

type storeCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"` // seconds since the epoch; -1 = session cookie
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite,omitempty"` // Strict, Lax, None
}

type storeOrigin struct {
	Origin       string      `json:"origin"`
	LocalStorage []storeItem `json:"localStorage"`
}

type storeItem struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NewStorageState returns the storage-state watchdog.
func NewStorageState(cfg StorageStateConfig) *StorageState { return &StorageState{cfg: cfg} }

// Name implements session.Watchdog.
func (w *StorageState) Name() string { return "storagestate" }

// Attach implements session.Watchdog. It reads the configured file (a
// missing file is a first run, not an error).
func (w *StorageState) Attach(s *session.Session) error {
	path := w.storePath(s, "")
	var initial *storeFile
	if path != "" {
		f, exists, err := storeRead(path)
		if err != nil {
			return err
		}
		if exists {
			initial = f
		}
	}
	w.mu.Lock()
	w.sess = s
	w.initial = initial
	w.seed = map[string][]storeItem{}
	w.visited = map[string]bool{}
	if initial != nil {
		storeMergeOrigins(w.seed, initial.Origins)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.stopped = false
	w.mu.Unlock()

	s.AddTargetHook(w.storeHook)
	b := s.Bus()
	return errors.Join(
		register(b, w.Name(), events.BrowserConnected, w.storeOnConnected),
		register(b, w.Name(), events.LoadStorageState, w.storeOnLoad),
		register(b, w.Name(), events.SaveStorageState, w.storeOnSave),
		register(b, w.Name(), events.BrowserStop, w.storeOnStop),
		register(b, w.Name(), events.NavigationComplete, w.storeOnNavigated),
	)
}

// Detach implements session.Detacher.
func (w *StorageState) Detach(context.Context) error {
	w.mu.Lock()
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}

func (w *StorageState) storePath(s *session.Session, p string) string {
	switch {
	case p != "":
		return p
	case w.cfg.Path != "":
		return w.cfg.Path
	default:
		return s.Profile().StorageStatePath
	}
}

func (w *StorageState) storeSession() *session.Session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sess
}

func (w *StorageState) storeLog() *zap.Logger {
	if s := w.storeSession(); s != nil {
		return s.Logger().Named("storagestate")
	}
	return zap.NewNop()
}

// storeHook adds the localStorage seed to a new tab or cross-site iframe
// while it is paused. The command is sent now and awaited by a goroutine.
func (w *StorageState) storeHook(ctx context.Context, t session.AttachedTarget) error {
	if t.Kind != session.TargetPage && t.Kind != session.TargetFrame {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || len(w.seed) == 0 {
		return nil
	}
	src, err := storeSeedScript(w.seed)
	if err != nil {
		return err
	}
	r := t.Session.Send(ctx, page.CommandAddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
	w.wg.Add(1)
	go func(wctx context.Context) {
		defer w.wg.Done()
		wait, cancel := context.WithTimeout(wctx, 30*time.Second)
		defer cancel()
		if err := r.Wait(wait, nil); err != nil {
			w.storeLog().Debug("seeding localStorage", zap.String("target", string(t.Session.TargetID())), zap.Error(err))
		}
	}(w.ctx)
	return nil
}

// storeSeedScript is the init script that writes the seed's keys missing
// from the document's origin.
func storeSeedScript(seed map[string][]storeItem) (string, error) {
	m := make(map[string][][2]string, len(seed))
	for o, items := range seed {
		for _, it := range items {
			m[o] = append(m[o], [2]string{it.Name, it.Value})
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return `(() => { const seed = ` + string(data) + `; let items; try { items = seed[location.origin]; } catch (e) { return; }
  if (!items) return;
  try { for (const [k, v] of items) { if (localStorage.getItem(k) === null) localStorage.setItem(k, v); } } catch (e) {}
})();`, nil
}

func (w *StorageState) storeOnConnected(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
	s := w.storeSession()
	w.mu.Lock()
	f := w.initial
	w.initial = nil
	w.mu.Unlock()
	if f == nil {
		return events.None{}, nil
	}
	path := w.storePath(s, "")
	n, err := w.storeSetCookies(ctx, s, f.Cookies)
	if err != nil {
		return events.None{}, fmt.Errorf("storagestate: loading %s: %w", path, err)
	}
	w.storeEmitLoaded(ctx, s, path, n, len(f.Origins))
	return events.None{}, nil
}

func (w *StorageState) storeEmitLoaded(ctx context.Context, s *session.Session, path string, cookies, origins int) {
	if b := s.Bus(); b != nil {
		bus.Emit(ctx, b, events.StorageStateLoaded, events.StorageStateLoadedEvent{Path: path, Cookies: cookies, Origins: origins})
	}
}

func (w *StorageState) storeOnLoad(ctx context.Context, ev events.LoadStorageStateEvent) (events.StorageStateResult, error) {
	s := w.storeSession()
	path := w.storePath(s, ev.Path)
	if path == "" {
		return events.StorageStateResult{}, errors.New("storagestate: no path (set the event's Path or Profile.StorageStatePath)")
	}
	f, exists, err := storeRead(path)
	if err != nil {
		return events.StorageStateResult{}, err
	}
	if !exists {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: loading %s: %w", path, fs.ErrNotExist)
	}
	n, err := w.storeSetCookies(ctx, s, f.Cookies)
	if err != nil {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: loading %s: %w", path, err)
	}
	w.mu.Lock()
	storeMergeOrigins(w.seed, f.Origins)
	src, err := storeSeedScript(w.seed)
	w.mu.Unlock()
	if err != nil {
		return events.StorageStateResult{}, err
	}
	// Open tabs get the seed too, run at once in their current documents.
	for _, t := range s.Tabs() {
		cs, err := s.PageSession(t.TargetID)
		if err != nil {
			continue
		}
		if _, err := cdpproto.Call(ctx, cs, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src, RunImmediately: ptr(true)}); err != nil {
			w.storeLog().Debug("seeding open tab", zap.String("target", t.TargetID), zap.Error(err))
		}
	}
	w.storeEmitLoaded(ctx, s, path, n, len(f.Origins))
	return events.StorageStateResult{Path: path, Cookies: n, Origins: len(f.Origins)}, nil
}

// storeSetCookies sets the unexpired cookies and returns how many.
func (w *StorageState) storeSetCookies(ctx context.Context, s *session.Session, cookies []storeCookie) (int, error) {
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
	if _, err := cdpproto.Call(ctx, conn.Browser(), storage.SetCookies, storage.SetCookiesParams{Cookies: params}); err != nil {
		return 0, err
	}
	return len(params), nil
}

func (w *StorageState) storeOnNavigated(_ context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	if o := storeOriginOf(ev.URL); o != "" {
		w.mu.Lock()
		w.visited[o] = true
		w.mu.Unlock()
	}
	return events.None{}, nil
}

func (w *StorageState) storeOnStop(ctx context.Context, ev events.BrowserStopEvent) (events.None, error) {
	s := w.storeSession()
	if ev.Force || w.cfg.NoSaveOnStop || w.storePath(s, "") == "" {
		return events.None{}, nil
	}
	_, err := w.storeOnSave(ctx, events.SaveStorageStateEvent{})
	return events.None{}, err
}

func (w *StorageState) storeOnSave(ctx context.Context, ev events.SaveStorageStateEvent) (events.StorageStateResult, error) {
	s := w.storeSession()
	path := w.storePath(s, ev.Path)
	if path == "" {
		return events.StorageStateResult{}, errors.New("storagestate: no path (set the event's Path or Profile.StorageStatePath)")
	}
	conn := s.Conn()
	if conn == nil {
		return events.StorageStateResult{}, session.ErrNotStarted
	}
	res, err := cdpproto.Call(ctx, conn.Browser(), storage.GetCookies, storage.GetCookiesParams{})
	if err != nil {
		return events.StorageStateResult{}, fmt.Errorf("storagestate: reading cookies: %w", err)
	}
	cur := storeFile{}
	for _, c := range res.Cookies {
		exp := c.Expires
		if c.Session {
			exp = -1
		}
		cur.Cookies = append(cur.Cookies, storeCookie{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: exp,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite),
		})
	}
	read := w.storeReadLocalStorage(ctx, s)
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
		w.storeLog().Debug("origins not open at save: the file's values are kept", zap.Strings("origins", unread))
	}
	for o, items := range read {
		cur.Origins = append(cur.Origins, storeOrigin{Origin: o, LocalStorage: items})
	}

	old, exists, rerr := storeRead(path)
	if rerr != nil {
		// Never overwrite what we cannot read: leave it, write beside it.
		tmp := path + ".tmp"
		if err := storeWriteFile(tmp, storeNormalize(&cur)); err != nil {
			return events.StorageStateResult{}, fmt.Errorf("%w; writing the state to %s failed too: %v", rerr, tmp, err)
		}
		return events.StorageStateResult{}, fmt.Errorf("%w; %s was left unchanged and the current state was written to %s", rerr, path, tmp)
	}
	merged := &cur
	if exists {
		merged = storeMerge(old, &cur)
	}
	data := storeNormalize(merged)
	if err := storeWriteAtomic(path, data, exists); err != nil {
		return events.StorageStateResult{}, err
	}
	out := events.StorageStateResult{Path: path, Cookies: len(merged.Cookies), Origins: len(merged.Origins)}
	if b := s.Bus(); b != nil {
		bus.Emit(ctx, b, events.StorageStateSaved, events.StorageStateSavedEvent(out))
	}
	return out, nil
}

// storeReadLocalStorage reads localStorage of the main frame of every open
// tab and cross-site iframe, by origin.
func (w *StorageState) storeReadLocalStorage(ctx context.Context, s *session.Session) map[string][]storeItem {
	var sessions []*cdp.Session
	for _, t := range s.Tabs() {
		if cs, err := s.PageSession(t.TargetID); err == nil {
			sessions = append(sessions, cs)
		}
	}
	for _, f := range s.FrameTargets("") {
		sessions = append(sessions, f.Session)
	}
	out := map[string][]storeItem{}
	for _, cs := range sessions {
		var got struct {
			Origin string      `json:"origin"`
			Items  [][2]string `json:"items"`
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := evaluate(rctx, cs, `(() => { try { return {origin: location.origin, items: Object.entries(localStorage)}; } catch (e) { return {origin: "", items: []}; } })()`, &got)
		cancel()
		if err != nil {
			w.storeLog().Debug("reading localStorage", zap.String("target", string(cs.TargetID())), zap.Error(err))
			continue
		}
		if storeOriginOf(got.Origin) == "" {
			continue
		}
		items := make([]storeItem, 0, len(got.Items))
		for _, kv := range got.Items {
			items = append(items, storeItem{Name: kv[0], Value: kv[1]})
		}
		// Two tabs of one origin share localStorage: either read will do.
		out[got.Origin] = items
	}
	return out
}

// storeOriginOf returns scheme://host[:port] of an http(s) URL, else "".
func storeOriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// storeRead reads and checks a state file. exists is false for a missing
// file (no error).
func storeRead(path string) (f *storeFile, exists bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("storagestate: reading %s: %w", path, err)
	}
	f = &storeFile{}
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
		if storeOriginOf(o.Origin) != o.Origin {
			return nil, true, fmt.Errorf("%w %s: origins[%d] %q is not an http(s) origin like https://example.com", ErrBadStorageState, path, i, o.Origin)
		}
	}
	return f, true, nil
}

// storeMergeOrigins merges origins into m, the later value winning per key.
func storeMergeOrigins(m map[string][]storeItem, origins []storeOrigin) {
	for _, o := range origins {
		for _, it := range o.LocalStorage {
			items := m[o.Origin]
			if i := slices.IndexFunc(items, func(x storeItem) bool { return x.Name == it.Name }); i >= 0 {
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

// storeMerge merges the browser's state into the file's: browser wins per
// cookie (name+domain+path) and per localStorage key; expired file cookies
// are dropped.
func storeMerge(old, cur *storeFile) *storeFile {
	now := float64(time.Now().Unix())
	type key struct{ name, domain, path string }
	idx := map[key]int{}
	out := &storeFile{}
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
	m := map[string][]storeItem{}
	storeMergeOrigins(m, old.Origins)
	storeMergeOrigins(m, cur.Origins)
	for o, items := range m {
		out.Origins = append(out.Origins, storeOrigin{Origin: o, LocalStorage: items})
	}
	return out
}

// storeNormalize sorts for stable files and encodes.
func storeNormalize(f *storeFile) []byte {
	if f.Cookies == nil {
		f.Cookies = []storeCookie{}
	}
	if f.Origins == nil {
		f.Origins = []storeOrigin{}
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
			f.Origins[i].LocalStorage = []storeItem{}
		}
	}
	data, _ := json.MarshalIndent(f, "", "  ") // plain structs: cannot fail
	return append(data, '\n')
}

// storeWriteFile writes data to path with mode 0600 and syncs it.
func storeWriteFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("storagestate: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storagestate: %w", err)
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

// storeWriteAtomic replaces path with data: path.tmp first, the old file
// copied to path.bak, then a rename, so path always holds a whole file.
func storeWriteAtomic(path string, data []byte, backup bool) error {
	tmp := path + ".tmp"
	if err := storeWriteFile(tmp, data); err != nil {
		return err
	}
	if backup {
		old, err := os.ReadFile(path)
		if err == nil {
			err = storeWriteFile(path+".bak", old)
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
