package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
)

// person is a HumanHandler that plays the person in a test: it records
// every request and runs act on the browser.
type person struct {
	mu   sync.Mutex
	reqs []agent.HumanRequest
	act  func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error)
}

func (p *person) Handoff(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	return p.act(ctx, req)
}

func (p *person) requests() []agent.HumanRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]agent.HumanRequest(nil), p.reqs...)
}

// evalOnPage runs code in the focused page through the bus, as a person's
// input would reach it.
func evalOnPage(ctx context.Context, s *session.Session, code string) error {
	_, err := bus.Call(ctx, s.Bus(), events.Evaluate, events.EvaluateEvent{Code: code})
	return err
}

// waitURL polls the focused tab's URL until it contains part.
func waitURL(ctx context.Context, s *session.Session, part string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, t := range s.Tabs() {
			if t.TargetID == s.FocusedTab() && strings.Contains(t.URL, part) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// signIn is the person signing in on the login wall.
func signIn(s *session.Session) func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
	return func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
		// The submit navigates, which may end the evaluation early: the
		// URL says whether it worked.
		_ = evalOnPage(ctx, s, `document.getElementById('user').value = 'ada'; document.getElementById('pass').value = 'hunter2-secret'; document.getElementById('login').requestSubmit(); true`)
		if err := waitURL(ctx, s, "agent-handoff-account.html"); err != nil {
			return agent.HumanResponse{}, err
		}
		return agent.HumanResponse{Note: "signed in as ada with hunter2-secret", Via: "test"}, nil
	}
}

func traced(t *testing.T, set *agent.Settings) (*trace.Writer, *trace.AgentObserver) {
	t.Helper()
	tw, err := trace.Create(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	obs := trace.NewAgentObserver(tw, set.RunDir)
	set.Observers = append(set.Observers, obs)
	return tw, obs
}

// traceHandoffs returns the hand-offs of the trace's step records.
func traceHandoffs(t *testing.T, tw *trace.Writer, obs *trace.AgentObserver, dir string) []agent.Handoff {
	t.Helper()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := obs.Err(); err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadFile(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []agent.Handoff
	for _, r := range recs {
		if r.Type != trace.TypeStep {
			continue
		}
		var st trace.Step
		if err := json.Unmarshal(r.Data, &st); err != nil {
			t.Fatal(err)
		}
		out = append(out, st.Handoffs...)
	}
	return out
}

func handoffsOf(h *agent.History) (out []agent.Handoff) {
	for _, it := range h.Items {
		out = append(out, it.Handoffs...)
	}
	return out
}

// system is a request's system prompt.
func system(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.RoleSystem {
			b.WriteString(m.TextContent())
		}
	}
	return b.String()
}

// offers reports whether the request offers action (the system prompt's
// action list or the reply schema).
func offers(req llm.Request, action string) bool {
	sch, _ := json.Marshal(req.Schema) // not the history: it may name it too
	return strings.Contains(system(req)+string(sch), action)
}

// The model asks for a person on a login wall; the person signs in through
// the browser; the next step sees the signed-in page, and the history and
// the trace record the hand-off (URL before and after, changed, the note
// with the secret scrubbed).
func TestHandoffModelAsksPersonToSignIn(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: signIn(s)}
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "sign in with your account"}},
		{WaitFor: "Welcome, ada", Action: "done", Params: map[string]any{"text": "Order 1042: gopher mug", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.SensitiveData = map[string]string{"pw": "hunter2-secret"}
	tw, obs := traced(t, &set)
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if !offers(model.Requests()[0], "request_human") {
		t.Fatal("request_human is not offered although Settings.Human is set")
	}
	if system(model.Requests()[0]) != system(model.Requests()[1]) {
		t.Fatal("the system prompt changed after the hand-off")
	}
	reqs := p.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d hand-offs, want 1", len(reqs))
	}
	r := reqs[0]
	if r.By != "model" || r.Reason != "sign in with your account" || !strings.Contains(r.URL, "agent-handoff-login.html") || r.Title != "Members only" || r.TabID != s.FocusedTab() || r.Step != 1 || r.Deadline.IsZero() {
		t.Fatalf("request %+v", r)
	}
	h := a.History()
	hs := handoffsOf(h)
	if len(hs) != 1 {
		t.Fatalf("history hand-offs %+v", hs)
	}
	got := hs[0]
	if got.By != "model" || got.Via != "test" || !got.Changed || got.Declined || got.Error != "" || got.Duration <= 0 ||
		!strings.Contains(got.URLBefore, "agent-handoff-login.html") || !strings.Contains(got.URLAfter, "agent-handoff-account.html?user=ada") {
		t.Fatalf("hand-off %+v", got)
	}
	if strings.Contains(got.Note, "hunter2-secret") || !strings.Contains(got.Note, "signed in as ada") {
		t.Fatalf("note not scrubbed: %q", got.Note)
	}
	act := h.Items[1].Actions[0]
	if act.Name != "request_human" || act.Error != "" || !strings.Contains(act.Result.Text, "signed in as ada") || !strings.Contains(act.Result.Text, "agent-handoff-account.html?user=ada") {
		t.Fatalf("action record %+v", act)
	}
	if h.Items[1].Handoffs == nil {
		t.Fatal("the hand-off is not on the step that asked for it")
	}
	t.Logf("hand-off %s; step 1 took %s, step 2 (observe and model) %s", got.Duration, h.Items[1].EndedAt.Sub(h.Items[1].StartedAt), h.Items[2].EndedAt.Sub(h.Items[2].StartedAt))
	th := traceHandoffs(t, tw, obs, set.RunDir)
	if len(th) != 1 || !th[0].Changed || th[0].URLAfter != got.URLAfter || th[0].By != "model" {
		t.Fatalf("trace hand-offs %+v", th)
	}
	raw, err := os.ReadFile(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hunter2-secret") {
		t.Fatal("the trace holds the secret")
	}
}

