// Package permissions is the permissions watchdog: it grants the browser
// permissions a session is configured with (Config.Permissions, else
// Profile.Permissions) when the browser connects, and takes them back when
// the session stops.
//
// It handles BrowserConnected (Browser.grantPermissions) and BrowserStop
// (Browser.resetPermissions, only if it granted something) and emits
// nothing. It never grants anything it was not configured with: the default
// list is empty (secure by default), and an unknown permission name fails
// Attach, and so Session.Start, instead of being ignored.
package permissions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Name is the permissions watchdog's name and the name of its handlers.
const Name = "permissions"

// ErrUnknownPermission is wrapped by the Attach error of a permissions
// watchdog configured with a name Chromium does not know.
var ErrUnknownPermission = errors.New("permissions: unknown permission name")

// known are the Browser.PermissionType names of the protocol version
// this module is built against (cdproto v0.160.2, Chromium 156).
var known = []browser.PermissionType{
	browser.PermissionTypeAr, browser.PermissionTypeAudioCapture, browser.PermissionTypeAutomaticFullscreen,
	browser.PermissionTypeBackgroundFetch, browser.PermissionTypeBackgroundSync, browser.PermissionTypeCameraPanTiltZoom,
	browser.PermissionTypeCapturedSurfaceControl, browser.PermissionTypeClipboardReadWrite,
	browser.PermissionTypeClipboardSanitizedWrite, browser.PermissionTypeDisplayCapture, browser.PermissionTypeDurableStorage,
	browser.PermissionTypeGeolocation, browser.PermissionTypeHandTracking, browser.PermissionTypeIdleDetection,
	browser.PermissionTypeKeyboardLock, browser.PermissionTypeLocalFonts, browser.PermissionTypeLocalNetwork,
	browser.PermissionTypeLocalNetworkAccess, browser.PermissionTypeLoopbackNetwork, browser.PermissionTypeMidi,
	browser.PermissionTypeMidiSysex, browser.PermissionTypeNfc, browser.PermissionTypeNotifications,
	browser.PermissionTypePaymentHandler, browser.PermissionTypePeriodicBackgroundSync, browser.PermissionTypePointerLock,
	browser.PermissionTypeProtectedMediaIdentifier, browser.PermissionTypeSensors, browser.PermissionTypeSmartCard,
	browser.PermissionTypeSpeakerSelection, browser.PermissionTypeStorageAccess, browser.PermissionTypeVideoCapture,
	browser.PermissionTypeVr, browser.PermissionTypeWakeLockScreen, browser.PermissionTypeWakeLockSystem,
	browser.PermissionTypeWebAppInstallation, browser.PermissionTypeWebPrinting, browser.PermissionTypeWindowManagement,
}

// Config configures the permissions watchdog. The zero value is usable: it
// grants what the session's Profile.Permissions lists (nothing by default).
type Config struct {
	// Permissions overrides the profile's Permissions when non-nil. Names
	// are Browser.PermissionType values: "clipboardReadWrite",
	// "clipboardSanitizedWrite", "notifications", "geolocation", ...
	// browser-use's default is {"clipboardReadWrite", "notifications"}.
	// Default nil: the profile's list.
	Permissions []string
	// Origin limits the grant to one origin ("https://example.com").
	// Default "": every origin, as browser-use does.
	Origin string
	// Logger receives debug messages. Default: the session's logger, named
	// "permissions".
	Logger *zap.Logger
}

// Watchdog is the permissions watchdog. On BrowserConnected it grants the
// configured permissions with Browser.grantPermissions. Names are checked
// in Attach, so a typo fails Start with an error wrapping
// ErrUnknownPermission. When it granted anything, BrowserStop resets the
// browser's permission overrides (Browser.resetPermissions), so a browser
// the session only connected to does not keep them (this also drops
// overrides others set on that browser's default context).
type Watchdog struct {
	cfg Config

	mu      sync.Mutex
	granted bool
}

// New returns a permissions watchdog.
func New(cfg Config) *Watchdog { return &Watchdog{cfg: cfg} }

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog: it validates the permission names and
// registers the handlers.
func (w *Watchdog) Attach(s *session.Session) error {
	names := w.cfg.Permissions
	if names == nil {
		names = s.Profile().Permissions
	}
	if err := validate(names); err != nil {
		return err
	}
	names = slices.Clone(names)
	w.mu.Lock()
	w.granted = false
	w.mu.Unlock()
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	if err := session.Handle(s, events.BrowserConnected, Name, func(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
		if len(names) == 0 {
			return events.None{}, nil
		}
		conn := s.Conn()
		if conn == nil {
			return events.None{}, session.ErrNotStarted
		}
		// Browser.grantPermissions is deprecated in the protocol (and absent
		// from cdproto) but Chromium 156 implements it; it takes the enum
		// names browser-use's profile uses.
		// A session in a context of its own grants in that context only.
		params := struct {
			Permissions      []string `json:"permissions"`
			Origin           string   `json:"origin,omitempty"`
			BrowserContextID string   `json:"browserContextId,omitempty"`
		}{names, w.cfg.Origin, s.BrowserContextID()}
		if err := conn.Browser().Call(ctx, "Browser.grantPermissions", params, nil); err != nil {
			return events.None{}, fmt.Errorf("permissions: granting %s: %w", strings.Join(names, ", "), err)
		}
		w.mu.Lock()
		w.granted = true
		w.mu.Unlock()
		log.Debug("granted", zap.Strings("permissions", names), zap.String("origin", w.cfg.Origin))
		return events.None{}, nil
	}); err != nil {
		return err
	}
	return session.Handle(s, events.BrowserStop, Name, func(ctx context.Context, _ events.BrowserStopEvent) (events.None, error) {
		w.mu.Lock()
		granted := w.granted
		w.granted = false
		w.mu.Unlock()
		conn := s.Conn()
		if !granted || conn == nil {
			return events.None{}, nil
		}
		// Best effort: the session is stopping and the browser may be going.
		reset := browser.ResetPermissionsParams{BrowserContextID: cdpproto.BrowserContextID(s.BrowserContextID())}
		if err := conn.Browser().Call(ctx, browser.CommandResetPermissions, reset, nil); err != nil {
			log.Debug("resetting permissions", zap.Error(err))
		}
		return events.None{}, nil
	})
}

// validate returns an error naming every unknown name in names, and the
// valid ones.
func validate(names []string) error {
	var bad []string
	for _, n := range names {
		if !slices.Contains(known, browser.PermissionType(n)) {
			bad = append(bad, fmt.Sprintf("%q", n))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	valid := make([]string, len(known))
	for i, k := range known {
		valid[i] = string(k)
	}
	return fmt.Errorf("%w: %s (valid: %s)", ErrUnknownPermission, strings.Join(bad, ", "), strings.Join(valid, ", "))
}
