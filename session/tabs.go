package session

import (
	"context"
	"fmt"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
)

// Tabs returns the open tabs in the order they were opened.
func (s *Session) Tabs() []events.TabInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]events.TabInfo, 0, len(s.tabOrder))
	for _, id := range s.tabOrder {
		t := s.tabs[id]
		if t.concealed != "" {
			out = append(out, events.TabInfo{TargetID: string(id), Title: t.concealed})
			continue
		}
		out = append(out, events.TabInfo{TargetID: string(id), URL: t.url, Title: t.title})
	}
	return out
}

// ConcealTab hides a tab's URL and title behind note in [Session.Tabs] and
// observations, for a tab the URL policy refuses that the session did not
// navigate there (one found open when connecting): its content must not
// reach the model, and it is not the session's to navigate away. An empty
// note shows the tab again; the security watchdog does that when the tab
// commits an allowed URL. Unknown tabs are ignored.
func (s *Session) ConcealTab(targetID, note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tabs[target.ID(targetID)]; t != nil {
		t.concealed = note
		s.notifyLocked()
	}
}

// Readable returns nil when a tab's content may be read for the model
// ("" is the focused tab), or an error wrapping [ErrTabConcealed] with the
// note. Handlers that read a page for the model (text, screenshot,
// evaluate) call it first.
func (s *Session) Readable(targetID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := target.ID(targetID)
	if id == "" {
		id = s.focus
	}
	if t := s.tabs[id]; t != nil && t.concealed != "" {
		return fmt.Errorf("%w: %s", ErrTabConcealed, t.concealed)
	}
	return nil
}

// Concealed returns the note that hides a tab (see [Session.ConcealTab]),
// or "" when the tab is shown.
func (s *Session) Concealed(targetID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tabs[target.ID(targetID)]; t != nil {
		return t.concealed
	}
	return ""
}

// FocusedTab returns the id of the tab the agent acts on ("" when none).
func (s *Session) FocusedTab() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.focus)
}

// PageSession returns the CDP session of a tab; "" means the focused tab.
func (s *Session) PageSession(targetID string) (*cdp.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running && s.conn == nil {
		return nil, ErrNotStarted
	}
	id := target.ID(targetID)
	if id == "" {
		id = s.focus
	}
	if id == "" {
		return nil, ErrNoTab
	}
	t := s.tabs[id]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrTabNotFound, targetID)
	}
	return t.sess, nil
}

// ResolveTab turns a tab reference into a target id: a full target id, or a
// unique suffix of one (the model sees the last four characters).
func (s *Session) ResolveTab(ref string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref == "" {
		return "", fmt.Errorf("%w: empty tab id", ErrTabNotFound)
	}
	if _, ok := s.tabs[target.ID(ref)]; ok {
		return ref, nil
	}
	var found []target.ID
	for id := range s.tabs {
		if strings.HasSuffix(strings.ToLower(string(id)), strings.ToLower(ref)) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 1:
		return string(found[0]), nil
	case 0:
		return "", fmt.Errorf("%w: %s", ErrTabNotFound, ref)
	default:
		return "", fmt.Errorf("%w: %s matches %d tabs", ErrTabNotFound, ref, len(found))
	}
}

// SessionFor answers "which CDP session runs an action on this node": the
// session the node was observed in (a cross-site iframe has its own), else
// its tab's, else the focused tab's. A session that has since detached is an
// error, not a silent fallback to another frame.
func (s *Session) SessionFor(ref events.ElementRef) (*cdp.Session, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return nil, ErrNotStarted
	}
	if ref.SessionID != "" {
		if cs, ok := conn.Session(target.SessionID(ref.SessionID)); ok {
			return cs, nil
		}
		return nil, fmt.Errorf("%w: the frame of element %d is gone (session %s)", ErrElementNotFound, ref.BackendNodeID, ref.SessionID)
	}
	return s.PageSession(ref.TargetID)
}

// tabURL returns the last known URL of a tab.
func (s *Session) tabURL(id target.ID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tabs[id]; t != nil {
		return t.url
	}
	return ""
}

// FrameTargets returns the cross-site iframes attached below a tab (all tabs
// when tabID is empty), each with its own CDP session.
func (s *Session) FrameTargets(tabID string) []AttachedTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	var root string
	if tabID != "" {
		if t := s.tabs[target.ID(tabID)]; t != nil {
			root = string(t.sess.ID())
		}
	}
	var out []AttachedTarget
	for _, f := range s.frames {
		if root == "" || s.belongsLocked(f, root) {
			out = append(out, *f)
		}
	}
	return out
}

// belongsLocked reports whether frame f is nested (at any depth) under the
// session root.
func (s *Session) belongsLocked(f *AttachedTarget, root string) bool {
	for depth := 0; f != nil && depth < 16; depth++ {
		if f.ParentSessionID == root {
			return true
		}
		f = s.frames[target.SessionID(f.ParentSessionID)]
	}
	return false
}

// RefreshTabs asks the browser for every tab's current URL and title.
// Chromium does not report every title change as an event, so observers
// that show tabs (the DOM watchdog) refresh before reading Tabs.
func (s *Session) RefreshTabs(ctx context.Context) error {
	conn := s.Conn()
	if conn == nil {
		return ErrNotStarted
	}
	res, err := cdpproto.Call(ctx, conn.Browser(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return fmt.Errorf("session: listing tabs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ti := range res.TargetInfos {
		if t := s.tabs[ti.TargetID]; t != nil {
			t.url, t.title = ti.URL, ti.Title
		}
	}
	return nil
}
