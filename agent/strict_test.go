package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/anthropic"
	"github.com/browseragent/browseragent/agent/llm/gemini"
	"github.com/browseragent/browseragent/agent/llm/openai"
	"github.com/browseragent/browseragent/urlmatch"
)

// The reply schema must survive OpenAI's strict-mode adaptation (strict:
// true), otherwise the provider falls back to unconstrained output.
func TestOutputSchemaStrictCompatible(t *testing.T) {
	for _, set := range [][]ActionSpec{offeredDefault(), DefaultRegistry().offered("", urlmatch.Match, nil, true)} {
		_, ok, err := openai.StrictSchema(outputSchema(set, 5).JSON)
		if err != nil || !ok {
			t.Fatalf("strict adaptation: ok=%v err=%v", ok, err)
		}
	}
	spec, _, err := structuredDone([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := openai.StrictSchema(outputSchema([]ActionSpec{*spec}, 5).JSON); err != nil || !ok {
		t.Fatalf("structured done: ok=%v err=%v", ok, err)
	}
}

// The caller's output schema keeps its key order in the structured done.
func TestStructuredDoneKeepsOrder(t *testing.T) {
	spec, data, err := structuredDone([]byte(`{"type": "object", "properties": {"total": {"type": "integer"}, "name": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"type":"object","properties":{"total":{"type":"integer"},"name":{"type":"string"}}}` {
		t.Fatalf("data schema %s", data)
	}
	js := outputSchema([]ActionSpec{*spec}, 1).JSON
	if got := propertyKeys(t, js, "done"); got != "success data" {
		t.Fatalf("done parameters: %s", got)
	}
	if got := propertyKeys(t, js, "data"); got != "total name" {
		t.Fatalf("data properties: %s", got)
	}
	if _, _, err := structuredDone([]byte(`[]`)); err == nil {
		t.Fatal("non-object output schema accepted")
	}
}

// Each provider sends the reply schema with the properties in the order they
// were declared: the reply fields, input's parameters (struct order) and a
// hand-written custom action's parameters (JSON order).
func TestProvidersSendSchemaOrder(t *testing.T) {
	offered := append(offeredDefault(), customSpec(t))
	sch := outputSchema(offered, 5)
	req := llm.Request{
		Messages: []llm.Message{llm.SystemMessage("You are a browser agent."), llm.UserMessage(llm.Text("Fill the form."))},
		Schema:   sch,
	}
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		// The request is all this test needs; a 400 ends the call (no retry).
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"test stops here"}}`)
	}))
	defer srv.Close()

	for _, c := range []struct {
		name string
		new  func() (llm.Model, error)
		// unchanged: the schema bytes are sent as built.
		unchanged bool
		// extra checks the provider's adaptation.
		extra func(t *testing.T, body []byte)
	}{
		{name: "openai strict", new: func() (llm.Model, error) {
			return openai.New(openai.Config{Model: "gpt-4.1", APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client()})
		}, extra: func(t *testing.T, body []byte) {
			v, _ := schemax.Parse(body)
			if got := at(t, v, "response_format", "json_schema", "strict"); got != true {
				t.Fatalf("strict = %v", got)
			}
			if got := at(t, property(v, "input"), "required"); fmtList(got) != "index text clear" {
				t.Errorf("input required: %v", got)
			}
			if got := at(t, property(v, "lookup"), "required"); fmtList(got) != "zulu alpha mike" {
				t.Errorf("lookup required: %v", got)
			}
		}},
		{name: "openai non-strict", new: func() (llm.Model, error) {
			return openai.New(openai.Config{Model: "llama", BaseURL: srv.URL, HTTPClient: srv.Client(), NonStrict: true})
		}, unchanged: true},
		{name: "anthropic", new: func() (llm.Model, error) {
			return anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client()})
		}, unchanged: true},
		// Gemini gives objects without properties (go_back's) a
		// placeholder, so its schema is not sent byte for byte.
		{name: "gemini", new: func() (llm.Model, error) {
			return gemini.New(gemini.Config{Model: "gemini-2.5-flash", APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client()})
		}},
		{name: "gemini openapi", new: func() (llm.Model, error) {
			return gemini.New(gemini.Config{Model: "gemini-2.0-flash", APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client(), OpenAPISchema: true})
		}, extra: func(t *testing.T, body []byte) {
			v, _ := schemax.Parse(body)
			root := at(t, v, "generationConfig", "responseSchema")
			if got := at(t, root, "propertyOrdering"); fmtList(got) != "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action" {
				t.Errorf("reply propertyOrdering: %v", got)
			}
			if got := at(t, property(v, "input"), "propertyOrdering"); fmtList(got) != "index text clear" {
				t.Errorf("input propertyOrdering: %v", got)
			}
			if got := at(t, property(v, "lookup"), "propertyOrdering"); fmtList(got) != "zulu alpha mike" {
				t.Errorf("lookup propertyOrdering: %v", got)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.new()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), req); err == nil {
				t.Fatal("the test server's 400 was not an error")
			}
			body := <-bodies
			if c.unchanged && !bytes.Contains(body, sch.JSON) {
				t.Errorf("the schema is not sent byte for byte:\n%s", body)
			}
			v, err := schemax.Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []struct {
				of   *schemax.Object
				path []any
				want string
			}{
				{findOwner(v, "thinking"), []any{"properties"}, "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action"},
				{property(v, "input"), []any{"properties"}, "index text clear"},
				{property(v, "lookup"), []any{"properties"}, "zulu alpha mike"},
				{property(v, "lookup"), []any{"properties", "mike", "items", "properties"}, "z a"},
			} {
				if k.of == nil {
					t.Fatalf("schema for %q not found in %s", k.want, body)
				}
				o, _ := at(t, k.of, k.path...).(*schemax.Object)
				if got := strings.Join(o.Keys(), " "); got != k.want {
					t.Errorf("keys: %s, want %s", got, k.want)
				}
			}
			if c.extra != nil {
				c.extra(t, body)
			}
		})
	}
}

// findOwner is the first object whose "properties" has name.
func findOwner(v any, name string) *schemax.Object {
	switch v := v.(type) {
	case *schemax.Object:
		if p, ok := v.Get("properties"); ok {
			if po, ok := p.(*schemax.Object); ok {
				if _, ok := po.Get(name); ok {
					return v
				}
			}
		}
		for _, k := range v.Keys() {
			e, _ := v.Get(k)
			if o := findOwner(e, name); o != nil {
				return o
			}
		}
	case []any:
		for _, e := range v {
			if o := findOwner(e, name); o != nil {
				return o
			}
		}
	}
	return nil
}

// fmtList joins a JSON list of strings with spaces.
func fmtList(v any) string {
	a, _ := v.([]any)
	s := make([]string, len(a))
	for i, e := range a {
		s[i], _ = e.(string)
	}
	return strings.Join(s, " ")
}
