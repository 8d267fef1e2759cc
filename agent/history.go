package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
)

// ActionRecord is one action that ran (or was refused) in a step.
type ActionRecord struct {
	Name string `json:"name"`
	// Params as the model wrote them (placeholders, never secret values).
	Params json.RawMessage `json:"params,omitempty"`
	Risk   Risk            `json:"risk,omitempty"`
	// Result is the action's report; Error its failure ("" on success).
	Result   ActionResult   `json:"result"`
	Error    string         `json:"error,omitempty"`
	Verdict  events.Verdict `json:"verdict,omitempty"`
	Duration time.Duration  `json:"duration_ns"`
	// Denied reports that the Approver refused the action: it did not run.
	Denied bool `json:"denied,omitempty"`
	// Requests are the network requests the action caused (its outcome's),
	// for the report and the done check.
	Requests []events.Request `json:"requests,omitempty"`
	// RequestsOmitted counts the requests the action sent after those
	// listed (the outcome keeps at most events.MaxOutcomeRequests).
	RequestsOmitted int `json:"requests_omitted,omitempty"`
	// Mark is where the action landed on the page, in the viewport's CSS
	// pixels: the element's box and the point clicked. Nil for actions
	// that target no element or point.
	Mark *ActionMark `json:"mark,omitempty"`
	// Element identifies the element the action targeted as the step
	// observed it (for replay and the action cache); nil for actions that
	// target no element.
	Element *match.Element `json:"element,omitempty"`
	// Match says how a replayed or cached action's element was found on
	// the page; nil when the model chose the index.
	Match *match.Result `json:"match,omitempty"`
	// TabURL is the http(s) URL of the tab the action opened, as it was
	// when the agent switched to it; "" when the action opened no tab, the
	// tab had no page yet, or its URL shows a secret. A resume opens it
	// when no later step recorded the page.
	TabURL string `json:"tab_url,omitempty"`
}

// ActionMark is where an action landed, in viewport CSS pixels of the
// page the step observed (StateRecord.Viewport gives the scale).
type ActionMark struct {
	// Box is the element's border box (x, y, width, height); nil when the
	// action named a point, not an element.
	Box *[4]float64 `json:"box,omitempty"`
	// Point is the point clicked or hovered; nil for actions that do not
	// use the mouse (typing, select).
	Point *[2]float64 `json:"point,omitempty"`
}

