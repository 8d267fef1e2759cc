package session

import (
	"context"
	"fmt"
	"net/url"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
)

// navOutcome is what a navigation reports.
type navOutcome struct {
	TargetID string
	URL      string
	// Loading is empty when the page became ready, else why the wait ended
	// early (the page is still loading; that is not an error).
	Loading string
	// Download is true when the URL started a download instead of a page.
	Download bool
}

// loadWait returns how long to wait for readiness after a navigation from
// one URL to another: the profile's NavigationTimeout, else the same-site or
// cross-site wait.
func (s *Session) loadWait(from, to string) time.Duration {
	if s.profile.NavigationTimeout > 0 {
		return s.profile.NavigationTimeout
	}
	if sameSite(from, to) {
		return s.profile.SameSiteLoadWait
	}
	return s.profile.CrossSiteLoadWait
}

func sameSite(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ua.Host != "" && ua.Host == ub.Host && (ua.Scheme == "http" || ua.Scheme == "https")
}

// defaultAttachWait bounds the wait for a new tab to attach when the
// caller's ctx has no deadline.
const defaultAttachWait = 15 * time.Second

// attachWait bounds the wait for a tab to attach: by ctx when it has a
// deadline (a caller that allows a slow start — many browsers launching on
// busy cores — gets all of it), else by defaultAttachWait.
func attachWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultAttachWait)
}

// openTab creates a blank tab, waits until it is attached and prepared, and
// returns its id. The tab is the session's (see Owns): closed on Stop when
// remote.
func (s *Session) openTab(ctx context.Context) (target.ID, error) {
	conn := s.Conn()
	if conn == nil {
		return "", ErrNotStarted
	}
	id, err := s.createTarget(ctx, conn)
	if err != nil {
		return "", fmt.Errorf("session: opening a tab: %w", err)
	}
	s.mu.Lock()
	s.created[id] = true
	s.own[id] = true // it may have attached already, as foreign: claimed now
	s.notifyLocked()
	s.mu.Unlock()
	wait, cancel := attachWait(ctx)
	defer cancel()
	if err := s.waitTabReady(wait, id); err != nil {
		return "", fmt.Errorf("session: new tab %s did not attach: %w", id, err)
	}
	if s.Browser() == nil {
		// Connected to someone else's browser: the tab may have attached
		// before it was known to be ours, so give it the profile's viewport
		// now (the browser's other tabs keep theirs).
		cs, err := s.PageSession(string(id))
		if err != nil {
			return "", err
		}
		p := s.profile
		if _, err := cdpproto.Call(ctx, cs, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(p.ViewportWidth), Height: int64(p.ViewportHeight), DeviceScaleFactor: p.DeviceScaleFactor,
		}); err != nil {
			return "", fmt.Errorf("session: setting the viewport of tab %s: %w", id, err)
		}
	}
	return id, nil
}

// navigateTab loads rawURL in the tab and waits, within the readiness bound
// (budget, else the profile's), until the page reached until.
func (s *Session) navigateTab(ctx context.Context, id target.ID, rawURL string, until events.WaitUntil, budget time.Duration) (navOutcome, error) {
	out := navOutcome{TargetID: string(id), URL: rawURL}
	cs, err := s.PageSession(string(id))
	if err != nil {
		return out, err
	}
	from := s.tabURL(id)
	s.restoreScripts(ctx, cs)
	lc := cs.SubscribeEvents("Page.lifecycleEvent")
	defer lc.Cancel()
	quiet := s.quietCheck(id)
	t0 := time.Now()
	res, err := cdpproto.Call(ctx, cs, page.Navigate, page.NavigateParams{URL: rawURL, TransitionType: page.TransitionTypeTyped})
	Phase(ctx, "navigate", t0)
	if err != nil {
		return out, fmt.Errorf("session: navigate to %s: %w", rawURL, err)
	}
	if res.IsDownload {
		// Chromium reports a download as an aborted navigation too.
		out.Download = true
		return out, nil
	}
	if res.ErrorText != "" {
		return out, &NavigationError{URL: rawURL, ErrorText: res.ErrorText}
	}
	if budget <= 0 {
		budget = s.loadWait(from, rawURL)
	}
	if res.LoaderID != "" {
		t0 := time.Now()
		out.Loading, err = waitReady(ctx, lc, string(res.LoaderID), "", until, budget, quiet)
		Phase(ctx, "ready", t0)
		if err != nil {
			return out, fmt.Errorf("session: navigate to %s: %w", rawURL, err)
		}
	}
	out.URL = s.currentURL(ctx, cs, rawURL)
	return out, nil
}

