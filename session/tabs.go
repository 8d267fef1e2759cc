package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// Tabs returns the session's open tabs (see [Session.Owns]) in the order
// they were opened. The foreign tabs of a browser the session connected
// to — the user's, another session's — are not listed.
func (s *Session) Tabs() []events.TabInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	own := s.ownTabsLocked()
	out := make([]events.TabInfo, 0, len(own))
	for _, id := range own {
		t := s.tabs[id]
		if t.concealed != "" {
			out = append(out, events.TabInfo{TargetID: string(id), Title: t.concealed})
			continue
		}
		out = append(out, events.TabInfo{TargetID: string(id), URL: t.url, Title: t.title})
	}
	return out
}

// Owns reports whether a tab is, or was, one of the session's tabs. In a
// browser the session launched, every tab is. In a browser it connected to
// (Profile.CDPURL), its tabs are the ones it created (Profile.ConnectTab
// "new", NavigateToURL with NewTab, a replacement for its last tab), the
// user's tab it adopted (ConnectTab "active"), and every tab one of its
// tabs opened (window.open, a target=_blank link), at any depth; the
// ownership of a tab is decided when it attaches (or, for a tab the
// session creates, as soon as it is created) and does not change, also
// across a Reconnect. Every other tab is foreign: the session attaches it,
// so that target hooks (the URL policy, request interception) apply to it
// too, but Tabs does not list it, ResolveTab, SwitchTab, CloseTab and
// Readable refuse it with an error wrapping [ErrForeignTab], the focus
// never moves to it, and an action's outcome does not count it as a new
// tab. Owns is false for a foreign tab and for an id the session does not
// know. Watchdogs that act on events about any tab (dialogs, blocked
// requests) call it to leave foreign tabs to their owner; it stays true
// after the tab closed, for reports handled late.
func (s *Session) Owns(targetID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own[target.ID(targetID)]
}

// Front brings the focused tab to the front of a browser the session
// connected to, where the user or another session may have brought theirs
// forward since: a tab behind another is not painted (screenshots) and
// takes its input late (the first mouse event about 5 s in headless
// Chromium 156). A launched browser's focused tab is already in front
// (focus changes activate it), so Front does nothing there. One round trip.
func (s *Session) Front(ctx context.Context) error {
	if s.Launches() {
		return nil
	}
	conn, focus := s.Conn(), s.FocusedTab()
	if conn == nil || focus == "" {
		return ErrNoTab
	}
	if err := conn.ActivateTarget(ctx, target.ID(focus)); err != nil {
		return fmt.Errorf("session: bringing tab %s to the front: %w", focus, err)
	}
	return nil
}

