package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// ErrPageUnresponsive is wrapped when a tab's renderer did not answer even
// after its script was interrupted.
var ErrPageUnresponsive = errors.New("session: the page does not respond")

// A page that keeps its main thread busy (a script that never yields, a
// loop of dialogs) answers no CDP command that needs it: without a bound,
// every evaluation, capture and input event of a step waits for its own
// timeout. The session probes such a page with a trivial evaluation, and
// when the probe gets no answer within Profile.ScriptBudget it interrupts
// the page's running script (Runtime.terminateExecution, which the renderer
// handles without its main thread) and probes once more.

// EnsureResponsive makes sure a tab ("" = the focused one) answers. It
// returns false when the page answered at once; true when its script had to
// be interrupted (noted for TakeInterrupts, reported as a BrowserError
// "ScriptInterrupted"); and an error wrapping ErrPageUnresponsive when the
// page does not answer even then. ctx bounds the whole call.
func (s *Session) EnsureResponsive(ctx context.Context, tabID string) (bool, error) {
	cs, err := s.PageSession(tabID)
	if err != nil {
		return false, err
	}
	if err := s.probe(ctx, cs); err == nil || ctx.Err() != nil || pageGone(err) || errors.Is(err, ErrNavigationPending) {
		// A pending navigation is not the page's script: interrupting
		// would stop an innocent page.
		return false, err
	}
	id := string(cs.TargetID())
	reason := fmt.Sprintf("its script kept the page busy for more than %s", s.profile.ScriptBudget)
	again := s.interruptedRecently(target.ID(id))
	if err := s.interrupt(ctx, cs, reason); err != nil {
		return true, err
	}
	if err := s.probe(ctx, cs); err != nil {
		return true, fmt.Errorf("%w: tab %s did not answer within %s after its script was interrupted: %v", ErrPageUnresponsive, id, s.profile.ScriptBudget, err)
	}
	if again {
		// Busy again right after an interrupt (a timer restarts the loop):
		// interrupting each time would cost a budget per call.
		if err := s.DisableScripts(ctx, id, "it kept the page busy again after its script was stopped"); err != nil {
			return true, err
		}
		if err := s.ReloadTab(ctx, id); err != nil {
			return true, err
		}
		s.waitLoaded(ctx, cs.TargetID(), s.profile.SameSiteLoadWait)
		if err := s.probe(ctx, cs); err != nil {
			return true, fmt.Errorf("%w: tab %s did not answer after it was reloaded without scripts: %v", ErrPageUnresponsive, id, err)
		}
	}
	return true, nil
}

// repeatWindow is how soon after an interrupt a page busy again has its
// scripts disabled.
const repeatWindow = 30 * time.Second

// interruptedRecently reports whether the tab's script was interrupted
// within repeatWindow.
func (s *Session) interruptedRecently(id target.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lastInterrupt[id]
	return ok && time.Since(t) < repeatWindow
}

// DisableScripts turns script execution off in a tab ("" = the focused
// one), for the document the caller then reloads with ReloadTab: the remedy
// for a page whose scripts hold it hostage where interrupting them does not
// help (a loop of dialogs: the renderer cancels a termination while a
// dialog is open; a timer that restarts a busy loop). Scripts stay off in
// that tab until the session navigates it to another document
// (NavigateToURL, GoBack, GoForward; a Refresh keeps them off). The reason
// is noted for the next observation (TakeInterrupts) and reported as a
// BrowserError "ScriptsDisabled". The change is sent, not awaited: a
// renderer held by the page answers nothing until the reload.
func (s *Session) DisableScripts(ctx context.Context, tabID, reason string) error {
	cs, err := s.PageSession(tabID)
	if err != nil {
		return err
	}
	id := cs.TargetID()
	if r := cs.Send(ctx, "Emulation.setScriptExecutionDisabled", map[string]bool{"value": true}); r.Err() != nil {
		return fmt.Errorf("session: disabling the scripts of tab %s: %w", shortID(string(id)), r.Err())
	}

	note := reason + "; its scripts were disabled and the page reloaded without them (navigating elsewhere turns them back on)"
	s.mu.Lock()
	if s.scriptsOff != nil {
		s.scriptsOff[id] = true
		s.interrupts[id] = append(s.interrupts[id], note)
	}
	s.mu.Unlock()
	s.log.Info("disabled a page's scripts", zap.String("target", string(id)), zap.String("reason", reason))
	if b := s.Bus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
			Type:    "ScriptsDisabled",
			Message: fmt.Sprintf("the scripts of tab %s were disabled: %s", shortID(string(id)), reason),
			Details: map[string]string{"target_id": string(id), "reason": reason},
		})
	}
	return nil
}

// ReloadTab reloads a tab ("" = the focused one) by way of about:blank:
// it navigates the tab to about:blank, then back to the URL it showed. A
// plain reload (or a navigation to a same-site URL) waits for the current
// document to let go, which a page held by its own script never does; a
// navigation to about:blank replaces it all the same (measured on Chromium
// 156). The round trip leaves an about:blank entry in the tab's history and
// loads the URL with GET. Used after DisableScripts, and after answering
// the dialog the page is blocked in. ctx bounds both navigations; the load
// of the page is not awaited.
func (s *Session) ReloadTab(ctx context.Context, tabID string) error {
	cs, err := s.PageSession(tabID)
	if err != nil {
		return err
	}
	back := s.tabURL(cs.TargetID())
	if _, err := cdpproto.Call(ctx, cs, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
		return fmt.Errorf("session: reloading tab %s: leaving the page: %w", shortID(string(cs.TargetID())), err)
	}
	if back == "" || back == "about:blank" {
		return nil
	}
	if _, err := cdpproto.Call(ctx, cs, page.Navigate, page.NavigateParams{URL: back}); err != nil {
		return fmt.Errorf("session: reloading tab %s: back to %s: %w", shortID(string(cs.TargetID())), back, err)
	}
	return nil
}

