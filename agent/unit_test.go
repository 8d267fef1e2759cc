package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/openai"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/urlmatch"
)

func offeredDefault() []ActionSpec {
	return DefaultRegistry().offered("https://example.com/", urlmatch.Match, map[string]bool{"screenshot": true}, false)
}

func TestParseOutputCases(t *testing.T) {
	offered := offeredDefault()
	cases := []struct {
		name, in string
		want     error
		reason   string
	}{
		{"empty", "", ErrInvalidOutput, "not a JSON object"},
		{"prose", "I will click the button", ErrInvalidOutput, "not a JSON object"},
		{"array", `[1,2]`, ErrInvalidOutput, "must be a JSON object"},
		{"no action", `{"memory":"x"}`, ErrNoAction, "no \"action\" list"},
		{"empty action", `{"action":[]}`, ErrNoAction, "is empty"},
		{"action not list", `{"action":{"click":{"index":1}}}`, ErrInvalidOutput, "must be a list"},
		{"two keys", `{"action":[{"click":{"index":1},"input":{"index":2,"text":"x"}}]}`, ErrInvalidOutput, "exactly one key"},
		{"unknown", `{"action":[{"fly":{}}]}`, ErrUnknownAction, `"fly" is not available`},
		{"missing param", `{"action":[{"click":{}}]}`, ErrBadParams, `missing required property "index"`},
		{"wrong type", `{"action":[{"click":{"index":"5"}}]}`, ErrBadParams, "want integer"},
		{"extra param", `{"action":[{"click":{"index":5,"force":true}}]}`, ErrBadParams, `unknown property "force"`},
		{"memory not string", `{"memory":5,"action":[{"go_back":{}}]}`, ErrInvalidOutput, `"memory" must be a string`},
		{"done not alone", `{"action":[{"click":{"index":1}},{"done":{"text":"x","success":true}}]}`, ErrBadParams, "only action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ParseOutput(c.in, offered, 5)
			if err == nil {
				t.Fatalf("accepted: %+v", out)
			}
			if !errors.Is(err, ErrInvalidOutput) || !errors.Is(err, c.want) {
				t.Fatalf("error %v does not match %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("error %q lacks %q", err, c.reason)
			}
		})
	}
}

func TestParseOutputGood(t *testing.T) {
	in := "<think>hmm</think>\n```json\n" + `{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[` +
		`{"click":{"index":1}},{"input":{"index":2,"text":"x"}},{"go_back":null},{"scroll":{}},{"wait":{}},{"click":{"index":3}},{"click":{"index":4}}]}` + "\n```"
	out, err := ParseOutput(in, offeredDefault(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Action) != 5 || out.Action[1].Name != "input" || !reflect.DeepEqual(out.Dropped, []string{"click", "click"}) || out.Memory != "m" || out.Thinking != "t" {
		t.Fatalf("%+v", out)
	}
	if string(out.Action[2].Params) != "{}" {
		t.Fatalf("null params should become {}: %s", out.Action[2].Params)
	}
	b, _ := json.Marshal(out.Action[0])
	if string(b) != `{"click":{"index":1}}` {
		t.Fatalf("marshal %s", b)
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"action":[]}`, `{"action":[{"click":{"index":1}}]}`, `{"action":[{"done":{"text":"a","success":true}}]}`,
		"```json\n{\"action\":[{\"wait\":{}}]}\n```", `{"action":[{"input":{"index":1,"text":"\u0000"}}]}`, `{"action":[null]}`,
		`{"action":[{"scroll":{"pages":1e400}}]}`, `{"action":"x"}`, `[{"a":1}]`, `{"action":[{"click":{"index":1.5}}]}`,
	} {
		f.Add(s)
	}
	offered := offeredDefault()
	f.Fuzz(func(t *testing.T, s string) {
		out, err := ParseOutput(s, offered, 5)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) || err.Error() == "" {
				t.Fatalf("unclear error %T %v", err, err)
			}
			if out != nil {
				t.Fatal("output with error")
			}
			return
		}
		if len(out.Action) == 0 || len(out.Action) > 5 {
			t.Fatalf("%d actions", len(out.Action))
		}
		for _, a := range out.Action {
			if _, ok := DefaultRegistry().Get(a.Name); !ok {
				t.Fatalf("unknown action %q accepted", a.Name)
			}
		}
	})
}

type schemaSample struct {
	Name   string           `json:"name" description:"who"`
	Age    int              `json:"age,omitempty"`
	Tags   []string         `json:"tags"`
	Opt    *float64         `json:"opt"`
	Mode   string           `json:"mode" enum:"a,b"`
	Inner  struct{ X bool } `json:"inner"`
	Skip   string           `json:"-"`
	hidden int              //nolint:unused // unexported: ignored
}

