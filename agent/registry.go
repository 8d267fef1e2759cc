package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"sync"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
)

// Risk classifies what an action may do, for approval policies.
type Risk string

// Risk classes, from harmless to consequential.
const (
	RiskRead     Risk = "read"     // observes only (extract, find_text, scroll, read_file)
	RiskInput    Risk = "input"    // changes form state or local files (input, select, write_file)
	RiskSubmit   Risk = "submit"   // may submit or trigger page logic (click, send_keys)
	RiskNavigate Risk = "navigate" // loads another page or tab (navigate, search, go_back, switch_tab)
	RiskScript   Risk = "script"   // runs model-written JavaScript (evaluate)
	RiskUpload   Risk = "upload"   // hands a local file to the page
	RiskDownload Risk = "download" // saves something from the page
)

// Errors of the action registry.
var (
	// ErrUnknownAction: a reply named an action that is not offered.
	ErrUnknownAction = errors.New("agent: unknown action")
	// ErrBadParams: an action's parameters do not fit its schema.
	ErrBadParams = errors.New("agent: bad action parameters")
	// ErrDuplicateAction: Register was called twice with one name.
	ErrDuplicateAction = errors.New("agent: duplicate action")
)

// ActionResult is what an action reports back to the loop.
type ActionResult struct {
	// Text is the result line kept in the agent history (short).
	Text string `json:"text,omitempty"`
	// ReadOnce is longer content shown to the model only on the next step, in
	// <read_state> (page extracts, file contents, dropdown options).
	ReadOnce string `json:"read_once,omitempty"`
	// Outcome is the browser's verdict for browser actions.
	Outcome *events.ActionOutcome `json:"outcome,omitempty"`
	// Done ends the run; Success and Data are then the run's answer.
	Done    bool            `json:"done,omitempty"`
	Success bool            `json:"success,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	// WantScreenshot asks for a screenshot in the next observation (vision
	// "auto").
	WantScreenshot bool `json:"want_screenshot,omitempty"`
	// Files are paths the action produced (screenshots, files written).
	Files []string `json:"files,omitempty"`
	// Mark is where the action landed (element box, point clicked), for
	// the report; the agent moves it to ActionRecord.Mark.
	Mark *ActionMark `json:"-"`
	// Usage is the tokens of the model calls the action made (extract
	// reports its ExtractModel call). The agent counts the calls of its own
	// models (ActionContext.ExtractModel) itself; what Usage reports beyond
	// them (a model of the action's own) is added to the step's and the
	// run's usage and counts toward Settings.MaxTokens, unpriced.
	Usage llm.Usage `json:"usage,omitzero"`
}

// ActionContext is what an action gets to do its work. It is valid for the
// duration of one action call.
type ActionContext struct {
	// Browser is the browser the agent drives; actions dispatch events on
	// Browser.Bus().
	Browser Browser
	// FileSystem is the agent's file area.
	FileSystem *FileSystem
	// ExtractModel answers extraction queries (Settings.ExtractModel).
	ExtractModel llm.Model
	// BrowserState is the observation this step's actions were chosen on.
	BrowserState *events.BrowserState
	// Logger is the agent's logger.
	Logger *zap.Logger
	// RunDir is the agent's run directory.
	RunDir string

	agent *Agent
}

// ActionFunc runs an action with raw JSON parameters (already validated
// against the action's schema).
type ActionFunc func(ctx context.Context, ac *ActionContext, params json.RawMessage) (ActionResult, error)

// ActionSpec describes one action offered to the model.
type ActionSpec struct {
	// Name is the key the model uses: {"<name>": {params}}. [a-z0-9_]+.
	Name string
	// Description tells the model what the action does.
	Description string
	// Params is the JSON Schema of the parameters, as JSON text: an object
	// schema such as
	//
	//	json.RawMessage(`{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}`)
	//
	// Empty means no parameters. Its key order is kept up to the bytes sent
	// to the provider: the prompt shows the properties, and with constrained
	// decoding the model writes them, in this order. Register derives it
	// from a Go struct (SchemaOf). It must not be modified after Add.
	Params json.RawMessage
	// Risk classifies the action for the Approver.
	Risk Risk
	// Terminates stops the rest of the batch after this action (it changes
	// the page the later actions were chosen on).
	Terminates bool
	// TargetsIndex marks actions whose "index" parameter names an element of
	// the observation; the mutation fence applies to them.
	TargetsIndex bool
	// Domains, when non-empty, offers the action only on pages whose URL
	// matches one of these patterns (Settings.DomainMatcher).
	Domains []string
	// Run performs the action.
	Run ActionFunc

	builtin bool // registered by DefaultRegistry
}

// ActionOption adjusts an ActionSpec at registration.
type ActionOption func(*ActionSpec)

// WithRisk sets the risk class (default RiskSubmit for custom actions: an
// unknown action is assumed consequential).
func WithRisk(r Risk) ActionOption { return func(s *ActionSpec) { s.Risk = r } }

// Terminating makes the action end the batch.
func Terminating() ActionOption { return func(s *ActionSpec) { s.Terminates = true } }

// OnDomains offers the action only on matching pages.
func OnDomains(patterns ...string) ActionOption {
	return func(s *ActionSpec) { s.Domains = append(s.Domains, patterns...) }
}

// TargetsElement marks the action as acting on the "index" parameter's
// element, so that the mutation fence protects it.
func TargetsElement() ActionOption { return func(s *ActionSpec) { s.TargetsIndex = true } }

// Registry is a set of actions ("tools"). It is safe for concurrent use; an
// Agent reads it at every step, so actions registered later are offered from
// the next step on.
type Registry struct {
	mu    sync.RWMutex
	specs map[string]*ActionSpec
}

// NewRegistry returns an empty registry. Most callers start from
// DefaultRegistry and add their own actions.
func NewRegistry() *Registry { return &Registry{specs: map[string]*ActionSpec{}} }

var actionNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Add registers spec. The name must be new and match [a-z][a-z0-9_]*; Params
// must be an object schema as JSON text (empty means no parameters). Add
// keeps a compact copy of Params, keys in the order given; a parameterless
// root ({"type":"object"}, or with empty properties, without
// additionalProperties) is stored closed:
// {"type":"object","properties":{},"additionalProperties":false}. A
// schema that is not a JSON object with "type": "object", that uses $ref,
// oneOf or allOf (use anyOf, or a struct), or that leaves a part free-form
// (an object with additionalProperties other than false, an object that
// lists no properties without additionalProperties:false, a value without
// a type) is an error wrapping ErrSchema that names the JSON path: the
// check is schemax.NotStrict, the one the openai provider makes before
// sending, and one such action would make the whole reply schema
// non-strict.
func (r *Registry) Add(spec ActionSpec) error {
	if !actionNameRE.MatchString(spec.Name) {
		return fmt.Errorf("agent: invalid action name %q (want [a-z][a-z0-9_]*)", spec.Name)
	}
	if spec.Run == nil {
		return fmt.Errorf("agent: action %q has no Run function", spec.Name)
	}
	if len(bytes.TrimSpace(spec.Params)) == 0 {
		spec.Params = json.RawMessage(noParams)
	}
	p, err := parseSchema(spec.Params)
	if err != nil {
		return fmt.Errorf("agent: action %q parameters: %w", spec.Name, err)
	}
	if t, _ := p.Get("type"); t != "object" {
		return fmt.Errorf("%w: action %q parameters must be an object schema", ErrSchema, spec.Name)
	}
	closeParameterless(p)
	if err := checkStrict(p); err != nil {
		return fmt.Errorf("agent: action %q parameters: %w", spec.Name, err)
	}
	if spec.Params, err = schemax.Marshal(p); err != nil {
		return fmt.Errorf("agent: action %q parameters: %w", spec.Name, err)
	}
	if spec.Risk == "" {
		spec.Risk = RiskSubmit
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.specs[spec.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateAction, spec.Name)
	}
	s := spec
	r.specs[spec.Name] = &s
	return nil
}

// Remove deletes an action (for example a built-in a deployment does not
// want offered). It reports whether it was there.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.specs[name]
	delete(r.specs, name)
	return ok
}

// Get returns a copy of the named action's spec.
func (r *Registry) Get(name string) (ActionSpec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.specs[name]
	if !ok {
		return ActionSpec{}, false
	}
	return *s, true
}

// Names returns the registered action names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.specs))
	for n := range r.specs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Register adds a custom action whose parameters are the Go struct P: the
// schema is derived by SchemaOf (properties in field order), the model's parameters are decoded into a P
// (unknown fields and missing required fields are errors the model reads)
// and fn is called with it.
//
//	type Lookup struct {
//		SKU string `json:"sku" description:"the product code"`
//	}
//	agent.Register(reg, "lookup_stock", "Look a product up in the warehouse",
//		func(ctx context.Context, ac *agent.ActionContext, p Lookup) (agent.ActionResult, error) { ... },
//		agent.WithRisk(agent.RiskRead))
func Register[P any](r *Registry, name, description string, fn func(ctx context.Context, ac *ActionContext, p P) (ActionResult, error), opts ...ActionOption) error {
	schema, err := SchemaOf(reflect.TypeFor[P]())
	if err != nil {
		return fmt.Errorf("agent: action %q: %w", name, err)
	}
	spec := ActionSpec{
		Name:        name,
		Description: description,
		Params:      schema,
		Run: func(ctx context.Context, ac *ActionContext, raw json.RawMessage) (ActionResult, error) {
			var p P
			if err := decodeParams(raw, &p); err != nil {
				return ActionResult{}, err
			}
			return fn(ctx, ac, p)
		},
	}
	for _, o := range opts {
		o(&spec)
	}
	return r.Add(spec)
}

// decodeParams decodes validated parameters strictly.
func decodeParams(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadParams, err)
	}
	return nil
}

// offered returns the actions available on url (domain filters applied),
// minus excluded names, sorted by name; only "done" when doneOnly.
func (r *Registry) offered(url string, match func(pattern, url string) bool, exclude map[string]bool, doneOnly bool) []ActionSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []ActionSpec
	for name, s := range r.specs {
		if exclude[name] {
			continue
		}
		if doneOnly && name != "done" {
			continue
		}
		if len(s.Domains) > 0 {
			ok := false
			for _, p := range s.Domains {
				if url != "" && match(p, url) {
					ok = true
					break
				}
			}
			if !ok {
				continue
			}
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// markBuiltin marks every action registered so far as built-in, so that
// the agent may offer its own variant of it (coordinate clicks).
func (r *Registry) markBuiltin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.specs {
		s.builtin = true
	}
}
