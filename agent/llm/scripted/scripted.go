// Package scripted is a deterministic llm.Model for tests and demos. It reads
// the same messages a real model gets and answers from a script, in the
// agent's output shape:
//
//	{"thinking": "...", "evaluation_previous_goal": "...", "memory": "...",
//	 "next_goal": "...", "action": [{"click": {"index": 42}}]}
//
// Script steps name elements by their visible label, not by index: the label
// is resolved against the indexed elements of the latest user message (see
// Find), and the index found is put into the action's params as "index".
//
// A step can be conditional: with WaitFor (text) or WaitForLabel (an
// element), the model answers {"wait": {"seconds": N}} without advancing
// until the condition holds, at most MaxWaits times.
//
// The reply carries the fields the request's schema has (a flash-mode
// schema gets memory and action only), in the schema's order; without a
// schema, all of them. A step with Text answers free text instead (a
// history summary, an extraction); a step with Error fails the call.
//
// Failures (a label not on the page, a wait that never ends, the script run
// out) are, by default, the model's reply: a {"done": {"success": false,
// "text": "scripted model: ..."}} action, so the agent loop under test ends
// the run and its result carries the reason. With FailWithError the failure
// is returned from Generate instead (wrapping ErrScript). Either way the
// failure is recorded (Errors).
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// Errors reported by the scripted model; all wrap ErrScript.
var (
	ErrScript          = errors.New("scripted model")
	ErrLabelNotFound   = fmt.Errorf("%w: label not found", ErrScript)
	ErrScriptExhausted = fmt.Errorf("%w: script exhausted", ErrScript)
	ErrWaitExhausted   = fmt.Errorf("%w: wait condition never met", ErrScript)
	// ErrInjected is wrapped by the error of a step with Error: a failure
	// the script asked for, not a script failure (not in Errors).
	ErrInjected = fmt.Errorf("%w: injected failure", ErrScript)
)

// Action is one action of a step: {Name: {params...}}. When Label is set it
// is resolved to an element index and stored as params["index"] (overriding
// any index given). Tag restricts label resolution to one tag.
type Action struct {
	Name   string         `json:"name"`
	Label  string         `json:"label,omitempty"`
	Tag    string         `json:"tag,omitempty"`
	Params map[string]any `json:"params,omitempty"`
}

// Step is one model reply. Actions run in order. The shorthand fields
// Action/Label/Tag/Params describe a single action and are appended after
// Actions; JSON scripts can thus write {"action": "click", "label": "Submit"}.
type Step struct {
	Actions []Action `json:"actions,omitempty"`

	Action string         `json:"action,omitempty"`
	Label  string         `json:"label,omitempty"`
	Tag    string         `json:"tag,omitempty"`
	Params map[string]any `json:"params,omitempty"`

	// WaitFor: text that must occur (case-insensitive) in the latest user
	// message before the step runs. WaitForLabel: a label that must resolve.
	WaitFor      string `json:"wait_for,omitempty"`
	WaitForLabel string `json:"wait_for_label,omitempty"`
	// MaxWaits bounds the wait replies for this step; default 5.
	MaxWaits int `json:"max_waits,omitempty"`
	// WaitSeconds is the wait action's "seconds"; default 1.
	WaitSeconds int `json:"wait_seconds,omitempty"`

	// Optional reply fields; defaults describe the step.
	Thinking   string `json:"thinking,omitempty"`
	Evaluation string `json:"evaluation_previous_goal,omitempty"`
	Memory     string `json:"memory,omitempty"`
	NextGoal   string `json:"next_goal,omitempty"`
	// PlanUpdate and CurrentPlanItem are sent when set (and the schema,
	// if any, has them).
	PlanUpdate      []string `json:"plan_update,omitempty"`
	CurrentPlanItem *int     `json:"current_plan_item,omitempty"`

	// Text, when set, is the whole reply, as is: the step has no action.
	Text string `json:"text,omitempty"`
	// Error, when set, makes the call fail with an error wrapping
	// ErrInjected (a provider outage, say); the step counts as answered.
	Error string `json:"error,omitempty"`
}

func (s *Step) actions() []Action {
	a := slices.Clone(s.Actions)
	if s.Action != "" {
		a = append(a, Action{Name: s.Action, Label: s.Label, Tag: s.Tag, Params: s.Params})
	}
	return a
}

