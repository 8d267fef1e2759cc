package gemini_test

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
	"github.com/browseragent/browseragent/agent/llm/gemini"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const agentSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":["string","null"]},"action":{"type":"array","items":{"type":"object","additionalProperties":false}}},"required":["thinking","action"],"additionalProperties":false}`

// legalAgentSchema is agentSchema as sent: the action items' object lists no
// properties, so it gets the placeholder.
const legalAgentSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":["string","null"]},"action":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"_placeholder":{"type":"boolean","description":"Unused; always leave out."}}}}},"required":["thinking","action"],"additionalProperties":false}`

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
		if string(gc["responseMimeType"]) != `"application/json"` || string(gc["responseJsonSchema"]) != legalAgentSchema ||
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
	if (resp.Usage != llm.Usage{PromptTokens: 500, CompletionTokens: 75, TotalTokens: 575, CachedTokens: 256, ReasoningTokens: 25}) {
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
		want := `{"type":"object","properties":{"thinking":{"type":"string"},"memory":{"type":"string","nullable":true},"action":{"type":"array","items":{"type":"object","properties":{"_placeholder":{"type":"boolean","description":"Unused; always leave out."}},"propertyOrdering":["_placeholder"]}}},"required":["thinking","action"],"propertyOrdering":["thinking","memory","action"]}`
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

// emptyObjects returns the JSON paths of the OBJECT schemas without
// properties, the shape the API rejects with "should be non-empty for
// OBJECT type" in responseSchema and responseJsonSchema alike.
func emptyObjects(v any, path string, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		if a, ok := v.([]any); ok {
			for i, x := range a {
				emptyObjects(x, fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
		return
	}
	t := m["type"]
	if tl, ok := t.([]any); ok && len(tl) > 0 {
		t = tl[0]
	}
	if p, _ := m["properties"].(map[string]any); strings.EqualFold(fmt.Sprint(t), "object") && len(p) == 0 {
		*out = append(*out, path)
	}
	for k, x := range m {
		if k == "properties" {
			if p, ok := x.(map[string]any); ok {
				for pk, pv := range p {
					emptyObjects(pv, fmt.Sprintf("%s.properties[%q]", path, pk), out)
				}
			}
			continue
		}
		emptyObjects(x, path+"."+k, out)
	}
}

// A parameterless action (go_back) and a Loose free-form object are legal
// in both schema modes, and a reply that writes the placeholder has it
// removed.
func TestNoEmptyObjectSchemaInEitherMode(t *testing.T) {
	const schema = `{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array","items":{"anyOf":[` +
		`{"type":"object","properties":{"go_back":{"type":"object","properties":{},"additionalProperties":false}},"required":["go_back"],"additionalProperties":false},` +
		`{"type":"object","properties":{"click":{"type":"object","properties":{"index":{"type":"integer"}},"required":["index"],"additionalProperties":false}},"required":["click"],"additionalProperties":false},` +
		`{"type":"object","properties":{"done":{"type":"object","properties":{"data":{"type":"object"},"labels":{"type":"object","additionalProperties":{"type":"string"}}},"required":["data"]}},"required":["done"]}` +
		`]}}},"required":["thinking","action"]}`
	for _, openAPI := range []bool{false, true} {
		field := map[bool]string{false: "responseJsonSchema", true: "responseSchema"}[openAPI]
		t.Run(field, func(t *testing.T) {
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, body []byte) {
				var sent struct {
					GenerationConfig map[string]any `json:"generationConfig"`
				}
				if err := json.Unmarshal(body, &sent); err != nil {
					t.Fatal(err)
				}
				sch, ok := sent.GenerationConfig[field]
				if !ok {
					t.Fatalf("no %s in %s", field, body)
				}
				var bad []string
				emptyObjects(sch, "", &bad)
				if len(bad) > 0 {
					msg, _ := json.Marshal("* GenerateContentRequest.generation_config.response_schema" + bad[0] + ".properties: should be non-empty for OBJECT type\n")
					w.WriteHeader(400)
					fmt.Fprintf(w, `{"error":{"code":400,"message":%s,"status":"INVALID_ARGUMENT"}}`, msg)
					return
				}
				io.WriteString(w, reply(text(`{"thinking":"back","action":[{"go_back":{"_placeholder":false}},{"done":{"data":{"_placeholder":true,"x":1}}}]}`), "STOP"))
			})
			r := structuredReq()
			r.Schema = &llm.Schema{Name: "agent_output", JSON: json.RawMessage(schema), Loose: true}
			resp, err := newModel(t, s, openAPI).Generate(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != `{"thinking":"back","action":[{"go_back":{}},{"done":{"data":{"x":1}}}]}` {
				t.Errorf("content %s", resp.Content)
			}
		})
	}
	// A schema with nothing to fix is sent byte for byte.
	const plain = `{"type":"object","properties":{"a":{"type":"string"}}}`
	if got, changed, err := gemini.LegalSchema(json.RawMessage(plain)); err != nil || changed || string(got) != plain {
		t.Errorf("LegalSchema(plain) = %s %v %v", got, changed, err)
	}
}

func TestContextLengthNotRetried(t *testing.T) {
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"code":400,"message":"The input token count (1290000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`)
	})
	m := llm.WithRetry(newModel(t, s, false), llm.RetryPolicy{BaseDelay: time.Millisecond})
	_, err := m.Generate(context.Background(), structuredReq())
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrContextLength) || errors.Is(err, llm.ErrBadRequest) || !errors.As(err, &ae) || ae.Status != 400 ||
		llm.ShouldFallback(err) || s.hits.Load() != 1 {
		t.Fatalf("err = %v, hits = %d", err, s.hits.Load())
	}
}