// The person declines: the model is told, nothing changed, no error.
func TestHandoffDeclined(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Declined: true, Note: "not my account", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "sign in"}},
		{WaitFor: "declined to take over", Action: "done", Params: map[string]any{"text": "cannot sign in", "success": false}},
	})
	set := settings(t)
	set.Human = p
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res := run(t, a, model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	hs := handoffsOf(a.History())
	if len(hs) != 1 || !hs[0].Declined || hs[0].Changed || hs[0].Note != "not my account" || hs[0].Error != "" {
		t.Fatalf("hand-offs %+v", hs)
	}
	if txt := userText(model.Requests()[1]); !strings.Contains(txt, "not my account") {
		t.Fatalf("the model was not told the person's note:\n%s", txt)
	}
}

// The person does not answer within HumanTimeout: the action fails with
// ErrHumanTimeout's words and the run goes on.
func TestHandoffTimeout(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(ctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		<-ctx.Done()
		return agent.HumanResponse{}, ctx.Err()
	}}
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "solve it"}},
		{WaitFor: "did not finish in time", Action: "done", Params: map[string]any{"text": "nobody came", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HumanTimeout = time.Second
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res := run(t, a, model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	h := a.History()
	act := h.Items[1].Actions[0]
	if !strings.Contains(act.Error, agent.ErrHumanTimeout.Error()) || !strings.Contains(act.Error, "1s") {
		t.Fatalf("action error %q", act.Error)
	}
	hs := handoffsOf(h)
	if len(hs) != 1 || !strings.Contains(hs[0].Error, agent.ErrHumanTimeout.Error()) {
		t.Fatalf("hand-offs %+v", hs)
	}
	if d := p.requests()[0].Deadline; d.IsZero() {
		t.Fatal("the request has no deadline")
	}
}

// Without a handler request_human is not offered; asked for anyway (as an
// initial action) it fails with ErrNoHuman's words, and a model that names
// it gets a clear error too.
func TestHandoffNoHandler(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "sign in"}},
		{Action: "done", Params: map[string]any{"text": "no one to ask", "success": false}},
	})
	set := settings(t)
	set.InitialActions = []agent.ActionCall{{Name: "request_human", Params: json.RawMessage(`{"reason":"sign in"}`)}}
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res := runAgent(t, a)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	if offers(model.Requests()[0], "request_human") {
		t.Fatal("request_human is offered without a handler")
	}
	h := a.History()
	var initErr string
	for _, r := range h.Items[0].Actions {
		if r.Name == "request_human" {
			initErr = r.Error
		}
	}
	if initErr != agent.ErrNoHuman.Error() {
		t.Fatalf("initial request_human error %q, want %q (actions %+v)", initErr, agent.ErrNoHuman, h.Items[0].Actions)
	}
	if e := h.Items[1].Error; !strings.Contains(e, "request_human") {
		t.Fatalf("a hallucinated request_human: step error %q", e)
	}
}

