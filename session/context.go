package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
)

// letGoTimeout bounds resuming and detaching another context's target.
const letGoTimeout = 10 * time.Second

// makeContext creates the session's browser context (Profile.IsolatedContext)
// on conn and makes it the session's world.
//
// The context is not disposed when the connection drops (no
// disposeOnDetach): a dropped websocket is what Reconnect recovers from,
// and the session's tabs must still be there when it does. Stop disposes
// of it. A process that dies without Stop leaves it, with its tabs, in a
// browser it connected to (a launched browser dies with the process).
// Neither is a proxy set for the context: it uses the browser's, like the
// default context.
func (s *Session) makeContext(ctx context.Context, conn *cdp.Conn) error {
	res, err := cdpproto.Call(ctx, conn.Browser(), target.CreateBrowserContext, target.CreateBrowserContextParams{})
	if err != nil {
		return fmt.Errorf("session: creating a browser context: %w", err)
	}
	if res.BrowserContextID == "" {
		return fmt.Errorf("session: creating a browser context: the browser returned no id")
	}
	s.mu.Lock()
	s.bctx = res.BrowserContextID
	s.mu.Unlock()
	s.log.Debug("session: working in a browser context of its own", zap.String("context", string(res.BrowserContextID)))
	return nil
}

// findContext, on a new connection after a lost one, keeps the session's
// context when the browser still has it (its tabs are attached again), and
// otherwise creates a new one (the old tabs are then reported closed and
// the session works in a new tab). It reports whether it had to.
func (s *Session) findContext(ctx context.Context, conn *cdp.Conn) (recreated bool, err error) {
	old := cdpproto.BrowserContextID(s.BrowserContextID())
	res, err := cdpproto.Call(ctx, conn.Browser(), target.GetBrowserContexts, cdpproto.Empty{})
	if err != nil {
		return false, fmt.Errorf("session: listing browser contexts: %w", err)
	}
	if slices.Contains(res.BrowserContextIDs, old) {
		return false, nil
	}
	s.log.Warn("session: the browser no longer has the session's context; working in a new one", zap.String("context", string(old)))
	return true, s.makeContext(ctx, conn)
}

// otherContext reports whether an auto-attached target belongs to another
// browser context than the session's own (Profile.IsolatedContext). The
// targets below an attached one (iframes, workers) are in its context.
func (s *Session) otherContext(cs *cdp.Session) bool {
	s.mu.Lock()
	bctx := s.bctx
	s.mu.Unlock()
	if bctx == "" {
		return false
	}
	if p := cs.Parent(); p != nil && p.ID() != "" {
		return false // below one of ours: the others' are never attached
	}
	info := cs.TargetInfo()
	return info == nil || info.BrowserContextID != bctx
}

// letGo resumes another context's target and detaches from it, without
// preparing it: several sessions share one browser, each auto-attaching
// every new target paused, and none may hold another's target or follow it.
func (s *Session) letGo(ctx context.Context, cs *cdp.Session) {
	ctx, cancel := context.WithTimeout(ctx, letGoTimeout)
	defer cancel()
	if err := cs.Call(ctx, "Runtime.runIfWaitingForDebugger", nil, nil); err != nil {
		s.log.Debug("resuming another context's target", zap.String("target", string(cs.TargetID())), zap.Error(err))
	}
	if err := cs.Conn().DetachFromTarget(ctx, cs); err != nil {
		s.log.Debug("detaching from another context's target", zap.String("target", string(cs.TargetID())), zap.Error(err))
	}
}

// inContext reports whether a target listed by Target.getTargets is the
// session's to consider: any when it works in the default context, else
// those of its own context.
func (s *Session) inContext(ti *target.Info) bool {
	bctx := s.BrowserContextID()
	return bctx == "" || ti.BrowserContextID == cdpproto.BrowserContextID(bctx)
}

// createTarget opens a blank tab in the session's context.
func (s *Session) createTarget(ctx context.Context, conn *cdp.Conn) (target.ID, error) {
	var opts []cdp.CreateTargetOption
	if id := s.BrowserContextID(); id != "" {
		opts = append(opts, cdp.InBrowserContext(cdpproto.BrowserContextID(id)))
	}
	return conn.CreateTarget(ctx, "about:blank", opts...)
}

// disposeContext disposes of the session's context in a browser it
// connected to, and waits until the browser destroyed its tabs ids.
func (s *Session) disposeContext(ctx context.Context, conn *cdp.Conn, id cdpproto.BrowserContextID, ids []target.ID) error {
	if _, err := cdpproto.Call(ctx, conn.Browser(), target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id}); err != nil {
		return fmt.Errorf("disposing browser context %s: %w", id, err)
	}
	return s.waitGone(ctx, conn, ids)
}
