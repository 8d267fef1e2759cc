package watchdogs

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// Two sessions with IsolatedContext and the default watchdogs on one
// browser: the permissions one grants, the cookies its storage state loads
// and saves, and the downloads each saves stay in that session's context
// and directory; the other session sees none of them and reports no
// download of the first.
func TestIsolatedSessionsWatchdogs(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	state := filepath.Join(t.TempDir(), "a-state.json")
	if err := os.WriteFile(state, []byte(`{"cookies": [{"name": "seed", "value": "a", "domain": "127.0.0.1", "path": "/"}], "origins": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, env, recA, ctx := wdtest.Connect(t, session.Profile{
		IsolatedContext: true, DownloadsDir: dirA, Permissions: []string{"geolocation"}, StorageStatePath: state,
	}, Defaults()...)
	b, _, recB, _ := wdtest.Connect(t, session.Profile{IsolatedContext: true, DownloadsDir: dirB}, Defaults()...)
	if a.BrowserContextID() == "" || a.BrowserContextID() == b.BrowserContextID() {
		t.Fatalf("contexts A %q, B %q", a.BrowserContextID(), b.BrowserContextID())
	}

	page := env.URL("/links.html")
	wdtest.Navigate(t, ctx, a, page)
	wdtest.Navigate(t, ctx, b, page)
	const probe = `navigator.permissions.query({name: "geolocation"}).then(p => [p.state, document.cookie])`
	var seenA, seenB []string
	wdtest.Eval(t, ctx, a, probe, &seenA)
	wdtest.Eval(t, ctx, b, probe, &seenB)
	if seenA[0] != "granted" || seenA[1] != "seed=a" {
		t.Fatalf("A: geolocation %q, cookies %q; want granted, seed=a", seenA[0], seenA[1])
	}
	if seenB[0] == "granted" || seenB[1] != "" {
		t.Fatalf("B: geolocation %q, cookies %q; want A's grant and cookie kept from it", seenB[0], seenB[1])
	}

	// Each session's download lands in its directory, reported to it alone.
	download := func(s *session.Session, name string) {
		t.Helper()
		_, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/download?name=" + name)})
		var ne *session.NavigationError
		if err != nil && !(errors.As(err, &ne) && strings.Contains(ne.ErrorText, "ERR_ABORTED")) {
			t.Fatalf("download %s: %v", name, err)
		}
	}
	download(a, "a.txt")
	download(b, "b.txt")
	fa := wdtest.WaitEvent(t, recA, testbrowser.Timeout, func(e events.FileDownloadedEvent) bool { return true })
	fb := wdtest.WaitEvent(t, recB, testbrowser.Timeout, func(e events.FileDownloadedEvent) bool { return true })
	if !strings.HasSuffix(fa.Path, "a.txt") || !strings.HasSuffix(fb.Path, "b.txt") {
		t.Fatalf("A saved %s, B saved %s", fa.Path, fb.Path)
	}
	for _, c := range []struct {
		who, dir, want string
		rec            *wdtest.Recorder
	}{{"A", dirA, "a.txt", recA}, {"B", dirB, "b.txt", recB}} {
		entries, err := os.ReadDir(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != c.want {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("%s's directory holds %v, want only %s", c.who, names, c.want)
		}
		for _, ev := range c.rec.All() {
			switch e := ev.(type) {
			case events.FileDownloadedEvent:
				if !strings.HasSuffix(e.Path, c.want) {
					t.Fatalf("%s reported the other session's download %s", c.who, e.Path)
				}
			case events.DownloadStartedEvent:
				if !strings.Contains(e.URL, c.want) {
					t.Fatalf("%s reported the other session's download start %s", c.who, e.URL)
				}
			case events.BrowserErrorEvent:
				t.Fatalf("%s reported an error: %+v", c.who, e)
			}
		}
	}

	// A's saved state has its cookies, none of B's.
	var ignored any
	wdtest.Eval(t, ctx, b, `document.cookie = "bonly=1; path=/"`, &ignored)
	if _, err := bus.Call(ctx, a.Bus(), events.SaveStorageState, events.SaveStorageStateEvent{}); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `"seed"`) || strings.Contains(string(saved), "bonly") {
		t.Fatalf("A's saved state: %s", saved)
	}
}

// holdPage serves a button whose click blocks its page (a synchronous
// request) until release is closed; entered receives once per hold.
func holdPage(t *testing.T) (url string, entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 1)
	out := make(chan struct{})
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>hold</title>
<button id="hold" onclick="const x = new XMLHttpRequest(); x.open('GET', '/hold', false); x.send(); document.title = 'released'">hold</button>`)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case in <- struct{}{}:
		default:
		}
		select {
		case <-out:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	rel := func() { once.Do(func() { close(out) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(rel) // before the server closes (cleanups run last first)
	return srv.URL + "/", in, rel
}

// While an action of session A is under way, session B — in another
// context of the same browser — starts a download and opens a tab. The
// browser reports both to every client; A's action takes neither as its
// own (no download verdict with B's guid, no new tab), and does not wait
// for B's tab to attach to A.
func TestIsolatedActionIgnoresOtherSessionsEvents(t *testing.T) {
	a, env, _, ctx := wdtest.Connect(t, session.Profile{IsolatedContext: true, DownloadsDir: t.TempDir()}, Defaults()...)
	b, _, recB, _ := wdtest.Connect(t, session.Profile{IsolatedContext: true, DownloadsDir: t.TempDir()}, Defaults()...)
	page, entered, release := holdPage(t)
	wdtest.Navigate(t, ctx, a, page)
	wdtest.Navigate(t, ctx, b, env.URL("/links.html"))
	st := wdtest.State(t, ctx, a)
	idx := -1
	for i, e := range st.Elements {
		if e.Attributes["id"] == "hold" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no #hold button:\n%s", st.DOMText)
	}

	type result struct {
		res events.ClickResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := bus.Call(ctx, a.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: idx}})
		done <- result{res, err}
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("A's click never reached the page")
	}
	// B downloads and opens a tab while A's click is blocked in its page.
	_, err := bus.Call(ctx, b.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/download?name=b.txt")})
	var ne *session.NavigationError
	if err != nil && !(errors.As(err, &ne) && strings.Contains(ne.ErrorText, "ERR_ABORTED")) {
		t.Fatalf("B's download: %v", err)
	}
	wdtest.WaitEvent(t, recB, testbrowser.Timeout, func(e events.DownloadStartedEvent) bool { return true })
	var ignored any
	wdtest.Eval(t, ctx, b, `void window.open('/other.html?from=b')`, &ignored)
	wdtest.WaitEvent(t, recB, testbrowser.Timeout, func(e events.TabCreatedEvent) bool { return true })
	release()

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("A's click never returned")
	}
	if r.err != nil {
		t.Fatalf("A's click: %v", r.err)
	}
	o := r.res.Outcome
	if o.Verdict == events.VerdictDownload || o.Download != "" || o.Verdict == events.VerdictNewTab || len(o.NewTabs) != 0 {
		t.Fatalf("A's click took B's doings as its own: verdict %s download %q new tabs %v (%s)", o.Verdict, o.Download, o.NewTabs, o.Detail)
	}
	if len(a.Tabs()) != 1 {
		t.Fatalf("A lists %d tabs, want its one", len(a.Tabs()))
	}
}
