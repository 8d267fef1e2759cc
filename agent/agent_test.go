package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// recorder collects every bus record's summary (what a trace writes).
type recorder struct {
	mu   sync.Mutex
	sums []string
}

func (r *recorder) Observe(rec bus.Record) {
	s := rec.Summary(0)
	if rec.Err != nil {
		s += " err=" + rec.Err.Error()
	}
	r.mu.Lock()
	r.sums = append(r.sums, rec.Kind+" "+s)
	r.mu.Unlock()
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.sums, "\n")
}

// newSession starts a session on the shared test browser with the watchdogs
// the agent needs.
func newSession(t *testing.T) (*testbrowser.Env, *session.Session) {
	t.Helper()
	env := testbrowser.Start(t)
	opts := []session.Option{session.WithWatchdogs(
		watchdogs.NewActions(watchdogs.ActionsConfig{}),
		watchdogs.NewDOM(watchdogs.DOMConfig{}),
		watchdogs.NewScreenshot(watchdogs.ScreenshotConfig{}),
	)}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL()}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	return env, s
}

func runAgent(t *testing.T, a *agent.Agent) *agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := a.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
	return res
}

// userText is the text of a request's user message.
func userText(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			b.WriteString(m.TextContent())
		}
	}
	return b.String()
}

func evalPage(t *testing.T, s *session.Session, expr string, out any) {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, expr, out); err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
}

func settings(t *testing.T) agent.Settings {
	return agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff}
}

func TestAgentMultiPageForm(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
			{Name: "click", Label: "Next"},
		}},
		{WaitForLabel: "Finish", Action: "select_dropdown", Label: "plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Action: "click", Label: "Finish"},
		{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Signed up Ada on the Pro plan", "success": true}},
	})
	set := settings(t)
	set.Vision = agent.VisionOn
	judge := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: `{"reasoning":"confirmation visible","verdict":true,"failure_reason":"","impossible_task":false}`}, nil
	}}
	set.Judge = agent.ModelJudge{Model: judge}
	var starts, ends []int
	set.OnStepStart = func(_ context.Context, n int) { starts = append(starts, n) }
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) { ends = append(ends, it.Step) }
	a, err := agent.New("Open "+env.URL("/agent-form.html")+" and sign up Ada Lovelace (ada@example.com) on the Pro plan.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success || res.FinalText != "Signed up Ada on the Pro plan" {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	if res.Judgement == nil || !res.Judgement.Verdict || len(judge.reqs) != 1 {
		t.Fatalf("judgement %+v (%s)", res.Judgement, res.JudgeError)
	}
	var msg string
	evalPage(t, s, `document.getElementById('msg').textContent`, &msg)
	if msg != "Thank you, Ada Lovelace! Your plan: pro" {
		t.Fatalf("confirmation %q", msg)
	}
	h := a.History()
	if h.Items[0].Step != 0 || h.Items[0].Actions[0].Name != "navigate" {
		t.Fatalf("step 0 should open the task's URL: %+v", h.Items[0])
	}
	if len(starts) != len(h.Items) || len(ends) != len(h.Items) {
		t.Fatalf("callbacks %v %v for %d items", starts, ends, len(h.Items))
	}
	// Step 1's batch ran all three actions: the form did not re-render.
	if got := len(h.Items[1].Actions); got != 3 {
		t.Fatalf("step 1 ran %d actions: %+v", got, h.Items[1])
	}
	if h.Items[1].State.ScreenshotPath == "" {
		t.Fatal("vision on: no screenshot saved")
	}
	if _, err := os.Stat(h.Items[1].State.ScreenshotPath); err != nil {
		t.Fatal(err)
	}
	// The state message has upstream's sections.
	req := model.Requests()[0]
	txt := userText(req)
	for _, want := range []string{"<user_request>", "<agent_history>", "<agent_state>", "<browser_state>", "[Start of page]", "[End of page]", "<step_info>", "Current tab: ", "Today: "} {
		if !strings.Contains(txt, want) {
			t.Errorf("state message lacks %q", want)
		}
	}
	hasImage := false
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		hasImage = hasImage || p.Image != nil
	}
	if !hasImage {
		t.Error("vision on: no screenshot in the request")
	}
	// History round trip (Run saved it).
	path := filepath.Join(a.RunDir(), "history.json")
	h2, err := agent.LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h2.Items) != len(h.Items) || h2.Items[1].Actions[2].Name != "click" {
		t.Fatalf("loaded history differs: %d items", len(h2.Items))
	}
	if fin, ok := h2.FinalResult(); !ok || !fin.Success {
		t.Fatalf("final result %+v %v", fin, ok)
	}
}