func TestSchemaOf(t *testing.T) {
	raw, err := SchemaOf(reflect.TypeFor[schemaSample]())
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	if _, ok := props["Skip"]; ok || props["hidden"] != nil {
		t.Fatal("skipped fields present")
	}
	if fmt.Sprint(s["required"]) != "[inner mode name tags]" {
		t.Fatalf("required %v", s["required"])
	}
	if props["name"].(map[string]any)["description"] != "who" {
		t.Fatal("description")
	}
	good := `{"name":"a","tags":["x"],"mode":"b","inner":{"X":true},"opt":1.5}`
	if err := ValidateJSON(raw, json.RawMessage(good)); err != nil {
		t.Fatal(err)
	}
	for bad, want := range map[string]string{
		`{"name":"a","tags":["x"],"mode":"c","inner":{"X":true}}`:        "not one of",
		`{"name":"a","tags":[1],"mode":"a","inner":{"X":true}}`:          "$.tags[0]: want string",
		`{"name":"a","tags":[],"mode":"a","inner":{}}`:                   `$.inner: missing required property "X"`,
		`{"name":"a","tags":[],"mode":"a","inner":{"X":true},"age":1.5}`: "$.age: want integer",
		`{"name":"a","tags":[],"mode":"a","inner":{"X":true},"zzz":1}`:   `unknown property "zzz"`,
	} {
		if err := ValidateJSON(raw, json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrSchema) {
			t.Errorf("%s: error %v, want %q", bad, err, want)
		}
	}
	if _, err := SchemaOf(reflect.TypeFor[int]()); !errors.Is(err, ErrSchema) {
		t.Fatal("non-struct accepted")
	}
	type rec struct {
		Next *rec `json:"next"`
	}
	if _, err := SchemaOf(reflect.TypeFor[rec]()); !errors.Is(err, ErrSchema) {
		t.Fatal("recursive type accepted")
	}
	// A hand-written schema may still type a map's values; ValidateJSON
	// checks them.
	mapSchema := json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer"}}`)
	if err := ValidateJSON(mapSchema, json.RawMessage(`{"k":"v"}`)); err == nil || !strings.Contains(err.Error(), "$.k: want integer") {
		t.Fatalf("map value: %v", err)
	}
}

