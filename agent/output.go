package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// ActionCall is one action of a model reply: {"<Name>": <Params>}.
type ActionCall struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params"`
	// approval is what a replay adds to this call's ApprovalRequest (an
	// element chosen by position); nil for the model's calls.
	approval *approvalNote
}

// MarshalJSON writes the model's form {"name": params}.
func (c ActionCall) MarshalJSON() ([]byte, error) {
	p := c.Params
	if len(p) == 0 {
		p = json.RawMessage("{}")
	}
	return json.Marshal(map[string]json.RawMessage{c.Name: p})
}

// UnmarshalJSON reads the model's form {"name": params}.
func (c *ActionCall) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("an action must be an object with exactly one key (the action name), got %d keys %v", len(m), keys)
	}
	for k, v := range m {
		c.Name, c.Params = k, v
	}
	return nil
}

// AgentOutput is the model's reply for one step.
type AgentOutput struct {
	Thinking               string `json:"thinking,omitempty"`
	EvaluationPreviousGoal string `json:"evaluation_previous_goal,omitempty"`
	Memory                 string `json:"memory,omitempty"`
	NextGoal               string `json:"next_goal,omitempty"`
	// PlanUpdate, when not nil, replaces the plan (an empty list clears
	// it); CurrentPlanItem moves the current item (0-based). Planning only.
	PlanUpdate      []string     `json:"plan_update,omitempty"`
	CurrentPlanItem *int         `json:"current_plan_item,omitempty"`
	Action          []ActionCall `json:"action"`
	// Dropped lists actions beyond MaxActionsPerStep that were cut (the model
	// is told).
	Dropped []string `json:"dropped,omitempty"`
}

// ErrInvalidOutput is matched by every error ParseOutput returns.
var ErrInvalidOutput = errors.New("agent: invalid model output")

// ErrNoAction is matched by the error for a well-formed reply with no
// action (the loop asks once more, then ends the run with a failed done).
var ErrNoAction = errors.New("agent: model returned no action")

// OutputError is a model reply that could not be used. Its message is what
// the model reads on the next step.
type OutputError struct {
	Reason string
	Err    error // the cause: a *llm.ParseError, ErrNoAction, ErrUnknownAction, ErrBadParams
}

func (e *OutputError) Error() string { return "invalid model output: " + e.Reason }

// Is matches ErrInvalidOutput.
func (e *OutputError) Is(target error) bool { return target == ErrInvalidOutput }

// Unwrap returns the cause.
func (e *OutputError) Unwrap() error { return e.Err }

// ParseOutput decodes and validates a model reply against the actions
// offered this step (by name), in ReplyFull mode with planning. Action
// parameters are checked against their schemas (in the compact action
// schema this is the only check: the reply schema leaves them free), and a
// mismatch's reason ends with the action's signature, as the prompt lists
// it; actions beyond maxActions are dropped and listed in Dropped. Every failure is an *OutputError
// (matching ErrInvalidOutput) whose text says exactly what was wrong; the
// function never panics on any input.
func ParseOutput(content string, offered []ActionSpec, maxActions int) (*AgentOutput, error) {
	return ParseOutputAs(content, offered, maxActions, ReplyFull, true)
}