func TestAgentMutationFence(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "click", Label: "Load profile"},
			{Name: "input", Label: "Nickname", Params: map[string]any{"text": "stale"}},
			{Name: "click", Label: "Save"},
		}},
		{Action: "done", Params: map[string]any{"text": "stopped", "success": false}},
	})
	a, err := agent.New("Go to "+env.URL("/agent-rerender.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	var gen int
	var saved any
	var nick string
	evalPage(t, s, `window.__gen`, &gen)
	evalPage(t, s, `window.__saved`, &saved)
	evalPage(t, s, `document.querySelector('input').value`, &nick)
	if gen != 2 {
		t.Fatalf("the first click should have re-rendered (gen %d)", gen)
	}
	if saved != nil || nick != "" {
		t.Fatalf("actions after the re-render ran: saved=%v nick=%q", saved, nick)
	}
	h := a.History()
	it := h.Items[1]
	if len(it.Actions) != 1 || it.Actions[0].Name != "click" {
		t.Fatalf("batch ran %+v", it.Actions)
	}
	next := userText(model.Requests()[1])
	for _, want := range []string{"Batch stopped", "action 1 (click) re-rendered it", "Ran: 1 click", "NOT run: 2 input", "3 click"} {
		if !strings.Contains(next, want) {
			t.Errorf("next message lacks %q:\n%s", want, next)
		}
	}
}

func TestAgentStepTimeout(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "wait", Params: map[string]any{"seconds": 30}},
			{Name: "click", Label: "Next"},
		}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := settings(t)
	set.StepTimeout = 12 * time.Second
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	h := a.History()
	if !h.Items[1].Failed || !strings.Contains(h.Items[1].Error, "timed out") {
		t.Fatalf("step 1 should have timed out: %+v", h.Items[1])
	}
	next := userText(model.Requests()[1])
	for _, want := range []string{"timed out after 12s", "actions that ran: 1 input (ok), 2 wait (interrupted", "not run: 3 click"} {
		if !strings.Contains(next, want) {
			t.Errorf("next message lacks %q:\n%s", want, next)
		}
	}
	var v string
	evalPage(t, s, `document.querySelector('[name=fullname]').value`, &v)
	if v != "Ada" {
		t.Fatalf("the input that ran before the timeout: %q", v)
	}
}

func TestAgentFailuresThenForcedDone(t *testing.T) {
	env, s := newSession(t)
	var steps []scripted.Step
	for range 5 {
		steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "could not find the button", "success": false}})
	model := scripted.New(steps)
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || res.Success || res.FinalText != "could not find the button" {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model calls, want 6", len(reqs))
	}
	for i := 1; i < 5; i++ {
		if !strings.Contains(userText(reqs[i]), "is not in the current page state") {
			t.Fatalf("request %d does not report the missing element:\n%s", i, userText(reqs[i]))
		}
	}
	last := reqs[5]
	if !strings.Contains(userText(last), "You failed 5 times in a row") {
		t.Fatalf("forced-done message missing:\n%s", userText(last))
	}
	var sch map[string]any
	if err := json.Unmarshal(last.Schema.JSON, &sch); err != nil {
		t.Fatal(err)
	}
	alts := sch["properties"].(map[string]any)["action"].(map[string]any)["items"].(map[string]any)["anyOf"].([]any)
	if len(alts) != 1 || !strings.Contains(fmt.Sprint(alts[0]), "done") {
		t.Fatalf("forced step offers %d actions", len(alts))
	}
	h := a.History()
	for _, it := range h.Items[1:6] {
		if !it.Failed || it.Actions[0].Verdict != "failed" {
			t.Fatalf("step %d should be a failure: %+v", it.Step, it)
		}
	}
}