// ownTabsLocked returns the session's open tabs in the order they opened.
func (s *Session) ownTabsLocked() []target.ID {
	var out []target.ID
	for _, id := range s.tabOrder {
		if s.own[id] {
			out = append(out, id)
		}
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
// ("" is the focused tab), an error wrapping [ErrForeignTab] for a tab
// that is not the session's (see [Session.Owns]), or one wrapping
// [ErrTabConcealed] with the note. Handlers that read a page for the model
// (text, screenshot, evaluate) call it first.
func (s *Session) Readable(targetID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := target.ID(targetID)
	if id == "" {
		id = s.focus
	}
	t := s.tabs[id]
	switch {
	case t == nil:
	case !s.own[id]:
		return fmt.Errorf("%w: %s", ErrForeignTab, id)
	case t.concealed != "":
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
// It answers for every tab the session attached, foreign ones too (see
// [Session.Owns]): watchdogs that enforce the URL policy need them. What
// reads a page for the model calls [Session.Readable] first.
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

// ResolveTab turns a reference to one of the session's tabs into its
// target id: a full target id, or a unique suffix of one among the
// session's tabs (the model sees the last four characters). A reference
// to a foreign tab (see [Session.Owns]) is refused with an error wrapping
// [ErrForeignTab]; one to no tab at all with [ErrTabNotFound].
func (s *Session) ResolveTab(ref string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref == "" {
		return "", fmt.Errorf("%w: empty tab id", ErrTabNotFound)
	}
	if _, ok := s.tabs[target.ID(ref)]; ok {
		if !s.own[target.ID(ref)] {
			return "", fmt.Errorf("%w: %s", ErrForeignTab, ref)
		}
		return ref, nil
	}
	var found []target.ID
	foreign := false
	for id := range s.tabs {
		if strings.HasSuffix(strings.ToLower(string(id)), strings.ToLower(ref)) {
			if s.own[id] {
				found = append(found, id)
			} else {
				foreign = true
			}
		}
	}
	switch {
	case len(found) == 1:
		return string(found[0]), nil
	case len(found) > 1:
		return "", fmt.Errorf("%w: %s matches %d tabs", ErrTabNotFound, ref, len(found))
	case foreign:
		return "", fmt.Errorf("%w: %s", ErrForeignTab, ref)
	default:
		return "", fmt.Errorf("%w: %s", ErrTabNotFound, ref)
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

// FrameTargets returns the cross-site iframes attached below a tab (below
// all of the session's tabs when tabID is empty: in a browser it connected
// to, the frames of foreign tabs are left out), each with its own CDP
// session.
func (s *Session) FrameTargets(tabID string) []AttachedTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	roots := map[string]bool{}
	if tabID != "" {
		if t := s.tabs[target.ID(tabID)]; t != nil {
			roots[string(t.sess.ID())] = true
		}
	} else if s.browser == nil {
		for id, t := range s.tabs {
			if s.own[id] {
				roots[string(t.sess.ID())] = true
			}
		}
	}
	all := tabID == "" && s.browser != nil
	var out []AttachedTarget
	for _, f := range s.frames {
		if all || s.belongsLocked(f, roots) {
			out = append(out, *f)
		}
	}
	return out
}

// belongsLocked reports whether frame f is nested (at any depth) under one
// of the session roots.
func (s *Session) belongsLocked(f *AttachedTarget, roots map[string]bool) bool {
	for depth := 0; f != nil && depth < 16; depth++ {
		if roots[f.ParentSessionID] {
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

// tabPick is the tab activeTab chose, and what decided it.
type tabPick struct {
	id      target.ID
	visible bool   // the page reported itself visible: it is in front
	by      string // what decided, for the log
}

// activeProbeTimeout bounds asking the adopted pages whether they are
// visible, and reading /json/list: a page whose main thread is busy, or
// that shows a dialog, does not answer, and must not hold Start.
const activeProbeTimeout = 2 * time.Second

// activeTab finds the tab the user is on among the attached pages ids
// (none closed; at least one). CDP has no "active tab": what tells it is
// the page's own document.visibilityState. Measured on Chromium 156
// headless: exactly one tab is "visible", the one in front (opened in the
// foreground, or moved there by Target.activateTarget), the others
// "hidden"; document.hasFocus() is true only after an activation, and
// Target.getTargets lists tabs in no useful order. A headful window shows
// one tab the same way (not measured: no display here). Several visible
// tabs (several windows) are told apart by document.hasFocus() (the
// focused window's, if the browser has the keyboard focus), then by the
// order of the browser's /json/list (most recently activated or opened
// first — a tab opened in the background comes first too, so the list
// alone would be wrong). Tabs that answer nothing in time count as
// hidden. Browser pages (settings, DevTools, extensions) are chosen only
// when nothing else is open.
func (s *Session) activeTab(ctx context.Context, ids []target.ID) tabPick {
	var web, other []target.ID
	for _, id := range ids {
		if webPage(s.tabURL(id)) {
			web = append(web, id)
		} else {
			other = append(other, id)
		}
	}
	cands := web
	if len(cands) == 0 {
		cands = other
	}
	probes := s.probeTabs(ctx, cands)
	var visible, focused []target.ID
	for _, id := range cands {
		if p := probes[id]; p.Visible {
			visible = append(visible, id)
			if p.Focused {
				focused = append(focused, id)
			}
		}
	}
	if len(visible) == 1 {
		return tabPick{id: visible[0], visible: true, by: "visibility"}
	}
	if len(focused) == 1 {
		return tabPick{id: focused[0], visible: true, by: "visibility and focus"}
	}
	pool := visible
	if len(pool) == 0 {
		pool = cands
	}
	if len(pool) == 1 {
		return tabPick{id: pool[0], visible: len(visible) > 0, by: "only candidate"}
	}
	if rank := s.recentTabs(ctx); len(rank) > 0 {
		best, bestRank := target.ID(""), len(rank)
		for _, id := range pool {
			if r, ok := rank[id]; ok && r < bestRank {
				best, bestRank = id, r
			}
		}
		if best != "" {
			return tabPick{id: best, visible: len(visible) > 0, by: "most recently active (/json/list)"}
		}
	}
	return tabPick{id: pool[0], visible: len(visible) > 0, by: "first listed"}
}

// tabProbe is what a page says of itself.
type tabProbe struct {
	Visible, Focused bool
}

// probeTabs asks each page, in parallel and within activeProbeTimeout,
// whether it is visible and focused. It reads them in an isolated world of
// its own, so that a page cannot pass itself off as the active one by
// redefining document.visibilityState. Pages that do not answer are left
// out.
func (s *Session) probeTabs(ctx context.Context, ids []target.ID) map[target.ID]tabProbe {
	pctx, cancel := context.WithTimeout(ctx, activeProbeTimeout)
	defer cancel()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[target.ID]tabProbe{}
	)
	for _, id := range ids {
		cs, err := s.PageSession(string(id))
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := probeTab(pctx, cs, id)
			if err != nil {
				s.log.Debug("session: asking a tab whether it is visible", zap.String("target", string(id)), zap.Error(err))
				return
			}
			mu.Lock()
			out[id] = p
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func probeTab(ctx context.Context, cs *cdp.Session, id target.ID) (tabProbe, error) {
	// A page target's main frame has the target's id.
	w, err := cdpproto.Call(ctx, cs, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdpproto.FrameID(id), WorldName: "browseragent-active-tab",
	})
	if err != nil {
		return tabProbe{}, err
	}
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    `[document.visibilityState, document.hasFocus()]`,
		ContextID:     w.ExecutionContextID,
		ReturnByValue: pagejs.Ptr(true),
	})
	if err != nil {
		return tabProbe{}, err
	}
	var v []any
	if err := pagejs.Decode(res.Result, res.ExceptionDetails, &v); err != nil {
		return tabProbe{}, err
	}
	if len(v) != 2 {
		return tabProbe{}, fmt.Errorf("unexpected answer %v", v)
	}
	vis, _ := v[0].(string)
	foc, _ := v[1].(bool)
	return tabProbe{Visible: vis == "visible", Focused: foc}, nil
}

// recentTabs reads the browser's /json/list, which lists the tabs most
// recently active (or opened) first, and returns each page's position. It
// returns nil when the endpoint has no such list (a hosted browser may not
// serve it) or does not answer within activeProbeTimeout.
func (s *Session) recentTabs(ctx context.Context) map[target.ID]int {
	list, ok := jsonListURL(s.profile.CDPURL)
	if !ok {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, activeProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(lctx, http.MethodGet, list, nil)
	if err != nil {
		return nil
	}
	for k, vs := range s.profile.CDPHeaders {
		req.Header[k] = append([]string(nil), vs...)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		s.log.Debug("session: reading /json/list", zap.Error(err))
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.log.Debug("session: reading /json/list", zap.String("status", resp.Status))
		return nil
	}
	var entries []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&entries); err != nil {
		s.log.Debug("session: decoding /json/list", zap.Error(err))
		return nil
	}
	rank := map[target.ID]int{}
	for _, e := range entries {
		if e.Type == "page" {
			if _, dup := rank[target.ID(e.ID)]; !dup {
				rank[target.ID(e.ID)] = len(rank)
			}
		}
	}
	return rank
}

// jsonListURL returns the /json/list address of a CDP endpoint: beside
// /json/version for http(s)://host:port[/prefix], on the same host for a
// ws(s):// browser endpoint (query parameters, such as tokens, are kept).
func jsonListURL(endpoint string) (string, bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", false
	}
	switch u.Scheme {
	case "ws":
		u.Scheme, u.Path = "http", ""
	case "wss":
		u.Scheme, u.Path = "https", ""
	case "http", "https":
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/json/version")
	default:
		return "", false
	}
	u.Path += "/json/list"
	u.RawPath, u.Fragment = "", ""
	return u.String(), true
}

// webPage reports whether a tab shows a web page (or a blank or new tab
// page) rather than a page of the browser itself: settings, DevTools, an
// extension's page.
func webPage(u string) bool {
	l := strings.ToLower(u)
	if l == "" || strings.HasPrefix(l, "about:blank") || l == "about:srcdoc" || newTabPages[l] {
		return true
	}
	scheme, _, ok := strings.Cut(l, ":")
	if !ok {
		return false
	}
	switch scheme {
	case "http", "https", "file", "data", "blob":
		return true
	}
	return false
}

// newTabPages are the browser's new tab pages: a user on one is about to go
// somewhere, so the agent may take the tab there.
var newTabPages = map[string]bool{
	"chrome://newtab/":                         true,
	"chrome://new-tab-page/":                   true,
	"chrome-search://local-ntp/local-ntp.html": true,
}
