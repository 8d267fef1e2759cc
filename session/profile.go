package session

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	// ConnectTab says which tab a session connected to a running browser
	// (CDPURL) works in. ConnectTabActive ("active", the default with a
	// CDPURL) takes over the tab the user is on: the page visible in the
	// browser window (the focused window's when several show one, else the
	// most recently active), skipping browser pages (chrome://,
	// devtools://, extension pages) unless nothing else is open. That tab
	// keeps its own viewport and is never closed by Stop. When the URL
	// policy concealed it (it shows a refused page), the session opens a
	// tab of its own instead and logs why. ConnectTabNew ("new") always
	// opens a tab of its own, focuses it, and leaves the user's tabs as
	// they were; Stop closes it. Ignored when the session launches the
	// browser. Start fails with an error wrapping ErrUnknownConnectTab for
	// any other value (case and surrounding spaces do not matter).
	//
	// Either way the session keeps to its own tabs (Session.Owns): the
	// one it works in, the tabs it opens, and the tabs those open
	// (popups, target=_blank links). The browser's other tabs — the
	// user's, those of another session connected to the same browser —
	// stay attached, so that the URL policy applies to them, but are
	// foreign: not listed by Session.Tabs nor in observations, refused by
	// ResolveTab, SwitchTab and CloseTab (ErrForeignTab), never focused,
	// never counted as an action's new tab. When its last own tab closes,
	// the session opens a new one.
	ConnectTab string
	// IsolatedContext gives the session a browser context of its own
	// (Target.createBrowserContext, an off-the-record profile) in the
	// browser it launched or connected to: its tabs, popups, cookies,
	// storage, cache, permissions and downloads live there, and the
	// browser's other contexts — the user's, other sessions' — are
	// invisible to it: their targets are resumed and let go the moment they
	// attach (never held, never instrumented), their crashes and downloads
	// are not reported. ConnectTab is ignored: the session works in a new
	// tab of its context. Stop disposes of the context (its tabs close)
	// and leaves a browser it did not launch running; a launched browser
	// is closed as usual. The context outlives a dropped connection (it is
	// not disposed on detach): Reconnect finds it with its tabs, or, when
	// it is gone, works in a new one and reports the old tabs closed. A
	// process that dies without Stop leaves the context open in a browser
	// it connected to. Many sessions can so share one Chromium; they still
	// share its browser, GPU and network processes and its launch flags —
	// its proxy too, unless a watchdog gave the context one
	// (SetContextProxy: the security watchdog's network guard does) — and
	// a browser crash takes every context down. Default
	// false: the browser's default context.
	IsolatedContext bool
	// StallTimeout is how long the connection may stay silent, probes
	// unanswered, before the session treats it as lost (a hung browser or a
	// black-holed network; see cdp.WithKeepalive). Default
	// cdp.DefaultStallTimeout (10 s); negative: never.
	StallTimeout time.Duration
	// CDPHeaders are sent with the websocket handshake and the /json/version
	// request (tokens for hosted browsers).
	CDPHeaders http.Header

	// AllowedDomains, when non-empty, is the only set of hosts pages may
	// load from. Patterns: "example.com" (and www.example.com),
	// "*.example.com" (any subdomain and the apex), "https://example.com"
	// (that scheme only), "example.com:8080" (that port only).
	AllowedDomains []string
	// ProhibitedDomains are never loaded, nor their subdomains
	// ("secret.example" also refuses x.secret.example), even when
	// AllowedDomains matches.
	ProhibitedDomains []string
	// BlockIPAddresses refuses URLs whose host is an IP address in any
	// notation. Default false.
	BlockIPAddresses bool
	// PolicyScope says which requests the URL policy judges: "requests"
	// (every request of every tab, frame and worker, plus, when the session
	// launches the browser, a network guard that refuses connections to
	// refused hosts — WebSockets, preconnects) or "navigations" (documents
	// only: navigations, redirects, popups, iframes). Default: "requests"
	// when AllowedDomains, ProhibitedDomains or BlockIPAddresses restrict
	// hosts (or a custom policy is set), "navigations" otherwise.
	PolicyScope string
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
	// StopBudgets bound the phases of Stop (zero fields: the defaults).
	StopBudgets StopBudgets
	// ScriptBudget is how long a page may keep its main thread busy (a
	// script that never yields, a loop of dialogs) before the session
	// interrupts its script when it needs the page: evidence around
	// actions, observations. Default 5 s.
	ScriptBudget time.Duration
	// ReconnectGrace is how long Ready waits, after the connection was
	// lost, for a reconnect to begin (the crash watchdog reports one at
	// once) before it calls the browser gone. Default 2 s.
	ReconnectGrace time.Duration
	// EventTimeouts overrides the default timeout of events by name, e.g.
	// {"ClickElement": 30 * time.Second}. Names must be catalog events and
	// durations >= 0 (0: no override); Start fails with an error wrapping
	// events.ErrUnknownKind or events.ErrBadTimeout otherwise.
	EventTimeouts map[string]time.Duration

	// NoRequestEvidence turns off the recording of requests (Network.enable
	// on every tab and frame): action outcomes then list no requests and
	// their verdicts look at the page alone. Default false: recorded.
	NoRequestEvidence bool
	// RequestWait bounds how long an action's outcome waits for the
	// write requests and documents the action sent to be answered (its
	// reading XHRs and fetches: ReadWait at most). Default
	// DefaultRequestWait (3 s). An action that sent none does not wait.
	RequestWait time.Duration
	// ReadWait bounds, within RequestWait, the wait for an action's
	// reading XHRs and fetches (a search's results), so that a page's
	// long poll does not hold every action. Default DefaultReadWait (1 s).
	ReadWait time.Duration
	// RequestQuiet is how long the network must be silent for an outcome
	// to stop waiting for the action's other requests (images, scripts).
	// Default DefaultRequestQuiet (100 ms).
	RequestQuiet time.Duration
}