func TestAgentFailuresStopWhenForcedAnswerFails(t *testing.T) {
	env, s := newSession(t)
	var steps []scripted.Step
	for range 7 {
		steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
	}
	model := scripted.New(steps)
	set := settings(t)
	set.MaxFailures = 2
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if res.Done || len(res.Errors) == 0 || !strings.Contains(res.Errors[len(res.Errors)-1], "too many consecutive failures") {
		t.Fatalf("result %+v", res)
	}
	// 2 failures, then the forced step (click is not offered: a parse error).
	if n := len(model.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	if !strings.Contains(res.Errors[len(res.Errors)-2], `"click" is not available this step; available: done`) {
		t.Fatalf("errors %q", res.Errors)
	}
}

func TestAgentLoopNudges(t *testing.T) {
	env, s := newSession(t)
	var steps []scripted.Step
	for range 8 {
		steps = append(steps, scripted.Step{Action: "click", Label: "Nothing"})
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "looped", "success": false}})
	model := scripted.New(steps)
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	for i, r := range reqs {
		txt := userText(r)
		switch {
		case i < 5 && strings.Contains(txt, "LOOP"):
			t.Fatalf("request %d nudges too early:\n%s", i, txt)
		case i >= 5 && i < 8 && !strings.Contains(txt, "LOOP CHECK: you repeated the same action"):
			t.Fatalf("request %d lacks the first nudge", i)
		case i == 8 && !strings.Contains(txt, "LOOP WARNING"):
			t.Fatalf("request 8 lacks the second nudge:\n%s", txt)
		}
	}
	var clicks int
	evalPage(t, s, `window.__noop`, &clicks)
	if clicks != 8 {
		t.Fatalf("nudges must not block: %d clicks ran", clicks)
	}
}

type colorParams struct {
	Color string `json:"color" description:"a color name" enum:"red,green"`
	Count int    `json:"count"`
	Note  string `json:"note,omitempty"`
}

func TestAgentCustomAction(t *testing.T) {
	env, s := newSession(t)
	reg := agent.DefaultRegistry()
	var got []colorParams
	var sawState bool
	err := agent.Register(reg, "paint", "Paint things", func(_ context.Context, ac *agent.ActionContext, p colorParams) (agent.ActionResult, error) {
		got = append(got, p)
		sawState = ac.BrowserState != nil && strings.Contains(ac.BrowserState.URL, "agent-form")
		return agent.ActionResult{Text: fmt.Sprintf("painted %d %s", p.Count, p.Color)}, nil
	}, agent.WithRisk(agent.RiskInput))
	if err != nil {
		t.Fatal(err)
	}
	onlyElsewhere := func(context.Context, *agent.ActionContext, colorParams) (agent.ActionResult, error) {
		t.Error("domain-filtered action ran")
		return agent.ActionResult{}, nil
	}
	if err := agent.Register(reg, "elsewhere", "only on example.org", onlyElsewhere, agent.OnDomains("example.org")); err != nil {
		t.Fatal(err)
	}
	model := scripted.New([]scripted.Step{
		{Action: "paint", Params: map[string]any{"color": "purple", "count": 2}}, // enum violation: parse error
		{Action: "paint", Params: map[string]any{"color": "green", "count": 3}},
		{Action: "done", Params: map[string]any{"text": "painted", "success": true}},
	})
	set := settings(t)
	set.Tools = reg
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if len(got) != 1 || got[0] != (colorParams{Color: "green", Count: 3}) || !sawState {
		t.Fatalf("custom action got %+v (state %v)", got, sawState)
	}
	reqs := model.Requests()
	if txt := userText(reqs[1]); !strings.Contains(txt, "parameters do not fit") || !strings.Contains(txt, "purple") {
		t.Fatalf("enum violation not reported:\n%s", txt)
	}
	if txt := userText(reqs[0]); strings.Contains(txt, "elsewhere:") || !strings.Contains(txt, "paint: Paint things") {
		t.Fatalf("offered actions wrong:\n%s", txt)
	}
}

