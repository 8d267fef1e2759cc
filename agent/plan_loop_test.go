package agent_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/internal/schemax"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/report"
	"github.com/browseragent/browseragent/trace"
)

const (
	replanNudge = "REPLAN: your last"
	planNudge   = "You have no plan yet."
)

func item(n int) *int { return &n }

// section returns the text between <tag> and </tag> in txt ("" if absent).
func section(txt, tag string) string {
	_, rest, ok := strings.Cut(txt, "<"+tag+">\n")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "</"+tag+">")
	return s
}

// schemaKeys lists the reply schema's top-level properties in order.
func schemaKeys(t *testing.T, req llm.Request) []string {
	t.Helper()
	if req.Schema == nil {
		t.Fatal("request without a schema")
	}
	v, err := schemax.Parse(req.Schema.JSON)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := v.(*schemax.Object)
	if root == nil {
		t.Fatalf("the schema is not an object: %s", req.Schema.JSON)
	}
	p, _ := root.Get("properties")
	props, _ := p.(*schemax.Object)
	if props == nil {
		t.Fatalf("the schema has no properties: %s", req.Schema.JSON)
	}
	return props.Keys()
}

// plan_update and current_plan_item change the plan the next step shows in
// <agent_state>, with the current item and the done ones marked; the plan
// is in the history (and history.json).
func TestLoopPlanRoundTrip(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Nothing", PlanUpdate: []string{"Fill the contact form", "Choose the plan", "Finish"}},
		{Action: "click", Label: "Nothing", CurrentPlanItem: item(1)},
		{Action: "click", Label: "Nothing", PlanUpdate: []string{"Check the help page", "Report"}, CurrentPlanItem: item(1)},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a := newAgent(t, "Sign up", model, b, settings(t))
	run(t, a, model)
	reqs := model.Requests()
	if got := schemaKeys(t, reqs[0]); strings.Join(got, " ") != "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action" {
		t.Fatalf("default schema keys %v", got)
	}
	if p := section(userText(reqs[0]), "plan"); p != "" {
		t.Fatalf("a plan before any was written:\n%s", p)
	}
	for i, want := range []string{
		"[>] 0. Fill the contact form\n[ ] 1. Choose the plan\n[ ] 2. Finish\n",
		"[x] 0. Fill the contact form\n[>] 1. Choose the plan\n[ ] 2. Finish\n",
		"[x] 0. Check the help page\n[>] 1. Report\n",
	} {
		txt := userText(reqs[i+1])
		if got := section(section(txt, "agent_state"), "plan"); got != want {
			t.Fatalf("request %d plan:\n%s\nwant:\n%s", i+1, got, want)
		}
	}
	if !strings.Contains(reqs[0].Messages[0].TextContent(), `"plan_update"`) {
		t.Fatal("the system prompt does not describe plan_update")
	}
	h, err := agent.LoadHistory(filepath.Join(a.RunDir(), "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p := h.Items[1].Plan; len(p) != 3 || p[1].Status != agent.PlanCurrent || p[0].Status != agent.PlanDone {
		t.Fatalf("history plan of step 1: %+v", p)
	}
	if o := h.Items[2].Output; len(o.PlanUpdate) != 2 || o.CurrentPlanItem == nil || *o.CurrentPlanItem != 1 {
		t.Fatalf("history output of step 2: %+v", o)
	}
}

// With a plan, the replan nudge comes with the third failure in a row (and
// stays while they go on); never before.
func TestLoopReplanNudge(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	steps := []scripted.Step{{Action: "click", Label: "Nothing", PlanUpdate: []string{"Sign up", "Report"}}}
	for range 4 {
		steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
	}
	steps = append(steps, scripted.Step{Action: "click", Label: "Nothing"}, scripted.Step{Action: "done", Params: map[string]any{"text": "ok", "success": true}})
	model := scripted.New(steps)
	set := settings(t)
	set.PlanNudgeStep = -1
	run(t, newAgent(t, "Sign up", model, b, set), model)
	reqs := model.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Requests 2, 3, 4 follow 1, 2, 3 failures; 5 follows 4; 6 a success.
	for i, want := range []bool{false, false, false, false, true, true, false} {
		if got := strings.Contains(userText(reqs[i]), replanNudge); got != want {
			t.Errorf("request %d: replan nudge %v, want %v", i, got, want)
		}
	}
	if !strings.Contains(userText(reqs[4]), "REPLAN: your last 3 steps failed.") {
		t.Fatalf("nudge wording:\n%s", userText(reqs[4]))
	}

	// Without a plan, failures bring no replan nudge; a negative setting
	// disables it.
	for _, c := range []struct {
		name string
		plan []string
		set  func(*agent.Settings)
	}{
		{"no plan", nil, func(*agent.Settings) {}},
		{"disabled", []string{"a"}, func(s *agent.Settings) { s.ReplanAfter = -1 }},
	} {
		b := agenttest.New(t, formSite()...)
		steps := []scripted.Step{{Action: "click", Label: "Nothing", PlanUpdate: c.plan}}
		for range 4 {
			steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
		}
		steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "ok", "success": true}})
		model := scripted.New(steps)
		set := settings(t)
		set.PlanNudgeStep = -1
		c.set(&set)
		run(t, newAgent(t, "Sign up", model, b, set), model)
		for i, r := range model.Requests() {
			if strings.Contains(userText(r), replanNudge) {
				t.Errorf("%s: request %d has the replan nudge", c.name, i)
			}
		}
	}
}

