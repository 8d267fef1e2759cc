// Package popups is the popups watchdog: it answers the JavaScript dialogs
// (alert, confirm, prompt, beforeunload) of every tab and cross-site iframe
// of a session through a DialogPolicy, so that no dialog blocks a page.
//
// It handles no bus events: it consumes Page.javascriptDialogOpening of
// each target directly (from a target hook, subscribed before the target
// runs), because a dialog blocks its page and the input event that opened
// it, and so cannot wait for the bus. For each dialog it emits, in this
// order:
//
//  1. DialogOpened, as soon as the dialog is seen;
//  2. DialogHandled with the policy's decision, and a BrowserError
//     "DialogPolicyFailed" if the policy timed out or panicked;
//  3. then it sends the answer (Page.handleJavaScriptDialog), and emits a
//     BrowserError "DialogAnswerFailed" if that fails for another reason
//     than the dialog being gone already.
//
// DialogHandled is emitted before the answer on purpose: the answer
// unblocks the action that opened the dialog (a click), so by the time that
// action's event completes, DialogHandled is already queued on the bus
// behind it, and whoever collects closed dialogs from DialogHandled (the
// DOM watchdog, for the next observation) sees it before any later event.
//
// A page that opens dialogs in a loop never yields: every answer lets the
// next dialog open. After Config.StormLimit dialogs of one target within
// Config.StormWindow, the watchdog has the session reload the page with its
// scripts disabled (session.DisableScripts; interrupting the script does not
// work while a dialog is open), so that the storm cannot hold a step
// hostage; the model is told at the next observation.
//
// It never opens, closes or blocks windows: new windows a page opens
// (window.open, target=_blank) are attached by the session as tabs and
// reported as TabCreated.
//
// Only the dialogs of the session's own tabs are answered (and reported):
// in a browser the session connected to, a dialog of a foreign tab (the
// user's, another session's; see session.Session.Owns) is left to its
// owner.
package popups

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/follow"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// Name is the popups watchdog's name.
const Name = "popups"

// Dialog is a JavaScript dialog waiting for an answer.
type Dialog struct {
	Type          string // alert, confirm, prompt, beforeunload
	Message       string
	DefaultPrompt string // prompt only
	URL           string // URL of the frame that opened it
	// TargetID is the target whose session reported the dialog: its tab
	// (Chrome reports the dialogs of cross-site iframes on their tab).
	TargetID string
	FrameID  string // the frame that opened it
}

// DialogDecision is a policy's answer to a dialog. Accept false dismisses it
// (Cancel); PromptText is what a prompt returns when accepted ("" returns the
// empty string, not DefaultPrompt; ignored for other dialogs). Reason is for
// logs.
type DialogDecision struct {
	Accept     bool
	PromptText string
	Reason     string
}

// DialogPolicy decides how a dialog is answered. Decide is called on a
// goroutine of the popups watchdog while the page is blocked by the dialog;
// it must return promptly and honour ctx, which ends after
// Config.DecisionTimeout (the dialog is then dismissed) or when the watchdog
// stops. A Decide that ignores ctx makes the watchdog's Detach fail with an
// error naming the policy.
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
var DefaultDialogPolicy DialogPolicy = DialogPolicyFunc(defaultDecide)

func defaultDecide(_ context.Context, d Dialog) DialogDecision {
	switch d.Type {
	case "alert", "beforeunload":
		return DialogDecision{Accept: true, Reason: "default policy accepts " + d.Type}
	default:
		return DialogDecision{Accept: false, Reason: "default policy dismisses " + d.Type}
	}
}

// DefaultDialogDecisionTimeout bounds a dialog policy's decision.
const DefaultDialogDecisionTimeout = 10 * time.Second

// answerTimeout bounds Page.handleJavaScriptDialog.
const answerTimeout = 10 * time.Second