// Viewport is the visible area's size in CSS pixels.
type Viewport struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// Handoff records one hand-off of the browser to a person: who asked and
// why, how long it took, what the person said and what changed. What the
// person typed is never recorded.
type Handoff struct {
	By        string        `json:"by"`
	Reason    string        `json:"reason"`
	Via       string        `json:"via,omitempty"`
	Note      string        `json:"note,omitempty"`
	Declined  bool          `json:"declined,omitempty"`
	Error     string        `json:"error,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	URLBefore string        `json:"url_before,omitempty"`
	URLAfter  string        `json:"url_after,omitempty"`
	// Changed reports that the page's fingerprint differs after the
	// hand-off.
	Changed bool `json:"changed,omitempty"`
	// ScreenshotPath is the screenshot of the page as a hand-off policy
	// handed it over (step_N_handoff.<ext>), when one was taken.
	ScreenshotPath string `json:"screenshot,omitempty"`
}

// Text words the record as its caller reads it (a tool result): the
// result line, the error when it failed, and what the action returned to
// be read once.
func (r ActionRecord) Text() string {
	var b strings.Builder
	b.WriteString(r.Result.Text)
	if r.Error != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("Error: " + r.Error)
	}
	if r.Result.ReadOnce != "" {
		b.WriteString("\n\n" + r.Result.ReadOnce)
	}
	return b.String()
}

// StateRecord is what the step observed.
type StateRecord struct {
	URL            string           `json:"url,omitempty"`
	Title          string           `json:"title,omitempty"`
	Tabs           []events.TabInfo `json:"tabs,omitempty"`
	ScreenshotPath string           `json:"screenshot_path,omitempty"`
	Fingerprint    string           `json:"fingerprint,omitempty"`
	DOMError       string           `json:"dom_error,omitempty"`
	// Blocked are the requests the URL policy refused since the previous
	// observation, by host, as the model was told.
	Blocked []events.BlockedRequests `json:"blocked,omitempty"`
	// Viewport is the observed viewport in CSS pixels (for placing marks
	// on the screenshot); nil when unknown.
	Viewport *Viewport `json:"viewport,omitempty"`
	// AfterScreenshotPath is a screenshot taken after the step's actions
	// changed the page, when the next observation does not show it (the
	// last step); "" otherwise.
	AfterScreenshotPath string `json:"after_screenshot_path,omitempty"`
}

// HistoryItem is one step of a run.
type HistoryItem struct {
	Step int `json:"step"`
	// Source says where the step's actions came from: the model (""),
	// a replayed recording, a heal of a replayed step, the action cache, or
	// a resumed run's restore.
	Source StepSource `json:"source,omitempty"`
	// Output is the model's parsed reply (nil for step 0 and failed calls).
	Output  *AgentOutput   `json:"model_output,omitempty"`
	Actions []ActionRecord `json:"actions,omitempty"`
	State   StateRecord    `json:"state"`
	// Error is a step-level failure: model call, parse error, timeout.
	Error string `json:"error,omitempty"`
	// Notes are fence and nudge messages shown to the model on the next step.
	Notes []string `json:"notes,omitempty"`
	// Plan is the model's plan after this step's reply (planning on and a
	// plan written; nil otherwise).
	Plan []PlanItem `json:"plan,omitempty"`
	// Compaction is the history summary made before this step's model
	// call, or the failed attempt; nil when none was due.
	Compaction *Compaction `json:"compaction,omitempty"`
	Usage      llm.Usage   `json:"usage"`
	// Cost is what the step's model calls cost (the step's own, a history
	// summary's, extract's), priced by Settings.Prices; zero (omitted)
	// when the step made no call, with Cost.Unpriced set when a model's
	// price is unknown.
	Cost      pricing.Cost  `json:"cost,omitzero"`
	StartedAt time.Time     `json:"started_at"`
	EndedAt   time.Time     `json:"ended_at"`
	ModelTime time.Duration `json:"model_time_ns,omitempty"`
	// ObserveTime and ActionsTime are how long the step's observation and
	// its actions took (with ModelTime, the step's timeline).
	ObserveTime time.Duration `json:"observe_time_ns,omitempty"`
	ActionsTime time.Duration `json:"actions_time_ns,omitempty"`
	// Handoffs are the step's hand-offs to a person, in order.
	Handoffs []Handoff `json:"handoffs,omitempty"`
	// Failed reports whether the step counted as a failure.
	Failed bool `json:"failed,omitempty"`
}

// History is a run's record. Save writes it as JSON; LoadHistory reads it.
type History struct {
	Task  string        `json:"task"`
	Tasks []string      `json:"tasks,omitempty"` // follow-up tasks, in order
	Items []HistoryItem `json:"history"`
}

// Save writes h to path as indented JSON (atomically: a temporary file is
// renamed over path). The history holds no secret values: parameters keep
// the model's placeholders, and every text was scrubbed when recorded.
func (h *History) Save(path string) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("agent: save history: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".history-*.json")
	if err != nil {
		return fmt.Errorf("agent: save history: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("agent: save history: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("agent: save history: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("agent: save history: %w", err)
	}
	return nil
}

// LoadHistory reads a history written by Save. Unknown fields are an error.
func LoadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agent: load history: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var h History
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("agent: load history %s: %w", path, err)
	}
	return &h, nil
}

// FinalResult returns the done action's result of the last step, if any.
func (h *History) FinalResult() (ActionResult, bool) {
	if len(h.Items) == 0 {
		return ActionResult{}, false
	}
	last := h.Items[len(h.Items)-1]
	for _, a := range last.Actions {
		if a.Result.Done {
			return a.Result, true
		}
	}
	return ActionResult{}, false
}