func TestAgentStructuredOutput(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"success": true, "data": map[string]any{"name": 5, "total": 3}}},
		{Action: "done", Params: map[string]any{"success": true, "data": map[string]any{"name": "Ada", "total": 3}}},
	})
	set := settings(t)
	set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"total":{"type":"integer"}},"required":["name","total"],"additionalProperties":false}`)
	a, err := agent.New("Open "+env.URL("/agent-form.html")+" and report", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	var out struct {
		Name  string `json:"name"`
		Total int    `json:"total"`
	}
	if err := json.Unmarshal(res.StructuredOutput, &out); err != nil || out.Name != "Ada" || out.Total != 3 || !res.Success {
		t.Fatalf("structured output %s (%v), result %+v", res.StructuredOutput, err, res)
	}
	if txt := userText(model.Requests()[1]); !strings.Contains(txt, "$.data.name: want string") {
		t.Fatalf("schema violation not reported:\n%s", txt)
	}
	if txt := userText(model.Requests()[0]); !strings.Contains(txt, "<expected_output>") {
		t.Fatal("output schema not shown to the model")
	}
}

func TestAgentSensitiveData(t *testing.T) {
	const secret = "sk-live-7Hq2ZX9w"
	rec := &recorder{}
	env, s := newSession(t)
	obs := s.Bus().Observe(rec)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "API key", Params: map[string]any{"text": "<secret>api_key</secret>"}},
			{Name: "click", Label: "Connect"},
		}},
		{WaitFor: "Key accepted", Action: "done", Params: map[string]any{"text": "connected", "success": true}},
	})
	set := settings(t)
	set.SensitiveDataByDomain = map[string]map[string]string{"127.0.0.1": {"api_key": secret}}
	a, err := agent.New("Open "+env.URL("/agent-login.html")+" and connect with the API key", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v (%v)", res, model.Errors())
	}
	var typed string
	evalPage(t, s, `document.getElementById('key').value`, &typed)
	if typed != secret {
		t.Fatalf("the secret was not typed: %q", typed)
	}
	for i, r := range model.Requests() {
		txt := userText(r)
		if strings.Contains(txt, secret) {
			t.Fatalf("request %d shows the secret:\n%s", i, txt)
		}
		if !strings.Contains(txt, "<secret>api_key</secret>") {
			t.Fatalf("request %d lacks the placeholder", i)
		}
	}
	// The next page state shows the field's value: scrubbed.
	if !strings.Contains(userText(model.Requests()[1]), "Typed the secret api_key") {
		t.Fatalf("result line:\n%s", userText(model.Requests()[1]))
	}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := a.History().Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), secret) {
		t.Fatal("history file holds the secret")
	}
	obs.Stop()
	<-obs.Done() // every record buffered so far has been delivered
	if obs.Dropped() != 0 {
		t.Fatalf("%d records dropped", obs.Dropped())
	}
	if all := rec.all(); strings.Contains(all, secret) || !strings.Contains(all, "TypeText") {
		t.Fatalf("bus records leak the secret or miss TypeText:\n%s", all)
	}
}

func TestAgentSensitiveDataWrongDomain(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Action: "input", Label: "API key", Params: map[string]any{"text": "<secret>api_key</secret>"}},
		{Action: "done", Params: map[string]any{"text": "refused", "success": false}},
	})
	set := settings(t)
	set.SensitiveDataByDomain = map[string]map[string]string{"bank.example": {"api_key": "s3cr3t-value"}}
	a, err := agent.New("Open "+env.URL("/agent-login.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	var typed string
	evalPage(t, s, `document.getElementById('key').value`, &typed)
	if typed != "" {
		t.Fatalf("secret typed on a domain it is not allowed on: %q", typed)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, `secret \"api_key\" is not available`) && !strings.Contains(txt, `secret "api_key" is not available`) {
		t.Fatalf("refusal not reported:\n%s", txt)
	}
	if strings.Contains(userText(model.Requests()[0]), "<sensitive_data>") {
		t.Fatal("placeholders offered on a page where they are not usable")
	}
}

func TestAgentApprovalDenial(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "click", Label: "Next"},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "a@b.c"}},
		}},
		{Action: "done", Params: map[string]any{"text": "blocked", "success": false}},
	})
	set := settings(t)
	var asked []agent.ApprovalRequest
	set.Approver = agent.ApproverFunc(func(ctx context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
		asked = append(asked, r)
		return agent.DenyRisks{agent.RiskSubmit: "clicks need a human"}.Approve(ctx, r)
	})
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	var url, email string
	evalPage(t, s, `location.pathname`, &url)
	evalPage(t, s, `document.querySelector('[name=email]').value`, &email)
	if url != "/agent-form.html" || email != "" {
		t.Fatalf("denied click ran or batch continued: %s email=%q", url, email)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, "denied by approval policy: clicks need a human") || !strings.Contains(txt, "NOT run: 3 input") {
		t.Fatalf("denial not reported:\n%s", txt)
	}
	// navigate (step 0), input, click (denied), done
	if len(asked) != 4 || asked[2].Risk != agent.RiskSubmit || asked[2].Action != "click" {
		t.Fatalf("approver calls %+v", asked)
	}
}

