package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/anthropic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const agentSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array","items":{"type":"object"}}},"required":["thinking","action"]}`

func structuredReq() llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("You are a browser agent."),
			llm.UserMessage(llm.Text("Task: sign in"), llm.ImagePart("image/png", []byte("PNGDATA"))),
			llm.AssistantMessage(`{"thinking":"a","action":[]}`),
			llm.UserMessage(llm.Text("[3]<button />\n\tSubmit")),
		},
		Schema: &llm.Schema{Name: "agent_output", Description: "The agent's next step.", JSON: json.RawMessage(agentSchema)},
	}
}

type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request, body []byte)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h(int(s.hits.Add(1)), w, r, b)
	}))
	t.Cleanup(s.Close)
	return s
}

func newModel(t *testing.T, s *server) *anthropic.Model {
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test", BaseURL: s.URL, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func message(content []map[string]any, stop string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 900},
	})
	return string(b)
}

func toolUse(input string) []map[string]any {
	return []map[string]any{{"type": "tool_use", "id": "toolu_01", "name": "agent_output", "input": json.RawMessage(input)}}
}

func TestStructuredOutputViaForcedTool(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("got %s headers %v", r.URL.Path, r.Header)
		}
		var sent struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			System    []struct {
				Type         string          `json:"type"`
				Text         string          `json:"text"`
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"system"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Source *struct {
						Type      string `json:"type"`
						MediaType string `json:"media_type"`
						Data      string `json:"data"`
					} `json:"source"`
				} `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
			ToolChoice struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tool_choice"`
		}
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		// No part marks a breakpoint: the system block gets the default one.
		if sent.Model != "claude-sonnet-4-5" || sent.MaxTokens != 8192 || len(sent.System) != 1 || sent.System[0].Type != "text" ||
			sent.System[0].Text != "You are a browser agent." || string(sent.System[0].CacheControl) != `{"type":"ephemeral"}` {
			t.Errorf("sent %s", body)
		}
		if len(sent.Messages) != 3 || sent.Messages[0].Role != "user" || sent.Messages[1].Role != "assistant" {
			t.Fatalf("messages %s", body)
		}
		img := sent.Messages[0].Content[1]
		if img.Type != "image" || img.Source == nil || img.Source.Type != "base64" || img.Source.MediaType != "image/png" || img.Source.Data != "UE5HREFUQQ==" {
			t.Errorf("image block %s", body)
		}
		if len(sent.Tools) != 1 || sent.Tools[0].Name != "agent_output" || sent.Tools[0].Description != "The agent's next step." ||
			string(sent.Tools[0].InputSchema) != agentSchema || sent.ToolChoice.Type != "tool" || sent.ToolChoice.Name != "agent_output" {
			t.Errorf("tools %s", body)
		}
		io.WriteString(w, message(toolUse(`{"thinking":"go","action":[{"click":{"index":3}}]}`), "tool_use"))
	})
	resp, err := newModel(t, s).Generate(context.Background(), structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Thinking string           `json:"thinking"`
		Action   []map[string]any `json:"action"`
	}
	if err := llm.DecodeJSON(resp, &out); err != nil || out.Thinking != "go" || len(out.Action) != 1 {
		t.Fatalf("decode %v %+v", err, out)
	}
	if (resp.Usage != llm.Usage{PromptTokens: 1000, CompletionTokens: 40, TotalTokens: 1040, CachedTokens: 900}) ||
		resp.StopReason != "tool_use" || resp.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("resp %+v", resp)
	}
}

func TestReplyErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
	}{
		{"truncated", message(toolUse(`{"thinking":"x"}`), "max_tokens"), llm.ErrTruncated},
		{"refusal", message([]map[string]any{{"type": "text", "text": "I can't do that."}}, "refusal"), llm.ErrRefused},
		{"empty", message([]map[string]any{}, "end_turn"), llm.ErrEmptyReply},
		{"text instead of tool", message([]map[string]any{{"type": "text", "text": "I will click Submit."}}, "end_turn"), llm.ErrMalformedOutput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) { io.WriteString(w, c.body) })
			resp, err := newModel(t, s).Generate(context.Background(), structuredReq())
			if !errors.Is(err, c.want) || resp == nil || llm.ShouldFallback(err) {
				t.Fatalf("err = %v resp = %v", err, resp)
			}
		})
	}
	t.Run("text JSON accepted", func(t *testing.T) {
		s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
			io.WriteString(w, message([]map[string]any{{"type": "text", "text": "```json\n{\"thinking\":\"a\",\"action\":[]}\n```"}}, "end_turn"))
		})
		resp, err := newModel(t, s).Generate(context.Background(), structuredReq())
		var v map[string]any
		if err != nil || llm.DecodeJSON(resp, &v) != nil {
			t.Fatalf("%v %v", resp, err)
		}
	})
}

func TestAPIErrors(t *testing.T) {
	cases := []struct {
		status int
		typ    string
		want   error
	}{
		{401, "authentication_error", llm.ErrAuth},
		{403, "permission_error", llm.ErrAuth},
		{400, "invalid_request_error", llm.ErrBadRequest},
		{429, "rate_limit_error", llm.ErrRateLimited},
		{500, "api_error", llm.ErrProviderUnavailable},
		{529, "overloaded_error", llm.ErrProviderUnavailable},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.Header().Set("retry-after", "7")
				w.WriteHeader(c.status)
				io.WriteString(w, `{"type":"error","error":{"type":"`+c.typ+`","message":"details here"},"request_id":"req_1"}`)
			})
			_, err := newModel(t, s).Generate(context.Background(), structuredReq())
			var ae *llm.APIError
			if !errors.As(err, &ae) || !errors.Is(err, c.want) || ae.Code != c.typ || ae.Message != "details here" ||
				ae.RetryAfter != 7*time.Second || ae.Provider != "anthropic" {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestOverloadedRetriedThenSuccess(t *testing.T) {
	s := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		if n < 3 {
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		io.WriteString(w, message(toolUse(`{"thinking":"ok","action":[]}`), "tool_use"))
	})
	m := llm.WithRetry(newModel(t, s), llm.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond})
	if _, err := m.Generate(context.Background(), structuredReq()); err != nil || s.hits.Load() != 3 {
		t.Fatalf("err=%v hits=%d", err, s.hits.Load())
	}
}

func TestRemoteImageURLAndDataURL(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
		body := string(b)
		if !strings.Contains(body, `"source":{"type":"url","url":"https://example.com/a.png"}`) ||
			!strings.Contains(body, `"source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}`) {
			t.Errorf("body %s", body)
		}
		io.WriteString(w, message([]map[string]any{{"type": "text", "text": "two images"}}, "end_turn"))
	})
	r := llm.Request{Messages: []llm.Message{llm.UserMessage(
		llm.Part{Image: &llm.Image{URL: "https://example.com/a.png"}},
		llm.Part{Image: &llm.Image{URL: "data:image/jpeg;base64,/9j/"}},
		llm.Text("describe"))}}
	resp, err := newModel(t, s).Generate(context.Background(), r)
	if err != nil || resp.Content != "two images" {
		t.Fatalf("%v %v", resp, err)
	}
}

