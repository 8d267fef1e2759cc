package agent

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm/openai"
)

// Each reply mode's schema has exactly its fields, in writing order, and
// survives OpenAI's strict adaptation.
func TestReplySchemaModes(t *testing.T) {
	for _, c := range []struct {
		mode     ReplyMode
		planning bool
		keys     string
		required string
	}{
		{ReplyFull, true, "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action", "thinking evaluation_previous_goal memory next_goal action"},
		{ReplyFull, false, "thinking evaluation_previous_goal memory next_goal action", "thinking evaluation_previous_goal memory next_goal action"},
		{ReplyNoThinking, true, "evaluation_previous_goal memory next_goal plan_update current_plan_item action", "evaluation_previous_goal memory next_goal action"},
		{ReplyFlash, true, "memory action", "memory action"},
		{ReplyFlash, false, "memory action", "memory action"},
	} {
		js := replySchema(offeredDefault(), 5, c.mode, c.planning, ActionSchemaFull).JSON
		if got := keysAt(t, js, "properties"); got != c.keys {
			t.Errorf("%s planning=%v: properties %q, want %q", c.mode, c.planning, got, c.keys)
		}
		v, _ := schemax.Parse(js)
		if got := fmtList(at(t, v, "required")); got != c.required {
			t.Errorf("%s planning=%v: required %q, want %q", c.mode, c.planning, got, c.required)
		}
		if _, ok, err := openai.StrictSchema(js); err != nil || !ok {
			t.Errorf("%s: strict adaptation ok=%v err=%v", c.mode, ok, err)
		}
	}
}

// The parser takes exactly the mode's fields: in flash, a stray thinking or
// plan field is not recorded (unknown keys were always ignored); a mode's
// own field of the wrong type is an error.
func TestParseOutputAsModes(t *testing.T) {
	offered := offeredDefault()
	reply := `{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"g","plan_update":["a","b"],"current_plan_item":1,"action":[{"go_back":{}}]}`
	out, err := ParseOutputAs(reply, offered, 5, ReplyFlash, true)
	if err != nil {
		t.Fatal(err)
	}
	if out.Memory != "m" || out.Thinking != "" || out.EvaluationPreviousGoal != "" || out.NextGoal != "" || out.PlanUpdate != nil || out.CurrentPlanItem != nil {
		t.Fatalf("flash kept fields outside its mode: %+v", out)
	}
	out, err = ParseOutputAs(reply, offered, 5, ReplyNoThinking, true)
	if err != nil || out.Thinking != "" || out.EvaluationPreviousGoal != "e" || out.NextGoal != "g" || len(out.PlanUpdate) != 2 || *out.CurrentPlanItem != 1 {
		t.Fatalf("no_thinking: %+v %v", out, err)
	}
	out, err = ParseOutputAs(reply, offered, 5, ReplyFull, false)
	if err != nil || out.Thinking != "t" || out.PlanUpdate != nil || out.CurrentPlanItem != nil {
		t.Fatalf("full without planning: %+v %v", out, err)
	}
	out, err = ParseOutput(`{"plan_update":[],"current_plan_item":null,"action":[{"go_back":{}}]}`, offered, 5)
	if err != nil || out.PlanUpdate == nil || len(out.PlanUpdate) != 0 || out.CurrentPlanItem != nil {
		t.Fatalf("an empty plan_update clears the plan; null keeps the item: %+v %v", out, err)
	}
	for _, c := range []struct {
		mode   ReplyMode
		in     string
		reason string
	}{
		{ReplyFlash, `{"memory":5,"action":[{"go_back":{}}]}`, `"memory" must be a string`},
		{ReplyFull, `{"plan_update":"a, b","action":[{"go_back":{}}]}`, `"plan_update" must be a list of strings`},
		{ReplyFull, `{"plan_update":[1],"action":[{"go_back":{}}]}`, `"plan_update" must be a list of strings`},
		{ReplyNoThinking, `{"current_plan_item":1.5,"action":[{"go_back":{}}]}`, `"current_plan_item" must be an integer`},
		{ReplyFlash, `{"memory":"m"}`, `no "action" list`},
	} {
		_, err := ParseOutputAs(c.in, offered, 5, c.mode, true)
		if !errors.Is(err, ErrInvalidOutput) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s %s: error %v, want %q", c.mode, c.in, err, c.reason)
		}
	}
	// Outside its mode a malformed field is as ignored as an unknown key.
	if _, err := ParseOutputAs(`{"memory":"m","plan_update":"x","thinking":3,"action":[{"go_back":{}}]}`, offered, 5, ReplyFlash, true); err != nil {
		t.Fatalf("flash rejected a field it does not ask for: %v", err)
	}
}

