package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/browser"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// ErrUnknownPermission is wrapped by the Attach error of a permissions
// watchdog configured with a name Chromium does not know.
var ErrUnknownPermission = errors.New("permissions: unknown permission name")

// permKnown are the Browser.PermissionType names of the protocol version
// this module is built against (cdproto v0.160.2, Chromium 156).
var permKnown = []browser.PermissionType{
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

// PermissionsConfig configures the permissions watchdog.
type PermissionsConfig struct {
	// Permissions overrides the profile's Permissions when non-nil.
	// Names are Browser.PermissionType values: "clipboardReadWrite",
	// "clipboardSanitizedWrite", "notifications", "geolocation", ...
	// browser-use's default is {"clipboardReadWrite", "notifications"}.
	Permissions []string
	// Origin limits the grant to one origin ("https://example.com");
	// "" grants to every origin, as browser-use does.
	Origin string
}

// Permissions is the permissions watchdog (name "permissions"). On
// BrowserConnected it grants the configured permissions with
// Browser.grantPermissions; the default list is empty (nothing is granted:
// secure by default). Names are checked in Attach, so a typo fails Start
// with an error wrapping ErrUnknownPermission instead of being ignored.
// When it granted anything, BrowserStop resets the browser's permission
// overrides (Browser.resetPermissions), so a browser the session only
// connected to does not keep them (this also drops overrides others set on
// that browser's default context).
type Permissions struct {
	cfg PermissionsConfig

	mu      sync.Mutex
	granted bool
}

// NewPermissions returns the permissions watchdog.
func NewPermissions(cfg PermissionsConfig) *Permissions { return &Permissions{cfg: cfg} }

// Name implements session.Watchdog.
func (p *Permissions) Name() string { return "permissions" }

// Attach implements session.Watchdog. It validates the names.
func (p *Permissions) Attach(s *session.Session) error {
	names := p.cfg.Permissions
	if names == nil {
		names = s.Profile().Permissions
	}
	if err := permValidate(names); err != nil {
		return err
	}
	names = slices.Clone(names)
	p.mu.Lock()
	p.granted = false
	p.mu.Unlock()
	log := s.Logger().Named("permissions")
	if err := register(s.Bus(), p.Name(), events.BrowserConnected, func(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
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
		params := struct {
			Permissions []string `json:"permissions"`
			Origin      string   `json:"origin,omitempty"`
		}{names, p.cfg.Origin}
		if err := conn.Browser().Call(ctx, "Browser.grantPermissions", params, nil); err != nil {
			return events.None{}, fmt.Errorf("permissions: granting %s: %w", strings.Join(names, ", "), err)
		}
		p.mu.Lock()
		p.granted = true
		p.mu.Unlock()
		log.Debug("granted", zap.Strings("permissions", names), zap.String("origin", p.cfg.Origin))
		return events.None{}, nil
	}); err != nil {
		return err
	}
	return register(s.Bus(), p.Name(), events.BrowserStop, func(ctx context.Context, _ events.BrowserStopEvent) (events.None, error) {
		p.mu.Lock()
		granted := p.granted
		p.granted = false
		p.mu.Unlock()
		conn := s.Conn()
		if !granted || conn == nil {
			return events.None{}, nil
		}
		if err := conn.Browser().Call(ctx, "Browser.resetPermissions", struct{}{}, nil); err != nil {
			log.Debug("resetting permissions", zap.Error(err))
		}
		return events.None{}, nil
	})
}

func permValidate(names []string) error {
	var bad []string
	for _, n := range names {
		if !slices.Contains(permKnown, browser.PermissionType(n)) {
			bad = append(bad, fmt.Sprintf("%q", n))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	valid := make([]string, len(permKnown))
	for i, k := range permKnown {
		valid[i] = string(k)
	}
	return fmt.Errorf("%w: %s (valid: %s)", ErrUnknownPermission, strings.Join(bad, ", "), strings.Join(valid, ", "))
}
