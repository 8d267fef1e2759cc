package watchdogs

import "github.com/browseragent/browseragent/session"

// Default watchdog names, in the order Defaults attaches them.
const (
	NameSecurity     = "security"
	NamePopups       = "popups"
	NameDownloads    = "downloads"
	NamePermissions  = "permissions"
	NameStorageState = "storagestate"
	NameCrash        = "crash"
	NameActions      = "actions"
	NameScreenshot   = "screenshot"
	NameDOM          = "dom"
)

// Defaults returns the default watchdogs, each configured from the
// session's Profile when it attaches, in attach order: security first (its
// navigation guard must come before everything), then the watchdogs that
// prepare targets (popups, downloads, permissions, storage state), crash
// reporting, and the ones that act and observe (actions, screenshot, dom).
//
// The DOM watchdog shows the dialogs this popups watchdog handled. If you
// replace the popups watchdog, give your DOM watchdog your dialog source
// too (DOMConfig.Dialogs), or closed dialogs will not reach the model.
func Defaults() []session.Watchdog {
	popups := NewPopups(PopupsConfig{})
	return []session.Watchdog{
		NewSecurity(nil),
		popups,
		NewDownloads(DownloadsConfig{}),
		NewPermissions(PermissionsConfig{}),
		NewStorageState(StorageStateConfig{}),
		NewCrash(CrashConfig{}),
		NewActions(ActionsConfig{}),
		NewScreenshot(ScreenshotConfig{}),
		NewDOM(DOMConfig{Dialogs: popups}),
	}
}

// NewSession returns a session with the default watchdogs. Options after
// them can replace a default by name (session.WithWatchdogs) or remove one
// (session.WithoutWatchdogs).
func NewSession(p session.Profile, opts ...session.Option) *session.Session {
	return session.New(p, append([]session.Option{session.WithWatchdogs(Defaults()...)}, opts...)...)
}
