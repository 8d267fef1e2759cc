package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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
// tab if it still exists, else the newest of the session's own tabs (a new
// one when none is left). Which tabs are the session's (Owns) survives: it
// is kept by target id, and tabs its tabs opened meanwhile are its too.
// The selector map is cleared: its indexes belong to the old connection. The bus, the watchdogs and their
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
	conn, err := cdp.Connect(ctx, endpoint, s.connOptions()...)
	if err != nil {
		return fmt.Errorf("session: reconnecting to %s: %w", endpoint, err)
	}
	if old != nil {
		old.Close()
	}

	// Until the tabs are attached again the session is not ready: Ready
	// waits on restoring, and a failure below closes the new connection so
	// that the next attempt starts over instead of finding it healthy.
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
		s.mu.Lock()
		s.restoring = false
		if ok {
			s.lostAt, s.reconnecting, s.lostFor = time.Time{}, false, ""
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()
	s.mu.Lock()
	oldTabs := slices.Clone(s.tabOrder)
	oldFocus := s.focus
	s.restoring = true
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

	if s.BrowserContextID() != "" {
		// Before discovery, as at Start: onAttach sorts targets by it.
		if _, err := s.findContext(ctx, conn); err != nil {
			return err
		}
	}
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
		if ti.Type == "page" && s.inContext(ti) {
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
	if !alive[focus] || !s.own[focus] {
		focus = ""
		if own := s.ownTabsLocked(); len(own) > 0 {
			focus = own[len(own)-1]
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
		id, err := s.focusNewTab(ctx)
		if err != nil {
			return err
		}
		focus = id
	}
	ok = true
	if focus != oldFocus {
		emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(focus), URL: s.tabURL(focus)})
	}
	return nil
}

// Ready waits until the session can take events. It returns nil at once
// when the browser is connected, no Reconnect is attaching its tabs again
// and no tab is being opened to replace the session's last one (closed
// under it; see Owns). While the connection is lost it waits: for
// the reconnect under way (a BrowserReconnecting was reported) to succeed
// or be given up, and otherwise for Profile.ReconnectGrace after the loss,
// for a reconnect to begin. It returns an error wrapping
// events.ErrBrowserGone when the browser will not come back (the launched
// process exited, BrowserLost was reported, or no reconnect began within
// the grace), ErrNotStarted on a stopped session, or ctx's error. The agent
// calls it before each step, so that a dead browser ends a run at once and
// a dropped connection is waited for instead of failing the step.
func (s *Session) Ready(ctx context.Context) error {
	var grace *time.Timer
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	for {
		s.mu.Lock()
		running, conn, browser := s.running, s.conn, s.browser
		lostAt, reconnecting, lostFor, restoring := s.lostAt, s.reconnecting, s.lostFor, s.restoring
		reopening := s.reopening
		ch := s.changed
		s.mu.Unlock()
		if !running || conn == nil {
			return ErrNotStarted
		}
		if browser != nil {
			select {
			case <-browser.Done():
				return fmt.Errorf("%w: the browser process (pid %d) exited", events.ErrBrowserGone, browser.PID())
			default:
			}
		}
		if lostFor != "" {
			return fmt.Errorf("%w: %s", events.ErrBrowserGone, lostFor)
		}
		if conn.Err() == nil && !restoring {
			if !reopening {
				return nil
			}
			// The last tab closed and its replacement is being opened
			// (bounded): wait for the focus.
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if lostAt.IsZero() {
			lostAt = time.Now() // the tracker has not noted it yet
		}
		var expired <-chan time.Time
		if !reconnecting && !restoring {
			left := s.profile.ReconnectGrace - time.Since(lostAt)
			if left <= 0 {
				return fmt.Errorf("%w: the connection was lost (%v) and no reconnect began", events.ErrBrowserGone, conn.Err())
			}
			if grace == nil {
				grace = time.NewTimer(left)
			} else {
				grace.Reset(left)
			}
			expired = grace.C
		}
		var exited <-chan struct{}
		if browser != nil {
			exited = browser.Done()
		}
		select {
		case <-ch:
		case <-exited:
		case <-expired:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
