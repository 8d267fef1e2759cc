package openai_test

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
	"github.com/browseragent/browseragent/agent/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agentSchema has its keys in generation order on purpose.
const agentSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":"string"},` +
	`"action":{"type":"array","items":{"type":"object","properties":{"click":{"type":"object","properties":{"index":{"type":"integer"}},"required":["index"]}}}}},` +
	`"required":["thinking","action"]}`

var png = []byte("\x89PNG\r\n\x1a\nfake")

func structuredReq() llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			llm.SystemMessage("You are a browser agent."),
			llm.UserMessage(llm.Text("Page: [3]<button />"), llm.Part{Image: &llm.Image{MediaType: "image/png", Data: png, Detail: "low"}}),
		},
		Schema:    &llm.Schema{Name: "agent_output", JSON: json.RawMessage(agentSchema)},
		MaxTokens: 500,
	}
}

type server struct {
	*httptest.Server
	hits   atomic.Int32
	bodies chan []byte
}

// newServer answers each POST with handler; it records the bodies.
func newServer(t *testing.T, handler func(n int, w http.ResponseWriter, r *http.Request, body []byte)) *server {
	t.Helper()
	s := &server{bodies: make(chan []byte, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case s.bodies <- b:
		default:
		}
		handler(int(s.hits.Add(1)), w, r, b)
	}))
	t.Cleanup(s.Close)
	return s
}

func newModel(t *testing.T, s *server, mod func(*openai.Config)) *openai.Model {
	t.Helper()
	cfg := openai.Config{Model: "gpt-4.1", APIKey: "sk-test", BaseURL: s.URL + "/v1", HTTPClient: s.Client()}
	if mod != nil {
		mod(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func completion(content string, finish string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content, "refusal": nil}, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
			"prompt_tokens_details": map[string]any{"cached_tokens": 64}},
	})
	return string(b)
}

const goodJSON = `{"thinking":"t","memory":null,"action":[{"click":{"index":3}}]}`

