package session

import (
	"context"
	"errors"
	"fmt"

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
	if err := s.probe(ctx, cs); err == nil || ctx.Err() != nil || pageGone(err) {
		return false, err
	}
	id := string(cs.TargetID())
	reason := fmt.Sprintf("its script kept the page busy for more than %s", s.profile.ScriptBudget)
	if err := s.interrupt(ctx, cs, reason); err != nil {
		return true, err
	}
	if err := s.probe(ctx, cs); err != nil {
		return true, fmt.Errorf("%w: tab %s did not answer within %s after its script was interrupted: %v", ErrPageUnresponsive, id, s.profile.ScriptBudget, err)
	}
	return true, nil
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

// probe evaluates a constant in the page within the script budget.
func (s *Session) probe(ctx context.Context, cs *cdp.Session) error {
	pctx, cancel := context.WithTimeout(ctx, s.profile.ScriptBudget)
	defer cancel()
	return pagejs.Evaluate(pctx, cs, "0", nil)
}

// fingerprintResponsive reads a tab's fingerprint within the script budget,
// interrupting a page that keeps its main thread busy.
func (s *Session) fingerprintResponsive(ctx context.Context, tabID string) (events.PageFingerprint, error) {
	fctx, cancel := context.WithTimeout(ctx, s.profile.ScriptBudget)
	fp, err := s.Fingerprint(fctx, tabID)
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fp, err
	}
	if _, err := s.EnsureResponsive(ctx, tabID); err != nil {
		return fp, err
	}
	return s.Fingerprint(ctx, tabID)
}

func shortID(id string) string {
	if len(id) > 4 {
		return id[len(id)-4:]
	}
	return id
}
