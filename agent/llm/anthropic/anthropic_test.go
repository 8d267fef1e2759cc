package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
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
			System    string `json:"system"`
			Messages  []struct {
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
		if sent.Model != "claude-sonnet-4-5" || sent.MaxTokens != 8192 || sent.System != "You are a browser agent." {
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
