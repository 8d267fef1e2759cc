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
	"sync"
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
	_, err := gemini.OpenAPISchema(llm.Schema{JSON: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}`)})
	var se *llm.SchemaError
	if !errors.Is(err, llm.ErrBadRequest) || !errors.As(err, &se) || se.Path != "$.properties.a" {
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

// rejected returns the JSON path of the first object schema the API would
// reject with "should be non-empty for OBJECT type", or "": in
// responseSchema every OBJECT without properties; in responseJsonSchema one
// whose properties are empty and that allows no other keys (a free-form
// object is valid JSON Schema).
func rejected(v any, path string, openAPI bool) string {
	m, ok := v.(map[string]any)
	if !ok {
		if a, ok := v.([]any); ok {
			for i, x := range a {
				if p := rejected(x, fmt.Sprintf("%s[%d]", path, i), openAPI); p != "" {
					return p
				}
			}
		}
		return ""
	}
	t := m["type"]
	if tl, ok := t.([]any); ok && len(tl) > 0 {
		t = tl[0]
	}
	p, hasProps := m["properties"].(map[string]any)
	ap, hasAP := m["additionalProperties"]
	if strings.EqualFold(fmt.Sprint(t), "object") && len(p) == 0 &&
		(openAPI || (hasProps && !hasAP) || (hasAP && ap == false)) {
		return path
	}
	for k, x := range m {
		if k == "properties" {
			if p, ok := x.(map[string]any); ok {
				for pk, pv := range p {
					if r := rejected(pv, fmt.Sprintf("%s.properties[%q]", path, pk), openAPI); r != "" {
						return r
					}
				}
			}
			continue
		}
		if r := rejected(x, path+"."+k, openAPI); r != "" {
			return r
		}
	}
	return ""
}

// geminiLike answers with reply when the schema sent in field is one the
// API accepts, else with the API's 400. sentSchema, when not nil, receives
// the schema as sent.
func geminiLike(t *testing.T, field, reply string, sentSchema *json.RawMessage) *server {
	var mu sync.Mutex
	return newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, body []byte) {
		var sent struct {
			GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
		}
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		if sentSchema != nil {
			mu.Lock()
			*sentSchema = sent.GenerationConfig[field]
			mu.Unlock()
		}
		var sch any
		raw, ok := sent.GenerationConfig[field]
		if ok {
			json.Unmarshal(raw, &sch)
		}
		if !ok {
			t.Fatalf("no %s in %s", field, body)
		}
		if bad := rejected(sch, "", field == "responseSchema"); bad != "" {
			msg, _ := json.Marshal("* GenerateContentRequest.generation_config.response_schema" + bad + ".properties: should be non-empty for OBJECT type\n")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"code":400,"message":%s,"status":"INVALID_ARGUMENT"}}`, msg)
			return
		}
		io.WriteString(w, reply)
	})
}