// Without a plan, the plan-or-finish nudge comes from the 5th step of the
// run on; a plan silences it.
func TestLoopPlanNudge(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	var steps []scripted.Step
	for i := range 6 {
		st := scripted.Step{Action: "scroll", Params: map[string]any{"down": i%2 == 0, "pages": 1}}
		if i == 5 {
			st.PlanUpdate = []string{"Look around", "Report"}
		}
		steps = append(steps, st)
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "ok", "success": true}})
	model := scripted.New(steps)
	run(t, newAgent(t, "Sign up", model, b, settings(t)), model)
	for i, r := range model.Requests() {
		// Requests 4 and 5 are steps 5 and 6 of the run; step 6 wrote a plan.
		want := i == 4 || i == 5
		if got := strings.Contains(userText(r), planNudge); got != want {
			t.Errorf("request %d: plan nudge %v, want %v", i, got, want)
		}
	}
	if txt := userText(model.Requests()[4]); !strings.Contains(txt, "write a short one with plan_update; if it is done or cannot be done, call done.") {
		t.Fatalf("nudge wording:\n%s", txt)
	}
}

// Flash mode: two-field schema, flash prompt, no plan anywhere even when
// the model sends plan fields and steps fail; the history shows memory
// only (no empty evaluation lines).
func TestLoopFlashHasNoPlanning(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	replies := []string{
		`{"memory":"start","plan_update":["a","b"],"current_plan_item":0,"action":[{"click":{"index":987654}}]}`,
	}
	for range 5 {
		replies = append(replies, `{"memory":"still failing","thinking":"ignored","action":[{"click":{"index":987654}}]}`)
	}
	model := &funcModel{}
	model.fn = func(n int) (*llm.Response, error) {
		if n < len(replies) {
			return &llm.Response{Content: replies[n]}, nil
		}
		return &llm.Response{Content: `{"memory":"giving up","action":[{"done":{"text":"no","success":false}}]}`}, nil
	}
	set := settings(t)
	set.ReplyMode = agent.ReplyFlash
	set.MaxFailures = 6
	a := newAgent(t, "Sign up", model, b, set)
	runAgent(t, a)
	if len(model.reqs) < 7 {
		t.Fatalf("%d requests", len(model.reqs))
	}
	for i, r := range model.reqs {
		if got := strings.Join(schemaKeys(t, r), " "); got != "memory action" {
			t.Fatalf("request %d schema keys %q", i, got)
		}
		txt := userText(r)
		if strings.Contains(txt, replanNudge) || strings.Contains(txt, planNudge) || strings.Contains(txt, "<plan>") {
			t.Fatalf("request %d has planning in flash mode:\n%s", i, txt)
		}
		if strings.Contains(txt, "Evaluation of previous step") || strings.Contains(txt, "Next goal") {
			t.Fatalf("request %d history has empty-mode lines:\n%s", i, section(txt, "agent_history"))
		}
		sys := r.Messages[0].TextContent()
		if sys != renderedSystem(t, agent.Settings{ReplyMode: agent.ReplyFlash, Vision: agent.VisionOff}) || !strings.HasPrefix(sys, agent.SystemPromptFor(agent.DefaultMaxActionsPerStep, agent.ReplyFlash, false)) || strings.Contains(sys, "plan") {
			t.Fatalf("request %d system prompt is not the flash one", i)
		}
	}
	if txt := section(userText(model.reqs[1]), "agent_history"); !strings.Contains(txt, "Memory: start\n") {
		t.Fatalf("flash history:\n%s", txt)
	}
	data := &report.Data{Title: "flash"}
	for _, it := range a.History().Items {
		if it.Plan != nil || (it.Output != nil && (it.Output.PlanUpdate != nil || it.Output.Thinking != "")) {
			t.Fatalf("step %d recorded fields outside flash: %+v %+v", it.Step, it.Plan, it.Output)
		}
		data.Steps = append(data.Steps, report.Step{Step: trace.StepRecord(t.TempDir(), it)})
	}
	// The trace and the report show a flash step's memory and no empty
	// evaluation or goal.
	rec, _ := json.Marshal(data.Steps[0].Step)
	if !strings.Contains(string(rec), `"memory":"start"`) || strings.Contains(string(rec), "evaluation") || strings.Contains(string(rec), "next_goal") {
		t.Fatalf("trace step %s", rec)
	}
	var page bytes.Buffer
	if err := report.Render(&page, data); err != nil {
		t.Fatal(err)
	}
	if html := page.String(); !strings.Contains(html, "<strong>Memory:</strong> start") || strings.Contains(html, "Evaluation:") || strings.Contains(html, "Goal:") {
		t.Fatalf("report of a flash run:\n%s", html)
	}
}