func TestStructuredOutputWithImage(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("Authorization = %q", got)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	m := newModel(t, s, nil)
	resp, err := m.Generate(context.Background(), structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != goodJSON || resp.StopReason != "stop" || resp.Model != "gpt-4.1-2025-04-14" {
		t.Errorf("resp = %+v", resp)
	}
	if (resp.Usage != llm.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, CachedTokens: 64}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if m.Name() != "openai:gpt-4.1" {
		t.Errorf("Name = %q", m.Name())
	}
	body := <-s.bodies
	var sent struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		MaxCompletionTokens int      `json:"max_completion_tokens"`
		MaxTokens           *int     `json:"max_tokens"`
		Temperature         *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Model != "gpt-4.1" || sent.MaxCompletionTokens != 500 || sent.MaxTokens != nil || sent.Temperature != nil {
		t.Errorf("sent %s", body)
	}
	if len(sent.Messages) != 2 || sent.Messages[0].Role != "system" || string(sent.Messages[0].Content) != `"You are a browser agent."` {
		t.Fatalf("messages: %s", body)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(sent.Messages[1].Content, &parts); err != nil || len(parts) != 2 {
		t.Fatalf("user content: %s (%v)", sent.Messages[1].Content, err)
	}
	if parts[0].Type != "text" || parts[1].Type != "image_url" || parts[1].ImageURL.Detail != "low" ||
		parts[1].ImageURL.URL != "data:image/png;base64,iVBORw0KGgpmYWtl" {
		t.Errorf("parts = %+v", parts)
	}
	rf := sent.ResponseFormat
	if rf.Type != "json_schema" || rf.JSONSchema.Name != "agent_output" || !rf.JSONSchema.Strict {
		t.Errorf("response_format = %+v", rf)
	}
	sch := string(rf.JSONSchema.Schema)
	if !(strings.Index(sch, `"thinking"`) < strings.Index(sch, `"memory"`) && strings.Index(sch, `"memory"`) < strings.Index(sch, `"action"`)) {
		t.Errorf("property order lost: %s", sch)
	}
	for _, want := range []string{`"additionalProperties":false`, `"required":["thinking","memory","action"]`, `"memory":{"type":["string","null"]}`, `"required":["click"]`} {
		if !strings.Contains(sch, want) {
			t.Errorf("strict schema lacks %s: %s", want, sch)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   error
		code   string
	}{
		{"unauthorized", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, llm.ErrAuth, "invalid_api_key"},
		{"bad request", 400, `{"error":{"message":"Invalid schema","type":"invalid_request_error","param":"response_format","code":null}}`, llm.ErrBadRequest, "invalid_request_error"},
		{"not found", 404, `{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`, llm.ErrBadRequest, "model_not_found"},
		{"server", 500, `{"error":{"message":"The server had an error","type":"server_error"}}`, llm.ErrProviderUnavailable, "server_error"},
		{"ollama style", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, llm.ErrBadRequest, ""},
		{"html gateway", 502, `<html>Bad Gateway</html>`, llm.ErrProviderUnavailable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			_, err := newModel(t, s, nil).Generate(context.Background(), structuredReq())
			var ae *llm.APIError
			if !errors.As(err, &ae) || !errors.Is(err, c.want) || ae.Status != c.status || ae.Code != c.code || ae.Message == "" || ae.Provider != "openai" {
				t.Fatalf("err = %#v (%v)", err, err)
			}
		})
	}
}

func TestReplyErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
	}{
		{"truncated", completion(`{"thinking":"long`, "length"), llm.ErrTruncated},
		{"empty content", completion("", "stop"), llm.ErrEmptyReply},
		{"no choices", `{"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`, llm.ErrEmptyReply},
		{"null content", `{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`, llm.ErrEmptyReply},
		{"refusal", `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`, llm.ErrRefused},
		{"content filter", completion("", "content_filter"), llm.ErrRefused},
		{"malformed", completion("Sure! Clicking the button now.", "stop"), llm.ErrMalformedOutput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) { io.WriteString(w, c.body) })
			resp, err := newModel(t, s, nil).Generate(context.Background(), structuredReq())
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if errors.Is(err, llm.ErrProviderUnavailable) || llm.ShouldFallback(err) || llm.Retryable(err) {
				t.Fatalf("reply error %v must not be treated as an outage", err)
			}
			if resp == nil {
				t.Fatal("reply errors return the response too")
			}
		})
	}
	t.Run("200 with error object", func(t *testing.T) {
		s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
			io.WriteString(w, `{"error":{"message":"Provider returned error","code":502}}`)
		})
		_, err := newModel(t, s, nil).Generate(context.Background(), structuredReq())
		if !errors.Is(err, llm.ErrProviderUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("garbage envelope is an outage", func(t *testing.T) {
		s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
			io.WriteString(w, "<html>captive portal</html>")
		})
		_, err := newModel(t, s, nil).Generate(context.Background(), structuredReq())
		if !errors.Is(err, llm.ErrProviderUnavailable) || errors.Is(err, llm.ErrMalformedOutput) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("free text without schema", func(t *testing.T) {
		s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
			if strings.Contains(string(b), "response_format") {
				t.Errorf("response_format sent without schema: %s", b)
			}
			io.WriteString(w, completion("Hello there", "stop"))
		})
		resp, err := newModel(t, s, nil).Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("hi"))}})
		if err != nil || resp.Content != "Hello there" {
			t.Fatalf("%v %v", resp, err)
		}
	})
}

func TestRetryAfterThenSuccess(t *testing.T) {
	s := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		if n == 1 {
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-4.1","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	m := llm.WithRetry(newModel(t, s, nil), llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond})
	resp, err := m.Generate(context.Background(), structuredReq())
	if err != nil || resp.Content != goodJSON || s.hits.Load() != 2 {
		t.Fatalf("resp=%v err=%v hits=%d", resp, err, s.hits.Load())
	}
}

