package session

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// HandlerName is the name of the session's own handlers on the bus. A policy
// handler that must run before navigation registers with
// bus.Before(session.HandlerName) or bus.First().
const HandlerName = "session"

// registerHandlers registers the session's own handlers: navigation, history,
// tabs. They run after any guard placed before them.
func (s *Session) registerHandlers(b *bus.Bus) error {
	return errors.Join(
		handle(b, events.NavigateToURL, s.onNavigate),
		handle(b, events.GoBack, func(ctx context.Context, _ events.GoBackEvent) (events.HistoryResult, error) {
			return s.onHistory(ctx, -1)
		}),
		handle(b, events.GoForward, func(ctx context.Context, _ events.GoForwardEvent) (events.HistoryResult, error) {
			return s.onHistory(ctx, +1)
		}),
		handle(b, events.Refresh, s.onRefresh),
		handle(b, events.SwitchTab, s.onSwitchTab),
		handle(b, events.CloseTab, s.onCloseTab),
		handle(b, events.BrowserReconnecting, func(context.Context, events.BrowserReconnectingEvent) (events.None, error) {
			s.setHealth(func() { s.reconnecting = true })
			return events.None{}, nil
		}),
		handle(b, events.BrowserLost, func(_ context.Context, ev events.BrowserLostEvent) (events.None, error) {
			s.setHealth(func() { s.reconnecting, s.lostFor = false, ev.Reason })
			return events.None{}, nil
		}),
	)
}

// setHealth changes the health fields and wakes Ready.
func (s *Session) setHealth(f func()) {
	s.mu.Lock()
	f()
	s.notifyLocked()
	s.mu.Unlock()
}

func handle[E, R any](b *bus.Bus, k bus.Kind[E, R], h func(context.Context, E) (R, error)) error {
	_, err := bus.Handle(b, k, HandlerName, h)
	return err
}

// PhaseFunc receives how long one phase of an action took; see WithPhases.
type PhaseFunc func(phase string, d time.Duration)

type phasesKey struct{}

// WithPhases returns a context under which the session's action handlers
// (and the action watchdog's) report their phases to f: "evidence" (one
// evidence read), "settle" (the second look of an action with no visible
// effect), "requests" (the wait for the requests the action sent), "load"
// (the wait for a document the action navigated to), "navigate" (the
// Page.navigate round trip), "ready" (the wait for the navigated page),
// and the watchdog's own. It is for measurement (the per-action phase
// benchmark); f runs on the handler's goroutine and must be quick and
// safe for concurrent use.
func WithPhases(ctx context.Context, f PhaseFunc) context.Context {
	return context.WithValue(ctx, phasesKey{}, f)
}

// Phase reports to the PhaseFunc of ctx (see WithPhases), if any, that
// phase took the time since start.
func Phase(ctx context.Context, phase string, start time.Time) {
	if f, _ := ctx.Value(phasesKey{}).(PhaseFunc); f != nil {
		f(phase, time.Since(start))
	}
}

func (s *Session) evidence(ctx context.Context) events.Evidence {
	defer Phase(ctx, "evidence", time.Now())
	// The mark comes first: a request the action sends after this read
	// is the action's.
	s.net.caughtUp(ctx, 20*time.Millisecond)
	mark := s.net.mark()
	s.mu.Lock()
	// Only the session's own tabs count: a tab the user or another session
	// opens meanwhile is not this action's new tab.
	ev := events.Evidence{FocusedTarget: string(s.focus), TabCount: len(s.ownTabsLocked()), RequestMark: mark}
	s.mu.Unlock()
	if fp, err := s.fingerprintResponsive(ctx, ""); err == nil {
		ev.URL, ev.Fingerprint = fp.URL, fp.String()
	} else {
		ev.URL = s.tabURL(target.ID(ev.FocusedTarget))
	}
	return ev
}