// Config configures the popups watchdog. The zero value is usable.
type Config struct {
	// Policy decides each dialog. Default DefaultDialogPolicy.
	Policy DialogPolicy
	// PolicyName names the policy in DialogHandled events, errors and
	// logs. Default "default" for DefaultDialogPolicy, else "custom".
	PolicyName string
	// DecisionTimeout bounds Decide; a policy that takes longer is abandoned,
	// the dialog is dismissed and a BrowserError (DialogPolicyFailed)
	// reports it. Default DefaultDialogDecisionTimeout.
	DecisionTimeout time.Duration
	// Logger receives debug messages. Default: the session's logger, named
	// "popups".
	Logger *zap.Logger
	// StormLimit and StormWindow bound a dialog storm (a page that loops on
	// alert() never yields, every dialog answered opening the next): after
	// StormLimit dialogs of one target within StormWindow, the page is
	// reloaded with its scripts disabled (session.DisableScripts: the model
	// is told at the next observation, a BrowserError "ScriptsDisabled"
	// reports it). Defaults
	// DefaultStormLimit and DefaultStormWindow; a negative limit disables it.
	StormLimit  int
	StormWindow time.Duration
}

// Defaults of the dialog storm bound.
const (
	DefaultStormLimit  = 20
	DefaultStormWindow = 3 * time.Second
)

// Watchdog is the popups watchdog; see the package documentation.
type Watchdog struct {
	cfg Config
	// answer sends the answer to the dialog open on cs (a seam for tests).
	answer func(ctx context.Context, cs *cdp.Session, accept bool, promptText string) error

	mu     sync.Mutex
	sess   *session.Session
	log    *zap.Logger
	group  *routine.Group         // dialog consumers and policy calls; nil before Attach
	recent map[string][]time.Time // dialog times per target, for the storm bound
}

// New returns a popups watchdog.
func New(cfg Config) *Watchdog {
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
	if cfg.StormLimit == 0 {
		cfg.StormLimit = DefaultStormLimit
	}
	if cfg.StormWindow <= 0 {
		cfg.StormWindow = DefaultStormWindow
	}
	return &Watchdog{cfg: cfg, answer: answer}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog: it installs a target hook that
// subscribes to Page.javascriptDialogOpening on every tab and cross-site
// iframe before it runs.
func (w *Watchdog) Attach(s *session.Session) error {
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	w.mu.Lock()
	w.sess, w.log, w.group = s, log, routine.New(context.Background())
	w.recent = map[string][]time.Time{}
	w.mu.Unlock()
	s.AddTargetHook(w.hook)
	return nil
}

// Detach implements session.Detacher: it stops the dialog consumers and the
// policy calls still running, waiting for them until ctx ends; a policy that
// ignores its context is then named in the error.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g := w.group
	w.mu.Unlock()
	if g == nil {
		return nil
	}
	if err := g.Stop(ctx); err != nil {
		return fmt.Errorf("popups: stopping: %w", err)
	}
	return nil
}

// hook starts the dialog consumer of a new tab or cross-site iframe
// (Chromium 156 reports an iframe's dialogs on its tab; frames are followed
// in case another version reports them on the frame's own session).
func (w *Watchdog) hook(_ context.Context, t session.AttachedTarget) error {
	if t.Kind != session.TargetPage && t.Kind != session.TargetFrame {
		return nil
	}
	w.mu.Lock()
	g, log := w.group, w.log
	w.mu.Unlock()
	if g == nil || g.Stopped() {
		return nil
	}
	cs := t.Session
	open := func() *cdp.Subscription { return cs.SubscribeEvents(page.JavascriptDialogOpening.Method) }
	// Subscribed while the target is paused, so a dialog opened by its first
	// script is seen. Page.enable is sent by the session.
	first := open()
	name := "dialogs of " + string(cs.TargetID())
	tab := tabOf(cs)
	err := g.Go(name, func(ctx context.Context) {
		// No Resync: each dialog blocks its page until answered, so a
		// target never has more than one pending and the subscription
		// cannot overflow; if it did, there is no protocol query for an
		// open dialog to re-read.
		err := follow.Run(ctx, first, open, func(ev cdp.Event) { w.onDialog(ctx, g, cs, tab, ev) },
			follow.Options{Name: "popups " + name, Logger: log})
		if err != nil {
			log.Debug("dialog consumer ended", zap.String("target", string(cs.TargetID())), zap.Error(err))
		}
	})
	if err != nil { // stopped meanwhile
		first.Cancel()
	}
	return nil
}

