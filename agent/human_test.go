package agent_test

import (
	"context"
	"encoding/json"
	"errors"
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
	const stepTimeout = 8 * time.Second
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
	const stepTimeout = 8 * time.Second
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
	const stepTimeout = 8 * time.Second
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
