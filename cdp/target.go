package cdp

import (
	"context"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
)

// CreateTargetOption adjusts the Target.createTarget params.
type CreateTargetOption func(*target.CreateTargetParams)

// InBrowserContext creates the target in the browser context id.
func InBrowserContext(id cdpproto.BrowserContextID) CreateTargetOption {
	return func(p *target.CreateTargetParams) { p.BrowserContextID = id }
}

// InNewWindow creates the target in a new window (headful only).
func InNewWindow() CreateTargetOption {
	return func(p *target.CreateTargetParams) { p.NewWindow = ptr(true) }
}

// InBackground creates the target without focusing it.
func InBackground() CreateTargetOption {
	return func(p *target.CreateTargetParams) { p.Background = ptr(true) }
}

// WithTargetSize sets the width and height of the new target in DIP.
func WithTargetSize(width, height int64) CreateTargetOption {
	return func(p *target.CreateTargetParams) { p.Width, p.Height = width, height }
}

// CreateTarget opens a page target at url ("" means about:blank) and returns
// its id. It does not attach to it.
//
// To prepare a page before its first real document runs (scripts, emulation
// set by an AttachHook of browser-level AutoAttach), create it at about:blank
// and navigate once it is attached: Chromium starts the navigation to url
// before the new target pauses, so setup done in the hook can miss that
// first document (observed on Chromium 156).
func (c *Conn) CreateTarget(ctx context.Context, url string, opts ...CreateTargetOption) (target.ID, error) {
	p := target.CreateTargetParams{URL: url}
	for _, o := range opts {
		o(&p)
	}
	res, err := cdpproto.Call(ctx, c.browser, target.CreateTarget, p)
	if err != nil {
		return "", err
	}
	return res.TargetID, nil
}

// CloseTarget closes the target. Its sessions then detach (their calls fail
// with ErrTargetDetached).
func (c *Conn) CloseTarget(ctx context.Context, id target.ID) error {
	_, err := cdpproto.Call(ctx, c.browser, target.CloseTarget, target.CloseTargetParams{TargetID: id})
	return err
}

// ActivateTarget focuses the target (brings its tab to front).
func (c *Conn) ActivateTarget(ctx context.Context, id target.ID) error {
	_, err := cdpproto.Call(ctx, c.browser, target.ActivateTarget, target.ActivateTargetParams{TargetID: id})
	return err
}

// AttachToTarget attaches to the target with a flat session and returns it.
// Nothing is enabled on the session.
func (c *Conn) AttachToTarget(ctx context.Context, id target.ID) (*Session, error) {
	res, err := cdpproto.Call(ctx, c.browser, target.AttachToTarget,
		target.AttachToTargetParams{TargetID: id, Flatten: ptr(true)})
	if err != nil {
		return nil, err
	}
	if res.SessionID == "" {
		return nil, fmt.Errorf("cdp: %s: browser returned no session id", target.CommandAttachToTarget)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, fmt.Errorf("cdp: %s: %w", target.CommandAttachToTarget, c.err)
	}
	// Chrome usually announces the session with Target.attachedToTarget before
	// the reply, so the reader may have made it already.
	s := c.sessions[res.SessionID]
	if s == nil {
		s = c.newSessionLocked(res.SessionID, id, nil, c.browser)
	}
	return s, nil
}

// DetachFromTarget detaches the session. Its pending and later calls fail
// with ErrTargetDetached once the browser confirms with
// Target.detachedFromTarget.
func (c *Conn) DetachFromTarget(ctx context.Context, s *Session) error {
	if s == nil || s.id == "" {
		return fmt.Errorf("cdp: %s: cannot detach the browser session", target.CommandDetachFromTarget)
	}
	_, err := cdpproto.Call(ctx, c.browser, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: s.id})
	return err
}

// SetDiscoverTargets turns Target.targetCreated / targetInfoChanged /
// targetDestroyed / targetCrashed events on the browser session on or off.
func (c *Conn) SetDiscoverTargets(ctx context.Context, discover bool) error {
	_, err := cdpproto.Call(ctx, c.browser, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: discover})
	return err
}
