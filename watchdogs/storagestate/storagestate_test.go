package watchdogs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// storeLaunch starts a session that launches its own browser (a fresh
// profile, so nothing leaks between sessions through the browser).
func storeLaunch(t *testing.T, p session.Profile, ws ...session.Watchdog) (*session.Session, *popRecorder, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	rec := &popRecorder{}
	s := session.New(p, session.WithWatchdogs(append([]session.Watchdog{rec}, ws...)...))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		s.Stop(sctx)
	})
	return s, rec, ctx
}

func storeReadFile(t *testing.T, path string) storeFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return f
}

func storeCookieNamed(f storeFile, name string) *storeCookie {
	for i := range f.Cookies {
		if f.Cookies[i].Name == name {
			return &f.Cookies[i]
		}
	}
	return nil
}

func TestStorageStateRoundTrip(t *testing.T) {
	env := testbrowser.Start(t)
	path := filepath.Join(t.TempDir(), "state.json")

	// Session 1 sets state, saves on demand, then on Stop.
	s1, rec1, ctx := storeLaunch(t, session.Profile{StorageStatePath: path}, NewStorageState(StorageStateConfig{}))
	popNavigate(t, ctx, s1, env.URL("/storagestate-set.html"))
	res, err := bus.Call(ctx, s1.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{})
	if err != nil {
		t.Fatalf("SaveStorageState: %v", err)
	}
	if res.Path != path || res.Cookies != 2 || res.Origins != 1 {
		t.Fatalf("save result = %+v, want 2 cookies and 1 origin in %s", res, path)
	}
	popWaitEvent(t, rec1, 30*time.Second, func(e events.StorageStateSavedEvent) bool { return e.Cookies == 2 && e.Origins == 1 })
	if _, err := os.Stat(path + ".bak"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("first save left a .bak: %v", err)
	}
	cs, _ := s1.PageSession("")
	if err := evaluate(ctx, cs, `localStorage.setItem("theme", "light"); true`, nil); err != nil {
		t.Fatal(err)
	}
	if err := s1.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	f := storeReadFile(t, path)
	origin := env.Server.URL1
	if len(f.Origins) != 1 || f.Origins[0].Origin != origin {
		t.Fatalf("origins = %+v, want %s", f.Origins, origin)
	}
	ls := map[string]string{}
	for _, it := range f.Origins[0].LocalStorage {
		ls[it.Name] = it.Value
	}
	if ls["token"] != "tok-123" || ls["theme"] != "light" {
		t.Fatalf("localStorage saved = %v", ls)
	}
	if c := storeCookieNamed(f, "persist"); c == nil || c.Value != "p1" || c.Expires <= float64(time.Now().Unix()) || c.Domain != "127.0.0.1" || c.Path != "/" {
		t.Fatalf("persistent cookie saved as %+v", c)
	}
	if c := storeCookieNamed(f, "sessiononly"); c == nil || c.Expires != -1 {
		t.Fatalf("session cookie saved as %+v, want expires -1", c)
	}
	// The save on Stop replaced the first file and kept it as .bak.
	bak := storeReadFile(t, path+".bak")
	if len(bak.Origins) != 1 || !strings.Contains(mustJSON(t, bak), `"dark"`) {
		t.Fatalf(".bak is not the previous file: %+v", bak)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .tmp file was left: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode = %v, %v; want 0600", st.Mode(), err)
	}

	// Session 2 in a fresh browser: the page's first script sees the state.
	s2, rec2, ctx2 := storeLaunch(t, session.Profile{StorageStatePath: path}, NewStorageState(StorageStateConfig{NoSaveOnStop: true}))
	popWaitEvent(t, rec2, 30*time.Second, func(e events.StorageStateLoadedEvent) bool {
		return e.Path == path && e.Cookies == 2 && e.Origins == 1
	})
	popNavigate(t, ctx2, s2, env.URL("/storagestate-read.html"))
	cs2, err := s2.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var seen struct {
		Cookie string `json:"cookie"`
		Token  string `json:"token"`
		Theme  string `json:"theme"`
	}
	if err := evaluate(ctx2, cs2, `window.seen`, &seen); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen.Cookie, "persist=p1") || !strings.Contains(seen.Cookie, "sessiononly=s1") || seen.Token != "tok-123" || seen.Theme != "light" {
		t.Fatalf("page saw %+v before its own scripts", seen)
	}
	// The seed does not overwrite a value the page changed.
	if err := evaluate(ctx2, cs2, `localStorage.setItem("theme", "blue"); true`, nil); err != nil {
		t.Fatal(err)
	}
	popNavigate(t, ctx2, s2, env.URL("/storagestate-read.html"))
	if err := evaluate(ctx2, cs2, `window.seen`, &seen); err != nil || seen.Theme != "blue" {
		t.Fatalf("after reload the page saw %+v (%v), want its own theme blue", seen, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStorageStateMalformedFileFailsStart(t *testing.T) {
	env := testbrowser.Start(t)
	dir := t.TempDir()
	cases := map[string]string{
		"notjson.json":   `{"cookies": [`,
		"array.json":     `[]`,
		"noname.json":    `{"cookies": [{"value": "x", "domain": "example.com"}], "origins": []}`,
		"badorigin.json": `{"cookies": [], "origins": [{"origin": "example.com", "localStorage": []}]}`,
		"samesite.json":  `{"cookies": [{"name": "a", "value": "x", "domain": "example.com", "sameSite": "strict"}]}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), StorageStatePath: path},
				session.WithWatchdogs(NewStorageState(StorageStateConfig{})))
			err := s.Start(ctx)
			if err == nil {
				s.Stop(ctx)
				t.Fatal("Start accepted a malformed storage state file")
			}
			if !errors.Is(err, ErrBadStorageState) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want ErrBadStorageState naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Fatalf("file changed to %q", got)
			}
		})
	}
}

func TestStorageStateSaveKeepsMalformedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, env, _, ctx := popConnect(t, session.Profile{StorageStatePath: path}, NewStorageState(StorageStateConfig{NoSaveOnStop: true}))
	popNavigate(t, ctx, s, env.URL("/storagestate-set.html"))
	const garbage = "{ this is not JSON"
	if err := os.WriteFile(path, []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := bus.Call(ctx, s.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{})
	if !errors.Is(err, ErrBadStorageState) || !strings.Contains(err.Error(), path+".tmp") {
		t.Fatalf("save error = %v, want ErrBadStorageState naming %s.tmp", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != garbage {
		t.Fatalf("malformed file was overwritten with %q", got)
	}
	if tmp := storeReadFile(t, path+".tmp"); storeCookieNamed(tmp, "persist") == nil {
		t.Fatalf("state not written to .tmp: %+v", tmp)
	}
}

func TestStorageStateMergeAndLoadEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	future := float64(time.Now().Add(24 * time.Hour).Unix())
	old := storeFile{
		Cookies: []storeCookie{
			{Name: "keep", Value: "file", Domain: "example.com", Path: "/", Expires: future},
			{Name: "persist", Value: "stale", Domain: "127.0.0.1", Path: "/", Expires: future},
			{Name: "gone", Value: "expired", Domain: "example.com", Path: "/", Expires: 1000},
		},
		Origins: []storeOrigin{{Origin: "https://example.com", LocalStorage: []storeItem{{Name: "a", Value: "1"}}}},
	}
	if err := os.WriteFile(path, storeNormalize(&old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, env, rec, ctx := popConnect(t, session.Profile{}, NewStorageState(StorageStateConfig{NoSaveOnStop: true}))
	// An explicit load at run time (no profile path).
	res, err := bus.Call(ctx, s.Bus(), events.LoadStorageState, events.LoadStorageStateEvent{Path: path})
	if err != nil || res.Cookies != 2 || res.Origins != 1 {
		t.Fatalf("load = %+v, %v; want 2 unexpired cookies, 1 origin", res, err)
	}
	popWaitEvent(t, rec, 30*time.Second, func(e events.StorageStateLoadedEvent) bool { return e.Path == path && e.Cookies == 2 })
	popNavigate(t, ctx, s, env.URL("/storagestate-set.html"))
	if _, err := bus.Call(ctx, s.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{Path: path}); err != nil {
		t.Fatal(err)
	}
	f := storeReadFile(t, path)
	if c := storeCookieNamed(f, "keep"); c == nil || c.Value != "file" {
		t.Errorf("file-only cookie lost: %+v", f.Cookies)
	}
	if c := storeCookieNamed(f, "persist"); c == nil || c.Value != "p1" {
		t.Errorf("browser did not win for persist: %+v", c)
	}
	if c := storeCookieNamed(f, "gone"); c != nil {
		t.Errorf("expired cookie kept: %+v", c)
	}
	origins := map[string]bool{}
	for _, o := range f.Origins {
		origins[o.Origin] = true
	}
	if !origins["https://example.com"] || !origins[env.Server.URL1] {
		t.Errorf("origins = %v", origins)
	}
	// A missing file named by the event is an error, not an empty load.
	if _, err := bus.Call(ctx, s.Bus(), events.LoadStorageState, events.LoadStorageStateEvent{Path: filepath.Join(dir, "missing.json")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loading a missing file: %v", err)
	}
}
