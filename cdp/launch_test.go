package cdp_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestBrowserNotFound(t *testing.T) {
	t.Setenv(cdp.EnvChrome, "/nonexistent/chromium")
	if _, err := cdp.FindChrome(); !errors.Is(err, cdp.ErrBrowserNotFound) {
		t.Fatalf("FindChrome: %v", err)
	}
	_, err := cdp.Launch(context.Background(), cdp.LaunchOptions{})
	if !errors.Is(err, cdp.ErrBrowserNotFound) || !strings.Contains(err.Error(), "apt-get install chromium") {
		t.Fatalf("Launch: %v", err)
	}
	if _, err := testbrowser.NewEnv(context.Background()); !errors.Is(err, cdp.ErrBrowserNotFound) {
		t.Fatalf("testbrowser.NewEnv: %v", err)
	}
}

func TestLaunchFailsWhenBrowserExits(t *testing.T) {
	testbrowser.Start(t)
	// /bin/false exits at once: Launch must report it, not wait for the timeout.
	_, err := cdp.Launch(ctxT(t), cdp.LaunchOptions{ExecPath: "/bin/false", StartTimeout: wait})
	if !errors.Is(err, cdp.ErrBrowserExited) {
		t.Fatalf("want ErrBrowserExited, got %v", err)
	}
	// A browser that never writes DevToolsActivePort hits the timeout.
	script := filepath.Join(t.TempDir(), "fake-chrome")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = cdp.Launch(ctxT(t), cdp.LaunchOptions{ExecPath: script, StartTimeout: 300 * time.Millisecond})
	if !errors.Is(err, cdp.ErrLaunchTimeout) {
		t.Fatalf("want ErrLaunchTimeout, got %v", err)
	}
}

func TestBrowserCloseLeavesNothing(t *testing.T) {
	testbrowser.Start(t)
	ctx := ctxT(t)
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{WindowWidth: 800, WindowHeight: 600})
	if err != nil {
		t.Fatal(err)
	}
	dir, pid := b.UserDataDir(), b.PID()
	if !strings.HasPrefix(filepath.Base(dir), cdp.ProfilePrefix) {
		t.Fatalf("profile %s", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "browseragent-owner")); err != nil {
		t.Fatal("no owner marker:", err)
	}
	if !strings.HasPrefix(b.WebSocketURL(), "ws://127.0.0.1:") {
		t.Fatalf("ws url %q", b.WebSocketURL())
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	if testbrowser.ProcessExists(pid) {
		t.Fatalf("process %d still exists", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("profile %s not removed: %v", dir, err)
	}
	// No process of the group runs either (their zombies may wait a moment
	// for init; groupEnded waits for that too).
	groupEnded(t, pid)
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

func TestLaunchGivenProfileIsKept(t *testing.T) {
	testbrowser.Start(t)
	ctx := ctxT(t)
	dir := t.TempDir()
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{UserDataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("given profile removed: %v", err)
	}
}

func TestRemoteConnect(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	ws := env.Browser.WebSocketURL()
	u, err := url.Parse(ws)
	if err != nil {
		t.Fatal(err)
	}
	httpURL := "http://" + u.Host
	got, err := cdp.ResolveWebSocketURL(ctx, httpURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != ws {
		t.Fatalf("resolved %q, want %q", got, ws)
	}
	withToken := ws + "?token=secret"
	if got, err := cdp.ResolveWebSocketURL(ctx, withToken, nil); err != nil || got != withToken {
		t.Fatalf("ws URL must pass through: %q %v", got, err)
	}
	for _, ep := range []string{httpURL, httpURL + "/", ws} {
		c, err := cdp.Connect(ctx, ep, cdp.WithHeader(http.Header{"X-Test": {"1"}}))
		if err != nil {
			t.Fatalf("Connect(%s): %v", ep, err)
		}
		res, err := cdpproto.Call(ctx, c.Browser(), browser.GetVersion, cdpproto.Empty{})
		c.Close()
		if err != nil || res.Product == "" {
			t.Fatalf("Connect(%s) getVersion: %v", ep, err)
		}
	}
	// Bad endpoints: clear errors, nothing leaks.
	bad := map[string]string{
		"ftp://127.0.0.1/":                 "scheme",
		"http://":                          "no host",
		"::not a url":                      "bad endpoint",
		env.Server.URL1 + "/nope":          "404",
		env.Server.URL1 + "/index.html?x=": "404",
	}
	for ep, want := range bad {
		_, err := cdp.ResolveWebSocketURL(ctx, ep, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ResolveWebSocketURL(%q) = %v, want error containing %q", ep, err, want)
		}
	}
	if _, err := cdp.Connect(ctx, "ws://127.0.0.1:1/devtools/browser/x?token=secret"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("dial error must not leak the token: %v", err)
	}
}
