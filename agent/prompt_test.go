package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

var cacheKeyRE = regexp.MustCompile(`^ba-[0-9a-f]{16}$`)

// noteParams are the parameters of the domain-restricted test action.
type noteParams struct {
	Note string `json:"note"`
}

// Over the steps of a run the system prompt (with the compact action list)
// is byte-identical, on the last (forced) step too, and so are the schema
// and the cache key until that step, so that a provider's prompt cache can
// reuse them; an action restricted to a domain is listed in the user
// message of the steps on that domain only, never in the system prompt;
// the user message holds one block per history step with the breakpoint
// on the last, and everything up to a step's breakpoint is repeated
// byte for byte, as blocks, in the next step's request; the step's
// changing state comes after it, step_info last; <available_actions> is
// gone; and nothing the model reads is HTML-escaped (a secret placeholder
// in the history, the expected output's schema).
func TestPromptStableAcrossSteps(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := dynModel(
		func(txt string) string {
			return act("input", map[string]any{"index": indexOf(t, txt, "Full name", "input"), "text": "<secret>name</secret>"})
		},
		func(string) string { return act("navigate", map[string]any{"url": helpURL}) },
		func(string) string {
			return act("write_file", map[string]any{"file_name": "notes.md", "content": "Ada"})
		},
		func(string) string {
			return act("done", map[string]any{"success": true, "data": map[string]any{"who": "Ada"}})
		},
	)
	reg := agent.DefaultRegistry()
	if err := agent.Register(reg, "form_note", "Note on the form.", func(context.Context, *agent.ActionContext, noteParams) (agent.ActionResult, error) {
		return agent.ActionResult{}, nil
	}, agent.OnDomains("form.test")); err != nil {
		t.Fatal(err)
	}
	set := settings(t)
	set.Tools = reg
	set.MaxSteps = 4
	set.SensitiveData = map[string]string{"name": "Ada Lovelace"}
	set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"who":{"type":"string","description":"the <b>name</b> typed"}},"required":["who"]}`)
	res := runAgent(t, newAgent(t, "Sign up", model, b, set))
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	reqs := model.reqs
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	first := reqs[0]
	const pageSpecific = "<page_specific_actions>\nform_note{note}: Note on the form.\n</page_specific_actions>\n"
	for i, r := range reqs {
		if len(r.Messages) != 2 || r.Messages[0].Role != llm.RoleSystem || len(r.Messages[0].Parts) != 1 {
			t.Fatalf("request %d: messages %+v", i, r.Messages)
		}
		sys := r.Messages[0].Parts[0]
		if sys.Text != first.Messages[0].Parts[0].Text || !sys.CacheBreakpoint {
			t.Fatalf("request %d: the system prompt changed between steps, or has no breakpoint", i)
		}
		forced := i == len(reqs)-1
		if same := string(r.Schema.JSON) == string(first.Schema.JSON) && r.CacheKey == first.CacheKey; same == forced || r.Schema.Loose == forced || !cacheKeyRE.MatchString(r.CacheKey) {
			t.Fatalf("request %d (forced %v): schema or cache key wrong: loose %v, key %q, %s", i, forced, r.Schema.Loose, r.CacheKey, r.Schema.JSON)
		}
		if onForm := strings.Contains(userText(r), "Current URL: "+formURL); onForm != strings.Contains(userText(r), pageSpecific) && !forced {
			t.Fatalf("request %d: the form.test action is listed %v on form.test %v:\n%s", i, !onForm, onForm, userText(r))
		}
		if strings.Contains(sys.Text, "form_note") {
			t.Fatalf("request %d: the domain-restricted action is in the system prompt", i)
		}
		user := r.Messages[1].Parts
		// Blocks: request+expected output+"<agent_history>\n", one per
		// history step (i of them; "(no steps yet)" on the first), then
		// the state from "</agent_history>\n" to </step_info>.
		steps := max(i, 1)
		if len(user) < 2+steps || !strings.HasPrefix(user[0].Text, "<user_request>\nSign up\n</user_request>\n<expected_output>\n") ||
			!strings.HasSuffix(user[0].Text, "<agent_history>\n") || !strings.HasPrefix(user[1+steps].Text, "</agent_history>\n<agent_state>") {
			t.Fatalf("request %d: the blocks are wrong: %+v", i, user)
		}
		bp := -1
		for j, p := range user {
			if p.CacheBreakpoint {
				if bp >= 0 {
					t.Fatalf("request %d: two breakpoints in the user message", i)
				}
				bp = j
			}
		}
		if want := i; bp != want {
			t.Fatalf("request %d: the breakpoint is on block %d, want %d (the last history step)", i, bp, want)
		}
		for j := 1; j <= i; j++ {
			if !strings.HasPrefix(user[j].Text, fmt.Sprintf("<step_%d>\n", j-1)) {
				t.Fatalf("request %d: block %d is not step %d: %q", i, j, j-1, user[j].Text)
			}
		}
		if i > 0 {
			prev := reqs[i-1].Messages[1].Parts
			pbp := i - 1
			for j := 0; j <= pbp; j++ {
				if user[j].Text != prev[j].Text {
					t.Fatalf("request %d: block %d differs from the previous request's, up to its breakpoint:\n%q\n%q", i, j, user[j].Text, prev[j].Text)
				}
			}
		}
		state := user[1+steps].Text
		at := func(s string) int {
			n := strings.Index(state, s)
			if n < 0 {
				t.Fatalf("request %d: %q missing from\n%s", i, s, state)
			}
			return n
		}
		if !(at("<agent_state>") < at("<browser_state>") && at("<browser_state>") < at("<step_info>")) || !strings.HasSuffix(state, "</step_info>") {
			t.Fatalf("request %d: the state is out of order:\n%s", i, state)
		}
		all := sys.Text + userText(r) + string(r.Schema.JSON)
		for _, bad := range []string{"<available_actions>", `\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(all, bad) {
				t.Fatalf("request %d contains %s", i, bad)
			}
		}
	}
	if !strings.Contains(userText(reqs[0]), pageSpecific) || strings.Contains(userText(reqs[2]), "form_note") {
		t.Fatalf("the form.test action should be listed on step 0 (form.test) and not on step 2 (help.test):\n%s\n---\n%s", userText(reqs[0]), userText(reqs[2]))
	}
	sys := first.Messages[0].TextContent()
	// The data's schema is stated once, in <expected_output>.
	for _, want := range []string{"\n# Actions\n", "\ninput{index: int, text, clear?: bool}: ", "\ndone{success: bool, data: see <expected_output>}: Finish with the answer in data, as <expected_output> says.\n", "Secrets: type <secret>name</secret>"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "the <b>name</b> typed") {
		t.Errorf("the output schema is in the system prompt too:\n%s", sys)
	}
	if u := userText(reqs[0]); !strings.Contains(u, `"description":"the <b>name</b> typed"`) {
		t.Errorf("expected_output is escaped:\n%s", u)
	}
	if h := userText(reqs[1]); !strings.Contains(h, `"text":"<secret>name</secret>"`) {
		t.Errorf("the history's parameters are escaped:\n%s", h)
	}
}

