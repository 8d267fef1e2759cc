package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/browseragent/browseragent/events"
)

// tokenTask and tokenPageState are the measured step: a short task on a
// page of 5 interactive elements, as the DOM watchdog renders it.
const tokenTask = "Find the price of the cheapest 2-person tent on the shop and report it."

func tokenPageState() events.BrowserState {
	const tab = "A1B2C3D4E5F60718293A4B5C6D7E8F90"
	return events.BrowserState{
		URL: "http://127.0.0.1:8080/", Title: "Example Shop", FocusedTarget: tab,
		Tabs:  []events.TabInfo{{TargetID: tab, URL: "http://127.0.0.1:8080/", Title: "Example Shop"}},
		Page:  events.PageInfo{ViewportWidth: 1280, ViewportHeight: 720, PageWidth: 1280, PageHeight: 720},
		Stats: events.DOMStats{Nodes: 41, Interactive: 5, Links: 3, Inputs: 1},
		DOMText: "Example Shop\n[1]<a />\n\tHome\n[2]<input type=search name=q placeholder=Search products />\n" +
			"[3]<button type=submit />\n\tSearch\n[4]<a />\n\tTents\n[5]<a />\n\tSign in\n",
	}
}

// stepTokens are the o200k token counts of one step's request by part.
type stepTokens struct {
	System, Actions, Schema, UserFixed, Page, Task, History, User int
	// UserOwn is the user message without the task, the element text and
	// the history's steps: the "before" column's definition of its fixed
	// text, which also counts the request's tags and the agent's files.
	UserOwn int
}

// Fixed is what every step pays whatever the task, page and history.
func (s stepTokens) Fixed() int { return s.System + s.Actions + s.Schema + s.UserFixed }

// countStep counts a rendered step by its named parts: the user message's
// fixed text is its parts marked Fixed (tags, tab and page facts, step
// info); the page is the element text, the history the steps' parts.
func countStep(t *testing.T, p *Prompt, st events.BrowserState) stepTokens {
	t.Helper()
	enc := codec.NewO200kBase()
	count := func(s string) int {
		n, err := enc.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var n stepTokens
	var user, fixed, history strings.Builder
	for _, pt := range p.Parts {
		switch pt.Name {
		case "system":
			n.System = count(pt.Text)
		case "actions":
			n.Actions = count(pt.Text)
		case "history_step":
			history.WriteString(pt.Text)
		case "elements":
			if pt.Text != st.DOMText {
				t.Fatalf("the element part is %q, want the page's element text", pt.Text)
			}
		case "user_request":
			if !strings.Contains(pt.Text, tokenTask) {
				t.Fatalf("the request part %q lacks the task", pt.Text)
			}
		}
		if pt.Role == "user" {
			user.WriteString(pt.Text)
			if pt.Fixed {
				fixed.WriteString(pt.Text)
			}
		}
	}
	n.Schema = count(string(p.Schema.JSON))
	n.User = count(user.String())
	n.UserFixed = count(fixed.String())
	own := strings.Replace(strings.Replace(user.String(), st.DOMText, "", 1), tokenTask, "", 1)
	n.UserOwn = count(strings.Replace(own, history.String(), "", 1))
	n.Page, n.Task, n.History = count(st.DOMText), count(tokenTask), count(history.String())
	return n
}

// The fixed part of a step (system prompt with the action list, reply
// schema, the user message's parts marked Fixed; and also counting all of
// the user message's own text, as the "before" column did) stays within
// 1,200 o200k tokens in the default compact form; the full form is logged
// for the record (docs/performance.md, "Tokens per step").
func TestTokensPerStep(t *testing.T) {
	st := tokenPageState()
	for _, c := range []struct {
		name string
		set  Settings
		max  int
	}{
		{"compact, full reply, planning", Settings{}, 1200},
		{"compact, flash", Settings{ReplyMode: ReplyFlash}, 1200},
		{"full schema, full reply, planning", Settings{ActionSchema: ActionSchemaFull}, 0},
	} {
		c.set.Vision = VisionOff
		p, err := RenderPrompt(c.set, tokenTask, &st)
		if err != nil {
			t.Fatal(err)
		}
		n := countStep(t, p, st)
		own := n.Fixed() - n.UserFixed + n.UserOwn
		t.Logf("%s: system %d + actions %d + schema %d + user fixed %d = fixed %d (user own text %d: %d); page %d, task %d, history %d; request %d",
			c.name, n.System, n.Actions, n.Schema, n.UserFixed, n.Fixed(), n.UserOwn, own, n.Page, n.Task, n.History, n.System+n.Actions+n.Schema+n.User)
		if c.max > 0 && max(n.Fixed(), own) > c.max {
			t.Errorf("%s: fixed part %d tokens (%d counting the request's tags and the empty todo.md), want at most %d", c.name, n.Fixed(), own, c.max)
		}
		if n.Page == 0 || n.Task == 0 || n.History == 0 {
			t.Errorf("%s: a variable part was not found: %+v", c.name, n)
		}
	}
}

// The compact signature names each parameter in order, marks the optional
// ones, leaves strings untyped and writes the other types, enums (quoted
// where a value is not a plain word), consts, bounds, formats, patterns,
// lists, nested objects and descriptions.
func TestActionSignature(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{``, `x{}`},
		{`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, `x{q}`},
		{`{"type":"object","properties":{"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"}}}`, `x{n?: int, f?: number, b?: bool}`},
		{`{"type":"object","properties":{"e":{"type":"string","enum":["a","b"],"description":"pick one"}},"required":["e"]}`, `x{e: a|b (pick one)}`},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}},"o":{"type":"array","items":{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]}}},"required":["l","o"]}`, `x{l: [string], o: [{k: int}]}`},
		{`{"type":"object","properties":{"n":{"type":["integer","null"]},"u":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}}}`, `x{n?: int, u?: string|int}`},
		// A const is its value; an enum value that is not a plain word is
		// quoted, so "a b", "c|d" and "" read as three values.
		{`{"type":"object","properties":{"k":{"type":"string","const":"fixed"},"v":{"type":"string","const":"a b"},"e":{"type":"string","enum":["a b","c|d","","x-1"]},"i":{"type":"integer","enum":[1,2]}},"required":["k","v","e","i"]}`, `x{k: fixed, v: "a b", e: "a b"|"c|d"|""|x-1, i: 1|2}`},
		// Bounds, format and pattern follow the type.
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},"f":{"type":"number","minimum":0},"g":{"type":"number","exclusiveMaximum":1},"d":{"type":"string","format":"date"},"c":{"type":"string","pattern":"^[a-z]+$"}},"required":["n","f","g","d","c"]}`, `x{n: int 1..9, f: number >=0, g: number <1, d: string date, c: string /^[a-z]+$/}`},
		// An enum on a list reads as a list.
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"required":["l"]}`, `x{l: [a|b]}`},
		{`{"type":"object","properties":{"l":{"type":"array","enum":["a","b"],"items":{"type":"string"}}},"required":["l"]}`, `x{l: [a|b]}`},
	} {
		r := NewRegistry()
		err := r.Add(ActionSpec{Name: "x", Params: json.RawMessage(c.params), Run: func(context.Context, *ActionContext, json.RawMessage) (ActionResult, error) {
			return ActionResult{}, nil
		}})
		if err != nil {
			t.Fatalf("%s: %v", c.params, err)
		}
		s, _ := r.Get("x")
		if got := actionSignature(s); got != c.want {
			t.Errorf("%s: %s, want %s", c.params, got, c.want)
		}
	}
}

