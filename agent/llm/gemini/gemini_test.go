package gemini_test

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
	"github.com/browseragent/browseragent/agent/llm/gemini"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const agentSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":["string","null"]},"action":{"type":"array","items":{"type":"object","additionalProperties":false}}},"required":["thinking","action"],"additionalProperties":false}`

func structuredReq() llm.Request {
	temp := 0.2
	return llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("You are a browser agent."),
			llm.UserMessage(llm.Text("Task"), llm.ImagePart("image/jpeg", []byte("JPEG"))),
			llm.AssistantMessage(`{"thinking":"a","action":[]}`),
			llm.UserMessage(llm.Text("[3]<button />")),
		},
		Schema:      &llm.Schema{Name: "agent_output", JSON: json.RawMessage(agentSchema)},
		MaxTokens:   2048,
		Temperature: &temp,
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

func newModel(t *testing.T, s *server, openAPI bool) *gemini.Model {
	m, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash", APIKey: "AIza-test", BaseURL: s.URL, HTTPClient: s.Client(), OpenAPISchema: openAPI})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func reply(parts []map[string]any, finish string) string {
	b, _ := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": finish, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 500, "candidatesTokenCount": 50, "thoughtsTokenCount": 25,
			"totalTokenCount": 575, "cachedContentTokenCount": 256},
		"modelVersion": "gemini-2.5-flash-001", "responseId": "r1",
	})
	return string(b)
}

func text(s string) []map[string]any { return []map[string]any{{"text": s}} }

