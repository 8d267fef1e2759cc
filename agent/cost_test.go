package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/openai"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/trace"
)

// billedUsage is what the billing server reports for one kind of call, in
// the shape of OpenAI's usage object.
type billedUsage struct{ prompt, cached, completion, reasoning int }

// billingServer is a local OpenAI endpoint (/v1/chat/completions) that
// answers the agent's step calls from a list of replies (the last one
// repeats), extract calls with a fixed text and judge calls with a
// verdict, and reports realistic usage for each kind of call: cached
// prompt tokens and reasoning tokens included. It counts the calls it
// answered, by kind.
type billingServer struct {
	*httptest.Server
	replies []string
	usage   map[string]billedUsage // by kind: step, extract, judge
	// extractReply answers extract calls ("" makes an empty reply).
	extractReply string

	mu    sync.Mutex
	calls map[string]int
}

func newBillingServer(t *testing.T, replies []string, usage map[string]billedUsage) *billingServer {
	s := &billingServer{replies: replies, usage: usage, calls: map[string]int{}, extractReply: "The plans are Basic and Pro."}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var cr chatRequest
		if err := json.Unmarshal(body, &cr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kind := "step"
		switch {
		case (cr.ResponseFormat == nil || cr.ResponseFormat.JSONSchema == nil) && bytes.Contains(body, []byte("<steps>")):
			kind = "compact"
		case cr.ResponseFormat == nil || cr.ResponseFormat.JSONSchema == nil:
			kind = "extract"
		case cr.ResponseFormat.JSONSchema.Name == "judgement":
			kind = "judge"
		}
		s.mu.Lock()
		n := s.calls[kind]
		s.calls[kind]++
		s.mu.Unlock()
		var content string
		switch kind {
		case "extract":
			content = s.extractReply
		case "compact":
			content = "The agent searched the form for plans."
		case "judge":
			content = `{"reasoning":"the answer names the plans","verdict":true,"failure_reason":"","impossible_task":false}`
		default:
			content = s.replies[min(n, len(s.replies)-1)]
		}
		u := s.usage[kind]
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini-2025-04-14",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage": map[string]any{
				"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.cached},
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.reasoning},
			},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *billingServer) count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[kind]
}

// model is the openai provider pointed at the server, named gpt-4.1-mini so
// that the built-in table prices it ($0.40 in, $0.10 cached, $1.60 out).
func (s *billingServer) model(t *testing.T) llm.Model { return s.named(t, "gpt-4.1-mini") }

