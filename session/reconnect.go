package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
)

// ErrReconnectUnsupported is returned by Reconnect when there is no endpoint
// to dial again: the session launched its browser and the process is gone.
var ErrReconnectUnsupported = errors.New("session: cannot reconnect: the launched browser is gone")

// Reconnect restores a lost CDP connection: it dials the same endpoint again
// (an http:// endpoint is resolved again through /json/version), restarts
// target tracking and auto-attach so that existing tabs and cross-site
// iframes are attached again and the target hooks run on them, reports the
// tabs that did not survive (TabClosed), and restores the focus to the old
// tab if it still exists, else the newest. The selector map is cleared: its
// indexes belong to the old connection. The bus, the watchdogs and their
// handlers stay as they are; BrowserConnected is not dispatched again.
//
// ctx bounds the whole call. Reconnect on a healthy connection is a no-op.
func (s *Session) Reconnect(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	running, old, browser := s.running, s.conn, s.browser
	s.mu.Unlock()
	if !running {
		return ErrNotStarted
	}
	if old != nil && old.Err() == nil {
		return nil
	}
	endpoint := s.profile.CDPURL
	if browser != nil {
		select {
		case <-browser.Done():
			return ErrReconnectUnsupported
		default:
		}
		endpoint = browser.WebSocketURL()
	}
	conn, err := cdp.Connect(ctx, endpoint, cdp.WithHeader(s.profile.CDPHeaders), cdp.WithLogger(s.log.Named("cdp")))
	if err != nil {
		return fmt.Errorf("session: reconnecting to %s: %w", endpoint, err)
	}
	if old != nil {
		old.Close()
	}

	s.mu.Lock()
	oldTabs := slices.Clone(s.tabOrder)
	oldFocus := s.focus
	s.conn = conn
	s.tabs = map[target.ID]*tab{}
	s.tabOrder = nil
	s.frames = map[target.SessionID]*AttachedTarget{}
	s.quiet = map[target.ID]bool{}
	for _, id := range oldTabs {
		s.quiet[id] = true // re-attached, not new: no TabCreated
	}
	s.selector = nil
	s.notifyLocked()
	s.mu.Unlock()

	s.attachConn(conn)
	if err := s.discover(ctx, conn); err != nil {
		return err
	}
	infos, err := cdpproto.Call(ctx, conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return fmt.Errorf("session: listing targets after reconnect: %w", err)
	}
	alive := map[target.ID]bool{}
	for _, ti := range infos.TargetInfos {
		if ti.Type == "page" {
			alive[ti.TargetID] = true
			if err := s.waitTabReady(ctx, ti.TargetID); err != nil {
				return fmt.Errorf("session: tab %s did not attach after reconnect: %w", ti.TargetID, err)
			}
		}
	}
	s.mu.Lock()
	for id := range s.created {
		if !alive[id] {
			delete(s.created, id)
		}
	}
	focus := oldFocus
	if !alive[focus] {
		focus = ""
		if n := len(s.tabOrder); n > 0 {
			focus = s.tabOrder[n-1]
		}
	}
	s.focus = focus
	s.quiet = nil
	s.mu.Unlock()
	for _, id := range oldTabs {
		if !alive[id] {
			emit(ctx, s, events.TabClosed, events.TabClosedEvent{TargetID: string(id)})
		}
	}
	if focus == "" {
		id, err := s.openTab(ctx)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.focus = id
		s.mu.Unlock()
		focus = id
	}
	if focus != oldFocus {
		emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(focus), URL: s.tabURL(focus)})
	}
	return nil
}
