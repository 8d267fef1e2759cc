package watchdogs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