// A parameterless action (go_back) and a nested closed empty object are
// legal in both schema modes, and a reply that writes the placeholder has
// it removed.
func TestNoEmptyObjectSchemaInEitherMode(t *testing.T) {
	const schema = `{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array","items":{"anyOf":[` +
		`{"type":"object","properties":{"go_back":{"type":"object","properties":{},"additionalProperties":false}},"required":["go_back"],"additionalProperties":false},` +
		`{"type":"object","properties":{"click":{"type":"object","properties":{"index":{"type":"integer"},"opts":{"type":"object","additionalProperties":false}},"required":["index"],"additionalProperties":false}},"required":["click"],"additionalProperties":false}` +
		`]}}},"required":["thinking","action"],"additionalProperties":false}`
	for _, openAPI := range []bool{false, true} {
		field := map[bool]string{false: "responseJsonSchema", true: "responseSchema"}[openAPI]
		t.Run(field, func(t *testing.T) {
			s := geminiLike(t, field, reply(text(`{"thinking":"back","action":[{"go_back":{"_placeholder":false}},{"click":{"index":3,"opts":{"_placeholder":true}}}]}`), "STOP"), nil)
			r := structuredReq()
			r.Schema = &llm.Schema{Name: "agent_output", JSON: json.RawMessage(schema)}
			resp, err := newModel(t, s, openAPI).Generate(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != `{"thinking":"back","action":[{"go_back":{}},{"click":{"index":3,"opts":{}}}]}` {
				t.Errorf("content %s", resp.Content)
			}
		})
	}
	// A schema with nothing to fix is sent byte for byte.
	const plain = `{"type":"object","properties":{"a":{"type":"string"}}}`
	if got, changed, err := gemini.LegalSchema(llm.Schema{JSON: json.RawMessage(plain)}); err != nil || changed || string(got) != plain {
		t.Errorf("LegalSchema(plain) = %s %v %v", got, changed, err)
	}
}

// compactSchema is the agent's compact reply schema: each action item is a
// free-form object whose one key is the action's name.
const compactSchema = `{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array","items":` +
	`{"type":"object","minProperties":1,"maxProperties":1,"additionalProperties":{"type":"object"}}}},"required":["thinking","action"],"additionalProperties":false}`

// Objects that allow other keys are not given the placeholder: sent as
// responseJsonSchema unchanged, their data keeps a "_placeholder" key of
// its own, while a parameterless action's is still removed.
func TestFreeFormObjectsKeptInJSONSchema(t *testing.T) {
	const schema = `{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array","items":{"anyOf":[` +
		`{"type":"object","properties":{"go_back":{"type":"object","properties":{},"additionalProperties":false}},"required":["go_back"],"additionalProperties":false},` +
		`{"type":"object","properties":{"done":{"type":"object","properties":{"data":{"type":"object"},"labels":{"type":"object","additionalProperties":{"type":"string"}},"any":{"type":"object","additionalProperties":true}},"required":["data"]}},"required":["done"]},` +
		`{"type":"object","minProperties":1,"maxProperties":1,"additionalProperties":{"type":"object"}}` +
		`]}}},"required":["thinking","action"]}`
	const answer = `{"thinking":"<b>back</b>","action":[{"go_back":{"_placeholder":false}},` +
		`{"done":{"data":{"_placeholder":true,"x":1},"labels":{"_placeholder":"a"},"any":{"_placeholder":1}}},{"fill":{"_placeholder":"kept"}}]}`
	var sentSchema json.RawMessage
	s := geminiLike(t, "responseJsonSchema", reply(text(answer), "STOP"), &sentSchema)
	r := structuredReq()
	r.Schema = &llm.Schema{Name: "agent_output", JSON: json.RawMessage(schema), Loose: true}
	resp, err := newModel(t, s, false).Generate(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"thinking":"<b>back</b>","action":[{"go_back":{}},` +
		`{"done":{"data":{"_placeholder":true,"x":1},"labels":{"_placeholder":"a"},"any":{"_placeholder":1}}},{"fill":{"_placeholder":"kept"}}]}`
	if resp.Content != want {
		t.Errorf("content\n got %s\nwant %s", resp.Content, want)
	}
	if n := strings.Count(string(sentSchema), gemini.Placeholder); n != 1 {
		t.Errorf("%d placeholders sent, want 1 (go_back's): %s", n, sentSchema)
	}

	// The compact schema has no closed empty object: sent byte for byte.
	if got, changed, err := gemini.LegalSchema(llm.Schema{JSON: json.RawMessage(compactSchema), Loose: true}); err != nil || changed || string(got) != compactSchema {
		t.Errorf("LegalSchema(compact) = %s %v %v", got, changed, err)
	}
	// Not Loose, an object without properties or additionalProperties is
	// taken as closed (the caller's schema claims to be strict).
	const nested = `{"type":"object","properties":{"p":{"type":"object","description":"<none>"}},"additionalProperties":false}`
	got, changed, err := gemini.LegalSchema(llm.Schema{JSON: json.RawMessage(nested)})
	if err != nil || !changed || !strings.Contains(string(got), `"p":{"type":"object","description":"<none>","properties":{"_placeholder":`) {
		t.Errorf("LegalSchema(nested) = %s %v %v", got, changed, err)
	}
	if got, changed, _ := gemini.LegalSchema(llm.Schema{JSON: json.RawMessage(nested), Loose: true}); changed || string(got) != nested {
		t.Errorf("LegalSchema(nested, Loose) = %s %v", got, changed)
	}
}

// responseSchema cannot express an object that allows other keys: it is
// refused before sending, naming the path and what to do, not narrowed to
// an empty object.
func TestOpenAPISchemaRefusesFreeForm(t *testing.T) {
	cases := []struct {
		name, schema string
		loose        bool
		path         string
	}{
		{"compact action item", compactSchema, true, "$.properties.action.items"},
		{"map", `{"type":"object","properties":{"labels":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}}}`, false, "$.properties.labels"},
		{"additionalProperties true", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, false, "$"},
		{"loose object without properties", `{"type":"object","properties":{"data":{"type":"object"}},"additionalProperties":false}`, true, "$.properties.data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch := llm.Schema{Name: "agent_output", JSON: json.RawMessage(c.schema), Loose: c.loose}
			_, err := gemini.OpenAPISchema(sch)
			var se *llm.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, llm.ErrBadRequest) || se.Path != c.path || se.Provider != "gemini" ||
				!strings.Contains(se.Reason, "responseJsonSchema") || !strings.Contains(se.Reason, "ActionSchemaFull") {
				t.Fatalf("err = %v (%+v)", err, se)
			}
			s := geminiLike(t, "responseSchema", reply(text(`{}`), "STOP"), nil)
			r := structuredReq()
			r.Schema = &sch
			if _, err := newModel(t, s, true).Generate(context.Background(), r); !errors.As(err, &se) || s.hits.Load() != 0 {
				t.Fatalf("Generate: %v, hits %d", err, s.hits.Load())
			}
		})
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