// named is the openai provider pointed at the server under another name.
func (s *billingServer) named(t *testing.T, name string) llm.Model {
	m, err := openai.New(openai.Config{Model: name, APIKey: "k", BaseURL: s.URL + "/v1", HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A step call: 20,000 prompt tokens (a page with its screenshot), 12,000 of
// them from the prompt cache, 150 out of which 64 reasoning.
var stepUsage = billedUsage{prompt: 20000, cached: 12000, completion: 150, reasoning: 64}

// Its price for gpt-4.1-mini: 8,000 × $0.40 + 12,000 × $0.10 + 150 × $1.60
// per million.
const stepCost = 8000*0.40/1e6 + 12000*0.10/1e6 + 150*1.60/1e6 // $0.00464

const searchReply = `{"memory":"Reading the form.","action":[{"search_page":{"pattern":"plan"}}]}`

func nearly(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// tracedRun runs an agent on the form page with a trace observer and
// returns the result, the error, the history and the trace's records.
func tracedRun(t *testing.T, model llm.Model, set agent.Settings) (*agent.Result, error, *agent.History, []trace.Record) {
	t.Helper()
	env, s := newSession(t)
	tw, err := trace.Create(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	obs := trace.NewAgentObserver(tw, set.RunDir)
	set.Observers = append(set.Observers, obs)
	a, err := agent.New("Open "+env.URL("/agent-form.html")+" and tell me which plans there are.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, runErr := a.Run(ctx)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := obs.Err(); err != nil {
		t.Fatal(err)
	}
	h, err := agent.LoadHistory(filepath.Join(set.RunDir, "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadFile(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return res, runErr, h, recs
}

// A run over the openai provider against a local server that reports
// cached and reasoning tokens: each step's cost, the extract call's, the
// judge's and the run's are the list prices times the reported tokens, in
// the history (as saved), the result and the trace.
func TestCostOfStepsAndRun(t *testing.T) {
	srv := newBillingServer(t, []string{
		searchReply,
		`{"memory":"Asking the page.","action":[{"extract":{"query":"Which plans are offered?"}}]}`,
		searchReply,
		`{"memory":"Done.","action":[{"done":{"text":"Basic and Pro","success":true}}]}`,
	}, map[string]billedUsage{
		"step":    stepUsage,
		"extract": {prompt: 5000, completion: 80},
		"judge":   {prompt: 3000, cached: 1024, completion: 40, reasoning: 16},
	})
	set := settings(t)
	model := srv.model(t)
	set.Judge = agent.ModelJudge{Model: model}
	res, err, h, recs := tracedRun(t, model, set)
	if err != nil || !res.Done || !res.Success {
		t.Fatalf("run: %v %+v", err, res)
	}
	if srv.count("step") != 4 || srv.count("extract") != 1 || srv.count("judge") != 1 {
		t.Fatalf("calls %v", srv.calls)
	}
	const extractCost = 5000*0.40/1e6 + 80*1.60/1e6
	const judgeCost = (3000-1024)*0.40/1e6 + 1024*0.10/1e6 + 40*1.60/1e6
	if len(h.Items) != 5 || h.Items[0].Cost.Total != 0 || !h.Items[0].Cost.Known() {
		t.Fatalf("history: %d items, step 0 cost %+v", len(h.Items), h.Items[0].Cost)
	}
	for _, it := range h.Items[1:] {
		want := stepCost
		if it.Step == 2 {
			want += extractCost
		}
		c := it.Cost
		if !nearly(c.Total, want) || !c.Known() || !nearly(c.Input+c.CachedInput+c.CacheWrite+c.Output, c.Total) {
			t.Errorf("step %d cost %+v, want total %g", it.Step, c, want)
		}
		if !nearly(c.Reasoning, 64*1.60/1e6) || !nearly(c.CachedInput, 12000*0.10/1e6) {
			t.Errorf("step %d: reasoning %g cached %g", it.Step, c.Reasoning, c.CachedInput)
		}
		if it.Usage.CachedTokens != 12000 || it.Usage.ReasoningTokens != 64 {
			t.Errorf("step %d usage %+v", it.Step, it.Usage)
		}
	}
	wantRun := 4*stepCost + extractCost + judgeCost
	if !nearly(res.Cost.Total, wantRun) || !res.Cost.Known() {
		t.Fatalf("run cost %+v, want %g", res.Cost, wantRun)
	}
	if u := res.Usage; u.PromptTokens != 4*20000+5000+3000 || u.CachedTokens != 4*12000+1024 || u.CompletionTokens != 4*150+80+40 || u.ReasoningTokens != 4*64+16 {
		t.Fatalf("run usage %+v", u)
	}
	t.Logf("run: tokens %s · %s (steps %g, extract %g, judge %g)", agent.FormatUsage(res.Usage), res.Cost, 4*stepCost, extractCost, judgeCost)

	// The trace: one model record per call with its cost, the step records
	// with theirs, the run record with the total.
	var models, judged int
	var runRec *trace.Run
	for _, r := range recs {
		switch r.Type {
		case trace.TypeModel:
			var m trace.Model
			if err := json.Unmarshal(r.Data, &m); err != nil {
				t.Fatal(err)
			}
			models++
			if m.Cost == nil || m.Cost.Total <= 0 {
				t.Errorf("model record without cost: %s", r.Data)
			}
			if m.Purpose == "judge" {
				judged++
				if !nearly(m.Cost.Total, judgeCost) || m.CachedTokens != 1024 || m.ReasoningTokens != 16 {
					t.Errorf("judge record %s", r.Data)
				}
			}
		case trace.TypeStep:
			var st trace.Step
			if err := json.Unmarshal(r.Data, &st); err != nil {
				t.Fatal(err)
			}
			if st.Step == 3 && (st.Cost == nil || !nearly(st.Cost.Total, stepCost) || st.CachedTokens != 12000) {
				t.Errorf("step record %s", r.Data)
			}
		case trace.TypeRun:
			runRec = new(trace.Run)
			if err := json.Unmarshal(r.Data, runRec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if models != 6 || judged != 1 || runRec == nil || runRec.Cost == nil || !nearly(runRec.Cost.Total, wantRun) || runRec.BudgetExceeded != "" {
		t.Fatalf("trace: %d model records (%d judge), run %+v", models, judged, runRec)
	}
	raw, err := os.ReadFile(filepath.Join(set.RunDir, "history.json"))
	if err != nil || !bytes.Contains(raw, []byte(`"cached_input_usd"`)) {
		t.Fatalf("history.json lacks the cost: %v", err)
	}
}

// budgetRun runs the form task with replies that never finish, under the
// given budget, and checks the stop: Run's error is a *BudgetError, the
// result says why in its last error and Err, history and trace are
// written, and the step whose call was refused is recorded with the
// reason.
//
// The system prompt is lengthened to about 75,000 characters, so that the
// server's 20,000 prompt tokens are a real prompt's count (3.75 characters
// a token) and the meter's estimate of the next call is near it.
func budgetRun(t *testing.T, srv *billingServer, set agent.Settings) (*agent.BudgetError, *agent.Result, *agent.History) {
	t.Helper()
	set.ExtendSystemPrompt = strings.Repeat("Keep to the task and answer briefly. ", 1900)
	res, err, h, recs := tracedRun(t, srv.model(t), set)
	var be *agent.BudgetError
	if !errors.Is(err, agent.ErrBudgetExceeded) || !errors.As(err, &be) || res == nil || res.Err != err {
		t.Fatalf("run: err %v, result %+v", err, res)
	}
	if res.Done || len(res.Errors) == 0 || res.Errors[len(res.Errors)-1] != be.Error() {
		t.Fatalf("result errors %q, want the reason %q last", res.Errors, be.Error())
	}
	for _, e := range res.Errors[:len(res.Errors)-1] {
		if strings.Contains(e, "stopped before") {
			t.Fatalf("the reason is said twice: %q", res.Errors)
		}
	}
	var runRec trace.Run
	for _, r := range recs {
		if r.Type == trace.TypeRun {
			if err := json.Unmarshal(r.Data, &runRec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if runRec.BudgetExceeded != be.Error() || (runRec.Cost == nil && res.Usage != (llm.Usage{})) {
		t.Fatalf("trace run record %+v", runRec)
	}
	return be, res, h
}

// --max-tokens: two step calls of 20,150 tokens fit in 50,300; the third
// (estimated at about as many) would not, so it is not made.
func TestBudgetMaxTokensStopsBeforeTheCall(t *testing.T) {
	srv := newBillingServer(t, []string{searchReply}, map[string]billedUsage{"step": stepUsage})
	set := settings(t)
	set.MaxTokens = 50300
	be, res, h := budgetRun(t, srv, set)
	if srv.count("step") != 2 {
		t.Fatalf("%d step calls, want exactly 2", srv.count("step"))
	}
	if be.Budget != "tokens" || be.Step != 3 || be.Purpose != "step" || be.SpentTokens != 2*20150 || be.SpentTokens+be.EstimateTokens <= 50300 || be.MaxTokens != 50300 {
		t.Fatalf("budget error %+v", be)
	}
	if !strings.HasPrefix(be.Error(), "stopped before the model call of step 3: it would bring the tokens to ~") || !strings.Contains(be.Error(), "of the 50k budget (40k spent") {
		t.Fatalf("reason %q", be.Error())
	}
	last := h.Items[len(h.Items)-1]
	if len(h.Items) != 4 || last.Step != 3 || last.Error != be.Error() || last.Usage != (llm.Usage{}) || last.Cost.Total != 0 {
		t.Fatalf("history: %d items, last %+v", len(h.Items), last)
	}
	if res.Usage.PromptTokens+res.Usage.CompletionTokens != 2*20150 || res.Steps != 4 {
		t.Fatalf("result usage %+v steps %d", res.Usage, res.Steps)
	}
	t.Logf("reason: %s", be.Error())
}

// --max-cost: two step calls of $0.00464 fit in $0.0116; the third would
// bring the cost to about $0.0139, so it is not made.
func TestBudgetMaxCostStopsBeforeTheCall(t *testing.T) {
	srv := newBillingServer(t, []string{searchReply}, map[string]billedUsage{"step": stepUsage})
	set := settings(t)
	set.MaxCost = 0.0116
	be, res, _ := budgetRun(t, srv, set)
	if srv.count("step") != 2 {
		t.Fatalf("%d step calls, want exactly 2", srv.count("step"))
	}
	if be.Budget != "cost" || be.Step != 3 || !nearly(be.SpentUSD, 2*stepCost) || be.SpentUSD+be.EstimateUSD <= 0.0116 {
		t.Fatalf("budget error %+v", be)
	}
	if !strings.HasPrefix(be.Error(), "stopped before the model call of step 3: it would bring the cost to ~$0.01") || !strings.Contains(be.Error(), "of the $0.0116 budget ($0.0093 spent") {
		t.Fatalf("reason %q", be.Error())
	}
	if !nearly(res.Cost.Total, 2*stepCost) {
		t.Fatalf("result cost %+v", res.Cost)
	}
	t.Logf("reason: %s", be.Error())
}

// A side call is budgeted too: the extract action's model call that would
// go over is not made, the action fails with the reason, and the run stops
// after that step.
func TestBudgetStopsBeforeAnExtractCall(t *testing.T) {
	srv := newBillingServer(t, []string{`{"memory":"Asking the page.","action":[{"extract":{"query":"Which plans are offered?"}}]}`},
		map[string]billedUsage{"step": stepUsage, "extract": {prompt: 5000, completion: 80}})
	set := settings(t)
	set.MaxTokens = 20150 + 100
	be, _, h := budgetRun(t, srv, set)
	if srv.count("step") != 1 || srv.count("extract") != 0 {
		t.Fatalf("calls %v, want 1 step call and no extract call", srv.calls)
	}
	if be.Purpose != "extract" || be.Step != 1 || !strings.HasPrefix(be.Error(), "stopped before the extract action's model call in step 1:") {
		t.Fatalf("budget error %+v: %s", be, be)
	}
	last := h.Items[len(h.Items)-1]
	if len(h.Items) != 2 || len(last.Actions) != 1 || !strings.Contains(last.Actions[0].Error, be.Error()) {
		t.Fatalf("history: %d items, last %+v", len(h.Items), last)
	}
}

// The history summary is budgeted: with a summariser priced at $1,000 per
// million tokens (a prices override), its first call would cost more than
// the $0.10 left, so it is not made and the run stops before step 3's
// model call.
func TestBudgetStopsBeforeAHistorySummary(t *testing.T) {
	srv := newBillingServer(t, []string{searchReply}, map[string]billedUsage{"step": stepUsage, "compact": {prompt: 3000, completion: 200}})
	set := settings(t)
	set.MaxCost = 0.10
	set.Prices = pricing.Default().Merge(pricing.Entry{Provider: "openai", Model: "summariser", Price: pricing.Price{Input: 1000, CachedInput: 1000, CacheWrite: 1000, Output: 1000}})
	set.CompactionModel = srv.named(t, "summariser")
	set.CompactEverySteps, set.CompactTriggerChars, set.CompactKeepLast = 2, 1, 1
	be, _, h := budgetRun(t, srv, set)
	if srv.count("step") != 2 || srv.count("compact") != 0 {
		t.Fatalf("calls %v, want 2 step calls and no summary", srv.calls)
	}
	if be.Purpose != "compact" || be.Step != 3 || be.Model != "openai:summariser" || be.EstimateUSD < 0.15 || !strings.HasPrefix(be.Error(), "stopped before the history summary of step 3:") {
		t.Fatalf("budget error %+v: %s", be, be)
	}
	last := h.Items[len(h.Items)-1]
	if last.Step != 3 || last.Error != be.Error() || last.Compaction == nil || !strings.Contains(last.Compaction.Error, be.Error()) {
		t.Fatalf("last step %+v", last)
	}
}

// A judge call over the budget is not made: the run keeps its result and
// says why there is no verdict.
func TestBudgetSkipsTheJudge(t *testing.T) {
	srv := newBillingServer(t, []string{`{"memory":"Done.","action":[{"done":{"text":"Basic and Pro","success":true}}]}`},
		map[string]billedUsage{"step": stepUsage, "judge": {prompt: 3000, completion: 40}})
	set := settings(t)
	set.MaxTokens = 20150 + 100
	set.Judge = agent.ModelJudge{Model: srv.model(t)}
	res, err, _, _ := tracedRun(t, srv.model(t), set)
	if err != nil || !res.Done || !res.Success || res.Judgement != nil || res.Err != nil {
		t.Fatalf("run: %v %+v", err, res)
	}
	if srv.count("judge") != 0 || !strings.Contains(res.JudgeError, "stopped before the judge's model call: it would bring the tokens to") {
		t.Fatalf("judge calls %d, judge error %q", srv.count("judge"), res.JudgeError)
	}
}

// A cost budget needs prices: New refuses a model the table does not know,
// and a negative budget.
func TestBudgetSettings(t *testing.T) {
	_, s := newSession(t)
	m, err := openai.New(openai.Config{Model: "my-local-model", APIKey: "k", BaseURL: "http://127.0.0.1:9/v1"})
	if err != nil {
		t.Fatal(err)
	}
	set := settings(t)
	set.MaxCost = 1
	if _, err := agent.New("say hi", m, s, set); !errors.Is(err, agent.ErrSettings) || !strings.Contains(err.Error(), "openai:my-local-model") {
		t.Fatalf("unknown price under MaxCost: %v", err)
	}
	set.MaxCost, set.MaxTokens = 0, -1
	if _, err := agent.New("say hi", m, s, set); !errors.Is(err, agent.ErrSettings) {
		t.Fatalf("negative MaxTokens: %v", err)
	}
	set.MaxTokens = 1000 // a token budget needs no price
	if _, err := agent.New("say hi", m, s, set); err != nil {
		t.Fatal(err)
	}
}

// An extract among the InitialActions that the budget refuses ends the run
// after step 0: no step is observed nor asked for.
func TestBudgetStopsAfterInitialActions(t *testing.T) {
	srv := newBillingServer(t, []string{searchReply}, map[string]billedUsage{"step": stepUsage, "extract": {prompt: 5000, completion: 80}})
	set := settings(t)
	set.MaxTokens = 100
	set.InitialActions = []agent.ActionCall{{Name: "extract", Params: json.RawMessage(`{"query":"Which plans are offered?"}`)}}
	be, res, h := budgetRun(t, srv, set)
	if srv.count("step") != 0 || srv.count("extract") != 0 {
		t.Fatalf("calls %v, want none", srv.calls)
	}
	if be.Purpose != "extract" || be.Step != 0 || res.Steps != 1 || len(h.Items) != 1 || !strings.Contains(h.Items[0].Actions[0].Error, be.Error()) {
		t.Fatalf("budget error %+v, %d steps, history %+v", be, res.Steps, h.Items)
	}
}

// Tokens and cost come from one count: an extract whose reply was empty
// (an error after a billed reply) is in its step's usage and cost, and the
// run's usage is the sum of the steps'.
func TestUsageCountsAFailedExtract(t *testing.T) {
	srv := newBillingServer(t, []string{
		`{"memory":"Asking the page.","action":[{"extract":{"query":"Which plans are offered?"}}]}`,
		`{"memory":"Done.","action":[{"done":{"text":"Basic and Pro","success":true}}]}`,
	}, map[string]billedUsage{"step": stepUsage, "extract": {prompt: 5000, completion: 80}})
	srv.extractReply = ""
	res, err, h, _ := tracedRun(t, srv.model(t), settings(t))
	if err != nil || !res.Done || srv.count("extract") != 1 {
		t.Fatalf("run: %v %+v, calls %v", err, res, srv.calls)
	}
	it := h.Items[1]
	if len(it.Actions) != 1 || it.Actions[0].Error == "" {
		t.Fatalf("step 1: %+v, want a failed extract", it)
	}
	const extractCost = 5000*0.40/1e6 + 80*1.60/1e6
	if it.Usage.PromptTokens != 20000+5000 || it.Usage.CompletionTokens != 150+80 || !nearly(it.Cost.Total, stepCost+extractCost) {
		t.Fatalf("step 1 usage %+v cost %+v", it.Usage, it.Cost)
	}
	var sum llm.Usage
	var cost float64
	for _, it := range h.Items {
		sum.PromptTokens += it.Usage.PromptTokens
		sum.CompletionTokens += it.Usage.CompletionTokens
		cost += it.Cost.Total
	}
	if res.Usage.PromptTokens != sum.PromptTokens || res.Usage.CompletionTokens != sum.CompletionTokens || sum.PromptTokens != 2*20000+5000 || !nearly(res.Cost.Total, cost) {
		t.Fatalf("run usage %+v cost %g, steps' %+v %g", res.Usage, res.Cost.Total, sum, cost)
	}
}

// Tokens a plug-in action reports from a model of its own count toward
// MaxTokens (and the usage), unpriced: step 2's call would fit the budget
// without them, not with them.
func TestBudgetCountsAnActionsOwnTokens(t *testing.T) {
	srv := newBillingServer(t, []string{
		`{"memory":"Summing up.","action":[{"summarise":{"query":"the plans"}}]}`,
		`{"memory":"Done.","action":[{"done":{"text":"Basic and Pro","success":true}}]}`,
	}, map[string]billedUsage{"step": stepUsage, "extract": {prompt: 5000, completion: 80}})
	own := srv.named(t, "my-summariser") // not one of the agent's models: not metered
	type summariseParams struct {
		Query string `json:"query"`
	}
	reg := agent.DefaultRegistry()
	if err := agent.Register(reg, "summarise", "Summarise the page with our own model.", func(ctx context.Context, _ *agent.ActionContext, p summariseParams) (agent.ActionResult, error) {
		resp, err := own.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("Summarise " + p.Query))}})
		if err != nil {
			return agent.ActionResult{}, err
		}
		return agent.ActionResult{Text: resp.Content, Usage: resp.Usage}, nil
	}); err != nil {
		t.Fatal(err)
	}
	set := settings(t)
	set.Tools = reg
	set.MaxTokens = 2*20150 + 2000
	be, res, h := budgetRun(t, srv, set)
	if srv.count("step") != 1 || srv.count("extract") != 1 {
		t.Fatalf("calls %v, want 1 step call and the action's own", srv.calls)
	}
	if be.Step != 2 || be.SpentTokens != 20150+5080 {
		t.Fatalf("budget error %+v", be)
	}
	if u := h.Items[1].Usage; u.PromptTokens != 25000 || u.CompletionTokens != 230 || !nearly(h.Items[1].Cost.Total, stepCost) {
		t.Fatalf("step 1 usage %+v cost %+v", u, h.Items[1].Cost)
	}
	if res.Usage.PromptTokens+res.Usage.CompletionTokens != be.SpentTokens {
		t.Fatalf("result usage %+v, budget spent %d", res.Usage, be.SpentTokens)
	}
}

// Driver.RunTask refuses a model without a price under MaxCost, as New
// does, before anything runs.
func TestDriverRunTaskNeedsAPrice(t *testing.T) {
	srv := newBillingServer(t, []string{searchReply}, map[string]billedUsage{"step": stepUsage})
	_, s := newSession(t)
	set := settings(t)
	set.MaxCost = 1
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.RunTask(ctx, srv.named(t, "my-local-model"), "say hi", agent.TaskOptions{}); !errors.Is(err, agent.ErrSettings) || !strings.Contains(err.Error(), "openai:my-local-model") {
		t.Fatalf("RunTask with an unpriced model: %v", err)
	}
	if srv.count("step") != 0 {
		t.Fatalf("%d model calls", srv.count("step"))
	}
}