func TestCancel(t *testing.T) {
	arrived := make(chan struct{})
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, _ []byte) {
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err := newModel(t, s).Generate(ctx, structuredReq())
	if !errors.Is(err, context.Canceled) || llm.ShouldFallback(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/v1")
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if err != nil || m.Name() != "anthropic:claude-sonnet-4-5" {
		t.Fatal(err)
	}
	m.CloseIdleConnections()
}

// cacheMarks returns, for each block of the sent body that carries
// cache_control, "system[i]" or "messages[i][j]", checking the marker's
// shape, and fails the request with the API's own error when there are
// more than four, as the API does.
func cacheMarks(t *testing.T, body []byte) []string {
	t.Helper()
	var sent struct {
		System []struct {
			CacheControl *struct {
				Type string `json:"type"`
			} `json:"cache_control"`
		} `json:"system"`
		Messages []struct {
			Content []struct {
				Type         string `json:"type"`
				CacheControl *struct {
					Type string `json:"type"`
				} `json:"cache_control"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	var marks []string
	for i, b := range sent.System {
		if b.CacheControl != nil {
			if b.CacheControl.Type != "ephemeral" {
				t.Errorf("cache_control %s", body)
			}
			marks = append(marks, fmt.Sprintf("system[%d]", i))
		}
	}
	for i, m := range sent.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				if b.CacheControl.Type != "ephemeral" {
					t.Errorf("cache_control %s", body)
				}
				marks = append(marks, fmt.Sprintf("messages[%d][%d]", i, j))
			}
		}
	}
	return marks
}

func TestCacheBreakpoints(t *testing.T) {
	sys := llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{{Text: "You are a browser agent.", CacheBreakpoint: true}}}
	bp := func(s string) llm.Part { return llm.Part{Text: s, CacheBreakpoint: true} }
	cases := []struct {
		name    string
		msgs    []llm.Message
		disable bool
		want    string
	}{
		{"system and state", []llm.Message{sys, llm.UserMessage(bp("<task>sign in</task>"), llm.Text("[3]<button />"))}, false, "system[0] messages[0][0]"},
		{"default on the system", []llm.Message{llm.SystemMessage("a"), llm.SystemMessage("b"), llm.UserMessage(llm.Text("x"))}, false, "system[1]"},
		{"no system, no mark", []llm.Message{llm.UserMessage(llm.Text("x"))}, false, ""},
		{"image block", []llm.Message{sys, llm.UserMessage(llm.Text("see"), llm.Part{Image: &llm.Image{MediaType: "image/png", Data: []byte("P")}, CacheBreakpoint: true})}, false, "system[0] messages[0][1]"},
		{"empty part marks its predecessor", []llm.Message{sys, llm.UserMessage(llm.Text("x"), bp(""))}, false, "system[0] messages[0][0]"},
		{"at most four, the last ones", []llm.Message{sys, llm.UserMessage(bp("1")), llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{bp("2")}},
			llm.UserMessage(bp("3")), llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{bp("4")}}, llm.UserMessage(bp("5"))}, false,
			"messages[1][0] messages[2][0] messages[3][0] messages[4][0]"},
		{"disabled", []llm.Message{sys, llm.UserMessage(bp("x"))}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, body []byte) {
				marks := cacheMarks(t, body)
				if len(marks) > 4 {
					w.WriteHeader(400)
					io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"A maximum of 4 blocks with cache_control may be provided. Found 5."}}`)
					return
				}
				if got := strings.Join(marks, " "); got != c.want {
					t.Errorf("marks %q, want %q in %s", got, c.want, body)
				}
				io.WriteString(w, message([]map[string]any{{"type": "text", "text": "ok"}}, "end_turn"))
			})
			m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: s.URL, HTTPClient: s.Client(), DisableCache: c.disable})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), llm.Request{Messages: c.msgs}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A cache write then a cache read, with the usage bodies the API sends.
func TestCacheUsage(t *testing.T) {
	usage := []string{
		`{"input_tokens":412,"cache_creation_input_tokens":2610,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":2610,"ephemeral_1h_input_tokens":0},"output_tokens":96,"service_tier":"standard"}`,
		`{"input_tokens":437,"cache_creation_input_tokens":0,"cache_read_input_tokens":2610,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":88,"service_tier":"standard"}`,
	}
	s := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		fmt.Fprintf(w, `{"id":"msg_0%d","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"agent_output","input":{"thinking":"t","action":[]}}],"stop_reason":"tool_use","stop_sequence":null,"usage":%s}`, n, usage[n-1])
	})
	m := newModel(t, s)
	want := []llm.Usage{
		{PromptTokens: 3022, CompletionTokens: 96, TotalTokens: 3118, CacheWriteTokens: 2610},
		{PromptTokens: 3047, CompletionTokens: 88, TotalTokens: 3135, CachedTokens: 2610},
	}
	for i, w := range want {
		resp, err := m.Generate(context.Background(), structuredReq())
		if err != nil || resp.Usage != w {
			t.Fatalf("call %d: %+v %v", i+1, resp, err)
		}
	}
}