// funcModel answers with a function of the call number.
type funcModel struct {
	mu   sync.Mutex
	n    int
	reqs []llm.Request
	fn   func(n int) (*llm.Response, error)
}

func (m *funcModel) Name() string { return "func" }
func (m *funcModel) Generate(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	n := m.n
	m.n++
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.fn(n)
}

func TestAgentEmptyReplyTwice(t *testing.T) {
	for _, structured := range []bool{false, true} {
		t.Run(fmt.Sprint("structured=", structured), func(t *testing.T) {
			env, s := newSession(t)
			model := &funcModel{fn: func(n int) (*llm.Response, error) {
				if n == 0 {
					return &llm.Response{Content: ""}, &llm.ReplyError{Provider: "test", Kind: llm.ErrEmptyReply}
				}
				return &llm.Response{Content: `{"thinking":"","evaluation_previous_goal":"","memory":"","next_goal":"","action":[]}`}, nil
			}}
			set := settings(t)
			if structured {
				set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`)
			}
			a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
			if err != nil {
				t.Fatal(err)
			}
			res := runAgent(t, a)
			if !res.Done || res.Success || !strings.Contains(res.FinalText, "no action") || res.StructuredOutput != nil {
				t.Fatalf("result %+v", res)
			}
			if len(model.reqs) != 2 || !strings.Contains(model.reqs[1].Messages[len(model.reqs[1].Messages)-1].TextContent(), "no action") {
				t.Fatalf("the model was not asked again: %d calls", len(model.reqs))
			}
			if fin, ok := a.History().FinalResult(); !ok || fin.Success {
				t.Fatalf("history final %+v %v", fin, ok)
			}
		})
	}
}

func TestAgentMalformedReply(t *testing.T) {
	env, s := newSession(t)
	model := &funcModel{fn: func(n int) (*llm.Response, error) {
		switch n {
		case 0:
			return &llm.Response{Content: `{"action": [{"click": {"index": 1}` /* cut */}, nil
		case 1:
			return &llm.Response{Content: `{"action": [{"fly": {}}]}`}, nil
		default:
			return &llm.Response{Content: "```json\n{\"action\": [{\"done\": {\"text\": \"ok\", \"success\": true}}]}\n```"}, nil
		}
	}}
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if txt := userText(model.reqs[1]); !strings.Contains(txt, "could not be used") || !strings.Contains(txt, "not a JSON object") {
		t.Fatalf("parse error not shown:\n%s", txt)
	}
	if txt := userText(model.reqs[2]); !strings.Contains(txt, `"fly" is not available`) {
		t.Fatalf("unknown action not shown:\n%s", txt)
	}
	h := a.History()
	if !h.Items[1].Failed || !h.Items[2].Failed || h.Items[3].Failed {
		t.Fatal("parse errors must count as failures")
	}
}

func TestAgentFollowUpTask(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"text": "first", "success": true}},
		{Action: "write_file", Params: map[string]any{"file_name": "notes.md", "content": "hello"}},
		{Action: "done", Params: map[string]any{"text": "second", "success": true}},
	})
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	if res := runAgent(t, a); res.FinalText != "first" {
		t.Fatalf("first run %+v", res)
	}
	if err := a.AddTask("Now write notes"); err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if res.FinalText != "second" || res.Steps != 2 {
		t.Fatalf("second run %+v", res)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, "<initial_user_request>") || !strings.Contains(txt, "<follow_up_user_request>\nNow write notes") || !strings.Contains(txt, "<step_1>") {
		t.Fatalf("follow-up message:\n%s", txt)
	}
	if !strings.Contains(userText(model.Requests()[2]), `<file name="notes.md"`) {
		t.Fatal("file not shown in agent_state")
	}
	if b, err := os.ReadFile(filepath.Join(a.RunDir(), "files", "notes.md")); err != nil || string(b) != "hello" {
		t.Fatalf("file on disk %q %v", b, err)
	}
	if got := a.History().Items; got[len(got)-1].Step != 3 {
		t.Fatalf("step numbers must continue: last %d", got[len(got)-1].Step)
	}
}