func TestUnavailableExhaustedFallsBack(t *testing.T) {
	primary := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	})
	secondary := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, strings.Replace(completion(goodJSON, "stop"), "gpt-4.1-2025-04-14", "gpt-4.1-mini", 1))
	})
	p := llm.WithRetry(newModel(t, primary, nil), llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond})
	f := newModel(t, secondary, func(c *openai.Config) { c.Model = "gpt-4.1-mini" })
	resp, err := llm.WithFallback(p, f).Generate(context.Background(), structuredReq())
	if err != nil || resp.Model != "gpt-4.1-mini" {
		t.Fatalf("resp=%v err=%v", resp, err)
	}
	if primary.hits.Load() != 3 || secondary.hits.Load() != 1 {
		t.Errorf("hits primary=%d secondary=%d", primary.hits.Load(), secondary.hits.Load())
	}
}

func TestMalformedIsNotAnOutage(t *testing.T) {
	primary := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, completion(`{"thinking": "oops", "action": [`, "stop"))
	})
	secondary := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	p := llm.WithRetry(newModel(t, primary, nil), llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond})
	resp, err := llm.WithFallback(p, newModel(t, secondary, nil)).Generate(context.Background(), structuredReq())
	var pe *llm.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, llm.ErrMalformedOutput) || errors.Is(err, llm.ErrProviderUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if pe.Provider != "openai" || !strings.Contains(pe.Content, "oops") || resp == nil {
		t.Errorf("parse error %+v resp %v", pe, resp)
	}
	if primary.hits.Load() != 1 || secondary.hits.Load() != 0 {
		t.Errorf("malformed output was retried or fell back: primary=%d secondary=%d", primary.hits.Load(), secondary.hits.Load())
	}
}

func TestCancelMidRequest(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, _ []byte) {
		close(arrived)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	fb := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	m := llm.WithFallback(llm.WithRetry(newModel(t, s, nil), llm.RetryPolicy{BaseDelay: time.Millisecond}), newModel(t, fb, nil))
	_, err := m.Generate(ctx, structuredReq())
	if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrProviderUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if s.hits.Load() != 1 || fb.hits.Load() != 0 {
		t.Errorf("cancelled call retried or fell back: %d %d", s.hits.Load(), fb.hits.Load())
	}
}

func TestAttemptTimeoutIsUnavailable(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	m := newModel(t, s, func(c *openai.Config) { c.Timeout = 50 * time.Millisecond })
	_, err := m.Generate(context.Background(), structuredReq())
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrProviderUnavailable) || !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestNetworkErrorIsUnavailable(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	m, err := openai.New(openai.Config{Model: "m", APIKey: "k", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer m.CloseIdleConnections()
	_, err = m.Generate(context.Background(), structuredReq())
	if !errors.Is(err, llm.ErrProviderUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	_, err := openai.New(openai.Config{Model: "gpt-4.1"})
	var mk *llm.MissingKeyError
	if !errors.As(err, &mk) || !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	// A non-OpenAI base (vLLM, LM Studio) needs no key; the env is honoured.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1/")
	m, err := openai.New(openai.Config{Model: "local"})
	if err != nil {
		t.Fatal(err)
	}
	m.CloseIdleConnections()
}

func TestBadRequestNotSent(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) { t.Error("request sent") })
	m := newModel(t, s, nil)
	r := structuredReq()
	r.Schema.JSON = json.RawMessage(`{"type":"string"}`)
	if _, err := m.Generate(context.Background(), r); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("err = %v", err)
	}
}

