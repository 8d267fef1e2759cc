package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Dialog is a JavaScript dialog waiting for an answer.
type Dialog struct {
	Type          string // alert, confirm, prompt, beforeunload
	Message       string
	DefaultPrompt string // prompt only
	URL           string // URL of the frame that opened it
	TargetID      string // target (tab or cross-site iframe) that opened it
	FrameID       string
}

// DialogDecision is a policy's answer to a dialog. Accept false dismisses it
// (Cancel); PromptText is what a prompt returns when accepted ("" returns the
// empty string, not DefaultPrompt). Reason is for logs and the trace.
type DialogDecision struct {
	Accept     bool
	PromptText string
	Reason     string
}

// DialogPolicy decides how a dialog is answered. Decide is called from the
// popups watchdog's own goroutine while the page is blocked by the dialog;
// it must return promptly and honour ctx, which ends after
// PopupsConfig.DecisionTimeout (the dialog is then dismissed).
type DialogPolicy interface {
	Decide(ctx context.Context, d Dialog) DialogDecision
}

// DialogPolicyFunc adapts a function to DialogPolicy.
type DialogPolicyFunc func(ctx context.Context, d Dialog) DialogDecision

// Decide calls f.
func (f DialogPolicyFunc) Decide(ctx context.Context, d Dialog) DialogDecision { return f(ctx, d) }

// DefaultDialogPolicy accepts alert and beforeunload (harmless: an alert has
// one button, and refusing beforeunload would trap the agent on the page) and
// dismisses confirm and prompt, so a destructive "Are you sure?" is never
// confirmed silently. browser-use accepts confirms too; this runtime does not.
var DefaultDialogPolicy DialogPolicy = DialogPolicyFunc(popDefaultDecide)

func popDefaultDecide(_ context.Context, d Dialog) DialogDecision {
	switch d.Type {
	case "alert", "beforeunload":
		return DialogDecision{Accept: true, Reason: "default policy accepts " + d.Type}
	default:
		return DialogDecision{Accept: false, Reason: "default policy dismisses " + d.Type}
	}
}

// DefaultDialogDecisionTimeout bounds a dialog policy's decision.
const DefaultDialogDecisionTimeout = 10 * time.Second

// PopupsConfig configures the popups watchdog. The zero value is usable.
type PopupsConfig struct {
	// Policy decides each dialog. Default DefaultDialogPolicy.
	Policy DialogPolicy
	// PolicyName names the policy in DialogHandled events ("default" for
	// DefaultDialogPolicy, else "custom" unless set).
	PolicyName string
	// DecisionTimeout bounds Decide; a policy that takes longer is abandoned,
	// the dialog is dismissed and a BrowserError (DialogPolicyTimeout)
	// reports it. Default DefaultDialogDecisionTimeout.
	DecisionTimeout time.Duration
}

// Popups is the popups watchdog (name "popups"). It answers JavaScript
// dialogs (alert, confirm, prompt, beforeunload) of every tab and cross-site
// iframe through its DialogPolicy, directly from its own goroutines: a dialog
// blocks the page and the input event that opened it, so it cannot wait for
// the bus. After answering it emits DialogOpened and DialogHandled and keeps
// the dialog for TakeHandled.
//
// New windows opened by a page (window.open, target=_blank) need nothing
// here: the session attaches them as tabs and reports TabCreated.
type Popups struct {
	cfg PopupsConfig

	mu      sync.Mutex
	sess    *session.Session
	handled []events.DialogInfo
	ctx     context.Context // ends on Detach
	cancel  context.CancelFunc
	stopped bool
	wg      sync.WaitGroup // per-target consumers
	decide  sync.WaitGroup // policy calls (may outlive a timeout)
}

// NewPopups returns the popups watchdog.
func NewPopups(cfg PopupsConfig) *Popups {
	if cfg.Policy == nil {
		cfg.Policy = DefaultDialogPolicy
		if cfg.PolicyName == "" {
			cfg.PolicyName = "default"
		}
	}
	if cfg.PolicyName == "" {
		cfg.PolicyName = "custom"
	}
	if cfg.DecisionTimeout <= 0 {
		cfg.DecisionTimeout = DefaultDialogDecisionTimeout
	}
	return &Popups{cfg: cfg}
}

// Name implements session.Watchdog.
func (p *Popups) Name() string { return "popups" }

// Attach implements session.Watchdog: it installs a target hook that
// subscribes to Page.javascriptDialogOpening on every tab and cross-site
// iframe before it runs.
func (p *Popups) Attach(s *session.Session) error {
	p.mu.Lock()
	p.sess = s
	p.handled = nil
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.stopped = false
	p.mu.Unlock()
	s.AddTargetHook(p.popHook)
	return nil
}

// Detach implements session.Detacher: it stops the dialog consumers and
// waits (bounded by ctx) for policy calls still running.
func (p *Popups) Detach(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.wg.Wait()
	done := make(chan struct{})
	go func() { p.decide.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("popups: a dialog policy ignores cancellation: %w", ctx.Err())
	}
}