// ParseOutputAs is ParseOutput for a reply mode: it reads exactly the
// fields the mode's schema asks for (the plan fields only when planning is
// on and the mode is not ReplyFlash), type-checked as ParseOutput checks
// them. Other top-level keys are ignored, as unknown keys always were: a
// flash reply that also sends "thinking" keeps only its memory.
func ParseOutputAs(content string, offered []ActionSpec, maxActions int, mode ReplyMode, planning bool) (*AgentOutput, error) {
	raw, err := llm.ExtractJSON(content)
	if err != nil {
		return nil, &OutputError{Reason: "the reply is not a JSON object: " + shorten(err.Error(), 300), Err: err}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, &OutputError{Reason: "the reply must be a JSON object with an \"action\" list", Err: &llm.ParseError{Content: shorten(string(raw), 512), Offset: -1, Err: err}}
	}
	var out AgentOutput
	strs := map[string]*string{"thinking": &out.Thinking, "evaluation_previous_goal": &out.EvaluationPreviousGoal, "memory": &out.Memory, "next_goal": &out.NextGoal}
	for _, key := range replyFields(mode, planning) {
		v, ok := probe[key]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var err error
		switch key {
		case "plan_update":
			if err = json.Unmarshal(v, &out.PlanUpdate); err != nil {
				return nil, &OutputError{Reason: `field "plan_update" must be a list of strings`, Err: err}
			}
			if out.PlanUpdate == nil {
				out.PlanUpdate = []string{}
			}
		case "current_plan_item":
			var n int
			if err = json.Unmarshal(v, &n); err != nil {
				return nil, &OutputError{Reason: `field "current_plan_item" must be an integer (an index into the plan)`, Err: err}
			}
			out.CurrentPlanItem = &n
		default:
			if err = json.Unmarshal(v, strs[key]); err != nil {
				return nil, &OutputError{Reason: fmt.Sprintf("field %q must be a string", key), Err: err}
			}
		}
	}
	av, ok := probe["action"]
	if !ok || string(bytes.TrimSpace(av)) == "null" {
		return nil, &OutputError{Reason: "the reply has no \"action\" list", Err: ErrNoAction}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(av, &items); err != nil {
		return nil, &OutputError{Reason: "\"action\" must be a list of {\"<action name>\": {parameters}} objects", Err: err}
	}
	if len(items) == 0 {
		return nil, &OutputError{Reason: "the \"action\" list is empty", Err: ErrNoAction}
	}
	byName := make(map[string]*ActionSpec, len(offered))
	for i := range offered {
		byName[offered[i].Name] = &offered[i]
	}
	for i, it := range items {
		var c ActionCall
		if err := json.Unmarshal(it, &c); err != nil {
			return nil, &OutputError{Reason: fmt.Sprintf("action %d: %v", i+1, err), Err: err}
		}
		if maxActions > 0 && len(out.Action) >= maxActions {
			out.Dropped = append(out.Dropped, c.Name)
			continue
		}
		spec, ok := byName[c.Name]
		if !ok {
			return nil, &OutputError{Reason: fmt.Sprintf("action %d: %q is not available this step; available: %s", i+1, c.Name, strings.Join(specNames(offered), ", ")), Err: ErrUnknownAction}
		}
		params := c.Params
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage("{}")
		}
		if err := ValidateJSON(spec.Params, params); err != nil {
			return nil, &OutputError{Reason: fmt.Sprintf("action %d (%s): parameters do not fit: %s; its parameters are %s", i+1, c.Name, strings.TrimPrefix(err.Error(), ErrSchema.Error()+": "), actionSignature(*spec)), Err: fmt.Errorf("%w: %v", ErrBadParams, err)}
		}
		c.Params = append(json.RawMessage(nil), params...)
		out.Action = append(out.Action, c)
	}
	// done must be alone: actions after it would never run, actions before it
	// would run unverified.
	for i, c := range out.Action {
		if c.Name == "done" && len(out.Action) > 1 {
			return nil, &OutputError{Reason: fmt.Sprintf("\"done\" must be the only action of its step (it was action %d of %d)", i+1, len(out.Action)), Err: ErrBadParams}
		}
	}
	return &out, nil
}