// A step timeout shorter than the hand-off does not cut it short, nor fail
// the step: the person's time is not the step's.
func TestHandoffOutlastsStepTimeout(t *testing.T) {
	env, s := newSession(t)
	const stepTimeout = 20 * time.Second // generous: a busy machine's observations and model calls fit in it
	var mu sync.Mutex
	var stepStart time.Time
	p := &person{}
	p.act = func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
		mu.Lock()
		until := stepStart.Add(stepTimeout + time.Second)
		mu.Unlock()
		// The person takes longer than the step may.
		tm := time.NewTimer(time.Until(until))
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return agent.HumanResponse{}, ctx.Err()
		case <-tm.C:
		}
		return signIn(s)(ctx, req)
	}
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "sign in"}},
		{WaitFor: "Welcome, ada", Action: "done", Params: map[string]any{"text": "signed in", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.StepTimeout = stepTimeout
	set.OnStepStart = func(_ context.Context, n int) {
		mu.Lock()
		stepStart = time.Now()
		mu.Unlock()
	}
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success || len(res.Errors) > 0 {
		t.Fatalf("result %+v", res)
	}
	it := a.History().Items[1]
	if it.Error != "" || it.Actions[0].Error != "" || len(it.Handoffs) != 1 || !it.Handoffs[0].Changed {
		t.Fatalf("step %+v", it)
	}
	if it.EndedAt.Sub(it.StartedAt) <= stepTimeout {
		t.Fatalf("the hand-off did not outlast the step timeout (%s)", it.EndedAt.Sub(it.StartedAt))
	}
}

// Stopping the run while a person has the browser stops it cleanly.
func TestHandoffRunStopped(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &person{act: func(hctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		cancel() // the caller stops the run
		<-hctx.Done()
		return agent.HumanResponse{}, hctx.Err()
	}}
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "sign in"}},
		{Action: "done", Params: map[string]any{"text": "unreachable", "success": true}},
	})
	set := settings(t)
	set.Human = p
	a := newAgent(t, "Open "+env.URL("/agent-handoff-login.html")+" and list my orders.", model, s, set)
	res, err := a.Run(ctx)
	if !errors.Is(err, context.Canceled) || res.Done {
		t.Fatalf("run: %v, result %+v", err, res)
	}
	hs := handoffsOf(a.History())
	if len(hs) != 1 || !strings.Contains(hs[0].Error, "stopped") {
		t.Fatalf("hand-offs %+v", hs)
	}
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1 (none after the stop)", n)
	}
}

// loopbackCaptcha is the CAPTCHA policy with the fixture sites accepted as
// the widgets' hosts.
func loopbackCaptcha() []agent.HandoffPolicy {
	return []agent.HandoffPolicy{agent.CaptchaPolicy{AlsoHosts: []string{"127.0.0.1", "localhost"}}}
}

