package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
)

// HumanHandler hands the browser to a person and waits for them. The
// agent calls Handoff when the model asks for a person (the request_human
// action) or a hand-off policy asks for one (a CAPTCHA frame, a login
// wall), with the run paused: no model call and no action runs until
// Handoff returns. ctx carries Settings.HumanTimeout; a handler returns
// when the person says they are done, or with ctx's error when it ends.
// The agent then observes the page afresh.
//
// Implementations tell the person where to look (a live view URL, a
// headful window) and must never record what the person types. The CLI's
// default prints a live-view URL and waits for Enter; the MCP server asks
// the client by elicitation.
//
// The contract:
//   - Handoff must return promptly once ctx is done: the agent cannot
//     abandon a handler that ignores it, and the run waits for it.
//   - One Agent or Driver calls it sequentially; a handler shared between
//     agents may be called concurrently and must be safe for that, or fail
//     the second call (liveview.ErrBusy does).
//   - It runs while the Driver's turn is held: calling the same Driver's
//     Do, State or Close from inside blocks until ctx ends.
//   - An error wins over Declined. ctx's error at the deadline is reported
//     as ErrHumanTimeout; ErrNoHuman (nobody could be reached) is reported
//     as such; any other error reaches the model as "the hand-off to a
//     person failed: ..."; a panic becomes an error.
//   - Note reaches the model verbatim (shortened to 1000 bytes), scrubbed
//     only of Settings.SensitiveData values; Via is free text for the
//     trace.
type HumanHandler interface {
	Handoff(ctx context.Context, req HumanRequest) (HumanResponse, error)
}

// HumanHandlerFunc adapts a function to HumanHandler.
type HumanHandlerFunc func(ctx context.Context, req HumanRequest) (HumanResponse, error)

// Handoff calls f.
func (f HumanHandlerFunc) Handoff(ctx context.Context, req HumanRequest) (HumanResponse, error) {
	return f(ctx, req)
}

// HumanRequest is what the person is asked to do.
type HumanRequest struct {
	// Reason says why a person is needed, in the model's or the policy's
	// words ("solve the CAPTCHA", "enter the 2FA code sent to your phone").
	Reason string
	// By is who asked: "model" for the request_human action (a Driver's
	// caller's too), "initial" for one among Settings.InitialActions, or
	// "policy:<name>" for a hand-off policy.
	By string
	// Step is the step the hand-off happens in.
	Step int
	// URL, Title and TabID are the focused page when the hand-off began.
	URL, Title, TabID string
	// Deadline is when the agent stops waiting (zero: no deadline).
	Deadline time.Time
}

// HumanResponse is the person's answer.
type HumanResponse struct {
	// Note is what the person chose to tell the model ("logged in as ada");
	// it is shown to the model and recorded. Never the person's keystrokes.
	Note string
	// Declined reports that the person will not do it: the model is told so.
	Declined bool
	// Via names how the person worked ("live view", "headful window",
	// "elicitation"), for the trace.
	Via string
}

// ErrNoHuman is returned (to the model, as the action's error) when a
// person is asked for but no HumanHandler is configured. A handler returns
// it (wrapped) when it cannot reach anyone (an MCP client without
// elicitation): the model is told no person could be reached.
var ErrNoHuman = errors.New("agent: no person is available to hand the browser to")

// ErrHumanTimeout is wrapped when the person did not finish within
// Settings.HumanTimeout.
var ErrHumanTimeout = errors.New("agent: the person did not finish in time")

// A hand-off's reason and the person's note are shortened to these many
// bytes: both reach every later prompt through the history.
const (
	maxHandoffReason = 500
	maxHandoffNote   = 1000
)

// DefaultHumanTimeout is Settings.HumanTimeout's default.
const DefaultHumanTimeout = 10 * time.Minute