func specNames(specs []ActionSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// replyFields are the keys a reply carries before "action" in a mode, in
// the order the model writes them. plan_update comes before
// current_plan_item (upstream has the reverse) because the index points
// into the plan just written.
func replyFields(mode ReplyMode, planning bool) []string {
	switch mode {
	case ReplyFlash:
		return []string{"memory"}
	case ReplyNoThinking:
		f := []string{"evaluation_previous_goal", "memory", "next_goal"}
		if planning {
			f = append(f, "plan_update", "current_plan_item")
		}
		return f
	}
	f := []string{"thinking", "evaluation_previous_goal", "memory", "next_goal"}
	if planning {
		f = append(f, "plan_update", "current_plan_item")
	}
	return f
}

// outputSchema builds the ReplyFull reply schema, with planning, for the
// offered actions, in the full form (each action's schema inside).
func outputSchema(offered []ActionSpec, maxActions int) *llm.Schema {
	return replySchema(offered, maxActions, ReplyFull, true, ActionSchemaFull)
}

// replySchema builds the reply schema of a mode. Its key order is the order
// the model writes in: it reasons (thinking, evaluation, memory, next_goal,
// plan) before it picks actions. The plan fields are optional; the others
// are required. In the full form each "action" item is one of the offered
// actions, with its parameters in the order of its Params; in the compact
// form an item is an object with exactly one property, the action's name,
// whose value is an object (the parameters), and the schema is Loose (the
// actions are in the system prompt, the parser checks the name and the
// parameters), so it is the same on every step of a run.
func replySchema(offered []ActionSpec, maxActions int, mode ReplyMode, planning bool, form ActionSchema) *llm.Schema {
	items := schemax.NewObject()
	if form == ActionSchemaFull {
		alts := make([]any, 0, len(offered))
		for _, s := range offered {
			props := schemax.NewObject()
			props.Set(s.Name, actionSchema(s))
			alt := schemax.NewObject()
			alt.Set("type", "object")
			alt.Set("properties", props)
			alt.Set("required", []string{s.Name})
			alt.Set("additionalProperties", false)
			alts = append(alts, alt)
		}
		items.Set("anyOf", alts)
	} else {
		// One key, the action's name; its value, the parameters: a shape
		// every provider can decode into an action (the parser checks the
		// name and the parameters).
		params := schemax.NewObject()
		params.Set("type", "object")
		items.Set("type", "object")
		items.Set("minProperties", 1)
		items.Set("maxProperties", 1)
		items.Set("additionalProperties", params)
	}
	actions := schemax.NewObject()
	actions.Set("type", "array")
	actions.Set("minItems", 1)
	if maxActions > 0 {
		actions.Set("maxItems", maxActions)
	}
	actions.Set("items", items)

	var required []string
	props := schemax.NewObject()
	for _, k := range replyFields(mode, planning) {
		f := schemax.NewObject()
		switch k {
		case "plan_update":
			item := schemax.NewObject()
			item.Set("type", "string")
			f.Set("type", "array")
			f.Set("items", item)
		case "current_plan_item":
			f.Set("type", "integer")
		default:
			f.Set("type", "string")
			required = append(required, k)
		}
		props.Set(k, f)
	}
	required = append(required, "action")
	props.Set("action", actions)
	root := schemax.NewObject()
	root.Set("type", "object")
	root.Set("properties", props)
	root.Set("required", required)
	root.Set("additionalProperties", false)
	b, _ := schemax.Marshal(root) // only strings, numbers, bools and Objects: cannot fail
	return &llm.Schema{Name: "agent_output", JSON: b, Loose: form != ActionSchemaFull}
}

// actionSchema is s.Params with s.Description set right after "type", so
// that the model reads what the action does before its parameters.
func actionSchema(s ActionSpec) *schemax.Object {
	p, err := parseSchema(s.Params)
	if err != nil {
		// Only a spec that bypassed Registry.Add (empty or broken Params)
		// gets here; it is offered without parameters.
		p, _ = parseSchema(json.RawMessage(noParams))
	}
	if s.Description == "" {
		return p
	}
	if _, ok := p.Get("description"); ok {
		p.Set("description", s.Description)
		return p
	}
	out := schemax.NewObject()
	for _, k := range p.Keys() {
		v, _ := p.Get(k)
		out.Set(k, v)
		if k == "type" {
			out.Set("description", s.Description)
		}
	}
	out.Set("description", s.Description) // in place, or last without "type"
	return out
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 20 {
		return strings.ToValidUTF8(s[:n], "")
	}
	h := n/2 - 3
	return strings.ToValidUTF8(s[:h]+" ... "+s[len(s)-h:], "")
}