// tabOf returns the tab a target belongs to: itself for a tab, the
// nearest page above it for a frame.
func tabOf(cs *cdp.Session) string {
	for c := cs; c != nil; c = c.Parent() {
		if info := c.TargetInfo(); info != nil && info.Type == "page" {
			return string(c.TargetID())
		}
	}
	return ""
}

// onDialog decides and answers one dialog of a tab of the session's (tab
// is the tab cs belongs to); see the package documentation for the order
// of its events.
func (w *Watchdog) onDialog(ctx context.Context, g *routine.Group, cs *cdp.Session, tab string, ev cdp.Event) {
	w.mu.Lock()
	s, log := w.sess, w.log
	w.mu.Unlock()
	var e page.EventJavascriptDialogOpening
	if err := ev.Decode(&e); err != nil {
		log.Warn("undecodable dialog event", zap.Error(err))
		return
	}
	if tab != "" && !s.Owns(tab) {
		// Asked when the dialog opens: a tab the session adopted or
		// created after attaching it is its own by then.
		log.Debug("leaving a dialog of a foreign tab to its owner", zap.String("target", tab), zap.String("type", string(e.Type)))
		return
	}
	d := Dialog{
		Type:          string(e.Type),
		Message:       e.Message,
		DefaultPrompt: e.DefaultPrompt,
		URL:           e.URL,
		TargetID:      string(cs.TargetID()),
		FrameID:       string(e.FrameID),
	}
	b := s.Bus()
	if b != nil {
		bus.Emit(ctx, b, events.DialogOpened, events.DialogOpenedEvent{
			TargetID: d.TargetID, FrameID: d.FrameID, Type: d.Type, Message: d.Message, URL: d.URL, DefaultPrompt: d.DefaultPrompt,
		})
	}
	dec, by, failure := w.decide(ctx, g, d)
	if ctx.Err() != nil {
		return // stopping: the bus is closed and the connection closing
	}
	if d.Type != "prompt" {
		dec.PromptText = ""
	}
	details := map[string]string{"watchdog": Name, "dialog_type": d.Type, "dialog_message": d.Message, "target_id": d.TargetID}
	// Emitted before the answer: whoever the answer unblocks (the action
	// that opened the dialog) completes after this is queued.
	if b != nil {
		bus.Emit(ctx, b, events.DialogHandled, events.DialogHandledEvent{
			TargetID: d.TargetID, Type: d.Type, Message: d.Message, URL: d.URL, Accepted: dec.Accept, PromptText: dec.PromptText, DecidedBy: by,
		})
	}
	if failure != "" && b != nil {
		bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{Type: "DialogPolicyFailed", Message: failure, Details: details})
	}
	log.Debug("answering dialog", zap.String("type", d.Type), zap.Bool("accept", dec.Accept), zap.String("reason", dec.Reason))

	// A storm: every answer lets the next dialog open, and interrupting the
	// script does not help (the renderer cancels a termination while a
	// dialog is open). The page is reloaded without scripts: scripts off
	// before this answer, the reload after it (a navigation waits for the
	// open dialog to be answered; measured on Chromium 156).
	storm := w.storm(d.TargetID)
	if storm > 0 {
		why := fmt.Sprintf("it opened %d dialogs within %s", storm, w.cfg.StormWindow)
		if ierr := s.DisableScripts(ctx, d.TargetID, why); ierr != nil {
			log.Debug("stopping a dialog storm", zap.Error(ierr))
			storm = 0
		}
	}
	actx, cancel := context.WithTimeout(ctx, answerTimeout)
	err := w.answer(actx, cs, dec.Accept, dec.PromptText)
	cancel()
	if storm > 0 {
		// On its own goroutine: this consumer keeps answering the dialogs
		// still coming while the tab leaves the page.
		_ = g.Go("reload after a dialog storm on "+d.TargetID, func(ctx context.Context) {
			rctx, cancel := context.WithTimeout(ctx, answerTimeout)
			defer cancel()
			if rerr := s.ReloadTab(rctx, d.TargetID); rerr != nil {
				log.Debug("reloading after a dialog storm", zap.Error(rerr))
			}
		})
	}
	switch {
	case err == nil:
	case ctx.Err() != nil || errors.Is(err, cdp.ErrClosed):
		// Stopping.
	case dialogGone(err):
		// The dialog went away first (navigation, tab closed or crashed).
		log.Debug("dialog gone before its answer", zap.String("type", d.Type), zap.Error(err))
	case b != nil:
		verb := "accepting"
		if !dec.Accept {
			verb = "dismissing"
		}
		bus.Emit(ctx, b, events.BrowserError, events.BrowserErrorEvent{
			Type:    "DialogAnswerFailed",
			Message: fmt.Sprintf("%s a %s dialog (%q) failed: %v; the page may still be blocked by it", verb, d.Type, d.Message, err),
			Details: details,
		})
	}
}

