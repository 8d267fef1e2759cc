package agent_test

import (
	"context"
	"encoding/json"
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

// Over the steps of a run the system prompt (with the compact action list)
// and the schema are byte-identical, so a provider's prompt cache can reuse
// them; the user message's first part, up to </agent_history>, is marked
// for caching too; the step's changing state comes after it, step_info
// last; <available_actions> is gone; and nothing the model reads is
// HTML-escaped (a secret placeholder in the history, the expected output's
// schema).
func TestPromptStableAcrossSteps(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := dynModel(
		func(txt string) string {
			return act("input", map[string]any{"index": indexOf(t, txt, "Full name", "input"), "text": "<secret>name</secret>"})
		},
		func(txt string) string {
			return act("input", map[string]any{"index": indexOf(t, txt, "Email address", "input"), "text": "ada@example.com"})
		},
		func(string) string {
			return act("done", map[string]any{"success": true, "data": map[string]any{"who": "Ada"}})
		},
	)
	set := settings(t)
	set.SensitiveData = map[string]string{"name": "Ada Lovelace"}
	set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"who":{"type":"string","description":"the <b>name</b> typed"}},"required":["who"]}`)
	res := runAgent(t, newAgent(t, "Sign up", model, b, set))
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	reqs := model.reqs
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	first := reqs[0]
	for i, r := range reqs {
		if len(r.Messages) != 2 || r.Messages[0].Role != llm.RoleSystem || len(r.Messages[0].Parts) != 1 {
			t.Fatalf("request %d: messages %+v", i, r.Messages)
		}
		sys := r.Messages[0].Parts[0]
		if sys.Text != first.Messages[0].Parts[0].Text || string(r.Schema.JSON) != string(first.Schema.JSON) || r.CacheKey != first.CacheKey {
			t.Fatalf("request %d: the system prompt, schema or cache key changed between steps", i)
		}
		if !sys.CacheBreakpoint || !cacheKeyRE.MatchString(r.CacheKey) || !r.Schema.Loose {
			t.Fatalf("request %d: breakpoint %v, cache key %q, loose %v", i, sys.CacheBreakpoint, r.CacheKey, r.Schema.Loose)
		}
		user := r.Messages[1].Parts
		if len(user) < 2 || !user[0].CacheBreakpoint || user[1].CacheBreakpoint ||
			!strings.HasPrefix(user[0].Text, "<user_request>\nSign up\n</user_request>\n<expected_output>\n") ||
			!strings.HasSuffix(user[0].Text, "</agent_history>\n") {
			t.Fatalf("request %d: the stable first part is wrong: %+v", i, user)
		}
		state := user[1].Text
		at := func(s string) int {
			n := strings.Index(state, s)
			if n < 0 {
				t.Fatalf("request %d: %q missing from\n%s", i, s, state)
			}
			return n
		}
		if !(at("<agent_state>") == 0 && at("<agent_state>") < at("<browser_state>") && at("<browser_state>") < at("<step_info>")) || !strings.HasSuffix(state, "</step_info>") {
			t.Fatalf("request %d: the state is out of order:\n%s", i, state)
		}
		all := sys.Text + userText(r) + string(r.Schema.JSON)
		for _, bad := range []string{"<available_actions>", `\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(all, bad) {
				t.Fatalf("request %d contains %s", i, bad)
			}
		}
	}
	sys := first.Messages[0].TextContent()
	for _, want := range []string{"\n# Actions\n", "\ninput{index: int, text, clear?: bool}: ", "\ndone{success: bool, data: {who (the <b>name</b> typed)}}: Finish with the answer in data, as <expected_output> says.\n", "Secrets: type <secret>name</secret>"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, sys)
		}
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

// RenderPrompt is the loop's own prompt: the same system text, schema and
// cache key a Run sends for the same settings.
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
	for _, n := range []string{"system", "actions", "user_request", "agent_history", "agent_state", "browser_state", "elements", "step_info"} {
		if !names[n] {
			t.Errorf("no %q part", n)
		}
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