// The system prompt of each mode describes exactly its reply fields; flash
// has no plan advice and no trace of the other fields.
func TestSystemPromptModes(t *testing.T) {
	full := SystemPrompt(5)
	if full != SystemPromptFor(5, ReplyFull, true) {
		t.Fatal("SystemPrompt is not the full mode's")
	}
	for _, c := range []struct {
		name       string
		prompt     string
		want, lack []string
	}{
		{"full", full, []string{`"thinking"`, `"evaluation_previous_goal"`, `"next_goal"`, `"plan_update"`, `"current_plan_item"`, "<plan>", "at most 5 actions"}, nil},
		{"no_thinking", SystemPromptFor(5, ReplyNoThinking, true), []string{`"evaluation_previous_goal"`, `"plan_update"`}, []string{`"thinking"`}},
		{"full, no planning", SystemPromptFor(5, ReplyFull, false), []string{`"thinking"`}, []string{"plan"}},
		{"flash", SystemPromptFor(3, ReplyFlash, true), []string{`"memory": "did the last actions work?`, `"action"`, "at most 3 actions"},
			[]string{"thinking", "evaluation", "next_goal", "next goal", "plan"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.prompt, w) {
				t.Errorf("%s prompt lacks %q", c.name, w)
			}
		}
		for _, l := range c.lack {
			if strings.Contains(c.prompt, l) {
				t.Errorf("%s prompt has %q", c.name, l)
			}
		}
		if strings.Contains(c.prompt, "{{") || strings.Contains(c.prompt, "<no value>") {
			t.Errorf("%s prompt has template residue", c.name)
		}
	}
	if flash, full := len(SystemPromptFor(5, ReplyFlash, true)), len(full); flash >= full {
		t.Errorf("flash prompt %d chars, full %d", flash, full)
	}
}

func TestApplyPlan(t *testing.T) {
	idx := func(n int) *int { return &n }
	render := func(p []PlanItem) string { return planText(p) }
	p := applyPlan(nil, &AgentOutput{PlanUpdate: []string{"open", " ", "search", "buy"}})
	if got := render(p); got != "[>] 0. open\n[ ] 1. search\n[ ] 2. buy\n" {
		t.Fatalf("new plan:\n%s", got)
	}
	p = applyPlan(p, &AgentOutput{CurrentPlanItem: idx(2)})
	if got := render(p); got != "[x] 0. open\n[x] 1. search\n[>] 2. buy\n" {
		t.Fatalf("moved:\n%s", got)
	}
	if q := applyPlan(p, &AgentOutput{}); render(q) != render(p) {
		t.Fatal("a reply without plan fields changed the plan")
	}
	if got := render(applyPlan(p, &AgentOutput{CurrentPlanItem: idx(9)})); got != "[x] 0. open\n[x] 1. search\n[>] 2. buy\n" {
		t.Fatalf("clamped high:\n%s", got)
	}
	if got := render(applyPlan(p, &AgentOutput{CurrentPlanItem: idx(-1)})); got != "[>] 0. open\n[ ] 1. search\n[ ] 2. buy\n" {
		t.Fatalf("clamped low:\n%s", got)
	}
	if got := render(applyPlan(p, &AgentOutput{PlanUpdate: []string{"retry", "report"}, CurrentPlanItem: idx(1)})); got != "[x] 0. retry\n[>] 1. report\n" {
		t.Fatalf("replaced with an item:\n%s", got)
	}
	if got := applyPlan(p, &AgentOutput{PlanUpdate: []string{}}); got != nil {
		t.Fatalf("an empty update should clear the plan: %+v", got)
	}
	if got := applyPlan(nil, &AgentOutput{CurrentPlanItem: idx(1)}); got != nil {
		t.Fatalf("an item without a plan: %+v", got)
	}
	if p[0].Status != PlanDone {
		t.Fatal("applyPlan changed its input")
	}
}