// afterLoadWait bounds the wait after a page's load event, for WaitLoad,
// for the network to go quiet (see waitReady).
const afterLoadWait = 500 * time.Millisecond

// quietFunc reports whether a tab's network is quiet: every request it
// sent since a mark was answered and read, and no request event came for
// Profile.RequestQuiet, nor since from, so that the requests a load
// handler sends are waited for; if not, a channel closed at the next
// request event and how long, with none, until quiet.
type quietFunc func(from time.Time) (quiet bool, wake <-chan struct{}, left time.Duration)

// quietCheck returns the quietFunc of tab id's requests sent from now on,
// nil when requests are not recorded (Profile.NoRequestEvidence).
func (s *Session) quietCheck(id target.ID) quietFunc {
	if s.profile.NoRequestEvidence {
		return nil
	}
	mark := s.net.mark()
	return func(from time.Time) (bool, <-chan struct{}, time.Duration) {
		return s.net.quiet(id, mark, from, s.profile.RequestQuiet)
	}
}

// waitReady waits for the lifecycle of one load until it reached until:
// for WaitLoad ("" too), networkIdle, or load and then the network quiet
// (quiet, when not nil: the requests the page sent answered and the
// network silent for Profile.RequestQuiet, so that what its load handlers
// fetched is on the page), afterLoadWait after load at most; for
// WaitDOMContentLoaded, DOMContentLoaded; for WaitNetworkIdle, networkIdle
// (a page that loaded but never went idle is ready at the bound); for
// WaitCommit, nothing (the navigation committed when it returned).
// loaderID, when set, selects the load; otherwise frameID (the main frame)
// does. It returns "" when ready, or a description of why it stopped
// waiting (the page is still loading: not an error); an error when the page
// itself is gone (its target crashed or detached, the connection was lost),
// at once rather than at the bound.
func waitReady(ctx context.Context, lc *cdp.Subscription, loaderID, frameID string, until events.WaitUntil, bound time.Duration, quiet quietFunc) (string, error) {
	if until == events.WaitCommit {
		return "", nil
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	var settle <-chan time.Time
	loaded := false
	// Chromium's networkIdle comes 500 ms after the network's last
	// request: on a page done at load, waiting for it (or for a fixed
	// pause) is that long for nothing. The network going quiet is watched
	// instead: requests answered and none for RequestQuiet.
	var wake <-chan struct{}
	var quietAt <-chan time.Time
	var loadedAt time.Time
	for {
		if settle != nil && quiet != nil {
			ok, w, left := quiet(loadedAt)
			if ok {
				return "", nil
			}
			wake, quietAt = w, time.After(left)
		}
		select {
		case <-wake:
		case <-quietAt:
		case <-ctx.Done():
			return "wait cancelled: " + ctx.Err().Error(), nil
		case <-deadline.C:
			if loaded {
				return "", nil // loaded; the network just never went idle
			}
			return fmt.Sprintf("page still loading after %s", bound), nil
		case <-settle:
			return "", nil
		case ev, ok := <-lc.C():
			if !ok {
				if err := lc.Err(); err != nil {
					return "", fmt.Errorf("%w: lost the page while it loaded: %w", ErrPageGone, err)
				}
				return "", fmt.Errorf("%w: lost the page while it loaded", ErrPageGone)
			}
			var e page.EventLifecycleEvent
			if ev.Decode(&e) != nil {
				continue
			}
			if loaderID != "" && string(e.LoaderID) != loaderID {
				continue
			}
			if loaderID == "" && frameID != "" && string(e.FrameID) != frameID {
				continue
			}
			switch e.Name {
			case "networkIdle":
				return "", nil
			case "DOMContentLoaded":
				if until == events.WaitDOMContentLoaded {
					return "", nil
				}
			case "load":
				if !loaded {
					loaded, loadedAt = true, time.Now()
					if until != events.WaitNetworkIdle {
						settle = time.After(afterLoadWait)
					}
				}
			}
		}
	}
}

// currentURL asks the tab for its URL, falling back to want.
func (s *Session) currentURL(ctx context.Context, cs *cdp.Session, want string) string {
	h, err := cdpproto.Call(ctx, cs, page.GetNavigationHistory, cdpproto.Empty{})
	if err != nil || h.CurrentIndex < 0 || int(h.CurrentIndex) >= len(h.Entries) {
		return want
	}
	u := h.Entries[h.CurrentIndex].URL
	s.mu.Lock()
	if t := s.tabs[cs.TargetID()]; t != nil {
		t.url = u
	}
	s.mu.Unlock()
	return u
}

// historyStep goes back (delta -1) or forward (+1) in the tab's history.
func (s *Session) historyStep(ctx context.Context, id target.ID, delta int) (navOutcome, error) {
	out := navOutcome{TargetID: string(id)}
	cs, err := s.PageSession(string(id))
	if err != nil {
		return out, err
	}
	h, err := cdpproto.Call(ctx, cs, page.GetNavigationHistory, cdpproto.Empty{})
	if err != nil {
		return out, fmt.Errorf("session: reading history: %w", err)
	}
	i := int(h.CurrentIndex) + delta
	if i < 0 || i >= len(h.Entries) {
		dir := "back"
		if delta > 0 {
			dir = "forward"
		}
		return out, fmt.Errorf("%w: no history entry to go %s to", ErrNavigation, dir)
	}
	s.restoreScripts(ctx, cs)
	lc := cs.SubscribeEvents("Page.lifecycleEvent")
	defer lc.Cancel()
	from := h.Entries[h.CurrentIndex].URL
	to := h.Entries[i].URL
	quiet := s.quietCheck(id)
	if _, err := cdpproto.Call(ctx, cs, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID}); err != nil {
		return out, fmt.Errorf("session: history navigation: %w", err)
	}
	if !sameDocument(from, to) {
		if out.Loading, err = waitReady(ctx, lc, "", string(id), events.WaitLoad, s.loadWait(from, to), quiet); err != nil {
			return out, fmt.Errorf("session: history navigation: %w", err)
		}
	}
	out.URL = s.currentURL(ctx, cs, to)
	return out, nil
}