// restoreScripts turns scripts back on in a tab before the session
// navigates it to another document.
func (s *Session) restoreScripts(ctx context.Context, cs *cdp.Session) {
	id := cs.TargetID()
	s.mu.Lock()
	off := s.scriptsOff[id]
	delete(s.scriptsOff, id)
	s.mu.Unlock()
	if !off {
		return
	}
	if err := cs.Call(ctx, "Emulation.setScriptExecutionDisabled", map[string]bool{"value": false}, nil); err != nil {
		s.log.Warn("turning a tab's scripts back on", zap.String("target", string(id)), zap.Error(err))
	}
}

// Interrupt stops the script running in a target's main world (for
// example from a watchdog that sees a dialog storm), notes it for the tab's
// next observation (TakeInterrupts) and reports it as a BrowserError
// "ScriptInterrupted" with the reason.
func (s *Session) Interrupt(ctx context.Context, cs *cdp.Session, reason string) error {
	return s.interrupt(ctx, cs, reason)
}

func (s *Session) interrupt(ctx context.Context, cs *cdp.Session, reason string) error {
	ictx, cancel := context.WithTimeout(ctx, s.profile.ScriptBudget)
	defer cancel()
	err := cs.Call(ictx, "Runtime.terminateExecution", nil, nil)
	tab := string(cs.TargetID())
	s.mu.Lock()
	if s.interrupts != nil {
		s.interrupts[target.ID(tab)] = append(s.interrupts[target.ID(tab)], reason)
		s.lastInterrupt[target.ID(tab)] = time.Now()
	}
	s.mu.Unlock()
	s.log.Info("interrupted a page's script", zap.String("target", tab), zap.String("reason", reason), zap.Error(err))
	if b := s.Bus(); b != nil {
		_, _ = bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
			Type:    "ScriptInterrupted",
			Message: fmt.Sprintf("the page's script in tab %s was stopped: %s", shortID(tab), reason),
			Details: map[string]string{"target_id": tab, "reason": reason},
		})
	}
	if err != nil && pageGone(err) {
		return err
	}
	return nil
}

// TakeInterrupts returns why the scripts of a tab ("" = focused) were
// interrupted since the last call, and forgets them: the DOM watchdog tells
// the model at the next observation.
func (s *Session) TakeInterrupts(tabID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := target.ID(tabID)
	if id == "" {
		id = s.focus
	}
	r := s.interrupts[id]
	delete(s.interrupts, id)
	return r
}

// probe evaluates a constant in the page within the script budget (see
// unlessNavigating).
func (s *Session) probe(ctx context.Context, cs *cdp.Session) error {
	pctx, cancel := context.WithTimeout(ctx, s.profile.ScriptBudget)
	defer cancel()
	return s.unlessNavigating(pctx, cs.TargetID(), func(ctx context.Context) error {
		return pagejs.Evaluate(ctx, cs, "0", nil)
	})
}

// unlessNavigating runs read, a command for tab id's renderer, and gives
// it up with an error wrapping ErrNavigationPending as soon as the tab has
// a navigation without an answer (before read starts, or while it waits):
// the browser would hold read until the navigation answers, if ever.
func (s *Session) unlessNavigating(ctx context.Context, id target.ID, read func(context.Context) error) error {
	if err := s.pendingNavigation(id); err != nil {
		return err
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			// The channel is taken before the look: a navigation
			// recorded in between closes it.
			ch := s.net.changes()
			if err := s.pendingNavigation(id); err != nil {
				cancel(err)
				return
			}
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	err := read(rctx)
	close(done)
	<-stopped
	if cause := context.Cause(rctx); errors.Is(cause, ErrNavigationPending) {
		return cause
	}
	return err
}

// fingerprintResponsive reads a tab's fingerprint within the script budget,
// interrupting a page that keeps its main thread busy.
// A tab whose navigation has no answer yet is not read (see
// ErrNavigationPending).
func (s *Session) fingerprintResponsive(ctx context.Context, tabID string) (events.PageFingerprint, error) {
	var fp events.PageFingerprint
	cs, err := s.PageSession(tabID)
	if err != nil {
		return fp, err
	}
	fctx, cancel := context.WithTimeout(ctx, s.profile.ScriptBudget)
	err = s.unlessNavigating(fctx, cs.TargetID(), func(ctx context.Context) (err error) {
		fp, err = s.Fingerprint(ctx, tabID)
		return err
	})
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fp, err
	}
	if _, err := s.EnsureResponsive(ctx, tabID); err != nil {
		return fp, err
	}
	return s.Fingerprint(ctx, tabID)
}

// pendingNavigation returns an error wrapping ErrNavigationPending when
// the latest navigation of tab id has no answer yet. While it has none,
// Chromium holds the commands meant for the tab's renderer
// (Runtime.evaluate, DOM.*) until the new document is ready to commit,
// while the browser's own (Page.getNavigationHistory, Target.*) answer:
// measured on Chromium 156 with a server that never answers.
func (s *Session) pendingNavigation(id target.ID) error {
	if !s.net.navigationPending(id) {
		return nil
	}
	return fmt.Errorf("%w: tab %s", ErrNavigationPending, shortID(string(id)))
}

func shortID(id string) string {
	if len(id) > 4 {
		return id[len(id)-4:]
	}
	return id
}