// Script is the JSON file form: {"name": "...", "steps": [...]}; a bare
// array of steps is accepted too.
type Script struct {
	Name  string `json:"name,omitempty"`
	Steps []Step `json:"steps"`
}

// Option configures a Model.
type Option func(*Model)

// WithName sets Name() (default "scripted").
func WithName(name string) Option { return func(m *Model) { m.name = name } }

// FailWithError makes failures Generate errors (wrapping ErrScript) instead
// of done(success=false) replies.
func FailWithError() Option { return func(m *Model) { m.failErr = true } }

// Model is the scripted model. Safe for concurrent use; calls are served in
// arrival order.
type Model struct {
	name    string
	failErr bool

	mu    sync.Mutex
	steps []Step
	pos   int
	waits int
	reqs  []llm.Request
	errs  []error
}

// New returns a Model answering with steps.
func New(steps []Step, opts ...Option) *Model {
	m := &Model{name: "scripted", steps: slices.Clone(steps)}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Parse reads a JSON script (object or bare array). Unknown fields are an
// error, so a typo in a script is caught at load time.
func Parse(data []byte, opts ...Option) (*Model, error) {
	var s Script
	trimmed := strings.TrimSpace(string(data))
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var err error
	if strings.HasPrefix(trimmed, "[") {
		err = dec.Decode(&s.Steps)
	} else {
		err = dec.Decode(&s)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: parse script: %w", err)
	}
	for i, st := range s.Steps {
		if st.Text != "" || st.Error != "" {
			continue
		}
		if len(st.actions()) == 0 {
			return nil, fmt.Errorf("scripted: parse script: step %d has no action", i+1)
		}
		for _, a := range st.actions() {
			if a.Name == "" {
				return nil, fmt.Errorf("scripted: parse script: step %d has an action without a name", i+1)
			}
		}
	}
	if s.Name != "" {
		opts = append([]Option{WithName(s.Name)}, opts...)
	}
	return New(s.Steps, opts...), nil
}

// Load reads a JSON script file (see Parse).
func Load(path string, opts ...Option) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	return Parse(b, opts...)
}

// Name returns the script's name.
func (m *Model) Name() string { return m.name }

// Requests returns a copy of the requests received so far.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// Errors returns the failures so far (whether replied or returned).
func (m *Model) Errors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errs)
}

// Done reports whether every step has been answered.
func (m *Model) Done() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pos >= len(m.steps)
}

// Output is the agent output shape the model emits (only the keys the
// request's schema has).
type Output struct {
	Thinking               string           `json:"thinking"`
	EvaluationPreviousGoal string           `json:"evaluation_previous_goal"`
	Memory                 string           `json:"memory"`
	NextGoal               string           `json:"next_goal"`
	PlanUpdate             []string         `json:"plan_update,omitempty"`
	CurrentPlanItem        *int             `json:"current_plan_item,omitempty"`
	Action                 []map[string]any `json:"action"`
}