// The CAPTCHA policy hands a page with a reCAPTCHA frame to the person
// before the model sees it; the model then sees the page as the person left
// it, with a note. A page without a CAPTCHA is not handed off.
func TestHandoffCaptchaPolicy(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(ctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		if err := evalOnPage(ctx, s, `document.getElementById('captcha').remove(); true`); err != nil {
			return agent.HumanResponse{}, err
		}
		return agent.HumanResponse{Note: "solved", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{Action: "navigate", Params: map[string]any{"url": env.URL("/agent-form.html")}},
		{Action: "navigate", Params: map[string]any{"url": env.URL("/agent-captcha.html")}},
		{WaitFor: "Hand-off policy captcha", Action: "click", Label: "Pay"},
		{WaitFor: "Paid", Action: "done", Params: map[string]any{"text": "paid", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Pay for the order.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	reqs := p.requests()
	if len(reqs) != 1 || reqs[0].By != "policy:captcha" || !strings.Contains(reqs[0].Reason, "reCAPTCHA") || !strings.Contains(reqs[0].URL, "agent-captcha.html") {
		t.Fatalf("requests %+v", reqs)
	}
	h := a.History()
	for _, it := range h.Items[:2] { // the form page: no hand-off
		if len(it.Handoffs) > 0 {
			t.Fatalf("step %d handed off: %+v", it.Step, it.Handoffs)
		}
	}
	it := h.Items[2]
	if len(it.Handoffs) != 1 || !it.Handoffs[0].Changed || it.Handoffs[0].Note != "solved" || it.Handoffs[0].By != "policy:captcha" {
		t.Fatalf("step 2 %+v", it.Handoffs)
	}
	// The model's view after the hand-off: the note, and the page without the frame.
	txt := userText(model.Requests()[2])
	if !strings.Contains(txt, "solved") || strings.Contains(txt, "After the hand-off") {
		t.Fatalf("the model's view after the hand-off:\n%s", txt)
	}
	if len(model.Requests()) != 4 {
		t.Fatalf("%d model calls, want 4 (none while the person worked)", len(model.Requests()))
	}
}

// A person who declines leaves the CAPTCHA on the page: the model is told
// that it remains, and the next step on the same page does not ask again.
func TestHandoffCaptchaNotAskedTwice(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Declined: true, Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "still", Action: "scroll", Params: map[string]any{"down": true}},
		{WaitFor: "not asked again", Action: "done", Params: map[string]any{"text": "blocked by a CAPTCHA", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res := run(t, a, model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("the person was asked %d times, want 1", n)
	}
}

// A hand-off policy with no handler tells the model instead of hanging, at
// every step on the page, and records it once.
func TestHandoffPolicyWithoutHandler(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitFor: "no person is available", Action: "scroll", Params: map[string]any{"down": true}},
		{WaitFor: "no person is available", Action: "done", Params: map[string]any{"text": "blocked by a CAPTCHA", "success": false}},
	})
	set := settings(t)
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res := run(t, a, model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	hs := handoffsOf(a.History())
	if len(hs) != 1 || hs[0].Error != agent.ErrNoHuman.Error() || hs[0].By != "policy:captcha" {
		t.Fatalf("hand-offs %+v", hs)
	}
}

// The CAPTCHA policy's matcher on the widgets' real frame URLs.
func TestCaptchaPolicyMatches(t *testing.T) {
	cases := []struct {
		url     string
		visible bool
		title   string
		text    string
		want    string
	}{
		{url: "https://www.google.com/recaptcha/api2/anchor?ar=1&k=abc&size=normal", visible: true, want: "reCAPTCHA"},
		{url: "https://www.recaptcha.net/recaptcha/enterprise/bframe?k=abc", visible: true, want: "reCAPTCHA"},
		{url: "https://www.google.com/recaptcha/api2/anchor?k=abc&size=invisible", visible: true},
		{url: "https://www.google.com/recaptcha/api2/anchor?k=abc", visible: false},
		{url: "https://evilgoogle.com/recaptcha/api2/anchor?k=abc", visible: true},
		{url: "https://www.google.com/maps/embed", visible: true},
		{url: "https://newassets.hcaptcha.com/captcha/v1/abc/static/hcaptcha.html#frame=checkbox", visible: true, want: "hCaptcha"},
		{url: "https://challenges.cloudflare.com/cdn-cgi/challenge-platform/h/b/turnstile/if/ov2/av0/rcv/abc", visible: true, want: "Turnstile"},
		{url: "http://127.0.0.1:8080/recaptcha/api2/anchor", visible: true},
		{title: "Just a moment...", text: "Verify you are human by completing the action below.", want: "Cloudflare"},
		{title: "Just a moment...", text: "Loading your dashboard"},
	}
	for _, c := range cases {
		st := &events.BrowserState{Title: c.title, DOMText: c.text}
		if c.url != "" {
			st.Frames = []events.FrameInfo{{URL: c.url, Visible: c.visible}}
		}
		got := (agent.CaptchaPolicy{}).Check(st)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %q: %q, want %q", c.url, c.title, got, c.want)
		}
	}
	if (agent.CaptchaPolicy{}).Name() != "captcha" {
		t.Fatal("name")
	}
}

// Settings: a negative HumanTimeout and a nil policy are errors.
func TestHandoffSettings(t *testing.T) {
	s := agenttest.New(t)
	model := scripted.New(nil)
	set := settings(t)
	set.HumanTimeout = -time.Second
	if _, err := agent.New("x", model, s, set); !errors.Is(err, agent.ErrSettings) {
		t.Fatalf("negative HumanTimeout: %v", err)
	}
	set = settings(t)
	set.HandoffPolicies = []agent.HandoffPolicy{nil}
	if _, err := agent.New("x", model, s, set); !errors.Is(err, agent.ErrSettings) {
		t.Fatalf("nil policy: %v", err)
	}
}

// A policy hand-off longer than the step timeout: the step's clock resumes
// after it, so the model call that follows has the step's time left.
func TestHandoffPolicyOutlastsStepTimeout(t *testing.T) {
	env, s := newSession(t)
	const stepTimeout = 20 * time.Second // generous: a busy machine's observations and model calls fit in it
	p := &person{act: func(ctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		tm := time.NewTimer(stepTimeout + time.Second) // the person takes longer than the step may
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return agent.HumanResponse{}, ctx.Err()
		case <-tm.C:
		}
		if err := evalOnPage(ctx, s, `document.getElementById('captcha').remove(); true`); err != nil {
			return agent.HumanResponse{}, err
		}
		return agent.HumanResponse{Note: "solved"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "solved", Action: "click", Label: "Pay"},
		{WaitFor: "Paid", Action: "done", Params: map[string]any{"text": "paid", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	set.StepTimeout = stepTimeout
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success || len(res.Errors) > 0 {
		t.Fatalf("result %+v", res)
	}
	it := a.History().Items[1]
	if it.Error != "" || len(it.Handoffs) != 1 || it.EndedAt.Sub(it.StartedAt) <= stepTimeout {
		t.Fatalf("step %+v", it)
	}
}

// A handler that panics during a policy hand-off is an error the model is
// told, not a crashed run.
func TestHandoffHandlerPanics(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		panic("live view broke")
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "live view broke", Action: "done", Params: map[string]any{"text": "blocked by a CAPTCHA", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res := run(t, a, model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	hs := handoffsOf(a.History())
	if len(hs) != 1 || !strings.Contains(hs[0].Error, "the handler panicked: live view broke") {
		t.Fatalf("hand-offs %+v", hs)
	}
}

// Through a Driver (the MCP server's and the shell's way), request_human is
// bounded by the caller's context and HumanTimeout, not by the step.
func TestHandoffThroughDriver(t *testing.T) {
	env, s := newSession(t)
	const stepTimeout = 20 * time.Second // generous: a busy machine's observations and model calls fit in it
	p := &person{}
	p.act = func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
		tm := time.NewTimer(stepTimeout + time.Second) // the person takes longer than a step may
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return agent.HumanResponse{}, ctx.Err()
		case <-tm.C:
		}
		return signIn(s)(ctx, req)
	}
	set := settings(t)
	set.Human = p
	set.StepTimeout = stepTimeout
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := d.Do(ctx, "navigate", json.RawMessage(`{"url":"`+env.URL("/agent-handoff-login.html")+`"}`)); err != nil {
		t.Fatal(err)
	}
	rec, err := d.Do(ctx, "request_human", json.RawMessage(`{"reason":"sign in"}`))
	if err != nil || !strings.Contains(rec.Result.Text, "agent-handoff-account.html?user=ada") {
		t.Fatalf("request_human: %+v, %v", rec, err)
	}
	hs := handoffsOf(d.History())
	if len(hs) != 1 || !hs[0].Changed || hs[0].Error != "" {
		t.Fatalf("hand-offs %+v", hs)
	}
}

// A solved CAPTCHA widget stays in its frame (reCAPTCHA, hCaptcha and
// Turnstile all do): the person's finished hand-off settles the page, so
// the model is neither told the CAPTCHA is still there nor to go on another
// way, and the person is asked once. The screenshot of the page as it was
// handed over is kept apart from the re-observation's.
func TestHandoffCaptchaSolvedWidgetStays(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "solved", Via: "test"}, nil // the frame stays
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "solved", Action: "scroll", Params: map[string]any{"down": true}},
		{Action: "done", Params: map[string]any{"text": "paid", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	set.Vision = agent.VisionOn
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("the person was asked %d times, want 1", n)
	}
	for i, req := range model.Requests() {
		txt := userText(req)
		if strings.Contains(txt, "still") || strings.Contains(txt, "go on another way") {
			t.Fatalf("model call %d after a finished hand-off:\n%s", i, txt)
		}
	}
	if txt := userText(model.Requests()[0]); !strings.Contains(txt, "may be inside a frame") {
		t.Fatalf("the model is not told a frame may have changed:\n%s", txt)
	}
	it := a.History().Items[1]
	if len(it.Handoffs) != 1 {
		t.Fatalf("step 1 hand-offs %+v", it.Handoffs)
	}
	shot := it.Handoffs[0].ScreenshotPath
	if !strings.HasSuffix(strings.TrimSuffix(shot, filepath.Ext(shot)), "step_1_handoff") || it.State.ScreenshotPath == "" || it.State.ScreenshotPath == shot {
		t.Fatalf("hand-off screenshot %q, state screenshot %q", shot, it.State.ScreenshotPath)
	}
	for _, f := range []string{shot, it.State.ScreenshotPath} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Fatalf("screenshot %s: %v", f, err)
		}
	}
}

// A policy asks once per page and Run: a follow-up task (AddTask, Run
// again) on the same CAPTCHA page asks the person again.
func TestHandoffCaptchaAskedAgainNextTask(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "solved", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "solved", Action: "done", Params: map[string]any{"text": "first", "success": true}},
		{WaitFor: "solved", Action: "done", Params: map[string]any{"text": "second", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("first run %+v", res)
	}
	if err := a.AddTask("Pay again."); err != nil {
		t.Fatal(err)
	}
	if res := run(t, a, model); !res.Done {
		t.Fatalf("second run %+v", res)
	}
	if n := len(p.requests()); n != 2 {
		t.Fatalf("the person was asked %d times over two tasks, want 2", n)
	}
}

// A policy hand-off the person does not finish in time: the model reads the
// timeout, and the next step on the page says the person is not asked
// again.
func TestHandoffPolicyTimeout(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(ctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		<-ctx.Done()
		return agent.HumanResponse{}, ctx.Err()
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: agent.ErrHumanTimeout.Error(), Action: "scroll", Params: map[string]any{"down": true}},
		{WaitFor: "did not finish, so they are not asked again", Action: "done", Params: map[string]any{"text": "blocked", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HumanTimeout = time.Second
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("result %+v", res)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("the person was asked %d times, want 1", n)
	}
	it := a.History().Items[1]
	if len(it.Notes) == 0 || !strings.Contains(strings.Join(it.Notes, " "), "came back without them finishing") {
		t.Fatalf("step 1 notes %q", it.Notes)
	}
}

// Cancelling Run while a policy hand-off waits stops it; the step keeps
// the hand-off and its note.
func TestHandoffPolicyRunStopped(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &person{act: func(hctx context.Context, _ agent.HumanRequest) (agent.HumanResponse, error) {
		cancel() // the caller stops the run
		<-hctx.Done()
		return agent.HumanResponse{}, hctx.Err()
	}}
	model := scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"text": "unreachable", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	res, err := a.Run(ctx)
	if !errors.Is(err, context.Canceled) || res.Done {
		t.Fatalf("run: %v, result %+v", err, res)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("%d model calls after the stop, want 0", n)
	}
	h := a.History()
	it := h.Items[len(h.Items)-1]
	if len(it.Handoffs) != 1 || !strings.Contains(it.Handoffs[0].Error, "stopped") || !strings.Contains(strings.Join(it.Notes, " "), "stopped") {
		t.Fatalf("last step: hand-offs %+v, notes %q", it.Handoffs, it.Notes)
	}
}

// panicky is a hand-off policy that panics.
type panicky struct{}

func (panicky) Name() string                      { return "boom" }
func (panicky) Check(*events.BrowserState) string { panic("policy bug") }

// A custom policy that panics does not crash the run: the model is told it
// failed, and the next policy still looks at the page.
func TestHandoffPolicyPanics(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "solved", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "Hand-off policy boom failed: it panicked: policy bug", Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = append([]agent.HandoffPolicy{panicky{}}, loopbackCaptcha()...)
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("result %+v", res)
	}
	if reqs := p.requests(); len(reqs) != 1 || reqs[0].By != "policy:captcha" {
		t.Fatalf("requests %+v", reqs)
	}
}

// A handler that cannot reach anyone (ErrNoHuman, an MCP client without
// elicitation) is worded so: no one is claimed to have been asked.
func TestHandoffPolicyNobodyReached(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{}, fmt.Errorf("%w: the client cannot ask its user", agent.ErrNoHuman)
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "no person could be reached", Action: "done", Params: map[string]any{"text": "blocked", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("result %+v", res)
	}
	txt := userText(model.Requests()[0])
	if strings.Contains(txt, "handed the browser to a person") {
		t.Fatalf("the model is told someone was asked:\n%s", txt)
	}
	hs := handoffsOf(a.History())
	if len(hs) != 1 || !strings.Contains(hs[0].Error, "no person could be reached") {
		t.Fatalf("hand-offs %+v", hs)
	}
}

// On the run's last step (only done is offered) no person is handed the
// page: the model is told the policy fired.
func TestHandoffPolicyNotOnLastStep(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "solved", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "no person is asked on the run's last step", Action: "done", Params: map[string]any{"text": "blocked", "success": false}},
	})
	set := settings(t)
	set.Human = p
	set.HandoffPolicies = loopbackCaptcha()
	set.MaxSteps = 1
	a := newAgent(t, "Open "+env.URL("/agent-captcha.html")+" and pay.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("result %+v", res)
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("the person was asked %d times on the last step", n)
	}
}