// Values of Profile.ConnectTab.
const (
	ConnectTabActive = "active"
	ConnectTabNew    = "new"
)

// ErrUnknownConnectTab is wrapped by Start's error when Profile.ConnectTab
// is neither ConnectTabActive nor ConnectTabNew.
var ErrUnknownConnectTab = errors.New("session: unknown Profile.ConnectTab")

// StopBudgets bound the phases of Stop, each on its own, so that a handler
// or a watchdog that ignores cancellation cannot make Stop hang: what does
// not finish in its budget is abandoned, logged and named in Stop's error.
// Events and Bus are also bounded by Stop's ctx; Detach and Browser get
// fresh contexts, so that cleanup happens even when that ctx is spent.
type StopBudgets struct {
	// Events bounds the BrowserStop and BrowserStopped handlers (saving
	// storage state, for instance). Default 15 s.
	Events time.Duration
	// Bus bounds the bus draining its last events; then running handlers
	// are cancelled and abandoned. Default 5 s.
	Bus time.Duration
	// Detach bounds all the watchdogs' Detach calls together. Default 10 s.
	Detach time.Duration
	// Browser bounds closing the tabs the session opened in a browser it
	// connected to, or closing a launched browser (a graceful quit, then a
	// kill) and removing its temporary profile. Default 15 s.
	Browser time.Duration
}

// Defaults of StopBudgets.
const (
	DefaultStopEvents  = 15 * time.Second
	DefaultStopBus     = 5 * time.Second
	DefaultStopDetach  = 10 * time.Second
	DefaultStopBrowser = 15 * time.Second
)

// Profile defaults, exported so that callers and docs can name them.
const (
	DefaultViewportWidth     = 1280
	DefaultViewportHeight    = 800
	DefaultSameSiteLoadWait  = 3 * time.Second
	DefaultCrossSiteLoadWait = 8 * time.Second
	DefaultReconnectGrace    = 2 * time.Second
	DefaultScriptBudget      = 5 * time.Second
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
	if p.StopBudgets.Events <= 0 {
		p.StopBudgets.Events = DefaultStopEvents
	}
	if p.StopBudgets.Bus <= 0 {
		p.StopBudgets.Bus = DefaultStopBus
	}
	if p.StopBudgets.Detach <= 0 {
		p.StopBudgets.Detach = DefaultStopDetach
	}
	if p.StopBudgets.Browser <= 0 {
		p.StopBudgets.Browser = DefaultStopBrowser
	}
	if p.ScriptBudget <= 0 {
		p.ScriptBudget = DefaultScriptBudget
	}
	if p.RequestWait <= 0 {
		p.RequestWait = DefaultRequestWait
	}
	if p.RequestQuiet <= 0 {
		p.RequestQuiet = DefaultRequestQuiet
	}
	if p.ReadWait <= 0 {
		p.ReadWait = DefaultReadWait
	}
	if p.ReconnectGrace <= 0 {
		p.ReconnectGrace = DefaultReconnectGrace
	}
	p.ConnectTab = strings.ToLower(strings.TrimSpace(p.ConnectTab))
	if p.ConnectTab == "" && p.CDPURL != "" {
		p.ConnectTab = ConnectTabActive
	}
	return p
}

// checkConnectTab validates Profile.ConnectTab (defaults applied).
func (p Profile) checkConnectTab() error {
	switch p.ConnectTab {
	case "", ConnectTabActive, ConnectTabNew:
		return nil
	}
	return fmt.Errorf("%w %q (want %q or %q)", ErrUnknownConnectTab, p.ConnectTab, ConnectTabActive, ConnectTabNew)
}
