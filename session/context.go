package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
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
// The context uses the browser's proxy, like the default context, unless a
// watchdog set one of its own (SetContextProxy).
func (s *Session) makeContext(ctx context.Context, conn *cdp.Conn) error {
	s.mu.Lock()
	params := target.CreateBrowserContextParams{ProxyServer: s.ctxProxy, ProxyBypassList: s.ctxBypass}
	s.mu.Unlock()
	res, err := cdpproto.Call(ctx, conn.Browser(), target.CreateBrowserContext, params)
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

// SetContextProxy makes the browser context the session creates
// (Profile.IsolatedContext) send its connections through server (as
// --proxy-server takes it, e.g. "http://127.0.0.1:8080"), except to the
// hosts of bypass (as --proxy-bypass-list takes it; "" for none). It is
// how a watchdog routes an isolated session's traffic in a browser it did
// not launch, where launch flags cannot. Watchdogs call it from Attach,
// which runs before the context is made; it is dropped on Stop, and has no
// effect without IsolatedContext.
func (s *Session) SetContextProxy(server, bypass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctxProxy, s.ctxBypass = server, bypass
}

// HasFrame reports whether frame is the main frame of one of the session's
// tabs or a frame inside one (a cross-site iframe target or a frame in a
// tab's or iframe's tree). Browser-wide events (Browser.downloadWillBegin)
// name only a frame; with several sessions in contexts of their own on one
// browser, this tells whose the event is. Each tab and iframe target whose
// id is not frame costs one Page.getFrameTree, bounded by ctx.
func (s *Session) HasFrame(ctx context.Context, frame string) bool {
	if frame == "" {
		return false
	}
	var sessions []*cdp.Session
	for _, t := range s.Tabs() {
		if t.TargetID == frame {
			return true // a tab's main frame: its id is the target's
		}
		if cs, err := s.PageSession(t.TargetID); err == nil {
			sessions = append(sessions, cs)
		}
	}
	for _, f := range s.FrameTargets("") {
		if f.Session.TargetID() == target.ID(frame) {
			return true // a cross-site iframe
		}
		sessions = append(sessions, f.Session)
	}
	for _, cs := range sessions {
		res, err := cdpproto.Call(ctx, cs, page.GetFrameTree, cdpproto.Empty{})
		if err == nil && inFrameTree(res.FrameTree, cdpproto.FrameID(frame)) {
			return true
		}
	}
	return false
}

func inFrameTree(t *page.FrameTree, id cdpproto.FrameID) bool {
	if t == nil {
		return false
	}
	if t.Frame != nil && t.Frame.ID == id {
		return true
	}
	for _, c := range t.ChildFrames {
		if inFrameTree(c, id) {
			return true
		}
	}
	return false
}
