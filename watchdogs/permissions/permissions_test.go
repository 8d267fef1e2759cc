package permissions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// permissionState reads the page's view of a permission in a session with
// the watchdog, then stops that session (its grant must end with it).
func permissionState(t *testing.T, p session.Profile, name string, w *Watchdog) string {
	t.Helper()
	s, env, _, ctx := wdtest.Connect(t, p, w)
	wdtest.Navigate(t, ctx, s, env.URL("/index.html"))
	var state string
	wdtest.Eval(t, ctx, s, `navigator.permissions.query({name: "`+name+`"}).then(r => r.state)`, &state)
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return state
}

func TestPermissionsGrant(t *testing.T) {
	if st := permissionState(t, session.Profile{}, "notifications", New(Config{})); st == "granted" {
		t.Fatalf("notifications granted without configuration")
	}
	// Upstream's defaults, from the profile.
	p := session.Profile{Permissions: []string{"clipboardReadWrite", "notifications"}}
	if st := permissionState(t, p, "notifications", New(Config{})); st != "granted" {
		t.Fatalf("notifications = %q, want granted", st)
	}
	if st := permissionState(t, p, "clipboard-read", New(Config{})); st != "granted" {
		t.Fatalf("clipboard-read = %q, want granted", st)
	}
	// The grant ended with the session that made it.
	if st := permissionState(t, session.Profile{}, "notifications", New(Config{})); st == "granted" {
		t.Fatalf("notifications still granted after the granting session stopped")
	}
	// The config overrides the profile.
	if st := permissionState(t, session.Profile{}, "geolocation", New(Config{Permissions: []string{"geolocation"}})); st != "granted" {
		t.Fatalf("geolocation = %q, want granted", st)
	}
}

// Origin limits the grant: a page of another origin is not granted.
func TestPermissionsOrigin(t *testing.T) {
	env := testbrowser.Start(t)
	other := New(Config{Permissions: []string{"geolocation"}, Origin: env.Server.URL2})
	if st := permissionState(t, session.Profile{}, "geolocation", other); st == "granted" {
		t.Fatalf("geolocation granted to %s, but the grant was for %s", env.Server.URL1, env.Server.URL2)
	}
	same := New(Config{Permissions: []string{"geolocation"}, Origin: env.Server.URL1})
	if st := permissionState(t, session.Profile{}, "geolocation", same); st != "granted" {
		t.Fatalf("geolocation = %q on the granted origin, want granted", st)
	}
}

func TestPermissionsUnknownName(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := wdtest.Ctx(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew, Permissions: []string{"notifications", "clipboard-read"}},
		session.WithWatchdogs(New(Config{})))
	err := s.Start(ctx)
	if err == nil {
		s.Stop(ctx)
		t.Fatal("Start accepted an unknown permission name")
	}
	if !errors.Is(err, ErrUnknownPermission) || !strings.Contains(err.Error(), `"clipboard-read"`) || !strings.Contains(err.Error(), "clipboardReadWrite") {
		t.Fatalf("error = %v; want ErrUnknownPermission naming the bad name and the valid ones", err)
	}
	if s.Running() {
		t.Fatal("session running after a failed Start")
	}
}