func TestStructuredOutput(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || r.URL.RawQuery != "" || r.Header.Get("x-goog-api-key") != "AIza-test" {
			t.Errorf("got %s?%s key %q", r.URL.Path, r.URL.RawQuery, r.Header.Get("x-goog-api-key"))
		}
		var sent struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					Text       string `json:"text"`
					InlineData *struct {
						MimeType string `json:"mimeType"`
						Data     string `json:"data"`
					} `json:"inlineData"`
				} `json:"parts"`
			} `json:"contents"`
			SystemInstruction struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"systemInstruction"`
			GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
		}
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		if len(sent.Contents) != 3 || sent.Contents[0].Role != "user" || sent.Contents[1].Role != "model" {
			t.Fatalf("contents %s", body)
		}
		if d := sent.Contents[0].Parts[1].InlineData; d == nil || d.MimeType != "image/jpeg" || d.Data != "SlBFRw==" {
			t.Errorf("inlineData %s", body)
		}
		if len(sent.SystemInstruction.Parts) != 1 || sent.SystemInstruction.Parts[0].Text != "You are a browser agent." {
			t.Errorf("systemInstruction %s", body)
		}
		gc := sent.GenerationConfig
		if string(gc["responseMimeType"]) != `"application/json"` || string(gc["responseJsonSchema"]) != agentSchema ||
			gc["responseSchema"] != nil || string(gc["maxOutputTokens"]) != "2048" || string(gc["temperature"]) != "0.2" {
			t.Errorf("generationConfig %s", body)
		}
		io.WriteString(w, reply([]map[string]any{{"text": "thinking about it", "thought": true}, {"text": `{"thinking":"t",`}, {"text": `"action":[]}`}}, "STOP"))
	})
	resp, err := newModel(t, s, false).Generate(context.Background(), structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"thinking":"t","action":[]}` || resp.StopReason != "STOP" || resp.Model != "gemini-2.5-flash-001" {
		t.Errorf("resp %+v", resp)
	}
	if (resp.Usage != llm.Usage{PromptTokens: 500, CompletionTokens: 75, TotalTokens: 575, CachedTokens: 256}) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestOpenAPISchemaMode(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, body []byte) {
		var sent struct {
			GenerationConfig struct {
				ResponseSchema     json.RawMessage `json:"responseSchema"`
				ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			} `json:"generationConfig"`
		}
		json.Unmarshal(body, &sent)
		want := `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":"string","nullable":true},"action":{"type":"array","items":{"type":"object"}}},"required":["thinking","action"],"propertyOrdering":["thinking","memory","action"]}`
		if string(sent.GenerationConfig.ResponseSchema) != want || sent.GenerationConfig.ResponseJSONSchema != nil {
			t.Errorf("responseSchema\n got %s\nwant %s", sent.GenerationConfig.ResponseSchema, want)
		}
		io.WriteString(w, reply(text(`{"thinking":"t","action":[]}`), "STOP"))
	})
	if _, err := newModel(t, s, true).Generate(context.Background(), structuredReq()); err != nil {
		t.Fatal(err)
	}
	if _, err := gemini.OpenAPISchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}`)); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("$ref: %v", err)
	}
}

func TestReplyErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
	}{
		{"max tokens", reply(text(`{"thinking":"`), "MAX_TOKENS"), llm.ErrTruncated},
		{"blocked prompt", `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10}}`, llm.ErrRefused},
		{"safety finish", reply(nil, "SAFETY"), llm.ErrRefused},
		{"no candidates", `{"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10},"modelVersion":"gemini-2.5-flash"}`, llm.ErrEmptyReply},
		{"empty text", reply(text(""), "STOP"), llm.ErrEmptyReply},
		{"only thoughts", reply([]map[string]any{{"text": "hmm", "thought": true}}, "STOP"), llm.ErrEmptyReply},
		{"malformed", reply(text(`{"thinking": "t", action: []}`), "STOP"), llm.ErrMalformedOutput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) { io.WriteString(w, c.body) })
			resp, err := newModel(t, s, false).Generate(context.Background(), structuredReq())
			if !errors.Is(err, c.want) || resp == nil || llm.ShouldFallback(err) {
				t.Fatalf("err = %v resp = %v", err, resp)
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   error
		code   string
		retry  time.Duration
	}{
		{429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12s"}]}}`, llm.ErrRateLimited, "RESOURCE_EXHAUSTED", 12 * time.Second},
		{400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`, llm.ErrBadRequest, "INVALID_ARGUMENT", 0},
		{403, `{"error":{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}}`, llm.ErrAuth, "PERMISSION_DENIED", 0},
		{503, `[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]`, llm.ErrProviderUnavailable, "UNAVAILABLE", 0},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			_, err := newModel(t, s, false).Generate(context.Background(), structuredReq())
			var ae *llm.APIError
			if !errors.As(err, &ae) || !errors.Is(err, c.want) || ae.Code != c.code || ae.RetryAfter != c.retry || ae.Message == "" {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestRateLimitedThenSuccess(t *testing.T) {
	s := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		if n == 1 {
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.02s"}]}}`)
			return
		}
		io.WriteString(w, reply(text(`{"thinking":"t","action":[]}`), "STOP"))
	})
	start := time.Now()
	m := llm.WithRetry(newModel(t, s, false), llm.RetryPolicy{BaseDelay: time.Millisecond})
	if _, err := m.Generate(context.Background(), structuredReq()); err != nil || s.hits.Load() != 2 {
		t.Fatalf("err=%v hits=%d", err, s.hits.Load())
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("RetryInfo delay not honoured")
	}
}

func TestRemoteImageRejected(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) { t.Error("request sent") })
	r := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Part{Image: &llm.Image{URL: "https://example.com/x.png"}})}}
	_, err := newModel(t, s, false).Generate(context.Background(), r)
	if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "inline") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	_, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash"})
	if !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "GEMINI_API_KEY or GOOGLE_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("GOOGLE_API_KEY", "g")
	m, err := gemini.New(gemini.Config{Model: "models/gemini-2.5-flash"})
	if err != nil || m.Name() != "gemini:gemini-2.5-flash" {
		t.Fatal(err)
	}
	m.CloseIdleConnections()
}