// encode writes out with the keys schema's root has, in its order; all of
// them without a schema (or one without properties).
func (out Output) encode(schema *llm.Schema) ([]byte, error) {
	full, err := json.Marshal(out)
	if err != nil || schema == nil {
		return full, err
	}
	root, err := schemax.Parse(schema.JSON)
	if err != nil {
		return full, nil
	}
	ro, _ := root.(*schemax.Object)
	if ro == nil {
		return full, nil
	}
	pv, _ := ro.Get("properties")
	props, _ := pv.(*schemax.Object)
	if props == nil {
		return full, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(full, &fields); err != nil {
		return nil, err
	}
	o := schemax.NewObject()
	for _, k := range props.Keys() {
		if v, ok := fields[k]; ok {
			o.Set(k, v)
		}
	}
	return json.Marshal(o)
}

// Generate answers the next step; see the package doc.
func (m *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	if m.pos < len(m.steps) {
		switch st := m.steps[m.pos]; {
		case st.Error != "":
			m.pos++
			return nil, fmt.Errorf("%w: %s", ErrInjected, st.Error)
		case st.Text != "":
			m.pos++
			return m.respond(req, []byte(st.Text)), nil
		}
	}
	page := latestUserText(req.Messages)
	out, err := m.next(page)
	if err != nil {
		m.errs = append(m.errs, err)
		if m.failErr {
			return nil, err
		}
		out = Output{
			Thinking:               err.Error(),
			EvaluationPreviousGoal: "Failure: the script cannot continue",
			Memory:                 fmt.Sprintf("scripted step %d of %d failed", min(m.pos+1, len(m.steps)), len(m.steps)),
			NextGoal:               "stop",
			Action:                 []map[string]any{{"done": map[string]any{"success": false, "text": err.Error()}}},
		}
	}
	b, jerr := out.encode(req.Schema)
	if jerr != nil {
		return nil, fmt.Errorf("scripted: encode reply: %w", jerr)
	}
	return m.respond(req, b), nil
}

// respond wraps a reply with a usage of about 4 characters per token.
func (m *Model) respond(req llm.Request, b []byte) *llm.Response {
	prompt := 0
	for _, msg := range req.Messages {
		prompt += len(msg.TextContent())/4 + 1
	}
	usage := llm.Usage{PromptTokens: prompt, CompletionTokens: len(b)/4 + 1}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return &llm.Response{Content: string(b), Usage: usage, StopReason: "stop", Model: m.name}
}

// next computes the reply for the current step; m.mu is held.
func (m *Model) next(page string) (Output, error) {
	if m.pos >= len(m.steps) {
		return Output{}, fmt.Errorf("%w: all %d steps were answered", ErrScriptExhausted, len(m.steps))
	}
	st := &m.steps[m.pos]
	n := m.pos + 1
	elems := ParseElements(page)
	if wait, why := m.shouldWait(st, page, elems); wait {
		maxWaits := st.MaxWaits
		if maxWaits <= 0 {
			maxWaits = 5
		}
		if m.waits >= maxWaits {
			return Output{}, fmt.Errorf("%w: step %d: %s after %d waits", ErrWaitExhausted, n, why, m.waits)
		}
		m.waits++
		secs := st.WaitSeconds
		if secs <= 0 {
			secs = 1
		}
		return Output{
			Thinking:               fmt.Sprintf("scripted step %d: %s; waiting (%d/%d)", n, why, m.waits, maxWaits),
			EvaluationPreviousGoal: "Unknown: waiting for the page",
			Memory:                 fmt.Sprintf("scripted step %d of %d", n, len(m.steps)),
			NextGoal:               why,
			Action:                 []map[string]any{{"wait": map[string]any{"seconds": secs}}},
		}, nil
	}
	acts := st.actions()
	if len(acts) == 0 {
		return Output{}, fmt.Errorf("%w: step %d has no action", ErrScript, n)
	}
	out := Output{Action: make([]map[string]any, 0, len(acts))}
	var names []string
	for _, a := range acts {
		params := make(map[string]any, len(a.Params)+1)
		for k, v := range a.Params {
			params[k] = v
		}
		if a.Label != "" {
			e, err := Find(elems, a.Label, a.Tag)
			if err != nil {
				return Output{}, fmt.Errorf("step %d (%s): %w", n, a.Name, err)
			}
			params["index"] = e.Index
		}
		out.Action = append(out.Action, map[string]any{a.Name: params})
		if a.Label != "" {
			names = append(names, fmt.Sprintf("%s %q", a.Name, a.Label))
		} else {
			names = append(names, a.Name)
		}
	}
	out.Thinking = orDefault(st.Thinking, fmt.Sprintf("scripted step %d of %d", n, len(m.steps)))
	out.EvaluationPreviousGoal = orDefault(st.Evaluation, "Success: following the script")
	out.Memory = orDefault(st.Memory, fmt.Sprintf("scripted step %d of %d done", n, len(m.steps)))
	out.NextGoal = orDefault(st.NextGoal, strings.Join(names, ", "))
	out.PlanUpdate, out.CurrentPlanItem = st.PlanUpdate, st.CurrentPlanItem
	m.pos++
	m.waits = 0
	return out, nil
}

func (m *Model) shouldWait(st *Step, page string, elems []Element) (bool, string) {
	if st.WaitFor != "" && !strings.Contains(norm(page), norm(st.WaitFor)) {
		return true, fmt.Sprintf("text %q is not visible yet", st.WaitFor)
	}
	if st.WaitForLabel != "" {
		if _, err := Find(elems, st.WaitForLabel, ""); err != nil {
			return true, fmt.Sprintf("no element labelled %q yet", st.WaitForLabel)
		}
	}
	return false, ""
}

func latestUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].TextContent()
		}
	}
	return ""
}

func orDefault(s, d string) string {
	if s != "" {
		return s
	}
	return d
}