// HandoffPolicy decides, on each step's fresh observation, whether the page
// needs a person before the model sees it (a CAPTCHA, a login wall). The
// agent asks every policy in Settings.HandoffPolicies in order after the
// observation and before the model call; the first reason wins.
type HandoffPolicy interface {
	// Name is the policy's short name: the hand-off's By is
	// "policy:"+Name.
	Name() string
	// Check returns why a person is needed on this page, or "". It must
	// be quick and must not keep st. A panic is recovered: the page is
	// treated as needing no one and the model is told the policy failed.
	Check(st *events.BrowserState) string
}

// CaptchaWidget recognises one kind of CAPTCHA by the URL of the frame it
// is drawn in.
type CaptchaWidget struct {
	// Name is how the model and the person are told ("reCAPTCHA").
	Name string
	// Hosts are the hosts serving the widget's frame: an exact host, or
	// ".example.com" for it and every subdomain.
	Hosts []string
	// Paths are path prefixes of the widget's frame URL.
	Paths []string
}

// DefaultCaptchaWidgets returns the widgets CaptchaPolicy knows by default:
// reCAPTCHA (v2 checkbox and challenge, enterprise), hCaptcha and
// Cloudflare Turnstile / the Cloudflare challenge.
func DefaultCaptchaWidgets() []CaptchaWidget {
	return []CaptchaWidget{
		{Name: "reCAPTCHA", Hosts: []string{".google.com", ".recaptcha.net"}, Paths: []string{"/recaptcha/api2/anchor", "/recaptcha/api2/bframe", "/recaptcha/enterprise/anchor", "/recaptcha/enterprise/bframe"}},
		{Name: "hCaptcha", Hosts: []string{".hcaptcha.com"}, Paths: []string{"/captcha/"}},
		{Name: "Cloudflare Turnstile", Hosts: []string{"challenges.cloudflare.com"}, Paths: []string{"/cdn-cgi/challenge-platform/", "/turnstile/"}},
	}
}

// CaptchaPolicy hands the browser to a person when the page shows a
// CAPTCHA: a visible frame whose URL is a known widget's (an invisible
// reCAPTCHA, size=invisible, is left alone: nobody can solve it), or
// Cloudflare's "Just a moment..." interstitial. It is the default hand-off
// policy when Settings.Human is set.
type CaptchaPolicy struct {
	// Widgets are the widgets recognised; nil means DefaultCaptchaWidgets.
	Widgets []CaptchaWidget
	// AlsoHosts are hosts accepted for every widget besides its own: a
	// proxy that re-hosts the widgets, or a test's loopback server.
	AlsoHosts []string
}

// Name implements HandoffPolicy: "captcha".
func (CaptchaPolicy) Name() string { return "captcha" }

// Check implements HandoffPolicy.
func (p CaptchaPolicy) Check(st *events.BrowserState) string {
	if st == nil {
		return ""
	}
	widgets := p.Widgets
	if widgets == nil {
		widgets = DefaultCaptchaWidgets()
	}
	for _, f := range st.Frames {
		if !f.Visible {
			continue
		}
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		if u.Query().Get("size") == "invisible" {
			continue
		}
		host := strings.ToLower(u.Hostname())
		for _, w := range widgets {
			if !hostIn(host, w.Hosts) && !hostIn(host, p.AlsoHosts) {
				continue
			}
			for _, pre := range w.Paths {
				if strings.HasPrefix(u.Path, pre) {
					return fmt.Sprintf("the page shows a %s challenge", w.Name)
				}
			}
		}
	}
	if strings.TrimSpace(st.Title) == "Just a moment..." && strings.Contains(st.DOMText, "Verify you are human") {
		return "the page shows Cloudflare's human check"
	}
	return ""
}