// A custom action whose parameters would leave part of the reply schema
// free-form (a map, json.RawMessage, an object without properties) is
// refused at registration, naming the field or JSON path and what to use
// instead: it would make OpenAI's strict mode give up on the whole schema.
func TestFreeFormParamsRefused(t *testing.T) {
	type withMap struct {
		SKU    string            `json:"sku"`
		Labels map[string]string `json:"labels"`
	}
	type withRaw struct {
		Filter json.RawMessage `json:"filter"`
	}
	type nested struct {
		Items []struct {
			Meta map[string]int `json:"meta"`
		} `json:"items"`
	}
	noop := func(string) ActionFunc {
		return func(context.Context, *ActionContext, json.RawMessage) (ActionResult, error) {
			return ActionResult{}, nil
		}
	}
	r := NewRegistry()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"map", Register(r, "a", "", func(ctxT, *ActionContext, withMap) (ActionResult, error) { return ActionResult{}, nil }), "field Labels"},
		{"raw", Register(r, "b", "", func(ctxT, *ActionContext, withRaw) (ActionResult, error) { return ActionResult{}, nil }), "field Filter"},
		{"nested map", Register(r, "c", "", func(ctxT, *ActionContext, nested) (ActionResult, error) { return ActionResult{}, nil }), "field Meta"},
		{"json map", r.Add(ActionSpec{Name: "d", Run: noop("d"), Params: json.RawMessage(`{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`)}), "$.properties.tags: additionalProperties allows keys that are not listed"},
		{"json open root", r.Add(ActionSpec{Name: "e", Run: noop("e"), Params: json.RawMessage(`{"type":"object","additionalProperties":true}`)}), "$: additionalProperties allows keys"},
		{"json object without properties", r.Add(ActionSpec{Name: "f", Run: noop("f"), Params: json.RawMessage(`{"type":"object","properties":{"q":{"type":"array","items":{"type":"object"}}}}`)}), "$.properties.q.items: an object that lists no properties"},
		{"json nested empty properties", r.Add(ActionSpec{Name: "h", Run: noop("h"), Params: json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","properties":{}}}}`)}), "$.properties.o: an object that lists no properties"},
		{"json untyped", r.Add(ActionSpec{Name: "g", Run: noop("g"), Params: json.RawMessage(`{"type":"object","properties":{"v":{"description":"anything"}}}`)}), "$.properties.v: a schema without a type"},
		{"json any value", r.Add(ActionSpec{Name: "i", Run: noop("i"), Params: json.RawMessage(`{"type":"object","properties":{"v":{}}}`)}), "$.properties.v: a schema without a type"},
	} {
		if !errors.Is(c.err, ErrSchema) || !strings.Contains(c.err.Error(), c.want) || !strings.Contains(c.err.Error(), "use a struct with named fields, or a string holding JSON") {
			t.Errorf("%s: %v, want ErrSchema naming %q and the alternative", c.name, c.err, c.want)
		}
	}
	// $ref, oneOf and allOf: the agent's validation and the compact action
	// list cannot follow them.
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`, `$.properties.a uses "$ref"`},
		{`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, `$.properties.a uses "oneOf"`},
		{`{"type":"object","properties":{"a":{"type":"string","allOf":[{"minLength":1}]}}}`, `$.properties.a uses "allOf"`},
	} {
		err := r.Add(ActionSpec{Name: "j", Run: noop("j"), Params: json.RawMessage(c.schema)})
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "use anyOf") {
			t.Errorf("%s: %v, want ErrSchema naming %q and anyOf", c.schema, err, c.want)
		}
	}
	if names := r.Names(); len(names) != 0 {
		t.Fatalf("refused actions were registered: %v", names)
	}
	// A parameterless root is stored as the closed empty object, which
	// the strict check (and OpenAI) accept.
	for _, params := range []string{`{"type":"object"}`, `{"type":"object","properties":{}}`, ``} {
		r := NewRegistry()
		if err := r.Add(ActionSpec{Name: "k", Run: noop("k"), Params: json.RawMessage(params)}); err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		got, _ := r.Get("k")
		if string(got.Params) != `{"type":"object","properties":{},"additionalProperties":false}` {
			t.Errorf("%s stored as %s", params, got.Params)
		}
		if _, ok, err := openai.StrictSchema(got.Params); !ok || err != nil {
			t.Errorf("%s: OpenAI strict refuses what Add took: %v", params, err)
		}
	}
	// What Add takes, openai takes strict; what Add refuses, openai's
	// NotStrict names at the same path.
	for _, schema := range []string{
		`{"type":"object","properties":{"o":{"type":"object","properties":{}}}}`,
		`{"type":"object","properties":{"v":{}}}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"integer"}}}}`,
	} {
		err := NewRegistry().Add(ActionSpec{Name: "l", Run: noop("l"), Params: json.RawMessage(schema)})
		path, _, _ := openai.NotStrict(json.RawMessage(schema))
		if err == nil || path == "" || !strings.Contains(err.Error(), path+": ") {
			t.Errorf("%s: Add %v, openai path %q", schema, err, path)
		}
	}
	// Every built-in is strict-capable, the coordinate click included.
	for _, s := range append(offeredDefault(), coordinateClickSpec) {
		o, _ := parseSchema(s.Params)
		if err := checkStrict(o); err != nil {
			t.Errorf("built-in %s: %v", s.Name, err)
		}
	}
	// A structured output schema with a free-form object is refused by New
	// with its path; one that lists its properties is taken.
	b := agenttest.New(t)
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object"}}}}`:                  "$.properties.rows.items: an object that lists no properties",
		`{"type":"object","properties":{"extra":{"type":"object","additionalProperties":{"type":"string"}}}}`: "$.properties.extra: additionalProperties allows keys",
		`{"type":"object"}`: "$: an object that lists no properties",
	} {
		_, err := New("task", llmNop{}, b, Settings{OutputSchema: json.RawMessage(schema), RunDir: t.TempDir()})
		if !errors.Is(err, ErrSettings) || !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), want) {
			t.Errorf("OutputSchema %s: %v, want %q", schema, err, want)
		}
	}
	if _, err := New("task", llmNop{}, b, Settings{OutputSchema: json.RawMessage(`{"type":"object","properties":{"price":{"type":"number"}}}`), RunDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
}

// at follows path (object keys and array indices) from v, a schemax tree.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch p := p.(type) {
		case string:
			o, ok := v.(*schemax.Object)
			if ok {
				v, ok = o.Get(p)
			}
			if !ok {
				t.Fatalf("no key %q at %v", p, path[:i])
			}
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				t.Fatalf("no element %d at %v", p, path[:i])
			}
			v = a[p]
		}
	}
	return v
}

