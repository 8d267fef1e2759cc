package session

import (
	"net/http"
	"time"
)

// Profile holds every setting of a browser session. The zero value is usable:
// each zero field means the default documented on it, applied by
// [Profile.withDefaults] when the session starts. A Profile is copied into
// the session at [New]; changing the caller's value later has no effect.
type Profile struct {
	// Headful shows a browser window. Default false: headless.
	Headful bool
	// ExecutablePath is the browser to launch. Default: $BROWSERAGENT_CHROME,
	// then chromium, chromium-browser, google-chrome on PATH.
	ExecutablePath string
	// UserDataDir is the browser profile directory. Default: a new temporary
	// directory, removed on Stop. A directory given here is kept.
	UserDataDir string
	// ExtraFlags are added to the launcher's default flags ("--name=value").
	ExtraFlags []string
	// ViewportWidth and ViewportHeight set the page viewport in CSS pixels.
	// Default 1280×800.
	ViewportWidth, ViewportHeight int
	// DeviceScaleFactor of the viewport. Default 1.
	DeviceScaleFactor float64
	// UserAgent overrides the browser's user agent when non-empty.
	UserAgent string

	// CDPURL connects to a running browser instead of launching one: a
	// ws:// or wss:// endpoint, or http://host:port (resolved through
	// /json/version). A browser the session connected to is never killed;
	// Stop detaches and leaves the tabs it did not create as they were.
	CDPURL string
	// CDPHeaders are sent with the websocket handshake and the /json/version
	// request (tokens for hosted browsers).
	CDPHeaders http.Header

	// AllowedDomains, when non-empty, is the only set of hosts pages may
	// load from. Patterns: "example.com" (and www.example.com),
	// "*.example.com" (any subdomain and the apex), "https://example.com"
	// (that scheme only), "example.com:8080" (that port only).
	AllowedDomains []string
	// ProhibitedDomains are never loaded, even when AllowedDomains matches.
	ProhibitedDomains []string
	// BlockIPAddresses refuses URLs whose host is an IP address in any
	// notation. Default false.
	BlockIPAddresses bool
	// AllowedSchemes widens the schemes the default URL policy accepts
	// beyond http, https and the blank pages. Naming "data" or "file" here
	// is an explicit decision to let the model reach such URLs.
	AllowedSchemes []string

	// DownloadsDir receives downloads. Default: a temporary directory.
	DownloadsDir string
	// AutoDownloadPDFs saves PDFs opened in a tab to DownloadsDir.
	// Default false.
	AutoDownloadPDFs bool
	// Permissions granted to every origin at start, e.g. "clipboardReadWrite"
	// or "notifications". Default none (browser-use grants clipboard and
	// notifications; list them here to do the same).
	Permissions []string
	// StorageStatePath is a JSON file of cookies and localStorage loaded at
	// start and saved on Stop (and on demand). Empty: no storage state.
	StorageStatePath string

	// NavigationTimeout bounds how long a navigation waits for the page to be
	// ready after the browser committed it. Zero: SameSiteLoadWait for a
	// same-site navigation, CrossSiteLoadWait otherwise (browser-use's 3 s
	// and 8 s). A page still loading then is reported, not failed.
	NavigationTimeout time.Duration
	// SameSiteLoadWait default 3 s; CrossSiteLoadWait default 8 s.
	SameSiteLoadWait, CrossSiteLoadWait time.Duration
	// EventTimeouts overrides the default timeout of events by name, e.g.
	// {"ClickElement": 30 * time.Second}. Names must be catalog events and
	// durations >= 0 (0: no override); Start fails with an error wrapping
	// events.ErrUnknownKind or events.ErrBadTimeout otherwise.
	EventTimeouts map[string]time.Duration
}

// Profile defaults, exported so that callers and docs can name them.
const (
	DefaultViewportWidth     = 1280
	DefaultViewportHeight    = 800
	DefaultSameSiteLoadWait  = 3 * time.Second
	DefaultCrossSiteLoadWait = 8 * time.Second
)

// withDefaults returns p with every zero field set to its default.
func (p Profile) withDefaults() Profile {
	if p.ViewportWidth <= 0 {
		p.ViewportWidth = DefaultViewportWidth
	}
	if p.ViewportHeight <= 0 {
		p.ViewportHeight = DefaultViewportHeight
	}
	if p.DeviceScaleFactor <= 0 {
		p.DeviceScaleFactor = 1
	}
	if p.SameSiteLoadWait <= 0 {
		p.SameSiteLoadWait = DefaultSameSiteLoadWait
	}
	if p.CrossSiteLoadWait <= 0 {
		p.CrossSiteLoadWait = DefaultCrossSiteLoadWait
	}
	return p
}