// In the full form the actions are in the reply schema (each with its
// description), not in the prompt, and the schema is not Loose.
func TestPromptFullActionSchema(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := dynModel(func(string) string { return act("done", map[string]any{"text": "ok", "success": true}) })
	set := settings(t)
	set.ActionSchema = agent.ActionSchemaFull
	res := runAgent(t, newAgent(t, "Say ok", model, b, set))
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	r := model.reqs[0]
	sys, sch := r.Messages[0].TextContent(), string(r.Schema.JSON)
	if strings.Contains(sys, "# Actions") || strings.Contains(userText(r), "<available_actions>") || r.Schema.Loose {
		t.Fatalf("the full form lists actions in text or is loose:\n%s", sys)
	}
	if !strings.Contains(sch, `"anyOf"`) || !strings.Contains(sch, `"input":{"type":"object","description":"Type (clears first; index 0: the focused element).","properties":{"index":`) {
		t.Fatalf("the full schema lacks the actions: %s", sch)
	}
	if !r.Messages[0].Parts[0].CacheBreakpoint || !cacheKeyRE.MatchString(r.CacheKey) {
		t.Fatalf("no cache marks in the full form")
	}
}

// RenderPrompt is the loop's own prompt: the same system text, user
// message (same page, same step), blocks and breakpoints, schema and cache
// key a Run sends for the same settings.
func TestRenderPromptMatchesTheRun(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := dynModel(func(string) string { return act("done", map[string]any{"text": "ok", "success": true}) })
	set := settings(t)
	runAgent(t, newAgent(t, "Say ok", model, b, set))
	sent := model.reqs[0]
	set.RunDir = ""
	st, err := bus.Call(context.Background(), b.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := agent.RenderPrompt(set, "Say ok", &st)
	if err != nil {
		t.Fatal(err)
	}
	if p.Messages[0].TextContent() != sent.Messages[0].TextContent() || string(p.Schema.JSON) != string(sent.Schema.JSON) || p.CacheKey != sent.CacheKey {
		t.Fatal("RenderPrompt's system prompt or schema differs from the run's")
	}
	if got, want := userText(p.Request()), userText(sent); got != want {
		t.Fatalf("RenderPrompt's user message differs from the run's first step:\n%s\n---\n%s", got, want)
	}
	if len(p.Messages[1].Parts) != len(sent.Messages[1].Parts) {
		t.Fatalf("RenderPrompt sends %d user blocks, the run %d", len(p.Messages[1].Parts), len(sent.Messages[1].Parts))
	}
	for j, bp := range sent.Messages[1].Parts {
		if rp := p.Messages[1].Parts[j]; rp.Text != bp.Text || rp.CacheBreakpoint != bp.CacheBreakpoint {
			t.Fatalf("user block %d differs: %+v, the run's %+v", j, rp, bp)
		}
	}
	// The named parts, joined, are the messages' texts.
	for i, m := range p.Messages {
		var parts, msg strings.Builder
		for _, pt := range p.Parts {
			if pt.Role == m.Role {
				parts.WriteString(pt.Text)
			}
		}
		for _, mp := range m.Parts {
			msg.WriteString(mp.Text)
		}
		if parts.String() != msg.String() {
			t.Fatalf("message %d: the named parts are not the message:\n%s\n---\n%s", i, parts.String(), msg.String())
		}
	}
	names := map[string]bool{}
	for _, pt := range p.Parts {
		names[pt.Name] = true
	}
	for _, n := range []string{"system", "actions", "user_request", "agent_history", "history_step", "agent_history_end", "agent_state", "browser_state", "elements", "browser_state_end", "step_info"} {
		if !names[n] {
			t.Errorf("no %q part", n)
		}
	}
	// An empty todo.md is not shown: agent_files has nothing to say yet.
	if names["agent_files"] {
		t.Error("an agent_files part with nothing in it")
	}
	// An overridden system prompt still gets the action list.
	o, err := agent.RenderPrompt(agent.Settings{OverrideSystemPrompt: "Custom rules."}, "x", &st)
	if err != nil {
		t.Fatal(err)
	}
	if sys := o.Messages[0].TextContent(); !strings.HasPrefix(sys, "Custom rules.\n\n# Actions\n") {
		t.Fatalf("override:\n%s", sys)
	}
	if _, err := agent.RenderPrompt(agent.Settings{ActionSchema: "both"}, "x", &st); err == nil {
		t.Fatal("a bad ActionSchema was accepted")
	}
}