func (s *Session) onNavigate(ctx context.Context, ev events.NavigateToURLEvent) (events.NavigateResult, error) {
	var res events.NavigateResult
	switch ev.WaitUntil {
	case "", events.WaitLoad, events.WaitDOMContentLoaded, events.WaitNetworkIdle, events.WaitCommit:
	default:
		return res, fmt.Errorf("%w: WaitUntil %q (want load, domcontentloaded, networkidle or commit)", ErrNavigation, ev.WaitUntil)
	}
	if ev.Timeout < 0 {
		return res, fmt.Errorf("%w: negative Timeout %v", ErrNavigation, ev.Timeout)
	}
	before := s.evidence(ctx)
	id := target.ID(before.FocusedTarget)
	if ev.NewTab {
		nid, err := s.openTab(ctx)
		if err != nil {
			return res, err
		}
		if err := s.switchTab(ctx, nid); err != nil {
			return res, err
		}
		emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(nid), URL: "about:blank"})
		id = nid
	}
	if id == "" {
		return res, ErrNoTab
	}
	emit(ctx, s, events.NavigationStarted, events.NavigationStartedEvent{TargetID: string(id), URL: ev.URL})
	out, err := s.navigateTab(ctx, id, ev.URL, ev.WaitUntil, ev.Timeout)
	complete := events.NavigationCompleteEvent{TargetID: string(id), URL: out.URL, LoadingStatus: out.Loading}
	if err != nil {
		complete.ErrorMessage = err.Error()
	}
	// Reported, not awaited: a slow or stuck report handler must not hold
	// the navigation; the bus runs it before any event dispatched later.
	emit(ctx, s, events.NavigationComplete, complete)
	res.TargetID, res.URL = string(id), out.URL
	res.Outcome = s.outcome(ctx, before, err)
	switch {
	case err != nil:
	case out.Download:
		res.Outcome.Verdict, res.Outcome.Detail = events.VerdictDownload, "the URL started a download"
	case out.Loading != "":
		res.Outcome.Detail = out.Loading
	}
	return res, actionError(events.NavigateToURL.Name, res.Outcome, res.Outcome.RequestErr(err))
}

// actionError makes a failed navigation an *events.ActionError carrying its
// outcome (verdict failed, the evidence before and after), as the failure
// of every action is; nil stays nil.
func actionError(kind string, o events.ActionOutcome, err error) error {
	if err == nil {
		return nil
	}
	return &events.ActionError{Action: kind, Outcome: o, Err: err}
}

func (s *Session) onHistory(ctx context.Context, delta int) (events.HistoryResult, error) {
	before := s.evidence(ctx)
	out, err := s.historyStep(ctx, target.ID(before.FocusedTarget), delta)
	res := events.HistoryResult{Outcome: s.outcome(ctx, before, err)}
	if err == nil && out.Loading != "" {
		res.Outcome.Detail = out.Loading
	}
	kind := events.GoBack.Name
	if delta > 0 {
		kind = events.GoForward.Name
	}
	return res, actionError(kind, res.Outcome, res.Outcome.RequestErr(err))
}

func (s *Session) onRefresh(ctx context.Context, _ events.RefreshEvent) (events.HistoryResult, error) {
	before := s.evidence(ctx)
	out, err := s.reloadTab(ctx, target.ID(before.FocusedTarget))
	res := events.HistoryResult{Outcome: s.outcome(ctx, before, err)}
	if err == nil && res.Outcome.Verdict == events.VerdictNoChange {
		// A reload replaces the document even when it looks the same.
		res.Outcome.Verdict = events.VerdictChanged
	}
	if err == nil && out.Loading != "" {
		res.Outcome.Detail = out.Loading
	}
	return res, actionError(events.Refresh.Name, res.Outcome, res.Outcome.RequestErr(err))
}

func (s *Session) onSwitchTab(ctx context.Context, ev events.SwitchTabEvent) (events.SwitchTabResult, error) {
	var id target.ID
	if ev.TargetID == "" {
		s.mu.Lock()
		if own := s.ownTabsLocked(); len(own) > 0 {
			id = own[len(own)-1]
		}
		s.mu.Unlock()
		if id == "" {
			return events.SwitchTabResult{}, ErrNoTab
		}
	} else {
		full, err := s.ResolveTab(ev.TargetID)
		if err != nil {
			return events.SwitchTabResult{}, err
		}
		id = target.ID(full)
	}
	if err := s.switchTab(ctx, id); err != nil {
		return events.SwitchTabResult{}, err
	}
	url := s.tabURL(id)
	emit(ctx, s, events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: string(id), URL: url})
	return events.SwitchTabResult{TargetID: string(id), URL: url}, nil
}

func (s *Session) onCloseTab(ctx context.Context, ev events.CloseTabEvent) (events.None, error) {
	full, err := s.ResolveTab(ev.TargetID)
	if err != nil {
		return events.None{}, err
	}
	return events.None{}, s.closeTab(ctx, target.ID(full))
}