func TestMaxTokensFromModelLimit(t *testing.T) {
	cases := []struct {
		model     string
		cfg, req  int
		wantLimit int
	}{
		// The default: 8,192, or a smaller known limit (the rate limiter
		// counts max_tokens against the output tokens per minute).
		{"claude-opus-4-5-20251101", 0, 0, 8192},
		{"claude-opus-4-1", 0, 0, 8192},
		{"claude-sonnet-4-5", 0, 0, 8192},
		{"claude-3-5-haiku-20241022", 0, 0, 8192},
		{"claude-3-haiku-20240307", 0, 0, 4096},
		{"claude-3-opus-20240229", 0, 0, 4096},
		{"claude-unknown-9", 0, 0, anthropic.DefaultMaxTokens},
		// Asked for: up to the known limit.
		{"claude-opus-4-5-20251101", 0, 64000, 64000},
		{"claude-opus-4-1", 0, 64000, 32000},
		{"claude-opus-4-20250514", 40000, 0, 32000},
		{"claude-sonnet-4-5", 0, 100000, 64000},
		{"claude-sonnet-4-20250514", 64000, 0, 64000},
		{"claude-3-7-sonnet-latest", 0, 70000, 64000},
		{"claude-haiku-4-5", 0, 20000, 20000},
		{"claude-3-5-sonnet-20241022", 0, 20000, 8192},
		{"claude-sonnet-4-5", 0, 1000, 1000},        // the request wins
		{"claude-sonnet-4-5", 2000, 0, 2000},        // then the Config
		{"claude-sonnet-4-5", 2000, 1000, 1000},     // the request over the Config
		{"claude-3-5-haiku-latest", 0, 20000, 8192}, // capped at a known limit
		{"claude-3-haiku-20240307", 10000, 0, 4096}, // the Config too
		{"claude-unknown-9", 0, 20000, 20000},       // an unknown model's limit is not guessed
		{"claude-unknown-9", 30000, 0, 30000},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d/%d", c.model, c.cfg, c.req), func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, body []byte) {
				var sent struct {
					MaxTokens int `json:"max_tokens"`
				}
				json.Unmarshal(body, &sent)
				if sent.MaxTokens != c.wantLimit {
					t.Errorf("max_tokens %d, want %d", sent.MaxTokens, c.wantLimit)
				}
				io.WriteString(w, message([]map[string]any{{"type": "text", "text": "ok"}}, "end_turn"))
			})
			m, err := anthropic.New(anthropic.Config{Model: c.model, APIKey: "k", BaseURL: s.URL, HTTPClient: s.Client(), MaxTokens: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			r := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("hi"))}, MaxTokens: c.req}
			if _, err := m.Generate(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBillingAndContextErrorsNotRetried(t *testing.T) {
	cases := []struct {
		name, msg string
		want      error
	}{
		{"credit", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", llm.ErrQuota},
		{"too long", "prompt is too long: 215002 tokens > 200000 maximum", llm.ErrContextLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.WriteHeader(400)
				b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": c.msg}, "request_id": "req_011"})
				w.Write(b)
			})
			m := llm.WithRetry(newModel(t, s), llm.RetryPolicy{BaseDelay: time.Millisecond})
			_, err := m.Generate(context.Background(), structuredReq())
			var ae *llm.APIError
			if !errors.Is(err, c.want) || errors.Is(err, llm.ErrBadRequest) || !errors.As(err, &ae) || ae.Message != c.msg || s.hits.Load() != 1 {
				t.Fatalf("err = %v hits = %d", err, s.hits.Load())
			}
			if llm.ShouldFallback(err) != (c.want == llm.ErrQuota) {
				t.Errorf("ShouldFallback = %v", llm.ShouldFallback(err))
			}
		})
	}
}