// reloadTab reloads the tab and waits for it.
func (s *Session) reloadTab(ctx context.Context, id target.ID) (navOutcome, error) {
	out := navOutcome{TargetID: string(id)}
	cs, err := s.PageSession(string(id))
	if err != nil {
		return out, err
	}
	lc := cs.SubscribeEvents("Page.lifecycleEvent")
	defer lc.Cancel()
	from := s.tabURL(id)
	quiet := s.quietCheck(id)
	if _, err := cdpproto.Call(ctx, cs, page.Reload, page.ReloadParams{}); err != nil {
		return out, fmt.Errorf("session: reload: %w", err)
	}
	if out.Loading, err = waitReady(ctx, lc, "", string(id), events.WaitLoad, s.loadWait(from, from), quiet); err != nil {
		return out, fmt.Errorf("session: reload: %w", err)
	}
	out.URL = s.currentURL(ctx, cs, from)
	return out, nil
}

// sameDocument reports whether two URLs differ only by fragment.
func sameDocument(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ua.Fragment, ub.Fragment = "", ""
	return ua.String() == ub.String()
}

// switchTab focuses one of the session's tabs and brings it to the front.
func (s *Session) switchTab(ctx context.Context, id target.ID) error {
	s.mu.Lock()
	t := s.tabs[id]
	conn := s.conn
	if t == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrTabNotFound, id)
	}
	if !s.own[id] {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrForeignTab, id)
	}
	changed := s.focus != id
	if changed && s.focus != "" {
		s.focusLog = append(s.focusLog, s.focus)
	}
	s.focus = id
	if changed {
		s.selector = nil
	}
	s.mu.Unlock()
	if err := conn.ActivateTarget(ctx, id); err != nil {
		return fmt.Errorf("session: activating tab: %w", err)
	}
	return nil
}

// closeTab closes a tab and waits until the session saw it go.
func (s *Session) closeTab(ctx context.Context, id target.ID) error {
	conn := s.Conn()
	if conn == nil {
		return ErrNotStarted
	}
	if err := conn.CloseTarget(ctx, id); err != nil {
		return fmt.Errorf("session: closing tab: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		_, open := s.tabs[id]
		ch := s.changed
		s.mu.Unlock()
		if !open {
			return nil
		}
		select {
		case <-ch:
		case <-wait.Done():
			return fmt.Errorf("session: tab %s did not close: %w", id, wait.Err())
		}
	}
}
