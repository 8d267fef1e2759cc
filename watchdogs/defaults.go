// Package watchdogs composes the runtime's default watchdogs; it is the one
// place that knows them all (as Caddy's modules/standard is). Each
// watchdog is a package of its own under watchdogs/ — actions, dom,
// screenshot, security, downloads, popups, permissions, storagestate,
// crash, recording, pdf — with New(Config), and none imports another: what one
// needs from another it asks for through an event on the session's bus.
// A deployment replaces a default by giving a watchdog of the same name to
// session.WithWatchdogs, and removes one with session.WithoutWatchdogs;
// every caller of the events the default handled then gets the
// replacement's answers.
package watchdogs

import (
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/crash"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/downloads"
	"github.com/browseragent/browseragent/watchdogs/pdf"
	"github.com/browseragent/browseragent/watchdogs/permissions"
	"github.com/browseragent/browseragent/watchdogs/popups"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
	"github.com/browseragent/browseragent/watchdogs/security"
	"github.com/browseragent/browseragent/watchdogs/storagestate"
)

// Defaults returns the default watchdogs, each configured from the
// session's Profile when it attaches, in attach order: security first (its
// navigation guard must come before everything), then the watchdogs that
// prepare targets (popups, downloads, permissions, storage state), crash
// reporting, and the ones that act and observe (actions, screenshot, dom,
// pdf).
// The recording watchdog is optional and not among them.
func Defaults() []session.Watchdog {
	return []session.Watchdog{
		security.New(security.Config{}),
		popups.New(popups.Config{}),
		downloads.New(downloads.Config{}),
		permissions.New(permissions.Config{}),
		storagestate.New(storagestate.Config{}),
		crash.New(crash.Config{}),
		actions.New(actions.Config{}),
		screenshot.New(screenshot.Config{}),
		dom.New(dom.Config{}),
		pdf.New(pdf.Config{}),
	}
}

// Names are the default watchdogs' names, in attach order.
func Names() []string {
	return []string{security.Name, popups.Name, downloads.Name, permissions.Name, storagestate.Name,
		crash.Name, actions.Name, screenshot.Name, dom.Name, pdf.Name}
}

// NewSession returns a session with the default watchdogs. Options after
// them can replace a default by name (session.WithWatchdogs) or remove one
// (session.WithoutWatchdogs).
func NewSession(p session.Profile, opts ...session.Option) *session.Session {
	return session.New(p, append([]session.Option{session.WithWatchdogs(Defaults()...)}, opts...)...)
}