// Outcome compares the evidence taken before an action with the page now
// and names the verdict. Action watchdogs use it so that every action's
// verdict is decided the same way. A non-nil err makes the verdict failed.
//
// It also lists the requests sent since before was read (Requests, at
// most events.MaxOutcomeRequests), after waiting, at most
// Profile.RequestWait, for the page's own documents, XHRs and fetches
// among them to be answered; an action that sent none waits no longer
// than before. Requests sent after that wait ended are not listed: they
// belong to no action. A write request of the page's own among those
// (POST, PUT, PATCH, DELETE; see events.Request.Own) that answered 4xx
// or 5xx, failed on the network or was blocked makes the verdict failed,
// its Detail naming the request and its answer; the action then returns
// [RequestError]'s error. A write still unanswered, a document that
// answered an error and a navigation still unanswered are named in
// Detail without changing the verdict; while the focused tab's
// navigation has no answer its document cannot be read (see
// ErrNavigationPending): the verdict then compares URL, focus and tabs
// only, and After.Fingerprint is empty. Third-party requests (a tracker's,
// a cross-site poll) are listed and decide nothing. A zero
// before.RequestMark lists no requests.
func (s *Session) Outcome(ctx context.Context, before events.Evidence, err error) events.ActionOutcome {
	return s.outcome(ctx, before, err)
}

// Evidence reads the focused tab's evidence (URL, focus, fingerprint, tabs)
// for an action's before/after comparison.
func (s *Session) Evidence(ctx context.Context) events.Evidence { return s.evidence(ctx) }

func (s *Session) outcome(ctx context.Context, before events.Evidence, err error) events.ActionOutcome {
	after := s.evidence(ctx)
	// unread: the tab's document could not be read, its navigation having
	// no answer yet (ErrNavigationPending); the document shown is still
	// the one before, so its unread fingerprint decides nothing.
	unread := func() bool {
		return after.Fingerprint == "" && after.FocusedTarget == before.FocusedTarget &&
			s.pendingNavigation(target.ID(after.FocusedTarget)) != nil
	}
	same := func() bool {
		return after.URL == before.URL && (after.Fingerprint == before.Fingerprint || unread()) && after.TabCount == before.TabCount
	}
	if err == nil && same() {
		// A form submit or a script may start its navigation just after the
		// input event returned: look once more before calling it no change.
		after = s.settle(ctx, before)
	}
	// end: the last request the outcome lists. Requests sent after the
	// wait ended belong to no action.
	var end uint64
	if err == nil {
		t0 := time.Now()
		deadline := t0.Add(s.profile.RequestWait)
		var held bool
		end, held = s.awaitRequests(ctx, before.RequestMark, deadline)
		Phase(ctx, "requests", t0)
		if held {
			// The answers may have changed the page (a script showed
			// them, a form's POST committed its result): look again, and
			// once more after a pause if it still looks the same; then
			// wait, in what is left of the bound, for the requests sent
			// meanwhile.
			after = s.evidence(ctx)
			if same() {
				after = s.settle(ctx, before)
			}
			t1 := time.Now()
			end, _ = s.awaitRequests(ctx, before.RequestMark, deadline)
			Phase(ctx, "requests", t1)
		}
	}
	if err == nil && after.URL != before.URL && after.FocusedTarget == before.FocusedTarget {
		// Report the page the action led to, not a document still loading.
		t0 := time.Now()
		s.waitLoaded(ctx, target.ID(after.FocusedTarget), s.loadWait(before.URL, after.URL))
		Phase(ctx, "load", t0)
		after = s.evidence(ctx)
	}
	o := events.ActionOutcome{Before: before, After: after}
	switch {
	case err != nil:
		o.Verdict, o.Detail = events.VerdictFailed, err.Error()
	case after.TabCount > before.TabCount:
		o.Verdict = events.VerdictNewTab
		o.Detail = fmt.Sprintf("%d new tab(s) opened", after.TabCount-before.TabCount)
	case after.FocusedTarget != before.FocusedTarget || after.URL != before.URL:
		o.Verdict = events.VerdictNavigated
	case after.Fingerprint != before.Fingerprint && !unread():
		o.Verdict = events.VerdictChanged
	default:
		o.Verdict = events.VerdictNoChange
	}
	if before.RequestMark > 0 {
		if err != nil {
			s.net.caughtUp(ctx, 20*time.Millisecond)
			end = s.net.mark()
		}
		o.Requests, o.RequestsOmitted = s.requestsSince(before.RequestMark, end)
		networkVerdict(&o, err)
	}
	return o
}