func TestAgentEvaluateAndExtract(t *testing.T) {
	env, s := newSession(t)
	extractor := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: "The heading says Sign up"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{Action: "evaluate", Params: map[string]any{"code": "document.querySelectorAll('input').length * 10"}},
		{Action: "evaluate", Params: map[string]any{"code": "nope.nope"}},
		{Action: "extract", Params: map[string]any{"query": "what does the heading say?"}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := settings(t)
	set.ExtractModel = extractor
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	reqs := model.Requests()
	if txt := userText(reqs[1]); !strings.Contains(txt, "Result: 20") {
		t.Fatalf("evaluate result:\n%s", txt)
	}
	if txt := userText(reqs[2]); !strings.Contains(txt, "ReferenceError") {
		t.Fatalf("evaluate error:\n%s", txt)
	}
	if txt := userText(reqs[3]); !strings.Contains(txt, "<read_state>") || !strings.Contains(txt, "The heading says Sign up") {
		t.Fatalf("extract result:\n%s", txt)
	}
	if !strings.Contains(userText(extractor.reqs[0]), "Sign up (1 of 2)") {
		t.Fatal("extraction model did not get the page text")
	}
}

// dynModel answers each call with a function of the request (for steps whose
// parameters depend on the page, like tab ids).
func dynModel(steps ...func(txt string) string) *funcModel {
	m := &funcModel{}
	m.fn = func(n int) (*llm.Response, error) {
		if n >= len(steps) {
			return &llm.Response{Content: `{"action":[{"done":{"text":"script over","success":false}}]}`}, nil
		}
		m.mu.Lock()
		txt := userText(m.reqs[n])
		m.mu.Unlock()
		return &llm.Response{Content: steps[n](txt)}, nil
	}
	return m
}

func act(name string, params any) string {
	b, _ := json.Marshal(map[string]any{"action": []any{map[string]any{name: params}}})
	return string(b)
}

func indexOf(t *testing.T, txt, label, tag string) int {
	el, err := scripted.Find(scripted.ParseElements(txt), label, tag)
	if err != nil {
		t.Errorf("find %q: %v", label, err)
		return 0
	}
	return el.Index
}

var tabRE = regexp.MustCompile(`Tab (\w{4}): (\S+)`)

func tabID(txt, urlPart string) string {
	for _, m := range tabRE.FindAllStringSubmatch(txt, -1) {
		if strings.Contains(m[2], urlPart) {
			return m[1]
		}
	}
	return "none"
}

func TestAgentBrowserActions(t *testing.T) {
	env, s := newSession(t)
	model := dynModel(
		func(txt string) string {
			return act("dropdown_options", map[string]any{"index": indexOf(t, txt, "plan", "select")})
		},
		func(txt string) string {
			return act("select_dropdown", map[string]any{"index": indexOf(t, txt, "plan", "select"), "text": "Basic"})
		},
		func(txt string) string { return act("find_text", map[string]any{"text": "Sign up"}) },
		func(txt string) string { return act("scroll", map[string]any{"down": true, "pages": 0.5}) },
		func(txt string) string { return act("hover", map[string]any{"index": indexOf(t, txt, "Finish", "")}) },
		func(txt string) string {
			return act("navigate", map[string]any{"url": env.URL("/agent-login.html"), "new_tab": true})
		},
		func(txt string) string { return act("switch_tab", map[string]any{"tab_id": tabID(txt, "agent-form2")}) },
		func(txt string) string { return act("close_tab", map[string]any{"tab_id": tabID(txt, "agent-login")}) },
		func(txt string) string { return act("send_keys", map[string]any{"keys": "Tab"}) },
		func(txt string) string { return act("screenshot", map[string]any{"file_name": "page.png"}) },
		func(txt string) string {
			return act("write_file", map[string]any{"file_name": "r.md", "content": "plan=basic"})
		},
		func(txt string) string {
			return act("replace_file", map[string]any{"file_name": "r.md", "old_str": "basic", "new_str": "BASIC"})
		},
		func(txt string) string { return act("read_file", map[string]any{"file_name": "r.md"}) },
		func(txt string) string { return act("go_back", map[string]any{}) },
		func(txt string) string { return act("done", map[string]any{"text": "ok", "success": true}) },
	)
	set := settings(t)
	set.Vision = agent.VisionAuto
	a, err := agent.New("Open "+env.URL("/agent-form2.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	h := a.History()
	for _, it := range h.Items {
		for _, r := range it.Actions {
			if r.Error != "" {
				t.Errorf("step %d %s: %s", it.Step, r.Name, r.Error)
			}
		}
		if it.Error != "" {
			t.Errorf("step %d: %s", it.Step, it.Error)
		}
	}
	reqs := model.reqs
	if txt := userText(reqs[1]); !strings.Contains(txt, `"Basic" value="basic"`) || !strings.Contains(txt, "<read_state>") {
		t.Errorf("dropdown options not in read_state:\n%s", txt)
	}
	if txt := userText(reqs[2]); strings.Contains(txt, "<read_state>") {
		t.Error("read_state shown twice")
	}
	if r := h.Items[2].Actions[0]; !strings.Contains(r.Result.Text, `Selected "Basic"`) {
		t.Errorf("select result %+v", r)
	}
	if txt := userText(reqs[6]); !strings.Contains(txt, "agent-login.html") || !strings.Contains(txt, "Current URL: "+env.URL("/agent-login.html")) {
		t.Errorf("new tab not focused:\n%s", txt)
	}
	if txt := userText(reqs[8]); tabID(txt, "agent-login") != "none" {
		t.Errorf("closed tab still listed:\n%s", txt)
	}
	// Vision auto: only the step after the screenshot action has an image.
	for i, r := range reqs {
		img := false
		for _, p := range r.Messages[len(r.Messages)-1].Parts {
			img = img || p.Image != nil
		}
		if img != (i == 10) {
			t.Errorf("request %d image=%v", i, img)
		}
	}
	if _, err := os.Stat(filepath.Join(a.RunDir(), "files", "page.png")); err != nil {
		t.Error(err)
	}
	if txt := userText(reqs[13]); !strings.Contains(txt, "plan=BASIC") {
		t.Errorf("read_file content:\n%s", txt)
	}
	if r := h.Items[14].Actions[0]; r.Name != "go_back" || r.Verdict != "navigated" {
		t.Errorf("go_back %+v", r)
	}
}

func TestAgentUpload(t *testing.T) {
	env, s := newSession(t)
	model := dynModel(
		func(txt string) string {
			return act("write_file", map[string]any{"file_name": "cv.txt", "content": "Ada's CV"})
		},
		func(txt string) string {
			return act("upload_file", map[string]any{"index": indexOf(t, txt, "Resume file", ""), "path": "/etc/passwd"})
		},
		func(txt string) string {
			return act("upload_file", map[string]any{"index": indexOf(t, txt, "Resume file", ""), "path": "cv.txt"})
		},
		func(txt string) string { return act("done", map[string]any{"text": "uploaded", "success": true}) },
	)
	a, err := agent.New("Open "+env.URL("/agent-upload.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	h := a.History()
	if e := h.Items[2].Actions[0].Error; !strings.Contains(e, `file "/etc/passwd" may not be uploaded`) {
		t.Fatalf("upload of an outside file: %q", e)
	}
	if e := h.Items[3].Actions[0].Error; e != "" {
		t.Fatalf("upload of an agent file: %s", e)
	}
	var name string
	evalPage(t, s, `document.getElementById('f').files[0].name`, &name)
	if name != "cv.txt" {
		t.Fatalf("uploaded %q", name)
	}
}

func TestAgentBudgetAndInitialActions(t *testing.T) {
	env, s := newSession(t)
	var steps []scripted.Step
	for i := range 4 {
		steps = append(steps, scripted.Step{Action: "write_file", Params: map[string]any{"file_name": "n.md", "content": fmt.Sprint(i)}})
	}
	model := scripted.New(steps)
	set := settings(t)
	set.MaxSteps = 4
	set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + env.URL("/agent-form.html") + `"}`)}}
	a, err := agent.New("Note things down", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if res.Done || len(res.Errors) == 0 || !strings.Contains(res.Errors[len(res.Errors)-1], "maximum number of steps") {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if !strings.Contains(userText(reqs[0]), "Current URL: "+env.URL("/agent-form.html")) {
		t.Fatal("initial action did not run before the first step")
	}
	if strings.Contains(userText(reqs[1]), "BUDGET WARNING") || !strings.Contains(userText(reqs[2]), "BUDGET WARNING: you have used 3 of 4 steps") {
		t.Fatal("budget warning at 75 %")
	}
	if !strings.Contains(userText(reqs[3]), "This is the last step of the budget") {
		t.Fatal("last-step message")
	}
	if res.Steps != 5 { // step 0 + 4
		t.Fatalf("steps %d", res.Steps)
	}
}

// failingDOM answers BrowserStateRequest the way the DOM watchdog does when
// its build fails (a state with Error set), to check what the model is told.
type failingDOM struct{}

func (failingDOM) Name() string { return "dom" }
func (failingDOM) Attach(s *session.Session) error {
	_, err := bus.Handle(s.Bus(), events.BrowserStateRequest, "failing-dom", func(ctx context.Context, _ events.BrowserStateRequestEvent) (events.BrowserState, error) {
		s.SetSelectorMap(nil)
		return events.BrowserState{URL: "http://x.test/", FocusedTarget: s.FocusedTab(), Tabs: s.Tabs(), Error: "DOM build failed: capture timed out; no element indexes are valid this step"}, nil
	})
	return err
}

func TestAgentDOMErrorShown(t *testing.T) {
	env := testbrowser.Start(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL()}, session.WithWatchdogs(watchdogs.NewActions(watchdogs.ActionsConfig{}), failingDOM{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "page unreadable", "success": false}}})
	a, err := agent.New("read the page", model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	txt := userText(model.Requests()[0])
	if !strings.Contains(txt, "<browser_state_error>\nDOM build failed: capture timed out") || strings.Contains(txt, "[Start of page]") {
		t.Fatalf("DOM failure not shown as such:\n%s", txt)
	}
	if a.History().Items[0].State.DOMError == "" {
		t.Fatal("history lacks the DOM error")
	}
}

func TestAgentSessionNotStarted(t *testing.T) {
	s := session.New(session.Profile{})
	a, err := agent.New("do something", scripted.New(nil), s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); !errors.Is(err, session.ErrNotStarted) {
		t.Fatalf("run on a stopped session: %v", err)
	}
	if _, err := agent.New("x", nil, s, agent.Settings{}); !errors.Is(err, agent.ErrNoModel) {
		t.Fatal(err)
	}
	if _, err := agent.New(" ", scripted.New(nil), s, agent.Settings{}); !errors.Is(err, agent.ErrSettings) {
		t.Fatal(err)
	}
}

func TestAgentBatchFencesNavigation(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "click", Label: "Next"},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "late"}},
		}},
		{Actions: []scripted.Action{
			{Name: "navigate", Params: map[string]any{"url": env.URL("/agent-form.html")}},
			{Name: "click", Label: "Finish"},
		}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a, err := agent.New("Open "+env.URL("/agent-form.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	reqs := model.Requests()
	// The submit navigates asynchronously: either the fence sees it before
	// action 3 (dropped), or action 3 fails on the old index. Both must be
	// told to the model; typing into the new page must never happen.
	txt := userText(reqs[1])
	fenced := strings.Contains(txt, "NOT run: 3 input")
	failed := strings.Contains(txt, "Action 3/3 input") && strings.Contains(txt, "ERROR: ") && strings.Contains(txt, "element index not in the current page state")
	if (!fenced && !failed) || !strings.Contains(txt, "Current URL: "+env.URL("/agent-form2.html")) {
		t.Fatalf("navigation mid-batch:\n%s", txt)
	}
	t.Logf("navigation mid-batch: fenced=%v failed=%v", fenced, failed)
	if txt := userText(reqs[2]); !strings.Contains(txt, "Batch stopped: action 1 (navigate) changes the page, so it always ends the batch") {
		t.Fatalf("terminating fence:\n%s", txt)
	}
	h := a.History()
	if len(h.Items[2].Actions) != 1 {
		t.Fatalf("batches ran %d and %d actions", len(h.Items[1].Actions), len(h.Items[2].Actions))
	}
}
