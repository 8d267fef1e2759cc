package storagestate

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
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

func readFileT(t *testing.T, path string) stateFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return f
}

func cookieNamed(f stateFile, name string) *cookie {
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
	s1, rec1, ctx := wdtest.Launch(t, session.Profile{StorageStatePath: path}, New(Config{}))
	wdtest.Navigate(t, ctx, s1, env.URL("/storagestate-set.html"))
	res, err := bus.Call(ctx, s1.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{})
	if err != nil {
		t.Fatalf("SaveStorageState: %v", err)
	}
	if res.Path != path || res.Cookies != 2 || res.Origins != 1 {
		t.Fatalf("save result = %+v, want 2 cookies and 1 origin in %s", res, path)
	}
	wdtest.WaitEvent(t, rec1, 30*time.Second, func(e events.StorageStateSavedEvent) bool { return e.Cookies == 2 && e.Origins == 1 })
	if _, err := os.Stat(path + ".bak"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("first save left a .bak: %v", err)
	}
	wdtest.Eval(t, ctx, s1, `localStorage.setItem("theme", "light"); true`, nil)
	if err := s1.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	f := readFileT(t, path)
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
	if c := cookieNamed(f, "persist"); c == nil || c.Value != "p1" || c.Expires <= float64(time.Now().Unix()) || c.Domain != "127.0.0.1" || c.Path != "/" {
		t.Fatalf("persistent cookie saved as %+v", c)
	}
	if c := cookieNamed(f, "sessiononly"); c == nil || c.Expires != -1 {
		t.Fatalf("session cookie saved as %+v, want expires -1", c)
	}
	// The save on Stop replaced the first file and kept it as .bak.
	bak := readFileT(t, path+".bak")
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
	s2, rec2, ctx2 := wdtest.Launch(t, session.Profile{StorageStatePath: path}, New(Config{NoSaveOnStop: true}))
	wdtest.WaitEvent(t, rec2, 30*time.Second, func(e events.StorageStateLoadedEvent) bool {
		return e.Path == path && e.Cookies == 2 && e.Origins == 1
	})
	wdtest.Navigate(t, ctx2, s2, env.URL("/storagestate-read.html"))
	var seen struct {
		Cookie string `json:"cookie"`
		Token  string `json:"token"`
		Theme  string `json:"theme"`
	}
	wdtest.Eval(t, ctx2, s2, `window.seen`, &seen)
	if !strings.Contains(seen.Cookie, "persist=p1") || !strings.Contains(seen.Cookie, "sessiononly=s1") || seen.Token != "tok-123" || seen.Theme != "light" {
		t.Fatalf("page saw %+v before its own scripts", seen)
	}
	// The seed does not overwrite a value the page changed.
	wdtest.Eval(t, ctx2, s2, `localStorage.setItem("theme", "blue"); true`, nil)
	wdtest.Navigate(t, ctx2, s2, env.URL("/storagestate-read.html"))
	wdtest.Eval(t, ctx2, s2, `window.seen`, &seen)
	if seen.Theme != "blue" {
		t.Fatalf("after reload the page saw %+v, want its own theme blue", seen)
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
			s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew, StorageStatePath: path},
				session.WithWatchdogs(New(Config{})))
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
	s, env, _, ctx := wdtest.Connect(t, session.Profile{StorageStatePath: path}, New(Config{NoSaveOnStop: true}))
	wdtest.Navigate(t, ctx, s, env.URL("/storagestate-set.html"))
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
	if tmp := readFileT(t, path+".tmp"); cookieNamed(tmp, "persist") == nil {
		t.Fatalf("state not written to .tmp: %+v", tmp)
	}
}

func TestStorageStateMergeAndLoadEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	future := float64(time.Now().Add(24 * time.Hour).Unix())
	old := stateFile{
		Cookies: []cookie{
			{Name: "keep", Value: "file", Domain: "example.com", Path: "/", Expires: future},
			{Name: "persist", Value: "stale", Domain: "127.0.0.1", Path: "/", Expires: future},
			{Name: "gone", Value: "expired", Domain: "example.com", Path: "/", Expires: 1000},
		},
		Origins: []origin{{Origin: "https://example.com", LocalStorage: []item{{Name: "a", Value: "1"}}}},
	}
	if err := os.WriteFile(path, normalize(&old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, New(Config{NoSaveOnStop: true}))
	// An explicit load at run time (no profile path).
	res, err := bus.Call(ctx, s.Bus(), events.LoadStorageState, events.LoadStorageStateEvent{Path: path})
	if err != nil || res.Cookies != 2 || res.Origins != 1 {
		t.Fatalf("load = %+v, %v; want 2 unexpired cookies, 1 origin", res, err)
	}
	wdtest.WaitEvent(t, rec, 30*time.Second, func(e events.StorageStateLoadedEvent) bool { return e.Path == path && e.Cookies == 2 })
	wdtest.Navigate(t, ctx, s, env.URL("/storagestate-set.html"))
	if _, err := bus.Call(ctx, s.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{Path: path}); err != nil {
		t.Fatal(err)
	}
	f := readFileT(t, path)
	if c := cookieNamed(f, "keep"); c == nil || c.Value != "file" {
		t.Errorf("file-only cookie lost: %+v", f.Cookies)
	}
	if c := cookieNamed(f, "persist"); c == nil || c.Value != "p1" {
		t.Errorf("browser did not win for persist: %+v", c)
	}
	if c := cookieNamed(f, "gone"); c != nil {
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

// TestStorageStateSeedScript runs the seed script in a page: values that
// look like code stay data, only the document's origin is seeded, a key
// the page has is kept, and a later seed replaces what an earlier one set
// in the same document unless the page changed it since.
func TestStorageStateSeedScript(t *testing.T) {
	if src, err := seedScript(map[string][]item{}); err != nil || src != "" {
		t.Fatalf("empty seed = %q, %v; want no script", src, err)
	}
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "/form.html")
	ctx := wdtest.Ctx(t)
	var here string
	if err := pagejs.Evaluate(ctx, pg.Session, "location.origin", &here); err != nil {
		t.Fatal(err)
	}
	const hostile = "\"); throw new Error(\"spliced\"); (\"</script>\u2028\\"
	keys := []string{"seed-test-hostile", "seed-test-kept", "seed-test-later", "seed-test-page"}
	if err := pagejs.Evaluate(ctx, pg.Session, `(() => { for (const k of `+mustJSON(t, keys)+`) localStorage.removeItem(k); localStorage.setItem("seed-test-kept", "page's"); return true; })()`, nil); err != nil {
		t.Fatal(err)
	}
	run := func(seed map[string][]item) {
		t.Helper()
		src, err := seedScript(seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := pagejs.Evaluate(ctx, pg.Session, src, nil); err != nil {
			t.Fatalf("seed script: %v\n%s", err, src)
		}
	}
	// read returns the keys' values, "<nil>" for a missing one.
	read := func() map[string]string {
		t.Helper()
		got := map[string]*string{}
		if err := pagejs.Evaluate(ctx, pg.Session, `(() => { const o = {}; for (const k of `+mustJSON(t, keys)+`) o[k] = localStorage.getItem(k); return o; })()`, &got); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "<nil>"
			if got[k] != nil {
				out[k] = *got[k]
			}
		}
		return out
	}
	run(map[string][]item{
		here:                        {{"seed-test-hostile", hostile}, {"seed-test-kept", "seed"}, {"seed-test-later", "v1"}, {"seed-test-page", "v1"}},
		"https://elsewhere.example": {{"seed-test-other", "x"}},
	})
	got := read()
	if got["seed-test-hostile"] != hostile {
		t.Fatalf("hostile value read back as %q", got["seed-test-hostile"])
	}
	if got["seed-test-kept"] != "page's" {
		t.Fatalf("the page's own value was overwritten: %q", got["seed-test-kept"])
	}
	var other *string
	if err := pagejs.Evaluate(ctx, pg.Session, `localStorage.getItem("seed-test-other")`, &other); err != nil || other != nil {
		t.Fatalf("another origin's key was seeded here: %v, %v", other, err)
	}
	// The page changes one seeded key; a newer seed replaces only the other.
	if err := pagejs.Evaluate(ctx, pg.Session, `localStorage.setItem("seed-test-page", "mine"), true`, nil); err != nil {
		t.Fatal(err)
	}
	run(map[string][]item{here: {{"seed-test-later", "v2"}, {"seed-test-page", "v2"}}})
	got = read()
	if got["seed-test-later"] != "v2" || got["seed-test-page"] != "mine" {
		t.Fatalf("after a newer seed: later=%q page=%q, want v2 and the page's mine", got["seed-test-later"], got["seed-test-page"])
	}
}

func TestStorageStateNoPath(t *testing.T) {
	s, _, _, ctx := wdtest.Connect(t, session.Profile{}, New(Config{NoSaveOnStop: true}))
	if _, err := bus.Call(ctx, s.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{}); !errors.Is(err, ErrNoPath) {
		t.Errorf("save without a path: %v, want ErrNoPath", err)
	}
	if _, err := bus.Call(ctx, s.Bus(), events.LoadStorageState, events.LoadStorageStateEvent{}); !errors.Is(err, ErrNoPath) {
		t.Errorf("load without a path: %v, want ErrNoPath", err)
	}
}