// storm records a dialog of target and returns how many it opened within
// the storm window once that reaches the limit (and forgets them), else 0.
func (w *Watchdog) storm(target string) int {
	if w.cfg.StormLimit < 0 {
		return 0
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recent == nil {
		return 0
	}
	times := append(w.recent[target], now)
	for len(times) > 0 && now.Sub(times[0]) > w.cfg.StormWindow {
		times = times[1:]
	}
	if len(times) >= w.cfg.StormLimit {
		delete(w.recent, target)
		return len(times)
	}
	w.recent[target] = times
	return 0
}

// answer sends Page.handleJavaScriptDialog.
func answer(ctx context.Context, cs *cdp.Session, accept bool, promptText string) error {
	_, err := cdpproto.Call(ctx, cs, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: promptText})
	return err
}

// dialogGone reports whether answering failed because the dialog no longer
// exists: Chrome has none showing, or its target detached or crashed.
func dialogGone(err error) bool {
	var pe *cdp.ProtocolError
	if errors.As(err, &pe) && strings.Contains(pe.Message, "No dialog is showing") {
		return true
	}
	return errors.Is(err, cdp.ErrTargetDetached) || errors.Is(err, cdp.ErrTargetCrashed)
}

// decide runs the policy on a goroutine of g under the decision timeout. A
// policy that times out or panics dismisses the dialog; failure then says
// why. The policy's context ends when decide returns.
func (w *Watchdog) decide(ctx context.Context, g *routine.Group, d Dialog) (dec DialogDecision, by, failure string) {
	name := w.cfg.PolicyName
	dctx, cancel := context.WithTimeout(ctx, w.cfg.DecisionTimeout)
	defer cancel()
	type result struct {
		dec   DialogDecision
		panic any
	}
	ch := make(chan result, 1)
	if err := g.Go("dialog policy "+name, func(context.Context) {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{panic: r}
			}
		}()
		ch <- result{dec: w.cfg.Policy.Decide(dctx, d)}
	}); err != nil {
		return DialogDecision{Reason: "watchdog stopping"}, name, ""
	}
	select {
	case r := <-ch:
		if r.panic != nil {
			return DialogDecision{Reason: "policy panicked"}, name + " (panic)",
				fmt.Sprintf("dialog policy %s panicked on a %s dialog: %v; dismissed", name, d.Type, r.panic)
		}
		return r.dec, name, ""
	case <-dctx.Done():
		return DialogDecision{Reason: "policy timed out"}, name + " (timeout)",
			fmt.Sprintf("dialog policy %s did not decide a %s dialog within %s; dismissed", name, d.Type, w.cfg.DecisionTimeout)
	}
}
