package watchdogs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// permState reads the page's view of a permission.
func permState(t *testing.T, p session.Profile, name string, ws ...session.Watchdog) string {
	t.Helper()
	s, env, _, ctx := popConnect(t, p, ws...)
	popNavigate(t, ctx, s, env.URL("/index.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var state string
	if err := evaluate(ctx, cs, `navigator.permissions.query({name: "`+name+`"}).then(r => r.state)`, &state); err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return state
}

func TestPermissionsGrant(t *testing.T) {
	if st := permState(t, session.Profile{}, "notifications", NewPermissions(PermissionsConfig{})); st == "granted" {
		t.Fatalf("notifications granted without configuration")
	}
	// Upstream's defaults, from the profile.
	p := session.Profile{Permissions: []string{"clipboardReadWrite", "notifications"}}
	if st := permState(t, p, "notifications", NewPermissions(PermissionsConfig{})); st != "granted" {
		t.Fatalf("notifications = %q, want granted", st)
	}
	if st := permState(t, p, "clipboard-read", NewPermissions(PermissionsConfig{})); st != "granted" {
		t.Fatalf("clipboard-read = %q, want granted", st)
	}
	// The grant ended with the session that made it.
	if st := permState(t, session.Profile{}, "notifications", NewPermissions(PermissionsConfig{})); st == "granted" {
		t.Fatalf("notifications still granted after the granting session stopped")
	}
	// The config overrides the profile.
	if st := permState(t, session.Profile{}, "geolocation", NewPermissions(PermissionsConfig{Permissions: []string{"geolocation"}})); st != "granted" {
		t.Fatalf("geolocation = %q, want granted", st)
	}
}

func TestPermissionsUnknownName(t *testing.T) {
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), Permissions: []string{"notifications", "clipboard-read"}},
		session.WithWatchdogs(NewPermissions(PermissionsConfig{})))
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