// TakeHandled returns the dialogs answered since the last call, oldest
// first, and forgets them. The DOM watchdog shows them to the model.
func (p *Popups) TakeHandled() []events.DialogInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.handled
	p.handled = nil
	return h
}

func (p *Popups) popHook(_ context.Context, t session.AttachedTarget) error {
	if t.Kind != session.TargetPage && t.Kind != session.TargetFrame {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.ctx == nil {
		return nil
	}
	// Subscribed while the target is paused, so a dialog opened by its first
	// script is seen. Page.enable is sent by the session.
	sub := t.Session.SubscribeEvents("Page.javascriptDialogOpening")
	p.wg.Add(1)
	go p.popConsume(p.ctx, t.Session, sub)
	return nil
}

// popConsume answers the dialogs of one target until it detaches or the
// watchdog stops.
func (p *Popups) popConsume(ctx context.Context, cs *cdp.Session, sub *cdp.Subscription) {
	defer p.wg.Done()
	defer sub.Cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				if errors.Is(sub.Err(), cdp.ErrSubscriptionOverflow) {
					// Thousands of dialogs unanswered is impossible (each
					// blocks the page); resubscribe anyway.
					sub = cs.SubscribeEvents("Page.javascriptDialogOpening")
					continue
				}
				return
			}
			var e page.EventJavascriptDialogOpening
			if err := ev.Decode(&e); err != nil {
				p.popLog().Warn("bad dialog event", zap.Error(err))
				continue
			}
			p.popHandle(ctx, cs, &e)
		}
	}
}

func (p *Popups) popLog() *zap.Logger {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess == nil {
		return zap.NewNop()
	}
	return p.sess.Logger().Named("popups")
}

func (p *Popups) popBus() *bus.Bus {
	p.mu.Lock()
	s := p.sess
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Bus()
}

func (p *Popups) popHandle(ctx context.Context, cs *cdp.Session, e *page.EventJavascriptDialogOpening) {
	d := Dialog{
		Type:          string(e.Type),
		Message:       e.Message,
		DefaultPrompt: e.DefaultPrompt,
		URL:           e.URL,
		TargetID:      string(cs.TargetID()),
		FrameID:       string(e.FrameID),
	}
	b := p.popBus()
	if b != nil {
		bus.Emit(ctx, b, events.DialogOpened, events.DialogOpenedEvent{
			TargetID: d.TargetID, FrameID: d.FrameID, Type: d.Type, Message: d.Message, URL: d.URL, DefaultPrompt: d.DefaultPrompt,
		})
	}
	dec, by, failure := p.popDecide(ctx, d)
	if d.Type != "prompt" {
		dec.PromptText = ""
	}
	// Recorded before the answer: whoever the answer unblocks (the click
	// that opened the dialog) already finds it in TakeHandled.
	p.mu.Lock()
	p.handled = append(p.handled, events.DialogInfo{Type: d.Type, Message: d.Message, URL: d.URL, Accepted: dec.Accept})
	p.mu.Unlock()

	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := cdpproto.Call(actx, cs, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: dec.Accept, PromptText: dec.PromptText})
	cancel()
	if err != nil {
		// Usually the dialog went away first (navigation, tab closed).
		p.popLog().Debug("answering dialog", zap.String("type", d.Type), zap.Error(err))
	}
	if b == nil {
		return
	}
	bus.Emit(ctx, b, events.DialogHandled, events.DialogHandledEvent{
		TargetID: d.TargetID, Type: d.Type, Message: d.Message, Accepted: dec.Accept, PromptText: dec.PromptText, DecidedBy: by,
	})
	if failure != "" {
		bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
			Type:    "DialogPolicyFailed",
			Message: failure,
			Details: map[string]string{"dialog_type": d.Type, "dialog_message": d.Message, "target_id": d.TargetID},
		})
	}
}

// popDecide runs the policy under the decision timeout. A policy that times
// out or panics dismisses the dialog; failure then says why.
func (p *Popups) popDecide(ctx context.Context, d Dialog) (dec DialogDecision, by, failure string) {
	dctx, cancel := context.WithTimeout(ctx, p.cfg.DecisionTimeout)
	defer cancel()
	type answer struct {
		dec   DialogDecision
		panic any
	}
	ch := make(chan answer, 1)
	p.decide.Add(1)
	go func() {
		defer p.decide.Done()
		defer func() {
			if r := recover(); r != nil {
				ch <- answer{panic: r}
			}
		}()
		ch <- answer{dec: p.cfg.Policy.Decide(dctx, d)}
	}()
	select {
	case a := <-ch:
		if a.panic != nil {
			return DialogDecision{Reason: "policy panicked"}, p.cfg.PolicyName + " (panic)",
				fmt.Sprintf("dialog policy %s panicked on a %s dialog: %v; dismissed", p.cfg.PolicyName, d.Type, a.panic)
		}
		return a.dec, p.cfg.PolicyName, ""
	case <-dctx.Done():
		return DialogDecision{Reason: "policy timed out"}, p.cfg.PolicyName + " (timeout)",
			fmt.Sprintf("dialog policy %s did not decide a %s dialog within %s; dismissed", p.cfg.PolicyName, d.Type, p.cfg.DecisionTimeout)
	}
}