// replyFixture is testdata/replies.json: realistic replies of one task.
type replyFixture struct {
	Steps []struct {
		Thinking        string            `json:"thinking"`
		Evaluation      string            `json:"evaluation_previous_goal"`
		Memory          string            `json:"memory"`
		NextGoal        string            `json:"next_goal"`
		PlanUpdate      []string          `json:"plan_update"`
		CurrentPlanItem *int              `json:"current_plan_item"`
		FlashMemory     string            `json:"flash_memory"`
		Action          []json.RawMessage `json:"action"`
	} `json:"steps"`
}

// TestReplySizeByMode measures the output tokens per step each reply mode
// asks for, on a fixed set of realistic replies (testdata/replies.json),
// encoded compactly as structured output arrives, at 4 characters per token
// (no tokenizer is a dependency). The numbers are in docs/performance.md.
func TestReplySizeByMode(t *testing.T) {
	b, err := os.ReadFile("testdata/replies.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx replyFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	type kv struct {
		k string
		v any
	}
	encode := func(fields []kv) string {
		o := schemax.NewObject()
		for _, f := range fields {
			o.Set(f.k, f.v)
		}
		out, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	offered := offeredDefault()
	chars := map[ReplyMode]int{}
	for i, s := range fx.Steps {
		plan := []kv{{"plan_update", s.PlanUpdate}, {"current_plan_item", s.CurrentPlanItem}}
		replies := map[ReplyMode]string{
			ReplyFull:       encode(append(append([]kv{{"thinking", s.Thinking}, {"evaluation_previous_goal", s.Evaluation}, {"memory", s.Memory}, {"next_goal", s.NextGoal}}, plan...), kv{"action", s.Action})),
			ReplyNoThinking: encode(append(append([]kv{{"evaluation_previous_goal", s.Evaluation}, {"memory", s.Memory}, {"next_goal", s.NextGoal}}, plan...), kv{"action", s.Action})),
			ReplyFlash:      encode([]kv{{"memory", s.FlashMemory}, {"action", s.Action}}),
		}
		for mode, r := range replies {
			// Each reply is one the mode's parser accepts with its fields.
			out, err := ParseOutputAs(r, offered, 5, mode, true)
			if err != nil {
				t.Fatalf("step %d %s: %v\n%s", i, mode, err, r)
			}
			if mode == ReplyFull && out.Thinking == "" {
				t.Fatalf("step %d: full reply lost thinking", i)
			}
			chars[mode] += len(r)
		}
	}
	n := len(fx.Steps)
	tok := func(m ReplyMode) float64 { return float64(chars[m]) / 4 / float64(n) }
	t.Logf("%d steps; output tokens per step (chars/4): full %.0f, no_thinking %.0f, flash %.0f; flash/full %.2f, no_thinking/full %.2f",
		n, tok(ReplyFull), tok(ReplyNoThinking), tok(ReplyFlash), tok(ReplyFlash)/tok(ReplyFull), tok(ReplyNoThinking)/tok(ReplyFull))
	if !(tok(ReplyFlash) < tok(ReplyNoThinking) && tok(ReplyNoThinking) < tok(ReplyFull)) {
		t.Fatalf("sizes not ordered: %v", chars)
	}
}