func TestLegacyMaxTokensAndTemperature(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
		if !strings.Contains(string(b), `"max_tokens":500`) || strings.Contains(string(b), "max_completion_tokens") || !strings.Contains(string(b), `"temperature":0`) {
			t.Errorf("body %s", b)
		}
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	zero := 0.0
	r := structuredReq()
	r.Temperature = &zero
	if _, err := newModel(t, s, func(c *openai.Config) { c.LegacyMaxTokens = true }).Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func TestStrictSchema(t *testing.T) {
	out, ok, err := openai.StrictSchema(json.RawMessage(`{"type":"object","properties":{"b":{"type":"string","enum":["x","y"]},"a":{"anyOf":[{"type":"integer"},{"type":"string"}]},"c":{"$ref":"#/$defs/C"}},"required":["b"],"$defs":{"C":{"type":"object","properties":{"z":{"type":"boolean"}}}}}`))
	if err != nil || !ok {
		t.Fatal(err, ok)
	}
	want := `{"type":"object","properties":{"b":{"type":"string","enum":["x","y"]},"a":{"anyOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]},"c":{"anyOf":[{"$ref":"#/$defs/C"},{"type":"null"}]}},"required":["b","a","c"],"$defs":{"C":{"type":"object","properties":{"z":{"type":["boolean","null"]}},"additionalProperties":false,"required":["z"]}},"additionalProperties":false}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, ok, _ := openai.StrictSchema(json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`)); ok {
		t.Error("map schema cannot be strict")
	}
	// The model reads the schema: no HTML escaping.
	if out, ok, err := openai.StrictSchema(json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"<secret> & co"}}}`)); err != nil || !ok ||
		!strings.Contains(string(out), `"<secret> & co"`) {
		t.Errorf("escaped: %s %v %v", out, ok, err)
	}
	if _, _, err := openai.StrictSchema(json.RawMessage(`{"type":`)); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("err = %v", err)
	}
}

// A schema strict mode cannot express is refused before sending, with the
// path and the reason; the same schema marked Loose, or a NonStrict model,
// sends it unchanged with strict:false.
func TestFreeFormSchemaRefusedUnlessLoose(t *testing.T) {
	const mapSchema = `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`
	const freeSchema = `{"type":"object","properties":{"action":{"type":"array","items":{"anyOf":[{"type":"object","properties":{"custom":{"type":"object"}}}]}}}}`
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
		var sent struct {
			ResponseFormat struct {
				JSONSchema struct {
					Strict bool            `json:"strict"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		json.Unmarshal(b, &sent)
		if sent.ResponseFormat.JSONSchema.Strict || string(sent.ResponseFormat.JSONSchema.Schema) != mapSchema {
			t.Errorf("body %s", b)
		}
		io.WriteString(w, completion(`{"labels":{}}`, "stop"))
	})
	for _, c := range []struct{ schema, path, reason string }{
		{mapSchema, "$.properties.labels", "additionalProperties"},
		{freeSchema, "$.properties.action.items.anyOf[0].properties.custom", "lists no properties"},
		// The cases the agent's registration check used to let through.
		{`{"type":"object","properties":{"v":{}}}`, "$.properties.v", "without a type"},
		{`{"type":"object","properties":{"v":{"description":"anything"}}}`, "$.properties.v", "without a type"},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{}}}}`, "$.properties.o", "lists no properties"},
		{`{"type":"object"}`, "$", "lists no properties"},
	} {
		r := structuredReq()
		r.Schema.JSON = json.RawMessage(c.schema)
		_, err := newModel(t, s, nil).Generate(context.Background(), r)
		var se *llm.SchemaError
		if !errors.Is(err, llm.ErrBadRequest) || !errors.As(err, &se) || se.Path != c.path || !strings.Contains(se.Reason, c.reason) ||
			!strings.Contains(err.Error(), c.path) || se.Schema != "agent_output" {
			t.Errorf("err = %v", err)
		}
		if path, _, _ := openai.NotStrict(json.RawMessage(c.schema)); path != c.path {
			t.Errorf("NotStrict path %q", path)
		}
	}
	if s.hits.Load() != 0 {
		t.Fatalf("a refused schema was sent")
	}
	r := structuredReq()
	r.Schema.JSON = json.RawMessage(mapSchema)
	r.Schema.Loose = true
	if _, err := newModel(t, s, nil).Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Schema.Loose = false
	if _, err := newModel(t, s, func(c *openai.Config) { c.NonStrict = true }).Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if s.hits.Load() != 2 {
		t.Fatalf("hits %d", s.hits.Load())
	}
}

// A parameterless action's empty object (additionalProperties:false) is
// legal in strict mode and stays an empty object.
func TestEmptyObjectIsStrict(t *testing.T) {
	out, ok, err := openai.StrictSchema(json.RawMessage(`{"type":"object","properties":{"go_back":{"type":"object","properties":{},"additionalProperties":false}},"required":["go_back"],"additionalProperties":false}`))
	want := `{"type":"object","properties":{"go_back":{"type":"object","properties":{},"additionalProperties":false,"required":[]}},"required":["go_back"],"additionalProperties":false}`
	if err != nil || !ok || string(out) != want {
		t.Fatalf("got %s %v %v\nwant %s", out, ok, err, want)
	}
}

// Usage as OpenAI reports it for a reasoning model that hit the cache.
func TestUsageCachedAndReasoning(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, `{"id":"chatcmpl-B9","object":"chat.completion","created":1741570283,"model":"o4-mini-2025-04-16",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"thinking\":\"t\",\"memory\":null,\"action\":[]}","refusal":null,"annotations":[]},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,`+
			`"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},`+
			`"completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},`+
			`"service_tier":"default","system_fingerprint":null}`)
	})
	resp, err := newModel(t, s, nil).Generate(context.Background(), structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	if (resp.Usage != llm.Usage{PromptTokens: 2006, CompletionTokens: 300, TotalTokens: 2306, CachedTokens: 1920, ReasoningTokens: 192}) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// redirect sends every request to the test server, so that a Model
// configured for api.openai.com talks to it.
type redirect struct{ to *httptest.Server }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = "http", strings.TrimPrefix(r.to.URL, "http://")
	return r.to.Client().Transport.RoundTrip(req)
}