// The compact reply schema's action item is an object with one key, the
// action's name, whose value is an object: a reply in that shape passes
// ValidateJSON against the schema and ParseOutputAs, which checks the name
// and the parameters the schema leaves free; parameters that are not an
// object do not fit the schema, nor do an item with two keys or none and an
// empty action list (min/maxProperties, minItems); the parser refuses a
// two-key item too.
func TestCompactReplySchema(t *testing.T) {
	specs := DefaultRegistry().offered("", nil, nil, false)
	sch := replySchema(specs, 5, ReplyFull, true, ActionSchemaCompact)
	if !sch.Loose || !strings.Contains(string(sch.JSON), `"items":{"type":"object","minProperties":1,"maxProperties":1,"additionalProperties":{"type":"object"}}`) {
		t.Fatalf("compact schema: loose %v, %s", sch.Loose, sch.JSON)
	}
	reply := `{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[{"input":{"index":2,"text":"tent"}},{"go_back":{}}]}`
	if err := ValidateJSON(sch.JSON, json.RawMessage(reply)); err != nil {
		t.Fatalf("a well-formed reply does not fit the compact schema: %v", err)
	}
	out, err := ParseOutputAs(reply, specs, 5, ReplyFull, true)
	if err != nil || len(out.Action) != 2 || out.Action[0].Name != "input" || out.Action[1].Name != "go_back" {
		t.Fatalf("parse: %+v, %v", out, err)
	}
	for _, bad := range []string{
		`{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[{"go_back":"now"}]}`,
		`{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[{"go_back":{},"click":{"index":1}}]}`,
		`{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[{}]}`,
		`{"thinking":"t","evaluation_previous_goal":"e","memory":"m","next_goal":"n","action":[]}`,
	} {
		if err := ValidateJSON(sch.JSON, json.RawMessage(bad)); err == nil {
			t.Errorf("fits the compact schema: %s", bad)
		}
	}
	if _, err := ParseOutputAs(`{"action":[{"go_back":{},"click":{"index":1}}]}`, specs, 5, ReplyFull, true); err == nil {
		t.Error("an item with two actions was parsed")
	}
}

// The element text is split out of browser_state where writeBrowserState
// wrote it, not at its first occurrence: a title that repeats the page's
// text leaves the parts in place.
func TestPromptElementsPart(t *testing.T) {
	st := tokenPageState()
	st.DOMText = "Example Shop\n"
	st.Title = "Example Shop"
	p, err := RenderPrompt(Settings{Vision: VisionOff}, tokenTask, &st)
	if err != nil {
		t.Fatal(err)
	}
	var head, elems string
	for _, pt := range p.Parts {
		switch pt.Name {
		case "browser_state":
			head = pt.Text
		case "elements":
			elems = pt.Text
		}
	}
	if elems != st.DOMText || !strings.HasSuffix(head, "Interactive elements:\n[Start of page]\n") || !strings.Contains(head, "Title: Example Shop\n") {
		t.Fatalf("browser_state %q, elements %q", head, elems)
	}
}