// keysAt is the key order of the object at path in the JSON document raw.
func keysAt(t *testing.T, raw []byte, path ...any) string {
	t.Helper()
	v, err := schemax.Parse(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	o, ok := at(t, v, path...).(*schemax.Object)
	if !ok {
		t.Fatalf("%v is not an object", path)
	}
	return strings.Join(o.Keys(), " ")
}

// property finds, depth first in document order, the first object in v
// whose "properties" has name, and returns that property's schema: the way
// to reach an action's schema through anyOf lists and provider envelopes.
func property(v any, name string) *schemax.Object {
	switch v := v.(type) {
	case *schemax.Object:
		if p, ok := v.Get("properties"); ok {
			if po, ok := p.(*schemax.Object); ok {
				if s, ok := po.Get(name); ok {
					if so, ok := s.(*schemax.Object); ok {
						return so
					}
				}
			}
		}
		for _, k := range v.Keys() {
			e, _ := v.Get(k)
			if s := property(e, name); s != nil {
				return s
			}
		}
	case []any:
		for _, e := range v {
			if s := property(e, name); s != nil {
				return s
			}
		}
	}
	return nil
}

// propertyKeys is the key order of the properties of the first schema of
// property name in the JSON document raw (see property).
func propertyKeys(t *testing.T, raw []byte, name string) string {
	t.Helper()
	v, err := schemax.Parse(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	s := property(v, name)
	if s == nil {
		t.Fatalf("no property %q in %s", name, raw)
	}
	p, _ := at(t, s, "properties").(*schemax.Object)
	if p == nil {
		t.Fatalf("property %q has no properties", name)
	}
	return strings.Join(p.Keys(), " ")
}

// A struct-derived schema lists properties in field order and reads type,
// description, enum before the parts of each schema.
func TestSchemaOfKeepsFieldOrder(t *testing.T) {
	type typing struct {
		Index int    `json:"index" description:"element index"`
		Text  string `json:"text" description:"<secret>name</secret> types a secret"`
		Clear *bool  `json:"clear,omitempty"`
	}
	raw, err := SchemaOf(reflect.TypeFor[typing]())
	if err != nil {
		t.Fatal(err)
	}
	// Not HTML-escaped: the model reads <secret>, not \u003csecret\u003e.
	want := `{"type":"object","properties":{` +
		`"index":{"type":"integer","description":"element index"},` +
		`"text":{"type":"string","description":"<secret>name</secret> types a secret"},` +
		`"clear":{"type":"boolean"}},` +
		`"required":["index","text"],"additionalProperties":false}`
	if string(raw) != want {
		t.Fatalf("SchemaOf(InputParams)\n got %s\nwant %s", raw, want)
	}
	raw, err = SchemaOf(reflect.TypeFor[*schemaSample]())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path []any
		want string
	}{
		{nil, "type properties required additionalProperties"},
		{[]any{"properties"}, "name age tags opt mode inner"},
		{[]any{"properties", "name"}, "type description"},
		{[]any{"properties", "mode"}, "type enum"},
		{[]any{"properties", "tags"}, "type items"},
		{[]any{"properties", "inner"}, "type properties required additionalProperties"},
	} {
		if got := keysAt(t, raw, c.path...); got != c.want {
			t.Errorf("keys at %v: %q, want %q", c.path, got, c.want)
		}
	}
}

// input's parameters reach the reply schema and the prompt in field order.
func TestOutputSchemaKeepsParamOrder(t *testing.T) {
	js := outputSchema(offeredDefault(), 5).JSON
	if got := keysAt(t, js, "properties"); got != "thinking evaluation_previous_goal memory next_goal plan_update current_plan_item action" {
		t.Fatalf("reply properties: %s", got)
	}
	if got := keysAt(t, js, "properties", "action"); got != "type minItems maxItems items" {
		t.Fatalf("action keys: %s", got)
	}
	if got := propertyKeys(t, js, "input"); got != "index text clear" {
		t.Fatalf("input parameters: %s", got)
	}
	v, _ := schemax.Parse(js)
	if got := strings.Join(property(v, "input").Keys(), " "); got != "type description properties required additionalProperties" {
		t.Fatalf("input schema keys: %s", got)
	}
	if got := propertyKeys(t, js, "scroll"); got != "down pages index" {
		t.Fatalf("scroll parameters: %s", got)
	}
	spec, _ := DefaultRegistry().Get("input")
	if got := actionSignature(spec); !strings.HasPrefix(got, `input{index: int`) ||
		!(strings.Index(got, `, text`) < strings.Index(got, `, clear?: bool`)) {
		t.Fatalf("prompt parameters: %s", got)
	}
}

// customJSON is a hand-written parameter schema in an unusual key order, with
// whitespace: keywords before "type", properties out of alphabetical order.
const customJSON = `{
	"required": ["zulu"],
	"properties": {
		"zulu":  {"description": "last letter first", "type": "string"},
		"alpha": {"type": "integer"},
		"mike":  {"type": "array", "items": {"type": "object", "properties": {"z": {"type": "boolean"}, "a": {"type": "string"}}}}
	},
	"additionalProperties": false,
	"type": "object"
}`

// customSpec registers customJSON as action "lookup" and returns its spec.
func customSpec(t *testing.T) ActionSpec {
	t.Helper()
	r := NewRegistry()
	run := func(context.Context, *ActionContext, json.RawMessage) (ActionResult, error) {
		return ActionResult{}, nil
	}
	if err := r.Add(ActionSpec{Name: "lookup", Description: "Look a product up", Params: json.RawMessage(customJSON), Run: run}); err != nil {
		t.Fatal(err)
	}
	spec, _ := r.Get("lookup")
	return spec
}

// A custom action given as JSON keeps its key order: stored, shown in the
// prompt, offered in the reply schema; validation ignores order.
func TestCustomJSONSchemaKeepsOrder(t *testing.T) {
	spec := customSpec(t)
	compact := `{"required":["zulu"],"properties":{"zulu":{"description":"last letter first","type":"string"},"alpha":{"type":"integer"},` +
		`"mike":{"type":"array","items":{"type":"object","properties":{"z":{"type":"boolean"},"a":{"type":"string"}}}}},` +
		`"additionalProperties":false,"type":"object"}`
	if string(spec.Params) != compact {
		t.Fatalf("stored Params %s", spec.Params)
	}
	if got, want := actionSignature(spec), `lookup{zulu (last letter first), alpha?: int, mike?: [{z?: bool, a?}]}`; got != want {
		t.Fatalf("prompt parameters %s, want %s", got, want)
	}
	js := outputSchema([]ActionSpec{spec}, 1).JSON
	v, _ := schemax.Parse(js)
	s := property(v, "lookup")
	for _, c := range []struct {
		path []any
		want string
	}{
		// The description goes right after "type", wherever that is.
		{nil, "required properties additionalProperties type description"},
		{[]any{"properties"}, "zulu alpha mike"},
		{[]any{"properties", "zulu"}, "description type"},
		{[]any{"properties", "mike", "items", "properties"}, "z a"},
	} {
		o, _ := at(t, s, c.path...).(*schemax.Object)
		if o == nil || strings.Join(o.Keys(), " ") != c.want {
			t.Errorf("keys at %v: %v, want %q", c.path, o, c.want)
		}
	}
	if _, err := ParseOutput(`{"action":[{"lookup":{"mike":[{"a":"x","z":true}],"alpha":2,"zulu":"sku-1"}}]}`, []ActionSpec{spec}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseOutput(`{"action":[{"lookup":{"alpha":2}}]}`, []ActionSpec{spec}, 1); err == nil || !strings.Contains(err.Error(), `missing required property "zulu"`) {
		t.Fatalf("missing zulu: %v", err)
	}

	r := NewRegistry()
	run := spec.Run
	for _, bad := range []string{`not json`, `[1]`, `{"type":"string"}`, `{"type":"object"} {}`} {
		if err := r.Add(ActionSpec{Name: "bad", Params: json.RawMessage(bad), Run: run}); !errors.Is(err, ErrSchema) {
			t.Errorf("Params %s: %v", bad, err)
		}
	}
	if err := r.Add(ActionSpec{Name: "none", Run: run}); err != nil {
		t.Fatal(err)
	}
	if none, _ := r.Get("none"); string(none.Params) != noParams {
		t.Fatalf("empty Params stored as %s", none.Params)
	}
	if err := ValidateJSON(json.RawMessage(`{"type":`), json.RawMessage(`{}`)); !errors.Is(err, ErrSchema) {
		t.Fatalf("broken schema: %v", err)
	}
	if err := ValidateJSON(nil, json.RawMessage(`[1,"x"]`)); err != nil {
		t.Fatalf("empty schema: %v", err)
	}
}

func TestRegistryErrors(t *testing.T) {
	r := DefaultRegistry()
	noop := func(ctx ctxT, ac *ActionContext, p NoParams) (ActionResult, error) { return ActionResult{}, nil }
	if err := Register(r, "click", "dup", noop); !errors.Is(err, ErrDuplicateAction) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := Register(r, "Bad-Name", "x", noop); err == nil {
		t.Fatal("bad name accepted")
	}
	if err := r.Add(ActionSpec{Name: "x"}); err == nil {
		t.Fatal("nil Run accepted")
	}
	if !r.Remove("evaluate") || r.Remove("evaluate") {
		t.Fatal("remove")
	}
	// The built-ins less evaluate (the count grows with the built-ins).
	if got, want := len(r.Names()), len(DefaultRegistry().Names())-1; got != want || slices.Contains(r.Names(), "evaluate") {
		t.Fatalf("%d actions after removing evaluate, want %d", got, want)
	}
}

func TestStartURL(t *testing.T) {
	for task, want := range map[string]string{
		"Go to https://example.com/shop and buy milk":               "https://example.com/shop",
		"open example.com, then find the price":                     "https://example.com",
		"Compare https://a.com and https://b.com":                   "",
		"never go to evil.com; search for cats":                     "",
		"Don't visit https://x.org. Use www.wikipedia.org instead.": "https://www.wikipedia.org",
		"Summarize report.pdf and notes.html":                       "",
		"mail bob@example.com the summary":                          "",
		"Visit http://127.0.0.1:8080/agent-form.html please.":       "http://127.0.0.1:8080/agent-form.html",
		"find weather": "",
		"go to https://example.com/a and then https://example.com/a": "https://example.com/a",
	} {
		if got := startURL(task); got != want {
			t.Errorf("%q: got %q, want %q", task, got, want)
		}
	}
}

// Secrets and action domain filters use the same pattern definition as the
// URL policy (urlmatch): the patterns on which the two old copies
// disagreed now behave the same for secrets.
func TestSecretsUseThePolicyPatterns(t *testing.T) {
	set, err := Settings{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ pattern, url string }{
		{"example.com:443", "https://example.com/login"},
		{"shop-*.example.com", "https://shop-eu.example.com/"},
		{"bücher.example", "https://xn--bcher-kva.example/"},
		{"localhost", "http://localhost./"},
	} {
		if !set.DomainMatcher(c.pattern, c.url) || !urlmatch.Match(c.pattern, c.url) {
			t.Errorf("%q does not match %s", c.pattern, c.url)
		}
		s := newSecrets(nil, map[string]map[string]string{c.pattern: {"pin": "4321"}}, set.DomainMatcher)
		if out, _, err := s.resolve("<secret>pin</secret>", c.url); err != nil || out != "4321" {
			t.Errorf("secret for %q on %s: %q, %v", c.pattern, c.url, out, err)
		}
	}
}

func TestSecrets(t *testing.T) {
	s := newSecrets(map[string]string{"user": "bob", "pw": "bobs-password"}, map[string]map[string]string{"*.bank.com": {"pin": "4321"}}, urlmatch.Match)
	if got := s.names("https://x.org"); fmt.Sprint(got) != "[pw user]" {
		t.Fatal(got)
	}
	if got := s.names("https://www.bank.com"); fmt.Sprint(got) != "[pin pw user]" {
		t.Fatal(got)
	}
	out, key, err := s.resolve("<secret>pin</secret>", "https://www.bank.com/login")
	if err != nil || out != "4321" || key != "pin" {
		t.Fatal(out, key, err)
	}
	if _, _, err := s.resolve("<secret>pin</secret>", "https://evil.org/"); err == nil || strings.Contains(err.Error(), "4321") {
		t.Fatalf("pin off-domain: %v", err)
	}
	if _, _, err := s.resolve("<secret>nope</secret>", "https://x.org"); err == nil {
		t.Fatal("unknown secret resolved")
	}
	// Longest value first: "bobs-password" is scrubbed whole, not as "bob"+"s-password".
	if got := s.scrub("user bob typed bobs-password and 4321"); got != "user <secret>user</secret> typed <secret>pw</secret> and <secret>pin</secret>" {
		t.Fatal(got)
	}
}

func TestFileSystem(t *testing.T) {
	fs, err := NewFileSystem(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../x.md", "a/b.md", ".hidden.md", "x.exe", "", "noext", `a\b.md`} {
		if err := fs.Write(bad, "x", false); !errors.Is(err, ErrFileName) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if err := fs.Write("notes.md", "a", false); err != nil {
		t.Fatal(err)
	}
	if err := fs.Write("notes.md", "bc", true); err != nil {
		t.Fatal(err)
	}
	if c, _ := fs.Read("notes.md"); c != "abc" {
		t.Fatal(c)
	}
	if n, err := fs.Replace("notes.md", "b", "B"); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := fs.Replace("notes.md", "zzz", "y"); err == nil {
		t.Fatal("replace of a missing string")
	}
	if _, err := fs.Read("missing.md"); err == nil || !strings.Contains(err.Error(), "notes.md") {
		t.Fatalf("missing file error should list the files: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(fs.Dir(), "notes.md"))
	if string(b) != "aBc" {
		t.Fatalf("disk mirror %q", b)
	}
	if fmt.Sprint(fs.Names()) != "[notes.md todo.md]" {
		t.Fatal(fs.Names())
	}
}

func TestLoopDetector(t *testing.T) {
	d := newLoopDetector(20, DefaultLoopNudges)
	click := ActionCall{Name: "click", Params: json.RawMessage(`{"index":3}`)}
	for i := 1; i <= 12; i++ {
		d.record([]ActionCall{click, {Name: "wait", Params: json.RawMessage(`{}`)}})
		n := d.nudge()
		switch {
		case i < 5 && n != "":
			t.Fatalf("%d repeats: early nudge %q", i, n)
		case i >= 5 && i < 8 && !strings.Contains(n, "LOOP CHECK"):
			t.Fatalf("%d repeats: %q", i, n)
		case i >= 8 && i < 12 && !strings.Contains(n, "LOOP WARNING"):
			t.Fatalf("%d repeats: %q", i, n)
		case i == 12 && !strings.Contains(n, "LOOP ALERT"):
			t.Fatalf("%d repeats: %q", i, n)
		}
	}
	// Searches with the same words in another order are the same action.
	a, _ := actionKey(ActionCall{Name: "search", Params: json.RawMessage(`{"query":"Cheap  Flights paris"}`)})
	b, _ := actionKey(ActionCall{Name: "search", Params: json.RawMessage(`{"query":"paris cheap flights"}`)})
	if a != b {
		t.Fatal(a, b)
	}
	st := newLoopDetector(20, DefaultLoopNudges)
	for range 5 {
		st.recordPage("u", "fp", "text")
	}
	if !strings.Contains(st.nudge(), "has not changed for 5 steps") {
		t.Fatal("stagnation")
	}
}

func TestHistoryCompaction(t *testing.T) {
	a := &Agent{set: Settings{MaxHistoryItems: 6}}
	var items []HistoryItem
	for i := range 10 {
		items = append(items, HistoryItem{Step: i, Actions: []ActionRecord{{Name: "wait", Result: ActionResult{Text: fmt.Sprintf("waited %d", i)}}}})
	}
	txt := a.historyText(items)
	if !strings.Contains(txt, "<step_0>") || !strings.Contains(txt, "[... 4 previous steps omitted ...]") || strings.Contains(txt, "<step_4>") || !strings.Contains(txt, "<step_5>") || !strings.Contains(txt, "<step_9>") {
		t.Fatal(txt)
	}
}

func TestSettingsErrors(t *testing.T) {
	for _, s := range []Settings{
		{Vision: "sometimes"},
		{MaxHistoryItems: 3},
		{SearchEngine: "altavista"},
		{OutputSchema: json.RawMessage(`[1]`)},
		{OutputSchema: json.RawMessage(`{"type":"string"}`)},
		{SensitiveData: map[string]string{"k": ""}},
	} {
		if _, err := s.withDefaults(); !errors.Is(err, ErrSettings) {
			t.Errorf("%+v accepted: %v", s, err)
		}
	}
	d, err := Settings{}.withDefaults()
	if err != nil || d.MaxActionsPerStep != 5 || d.MaxFailures != 5 || d.StepTimeout != DefaultStepTimeout || d.MaxSteps != 500 || d.LoopWindow != 20 || d.Vision != VisionOn {
		t.Fatalf("defaults %+v %v", d, err)
	}
	if _, err := New("", llmNop{}, nil, Settings{}); err == nil {
		t.Fatal("nil session accepted")
	}
}

func TestHistoryLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadHistory(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file")
	}
	p := filepath.Join(dir, "bad.json")
	os.WriteFile(p, []byte(`{"history":[{"step":1,"bogus":true}]}`), 0o644)
	if _, err := LoadHistory(p); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown field: %v", err)
	}
}

type llmNop struct{}

func (llmNop) Name() string { return "nop" }
func (llmNop) Generate(ctxT, llm.Request) (*llm.Response, error) {
	return nil, errors.New("nop")
}

type ctxT = context.Context

type replyModel struct {
	reply string
	got   []llm.Request
}

func (m *replyModel) Name() string { return "reply" }
func (m *replyModel) Generate(_ ctxT, req llm.Request) (*llm.Response, error) {
	m.got = append(m.got, req)
	return &llm.Response{Content: m.reply}, nil
}

func TestModelJudge(t *testing.T) {
	m := &replyModel{reply: `{"reasoning":"the page shows no confirmation","verdict":false,"failure_reason":"not submitted","impossible_task":false}`}
	h := &History{Items: []HistoryItem{{Step: 1, Actions: []ActionRecord{{Name: "click", Result: ActionResult{Text: "Clicked element 3: no_change."}}}}}}
	j, err := ModelJudge{Model: m}.Judge(context.Background(), JudgeInput{Task: "buy milk", FinalText: "bought", Success: true, History: h, Screenshots: [][]byte{{1}, {2}}})
	if err != nil || j.Verdict || j.FailureReason != "not submitted" {
		t.Fatal(j, err)
	}
	txt := m.got[0].Messages[1].TextContent()
	if !strings.Contains(txt, "<task>\nbuy milk") || !strings.Contains(txt, "Clicked element 3: no_change.") || !strings.Contains(txt, "success claimed: true") {
		t.Fatal(txt)
	}
	if len(m.got[0].Messages[1].Parts) != 3 || m.got[0].Schema == nil {
		t.Fatal("screenshots or schema missing")
	}
	bad := &replyModel{reply: "yes it worked"}
	if _, err := (ModelJudge{Model: bad}).Judge(context.Background(), JudgeInput{}); !errors.Is(err, llm.ErrMalformedOutput) {
		t.Fatalf("malformed judge reply: %v", err)
	}
}

func TestOutputSchemaOrderAndNulls(t *testing.T) {
	sch := outputSchema(offeredDefault(), 5)
	js := string(sch.JSON)
	if !(strings.Index(js, `"thinking"`) < strings.Index(js, `"memory"`) && strings.Index(js, `"next_goal"`) < strings.Index(js, `"action"`)) {
		t.Fatalf("property order: %s", js[:200])
	}
	if _, err := sch.Object(); err != nil {
		t.Fatal(err)
	}
	// A strict-mode provider sends null for optional parameters.
	out, err := ParseOutput(`{"thinking":null,"action":[{"input":{"index":3,"text":"x","clear":null}},{"scroll":{"down":null,"pages":null,"index":null}}]}`, offeredDefault(), 5)
	if err != nil || len(out.Action) != 2 {
		t.Fatal(out, err)
	}
	if _, err := ParseOutput(`{"action":[{"input":{"index":null,"text":"x"}}]}`, offeredDefault(), 5); err == nil {
		t.Fatal("null for a required parameter accepted")
	}
}

func TestBlockedText(t *testing.T) {
	st := &events.BrowserState{
		URL: "https://shop.test/", DOMText: "[1]<button />",
		Blocked: []events.BlockedRequests{
			{Host: "tracker.example", Count: 3, Types: []string{"script", "fetch"}},
			{Host: "evil.test", Count: 1, Types: []string{"websocket"}},
			{Host: "ads.test", Count: 1},
		},
	}
	txt := BrowserStateText(st, 0)
	const want = "Blocked since the last step (refused by the URL policy; do not retry them): 3 requests to tracker.example (script, fetch); 1 request to evil.test (websocket); 1 request to ads.test\n"
	if !strings.Contains(txt, want) || strings.Count(txt, "URL policy") != 1 {
		t.Fatalf("state text:\n%s", txt)
	}
	if txt := BrowserStateText(&events.BrowserState{URL: "https://shop.test/"}, 0); strings.Contains(txt, "Blocked") {
		t.Fatalf("a state without refusals mentions them:\n%s", txt)
	}

	// Many hosts: the first ones, then a count of the rest.
	var many []events.BlockedRequests
	for i := range maxBlockedHostsShown + 3 {
		many = append(many, events.BlockedRequests{Host: fmt.Sprintf("h%d.test", i), Count: 2, Types: []string{"image"}})
	}
	got := blockedText(many)
	if !strings.HasSuffix(got, fmt.Sprintf("2 requests to h%d.test (image); and 6 more to 3 other hosts", maxBlockedHostsShown-1)) ||
		strings.Contains(got, fmt.Sprintf("h%d.test", maxBlockedHostsShown)) {
		t.Fatalf("many hosts: %s", got)
	}

	// The error case shows it too: the refusals are news whatever the DOM.
	st.Error = "DOM build failed: timeout"
	if txt := BrowserStateText(st, 0); !strings.Contains(txt, "3 requests to tracker.example") {
		t.Fatalf("state text with an error:\n%s", txt)
	}
}