func TestPromptCacheKey(t *testing.T) {
	keys := make(chan string, 8)
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
		var sent map[string]json.RawMessage
		json.Unmarshal(b, &sent)
		keys <- string(sent["prompt_cache_key"])
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	r := structuredReq()
	r.CacheKey = "agent-run-7f3a"
	official, err := openai.New(openai.Config{Model: "gpt-4.1", APIKey: "sk-test", BaseURL: openai.DefaultBaseURL,
		HTTPClient: &http.Client{Transport: redirect{s.Server}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    llm.Model
		want string
	}{
		{"official API", official, `"agent-run-7f3a"`},
		{"compatible server", newModel(t, s, nil), ""},
		{"compatible server, opted in", newModel(t, s, func(c *openai.Config) { c.SendCacheKey = true }), `"agent-run-7f3a"`},
	} {
		if _, err := c.m.Generate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if got := <-keys; got != c.want {
			t.Errorf("%s: prompt_cache_key %s, want %s", c.name, got, c.want)
		}
	}
	r.CacheKey = ""
	if _, err := official.Generate(context.Background(), r); err != nil || <-keys != "" {
		t.Errorf("empty key sent: %v", err)
	}
}

func TestQuotaAndContextErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"insufficient_quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, llm.ErrQuota},
		{"openrouter credits", 402, `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only afford 2000.","code":402}}`, llm.ErrQuota},
		{"context_length_exceeded", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, llm.ErrContextLength},
		{"vllm", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, llm.ErrContextLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			fb := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				io.WriteString(w, completion(goodJSON, "stop"))
			})
			primary := llm.WithRetry(newModel(t, s, nil), llm.RetryPolicy{BaseDelay: time.Millisecond})
			_, err := primary.Generate(context.Background(), structuredReq())
			var ae *llm.APIError
			if !errors.Is(err, c.want) || errors.Is(err, llm.ErrRateLimited) || errors.Is(err, llm.ErrBadRequest) || llm.Retryable(err) || s.hits.Load() != 1 ||
				!errors.As(err, &ae) || ae.Status != c.status || strings.HasPrefix(ae.Message, "{") {
				t.Fatalf("err = %v, hits = %d", err, s.hits.Load())
			}
			// Billing falls back to another model; a too-long prompt does not.
			_, err = llm.WithFallback(primary, newModel(t, fb, nil)).Generate(context.Background(), structuredReq())
			if wantFB := c.want == llm.ErrQuota; (fb.hits.Load() == 1) != wantFB || (err == nil) != wantFB {
				t.Errorf("fallback hits %d, err %v", fb.hits.Load(), err)
			}
		})
	}
}