// A request_human among InitialActions is the caller's, not the model's.
func TestHandoffInitialAction(t *testing.T) {
	_, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "set up the account", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitFor: "set up the account", Action: "done", Params: map[string]any{"text": "ready", "success": true}},
	})
	set := settings(t)
	set.Human = p
	set.InitialActions = []agent.ActionCall{{Name: "request_human", Params: json.RawMessage(`{"reason":"set up the account"}`)}}
	a := newAgent(t, "List my orders.", model, s, set)
	if res := run(t, a, model); !res.Done {
		t.Fatalf("result %+v", res)
	}
	if reqs := p.requests(); len(reqs) != 1 || reqs[0].By != "initial" {
		t.Fatalf("requests %+v", reqs)
	}
	if hs := handoffsOf(a.History()); len(hs) != 1 || hs[0].By != "initial" {
		t.Fatalf("hand-offs %+v", hs)
	}
}

// Through a Driver, the element indexes of the state taken before
// request_human no longer apply after it, even when the page's URL did not
// change: a person had the page.
func TestHandoffDriverIndexesStale(t *testing.T) {
	env, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "looked around", Via: "test"}, nil
	}}
	set := settings(t)
	set.Human = p
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := d.Do(ctx, "navigate", json.RawMessage(`{"url":"`+env.URL("/agent-handoff-login.html")+`"}`)); err != nil {
		t.Fatal(err)
	}
	obs, err := d.State(ctx, agent.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idx := 0
	for i := range obs.State.Elements {
		if i > 0 {
			idx = i
			break
		}
	}
	if idx == 0 {
		t.Fatalf("no indexed element on the login page:\n%s", obs.Text)
	}
	if _, err := d.Do(ctx, "request_human", json.RawMessage(`{"reason":"look"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = d.Do(ctx, "click", json.RawMessage(fmt.Sprintf(`{"index":%d}`, idx)))
	var se *agent.StaleIndexError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "a person had the page") {
		t.Fatalf("click after request_human: %v", err)
	}
}

// A person who finished a hand-off may have fixed what an earlier write
// broke, through requests the agent does not observe: the done check no
// longer holds that write against the run.
func TestHandoffClearsFailedWrite(t *testing.T) {
	srv := saveSite(t)
	_, s := newSession(t)
	p := &person{act: func(context.Context, agent.HumanRequest) (agent.HumanResponse, error) {
		return agent.HumanResponse{Note: "saved it myself", Via: "test"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "request_human", Params: map[string]any{"reason": "the save failed; save the profile"}},
		{WaitFor: "saved it myself", Action: "done", Params: map[string]any{"text": "Saved the profile", "success": true}},
	})
	set := settings(t)
	set.Human = p
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if dones := doneRecords(a.History()); len(dones) != 1 || !dones[0].Result.Done {
		t.Fatalf("done records %+v, want one accepted", dones)
	}
}
