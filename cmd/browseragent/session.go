package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// browserFlags are the flags every command that drives a browser takes.
type browserFlags struct {
	headful    bool
	cdpURL     string
	newTab     bool
	chrome     string
	allowed    string
	prohibited string
	scope      string
	blockIPs   bool
	timeout    time.Duration
}

func (f *browserFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.headful, "headful", false, "show the browser window")
	fs.StringVar(&f.cdpURL, "cdp-url", "", "connect to a running browser (ws://... or http://host:port) instead of launching one; the agent takes over the tab you are on")
	fs.BoolVar(&f.newTab, "new-tab", false, "with --cdp-url, work in a new tab and leave the user's tabs untouched")
	fs.StringVar(&f.chrome, "chrome", "", "browser executable (default: $BROWSERAGENT_CHROME, then chromium on PATH)")
	fs.StringVar(&f.allowed, "allowed-domains", "", "comma-separated domain patterns pages may load from (default: any)")
	fs.StringVar(&f.prohibited, "prohibited-domains", "", "comma-separated domain patterns pages may never load from")
	fs.StringVar(&f.scope, "policy-scope", "", `which requests the domain lists judge: "requests" (every request, plus a network guard; the default with a list) or "navigations" (documents only)`)
	fs.BoolVar(&f.blockIPs, "block-ip-addresses", false, "refuse hosts that are IP addresses")
	fs.DurationVar(&f.timeout, "start-timeout", time.Minute, "how long starting the browser may take")
}

func (f *browserFlags) profile() session.Profile {
	connectTab := ""
	if f.newTab {
		connectTab = session.ConnectTabNew
	}
	return session.Profile{
		Headful:           f.headful,
		CDPURL:            f.cdpURL,
		ConnectTab:        connectTab,
		ExecutablePath:    f.chrome,
		AllowedDomains:    splitList(f.allowed),
		ProhibitedDomains: splitList(f.prohibited),
		PolicyScope:       f.scope,
		BlockIPAddresses:  f.blockIPs,
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// startSession starts a session with the default watchdogs and explains the
// usual failures (no browser, unreachable endpoint) in words.
func startSession(ctx context.Context, f *browserFlags, opts ...session.Option) (*session.Session, error) {
	if f.newTab && f.cdpURL == "" {
		// A launched browser has no tab of the user's to leave alone: the
		// flag would do nothing, which is likely not what was meant.
		return nil, usagef("--new-tab needs --cdp-url: it keeps the agent out of the tabs of a browser you connect to; a browser it launches is its own")
	}
	s := watchdogs.NewSession(f.profile(), opts...)
	sctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		switch {
		case errors.Is(err, cdp.ErrBrowserNotFound):
			return nil, fmt.Errorf("no browser found: %s, or pass --chrome / set BROWSERAGENT_CHROME; 'browseragent doctor' lists the places looked at", installHint(runtime.GOOS))
		case f.cdpURL != "":
			return nil, fmt.Errorf("cannot connect to the browser at %s: %w", f.cdpURL, err)
		}
		return nil, err
	}
	return s, nil
}

// stopSession stops s with a bounded context, even when ctx was cancelled.
func stopSession(s *session.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Stop(ctx)
}

// installHint says how to get a browser on goos.
func installHint(goos string) string {
	switch goos {
	case "darwin":
		return "install Google Chrome, or Chromium (brew install --cask chromium)"
	case "windows":
		return "install Google Chrome, or use Microsoft Edge"
	}
	return "install Chromium (apt-get install chromium, or make test which does it)"
}