// pageGone reports an error after which asking the page again is useless:
// its target crashed or detached, or the connection is lost or closed.
func pageGone(err error) bool {
	return errors.Is(err, cdp.ErrConnectionLost) || errors.Is(err, cdp.ErrClosed) ||
		errors.Is(err, cdp.ErrTargetCrashed) || errors.Is(err, cdp.ErrTargetDetached)
}

// settleDelay bounds how long an action with no visible effect is given
// to start a navigation before its verdict is no_change (see settle).
const settleDelay = 150 * time.Millisecond

// renderTurnJS resolves after the page painted a frame and ran one more
// task.
//
//go:embed js/render_turn.js
var renderTurnJS string

// settle is the second look of an action that changed nothing visible
// yet: it returns the evidence once the action can no longer be starting
// a navigation, settleDelay at most after it began.
//
// The action's input was handled when its CDP call returned; what it set
// off within the page runs in tasks queued then: a form's submission, a
// handler's zero-delay timer, promise callbacks. So when the page has
// painted a frame and run one more task (renderTurnJS) and the tab's main
// frame signalled no navigation since the evidence before (the Page
// events netLog records: a renderer-initiated navigation is signalled by
// the renderer before it answers the probe), nothing this action did is
// still going to navigate, and the look is taken at once (about a frame,
// against the fixed 150 ms it was). A navigation signalled is followed
// until its document request is recorded (the outcome's request wait
// then holds for its answer), settleDelay at most. Without request
// recording (Profile.NoRequestEvidence) there are no signals to trust,
// and when the page does not answer the probe within settleDelay (a
// dialog holds it, a busy script), the look is taken after settleDelay,
// as before. The price: a navigation a handler starts on a timer of its
// own (setTimeout with a delay beyond the probe's frame) was this
// action's verdict when it started within 150 ms and is not now; the next
// observation shows the new page. A timer cannot be seen from outside
// the page without patching its setTimeout, which pages can detect.
func (s *Session) settle(ctx context.Context, before events.Evidence) events.Evidence {
	t0 := time.Now()
	bound := t0.Add(settleDelay)
	id := target.ID(before.FocusedTarget)
	wait := func() {
		t := time.NewTimer(time.Until(bound))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	cs, err := s.PageSession(string(id))
	switch {
	case err != nil || s.profile.NoRequestEvidence || before.RequestMark == 0:
		wait()
	default:
		answered := s.renderTurn(ctx, cs, id, before.RequestMark, bound)
		s.net.caughtUp(ctx, 20*time.Millisecond)
		switch {
		case s.net.navigationSince(id, before.RequestMark):
			s.awaitDocument(ctx, id, before.RequestMark, bound)
		case !answered:
			wait()
		}
	}
	Phase(ctx, "settle", t0)
	return s.evidence(ctx)
}

// renderTurn runs renderTurnJS in tab id until bound; it reports whether
// the page answered. It gives up early, answering false, when the tab
// signals a navigation after mark: a navigating page does not answer
// until its document is replaced.
func (s *Session) renderTurn(ctx context.Context, cs *cdp.Session, id target.ID, mark uint64, bound time.Time) bool {
	defer Phase(ctx, "settle_probe", time.Now())
	s.net.caughtUp(ctx, 20*time.Millisecond)
	if s.net.navigationSince(id, mark) {
		return false
	}
	probe, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	answer := make(chan error, 1)
	go func() { answer <- pagejs.Evaluate(probe, cs, renderTurnJS, nil) }()
	for {
		ch := s.net.changes()
		if s.net.navigationSince(id, mark) {
			cancel()
			<-answer // the call returns at once when cancelled
			return false
		}
		select {
		case err := <-answer:
			return err == nil
		case <-ch:
		}
	}
}

// awaitDocument waits, until bound, for a navigation request of tab id
// to be recorded after mark.
func (s *Session) awaitDocument(ctx context.Context, id target.ID, mark uint64, bound time.Time) {
	defer Phase(ctx, "settle_document", time.Now())
	t := time.NewTimer(time.Until(bound))
	defer t.Stop()
	for {
		ch := s.net.changes()
		if s.net.documentSince(id, mark) {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitLoaded waits, at most bound, until the tab's document has loaded
// (readyState complete). It reports nothing: a page still loading then is
// observed as such by the next BrowserStateRequest.
func (s *Session) waitLoaded(ctx context.Context, id target.ID, bound time.Duration) {
	cs, err := s.PageSession(string(id))
	if err != nil {
		return
	}
	wait, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		var state string
		err := pagejs.Evaluate(wait, cs, "document.readyState", &state)
		if err == nil && state == "complete" || pageGone(err) {
			return
		}
		select {
		case <-wait.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