// ollama behaves like Ollama's /v1/chat/completions: it counts the prompt
// with its own tokenizer (here one token per three bytes, denser than the
// client's estimate), cuts it to num_ctx without an error and reports the
// truncated size as usage.prompt_tokens.
func ollama(t *testing.T, numCtx int) *server {
	return newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, b []byte) {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(b, &req)
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content) / 3
		}
		n = min(n, numCtx)
		fmt.Fprintf(w, `{"id":"chatcmpl-310","object":"chat.completion","created":1733000000,"model":"llama3.1:8b","system_fingerprint":"fp_ollama",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":6,"total_tokens":%d}}`, n, n+6)
	})
}

func TestContextWindow(t *testing.T) {
	req := func(bytes int) llm.Request {
		return llm.Request{Messages: []llm.Message{llm.SystemMessage("You are a browser agent."), llm.UserMessage(llm.Text(strings.Repeat("a", bytes)))}}
	}
	const window = 1000
	cfg := func(c *openai.Config) {
		c.Provider, c.ContextWindow, c.ContextHint = "ollama", window, "raise OLLAMA_CONTEXT_LENGTH"
	}

	s := ollama(t, window)
	m := newModel(t, s, cfg)
	if resp, err := m.Generate(context.Background(), req(1200)); err != nil || resp.Usage.PromptTokens != 408 {
		t.Fatalf("a prompt that fits: %v %v", resp, err)
	}

	// Estimated at 4,004 tokens: refused before sending, saying how to fix it.
	_, err := m.Generate(context.Background(), req(16000))
	var ce *llm.ContextLengthError
	if !errors.Is(err, llm.ErrContextLength) || !errors.As(err, &ce) || ce.Window != window || ce.Reported != 0 ||
		ce.Estimated < window || !strings.Contains(err.Error(), "raise OLLAMA_CONTEXT_LENGTH") || llm.Retryable(err) {
		t.Fatalf("err = %v", err)
	}
	if s.hits.Load() != 1 {
		t.Fatalf("an oversized prompt was sent")
	}

	// Estimated at 900 tokens, 1,200 for the server: it truncates to its
	// window and says so only through prompt_tokens.
	resp, err := m.Generate(context.Background(), req(3520))
	if !errors.Is(err, llm.ErrContextLength) || !errors.As(err, &ce) || ce.Reported != window || resp == nil || resp.Usage.PromptTokens != window {
		t.Fatalf("truncated reply: %v %v", resp, err)
	}

	// Without a window, nothing is checked.
	if _, err := newModel(t, s, nil).Generate(context.Background(), req(16000)); err != nil {
		t.Fatal(err)
	}
}

