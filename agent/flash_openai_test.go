package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/openai"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
)

// chatServer is a local OpenAI-compatible endpoint (/v1/chat/completions)
// answered by a model (here a scripted one), so that a run goes through
// the real openai provider and its requests can be inspected as sent.
type chatServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	usage  []llm.Usage
}

// chatRequest is the part of a chat completion request the server reads.
type chatRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func newChatServer(t *testing.T, model llm.Model) *chatServer {
	s := &chatServer{}
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
		req := llm.Request{}
		for _, m := range cr.Messages {
			msg := llm.Message{Role: llm.Role(m.Role)}
			var text string
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			switch {
			case json.Unmarshal(m.Content, &text) == nil:
				msg.Parts = append(msg.Parts, llm.Text(text))
			case json.Unmarshal(m.Content, &parts) == nil:
				for _, p := range parts {
					if p.Type == "text" {
						msg.Parts = append(msg.Parts, llm.Text(p.Text))
					}
				}
			}
			req.Messages = append(req.Messages, msg)
		}
		if rf := cr.ResponseFormat; rf != nil && rf.JSONSchema != nil {
			req.Schema = &llm.Schema{Name: rf.JSONSchema.Name, JSON: rf.JSONSchema.Schema}
		}
		resp, err := model.Generate(r.Context(), req)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.usage = append(s.usage, resp.Usage)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "local",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": resp.Content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": resp.Usage.PromptTokens, "completion_tokens": resp.Usage.CompletionTokens, "total_tokens": resp.Usage.TotalTokens},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) requests() ([][]byte, []llm.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...), append([]llm.Usage(nil), s.usage...)
}

// sentSchemaKeys returns the reply schema's top-level keys and whether it
// was sent strict, and the system message, from a request body.
func sentSchemaKeys(t *testing.T, body []byte) (keys string, strict bool, system string) {
	t.Helper()
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.ResponseFormat == nil || cr.ResponseFormat.JSONSchema == nil {
		t.Fatalf("request without a json_schema: %s", body)
	}
	v, err := schemax.Parse(cr.ResponseFormat.JSONSchema.Schema)
	if err != nil {
		t.Fatal(err)
	}
	props, _ := v.(*schemax.Object).Get("properties")
	for _, m := range cr.Messages {
		if m.Role == "system" {
			if json.Unmarshal(m.Content, &system) != nil {
				t.Fatalf("system content %s", m.Content)
			}
		}
	}
	return strings.Join(props.(*schemax.Object).Keys(), " "), cr.ResponseFormat.JSONSchema.Strict, system
}

// A flash-mode run over the openai provider and a local OpenAI-compatible
// server, on the form in Chromium: every request carries the two-field
// schema (compact: sent non-strict, the actions are in the prompt) and the
// flash prompt, and the run completes; the same run in the default reply
// mode with the full action schema carries the full schema (strict) and
// the default prompt without an action list.
func TestAgentFlashOverOpenAI(t *testing.T) {
	type runOut struct {
		bodies [][]byte
		usage  []llm.Usage
		hist   *agent.History
	}
	runMode := func(t *testing.T, mode agent.ReplyMode, form agent.ActionSchema) runOut {
		env, s := newSession(t)
		script := scripted.New([]scripted.Step{
			{Actions: []scripted.Action{
				{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
				{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
				{Name: "click", Label: "Next"},
			}},
			{WaitForLabel: "Finish", Action: "select_dropdown", Label: "plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
			{Action: "click", Label: "Finish"},
			{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Signed up Ada on the Pro plan", "success": true}},
		})
		srv := newChatServer(t, script)
		model, err := openai.New(openai.Config{Model: "local-model", APIKey: "k", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		set := settings(t)
		set.ReplyMode = mode
		set.ActionSchema = form
		a, err := agent.New("Open "+env.URL("/agent-form.html")+" and sign up Ada Lovelace (ada@example.com) on the Pro plan.", model, s, set)
		if err != nil {
			t.Fatal(err)
		}
		res := runAgent(t, a)
		if !res.Done || !res.Success || len(script.Errors()) > 0 {
			t.Fatalf("%s run: %+v; script errors %v", mode, res, script.Errors())
		}
		bodies, usage := srv.requests()
		if len(bodies) < 4 {
			t.Fatalf("%s run: %d requests", mode, len(bodies))
		}
		return runOut{bodies, usage, a.History()}
	}

	flash := runMode(t, agent.ReplyFlash, agent.ActionSchemaCompact)
	flashPrompt := renderedSystem(t, agent.Settings{ReplyMode: agent.ReplyFlash, Vision: agent.VisionOff})
	if !strings.HasPrefix(flashPrompt, agent.SystemPromptFor(agent.DefaultMaxActionsPerStep, agent.ReplyFlash, true)+"\n\n# Actions\n") {
		t.Fatalf("the compact flash prompt is not the flash prompt and the action list:\n%s", flashPrompt)
	}
	for i, b := range flash.bodies {
		keys, strict, sys := sentSchemaKeys(t, b)
		if keys != "memory action" || strict {
			t.Fatalf("flash request %d: schema keys %q strict=%v", i, keys, strict)
		}
		if sys != flashPrompt {
			t.Fatalf("flash request %d: not the flash prompt:\n%s", i, sys)
		}
		for _, no := range []string{"thinking", "evaluation_previous_goal", "next_goal", "plan_update"} {
			if strings.Contains(string(b), no) {
				t.Fatalf("flash request %d mentions %s", i, no)
			}
		}
	}
	for _, it := range flash.hist.Items[1:] {
		if o := it.Output; o == nil || o.Memory == "" || o.Thinking != "" || o.NextGoal != "" {
			t.Fatalf("flash step %d output %+v", it.Step, o)
		}
	}

	full := runMode(t, agent.ReplyFull, agent.ActionSchemaFull)
	for i, b := range full.bodies {
		keys, strict, sys := sentSchemaKeys(t, b)
		if keys != "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action" || !strict {
			t.Fatalf("full request %d: schema keys %q strict=%v", i, keys, strict)
		}
		if sys != agent.SystemPrompt(agent.DefaultMaxActionsPerStep) {
			t.Fatalf("full request %d: not the default prompt", i)
		}
	}
	// The scripted replies are short and synthetic: these numbers show the
	// fields dropped, not a real model's sizes (TestReplySizeByMode).
	avg := func(us []llm.Usage) float64 {
		n := 0
		for _, u := range us {
			n += u.CompletionTokens
		}
		return float64(n) / float64(len(us))
	}
	t.Logf("scripted completion tokens per call: flash %.1f, full %.1f", avg(flash.usage), avg(full.usage))
	if avg(flash.usage) >= avg(full.usage) {
		t.Fatal("flash replies are not shorter")
	}
}

// renderedSystem is the system prompt a run with set sends (it does not
// depend on the page).
func renderedSystem(t *testing.T, set agent.Settings) string {
	t.Helper()
	p, err := agent.RenderPrompt(set, "any task", &events.BrowserState{URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	return p.Messages[0].TextContent()
}