func hostIn(host string, hosts []string) bool {
	for _, h := range hosts {
		h = strings.ToLower(h)
		if strings.HasPrefix(h, ".") {
			if host == h[1:] || strings.HasSuffix(host, h) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// HumanParams are request_human's parameters.
type HumanParams struct {
	Reason string `json:"reason"`
}

// humanHandoff is request_human's Run: the model asks for a person.
func humanHandoff(ctx context.Context, ac *ActionContext, p HumanParams) (ActionResult, error) {
	if strings.TrimSpace(p.Reason) == "" {
		return ActionResult{}, fmt.Errorf("%w: request_human needs a reason saying what the person should do", ErrBadParams)
	}
	if err := ctx.Err(); err != nil {
		return ActionResult{}, err
	}
	if ac.agent == nil {
		return ActionResult{}, ErrNoHuman
	}
	by := "model"
	if ac.agent.inInitial {
		by = "initial" // an InitialAction, not the model, asked
	}
	h, err := ac.agent.handoff(ctx, by, p.Reason, ac.BrowserState)
	if err != nil {
		return ActionResult{WantScreenshot: h != nil}, err
	}
	return ActionResult{Text: handoffText(h), WantScreenshot: true}, nil
}

// handoff hands the browser to a person and records it in the step in
// progress. It returns the record (nil when no hand-off happened: no
// handler) and the error the model reads: ErrNoHuman, ErrHumanTimeout
// wrapped, or the run's cancellation.
//
// The person's time is not the step's: the handler's context derives from
// the Run's, bounded by HumanTimeout alone, and the step's deadline is not
// held against the step when it passes during the hand-off (request_human
// ends the batch; a policy hand-off restarts the step's clock).
func (a *Agent) handoff(stepCtx context.Context, by, reason string, st *events.BrowserState) (*Handoff, error) {
	reason = shorten(a.secrets.scrub(strings.TrimSpace(reason)), maxHandoffReason)
	h := &Handoff{By: by, Reason: reason}
	before := a.pageNow(stepCtx, st)
	h.URLBefore = a.secrets.scrub(before.URL)
	if a.set.Human == nil {
		h.Error = ErrNoHuman.Error()
		a.recordHandoff(*h)
		return nil, ErrNoHuman
	}
	parent := a.runCtx
	if parent == nil {
		parent = stepCtx
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(parent, a.set.HumanTimeout)
	defer cancel()
	deadline, _ := hctx.Deadline()
	req := HumanRequest{Reason: reason, By: by, Step: a.curStep, URL: h.URLBefore, Title: a.secrets.scrub(before.title), TabID: a.browser.FocusedTab(), Deadline: deadline}
	start := time.Now()
	if !strings.HasPrefix(by, "policy:") && a.handoffFrom.IsZero() {
		// request_human ends the batch: nothing of the step runs on its
		// context after this (a policy hand-off restarts the clock instead).
		a.handoffFrom = start
	}
	a.log.Info("agent: handing the browser to a person", zap.Int("step", a.curStep), zap.String("by", by))
	resp, err := callHuman(hctx, a.set.Human, req)
	h.Duration = time.Since(start)
	h.Via = resp.Via
	h.Note = shorten(a.secrets.scrub(strings.TrimSpace(resp.Note)), maxHandoffNote)
	h.Declined = resp.Declined && err == nil
	switch {
	case err == nil:
	case parent.Err() != nil:
		err = fmt.Errorf("the run was stopped during the hand-off: %w", parent.Err())
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(hctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("%w: no answer within %s", ErrHumanTimeout, a.set.HumanTimeout)
	case errors.Is(err, ErrNoHuman):
		err = fmt.Errorf("no person could be reached: %w", err)
	default:
		err = fmt.Errorf("the hand-off to a person failed: %w", err)
	}
	if err != nil {
		h.Error = a.secrets.scrub(err.Error())
	}
	if err == nil && !h.Declined {
		// The person may have fixed what an earlier write broke (signed in
		// again): their requests are not observed, so the done check no
		// longer holds the earlier write against the run.
		a.writes.forget()
	}
	// What the page is now, read on a context of its own: the step's may
	// have passed while the person worked (briefly when the run was
	// stopped: its caller waits).
	readFor := 10 * time.Second
	if parent.Err() != nil {
		readFor = 2 * time.Second
	}
	actx, acancel := context.WithTimeout(context.WithoutCancel(parent), readFor)
	after := a.pageNow(actx, nil)
	acancel()
	h.URLAfter = a.secrets.scrub(after.URL)
	h.Changed = before.fp != "" && after.fp != "" && before.fp != after.fp
	a.wantShot = true
	a.recordHandoff(*h)
	a.log.Info("agent: the person handed the browser back", zap.Int("step", a.curStep), zap.Duration("took", h.Duration), zap.Bool("declined", h.Declined), zap.Bool("changed", h.Changed), zap.Bool("error", err != nil))
	return h, err
}

// callHuman calls the handler, turning its panic into an error: a policy
// hand-off runs outside any action's recovery.
func callHuman(ctx context.Context, h HumanHandler, req HumanRequest) (resp HumanResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = HumanResponse{}, fmt.Errorf("the handler panicked: %v", r)
		}
	}()
	return h.Handoff(ctx, req)
}

// page is where the focused tab is and its fingerprint.
type page struct{ URL, title, fp string }

// pageNow reads the focused page's URL, title and fingerprint (st, when
// given, supplies what the fingerprint cannot).
func (a *Agent) pageNow(ctx context.Context, st *events.BrowserState) page {
	var p page
	if st != nil {
		p = page{URL: st.URL, title: st.Title, fp: st.Fingerprint}
	}
	tab := a.browser.FocusedTab()
	for _, t := range a.browser.Tabs() {
		if t.TargetID == tab {
			p.URL, p.title = t.URL, t.Title
		}
	}
	if fp, err := a.browser.Fingerprint(ctx, ""); err == nil {
		p.fp = fp.String()
		if fp.URL != "" {
			p.URL = fp.URL
		}
	}
	return p
}

// recordHandoff adds h to the step in progress.
func (a *Agent) recordHandoff(h Handoff) {
	a.handoffs = append(a.handoffs, h)
}

// handoffText words a finished hand-off for the model.
func handoffText(h *Handoff) string {
	var b strings.Builder
	if h.Declined {
		fmt.Fprintf(&b, "The person declined to take over (%s)", h.Reason)
	} else {
		fmt.Fprintf(&b, "A person took over the browser (%s) and handed it back after %s", h.Reason, h.Duration.Round(time.Second))
	}
	if h.Note != "" {
		fmt.Fprintf(&b, "; their note: %q", h.Note)
	}
	b.WriteString(". ")
	switch {
	case h.Changed && h.URLAfter != h.URLBefore:
		fmt.Fprintf(&b, "The page is now %s (it was %s).", h.URLAfter, h.URLBefore)
	case h.Changed:
		fmt.Fprintf(&b, "The page %s changed.", h.URLAfter)
	default:
		// The fingerprint counts the top document only: a solved CAPTCHA
		// changes its frame, not the page.
		fmt.Fprintf(&b, "The page %s's own document looks unchanged (what changed may be inside a frame).", h.URLAfter)
	}
	if h.Declined {
		b.WriteString(" Do not ask again for the same thing: continue another way, or finish with done.")
	} else {
		b.WriteString(" Check the new state before going on.")
	}
	return b.String()
}

// askedState is a policy's hand-off of one page: the step it happened in
// and whether the person finished it (no error, not declined).
type askedState struct {
	step int
	ok   bool
}

// checkPolicies asks the policies in order about st: the first reason
// wins. A panicking policy is skipped and reported in failed.
func (a *Agent) checkPolicies(st *events.BrowserState) (name, reason, failed string) {
	for _, p := range a.set.HandoffPolicies {
		r, err := checkPolicy(p, st)
		if err != nil {
			a.log.Warn("agent: a hand-off policy panicked", zap.String("policy", p.Name()))
			failed = strings.TrimSpace(failed + " " + fmt.Sprintf("Hand-off policy %s failed: %v.", p.Name(), err))
			continue
		}
		if r != "" {
			return p.Name(), shorten(a.secrets.scrub(r), maxHandoffReason), failed
		}
	}
	return "", "", failed
}

// checkPolicy calls p.Check, turning its panic into an error: a custom
// policy must not crash the host.
func checkPolicy(p HandoffPolicy, st *events.BrowserState) (r string, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = "", fmt.Errorf("it panicked: %v", v)
		}
	}()
	return p.Check(st), nil
}

// policyHandoff asks the hand-off policies about the observed page and, when
// one fires, hands the page to a person, once per policy and page. It
// returns the note for the model and whether the page must be observed
// again (a person had it, or the run was stopped). handed is the key of
// the hand-off this observation follows ("" on a step's first
// observation). noPerson (the step can only end the run) reports a
// policy that fires without handing the page over.
//
// A finished hand-off settles the page: a solved CAPTCHA widget stays in
// its frame and the policy keeps firing, so it is neither reported as
// still there nor handed over again. Only a hand-off the person declined
// or could not finish makes later matches say the person will not be
// asked again.
func (a *Agent) policyHandoff(sctx context.Context, st *events.BrowserState, handed string, noPerson bool) (note, key string, again bool) {
	name, reason, failed := a.checkPolicies(st)
	if reason == "" {
		return failed, "", false
	}
	key = name + " " + pageKey(st.URL)
	withFailed := func(s string) string { return strings.TrimSpace(failed + " " + s) }
	prev, had := a.asked[key]
	switch {
	case handed != "" && key != handed:
		// Another page or policy after the person's work: asked about on
		// the next step's observation, not this one's.
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s (seen after the hand-off; not handed over in this step).", name, reason)), key, false
	case had && prev.ok:
		return failed, key, false // the person finished it; the widget may stay
	case handed != "":
		return withFailed(fmt.Sprintf("After the hand-off, %s still (policy %s); the person will not be asked again for this page: go on another way, call request_human if you really need them, or finish with done.", reason, name)), key, false
	case had && a.set.Human == nil:
		// Recorded once; the model is reminded on every step.
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s, but no person is available to hand the browser to in this run: go on another way or finish with done and say why.", name, reason)), key, false
	case had:
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s; a person was already asked on this page (step %d) and did not finish, so they are not asked again: go on another way, call request_human if you really need them, or finish with done.", name, reason, prev.step)), key, false
	case noPerson:
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s; no person is asked on the run's last step.", name, reason)), key, false
	}
	if a.asked == nil {
		a.asked = map[string]askedState{}
	}
	a.asked[key] = askedState{step: a.curStep}
	h, err := a.handoff(sctx, "policy:"+name, reason, st)
	a.asked[key] = askedState{step: a.curStep, ok: h != nil && err == nil && !h.Declined}
	switch {
	case h == nil && errors.Is(err, ErrNoHuman):
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s, but no person is available to hand the browser to in this run: go on another way or finish with done and say why.", name, reason)), key, false
	case h == nil:
		return failed, key, true // the run was stopped before the hand-off began
	case errors.Is(err, ErrNoHuman):
		return withFailed(fmt.Sprintf("Hand-off policy %s: %s, but %s: go on another way or finish with done and say why.", name, reason, h.Error)), key, true
	case err != nil:
		return withFailed(fmt.Sprintf("Hand-off policy %s: the agent handed the browser to a person because %s; it came back without them finishing: %s.", name, reason, h.Error)), key, true
	}
	return withFailed(fmt.Sprintf("Hand-off policy %s: %s", name, handoffText(h))), key, true
}

// pageKey is a page's URL without its fragment and Cloudflare's challenge
// parameters (__cf_chl_*, new on every attempt): a policy asks for a
// person once per page.
func pageKey(s string) string {
	before, _, _ := strings.Cut(s, "#")
	u, err := url.Parse(before)
	if err != nil || u.RawQuery == "" {
		return before
	}
	q := u.Query()
	drop := false
	for k := range q {
		if strings.HasPrefix(k, "__cf_chl_") {
			q.Del(k)
			drop = true
		}
	}
	if !drop {
		return before
	}
	u.RawQuery = q.Encode()
	return u.String()
}