// A server that dropped whole messages reports far fewer prompt tokens than
// were sent.
func TestContextWindowDroppedMessages(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"qwen3:4b","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":310,"completion_tokens":1,"total_tokens":311}}`)
	})
	m := newModel(t, s, func(c *openai.Config) { c.ContextWindow = 4096 })
	r := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("word ", 3000))), llm.AssistantMessage("ok"), llm.UserMessage(llm.Text("next"))}}
	if _, err := m.Generate(context.Background(), r); !errors.Is(err, llm.ErrContextLength) {
		t.Fatalf("err = %v", err)
	}
}

// The request's AttemptTimeout bounds one attempt: the first stalls, the
// retry answers, well within two attempt timeouts.
func TestAttemptTimeoutLeavesTimeForRetry(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(n int, w http.ResponseWriter, r *http.Request, _ []byte) {
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		io.WriteString(w, completion(goodJSON, "stop"))
	})
	defer close(release)
	const attempt = 300 * time.Millisecond
	m := llm.WithRetry(newModel(t, s, nil), llm.RetryPolicy{BaseDelay: time.Millisecond})
	r := structuredReq()
	r.AttemptTimeout = attempt
	// The caller's bound is long: a first attempt bounded only by it would
	// stall for all of it. About one attempt timeout is expected; 10 s is
	// headroom for a loaded machine, far below the 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := m.Generate(ctx, r)
	if err != nil || resp.Content != goodJSON || s.hits.Load() != 2 {
		t.Fatalf("%v %v hits %d", resp, err, s.hits.Load())
	}
	if d := time.Since(start); d < attempt || d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	// Through the context, on the provider alone: the attempt's expiry is
	// an outage, not the caller's deadline.
	s.hits.Store(0)
	actx, acancel := llm.WithAttemptTimeout(context.Background(), 50*time.Millisecond)
	defer acancel()
	_, err = newModel(t, s, nil).Generate(actx, structuredReq())
	if !errors.Is(err, llm.ErrProviderUnavailable) || !strings.Contains(err.Error(), "attempt timeout of 50ms") {
		t.Fatalf("err = %v", err)
	}
	if !llm.BoundsAttempts(newModel(t, s, nil)) {
		t.Error("the provider model does not say it bounds its attempts")
	}
}

// With only a minimum window (the server's is unknown), nothing is refused
// before sending; a reply that read far less than was sent is a truncation,
// unless the server reports the rest as read from its prompt cache.
func TestMinContextWindow(t *testing.T) {
	var cached atomic.Int32
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		details := ""
		if c := cached.Load(); c >= 0 {
			details = fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, c)
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"qwen3:4b","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":300,"completion_tokens":1,"total_tokens":301%s}}`, details)
	})
	m := newModel(t, s, func(c *openai.Config) { c.Provider, c.MinContextWindow = "ollama", 4096 })
	r := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("word ", 8000)))}} // about 10,000 tokens

	cached.Store(-1) // no prompt_tokens_details: 300 of 10,000 read
	_, err := m.Generate(context.Background(), r)
	var ce *llm.ContextLengthError
	if !errors.As(err, &ce) || ce.Window != 0 || ce.Reported != 300 || s.hits.Load() != 1 {
		t.Fatalf("err = %v, hits %d", err, s.hits.Load())
	}
	if strings.Contains(err.Error(), "(0 tokens)") {
		t.Errorf("an unknown window is printed as 0: %v", err)
	}
	cached.Store(9800) // a KV-cache hit the server reports
	if resp, err := m.Generate(context.Background(), r); err != nil || resp.Usage.CachedTokens != 9800 {
		t.Fatalf("a cache hit taken for a truncation: %v %v", resp, err)
	}
	cached.Store(0) // reported, but no hit: still a truncation
	if _, err := m.Generate(context.Background(), r); !errors.Is(err, llm.ErrContextLength) {
		t.Fatalf("err = %v", err)
	}
	// A prompt below half the minimum window is never checked.
	small := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("word ", 1000)))}}
	if _, err := m.Generate(context.Background(), small); err != nil {
		t.Fatal(err)
	}
}

// A configured window also counts the cache: a reply that read part of
// the prompt from the cache is not a truncation.
func TestContextWindowCacheHit(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"qwen3:4b","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":310,"completion_tokens":1,"total_tokens":311,"prompt_tokens_details":{"cached_tokens":3500}}}`)
	})
	m := newModel(t, s, func(c *openai.Config) { c.ContextWindow = 8192 })
	r := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("word ", 3000))), llm.AssistantMessage("ok"), llm.UserMessage(llm.Text("next"))}}
	if _, err := m.Generate(context.Background(), r); err != nil {
		t.Fatalf("err = %v", err)
	}
}
