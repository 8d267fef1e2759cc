package trace

import (
	"encoding/json"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
)

// Tokens are a step's, a call's or a run's token counts by kind, as the
// provider reported them: PromptTokens is all input (CachedTokens read
// from the prompt cache and CacheWriteTokens written to it are part of
// it), CompletionTokens all output (ReasoningTokens part of it).
type Tokens struct {
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Step is the data of a TypeStep record: one agent step as the report shows
// it. Screenshot is a path relative to the trace's directory; its SHA-256 is
// recorded so that the report can tell a swapped image.
type Step struct {
	Step int `json:"step"`
	// Source says where the step's actions came from: "" the model,
	// "replay" a recorded run replayed without it, "heal" the model mending
	// one replayed step, "cache" the action cache instead of a model call.
	Source     agent.StepSource `json:"source,omitempty"`
	URL        string           `json:"url,omitempty"`
	Title      string           `json:"title,omitempty"`
	Evaluation string           `json:"evaluation,omitempty"`
	Memory     string           `json:"memory,omitempty"`
	NextGoal   string           `json:"next_goal,omitempty"`
	Actions    []Action         `json:"actions,omitempty"`
	Error      string           `json:"error,omitempty"`
	DurationMS float64          `json:"duration_ms"`
	Tokens
	// Cost is what the step's model calls cost (nil when it made none);
	// Cost.Unpriced names the models whose price is unknown.
	Cost             *pricing.Cost `json:"cost,omitempty"`
	Screenshot       string        `json:"screenshot,omitempty"`
	ScreenshotSHA256 string        `json:"screenshot_sha256,omitempty"`
	// Blocked are the requests the URL policy refused since the previous
	// step's observation, by host, most-refused first (what the model was
	// told; each request has its own bus record of kind RequestBlocked).
	Blocked []Blocked `json:"blocked,omitempty"`
	// Plan is the model's plan after this step's reply, when it keeps one.
	Plan []PlanItem `json:"plan,omitempty"`
	// Compaction is the history summary made before this step's model
	// call (or the failed attempt): what the model saw instead of the
	// steps it covers.
	Compaction *Compaction `json:"compaction,omitempty"`
	// ObserveMS, ModelMS and ActionsMS are the step's timeline: how long
	// its observation, its model call(s) and its actions took.
	ObserveMS float64 `json:"observe_ms,omitempty"`
	ModelMS   float64 `json:"model_ms,omitempty"`
	ActionsMS float64 `json:"actions_ms,omitempty"`
	// Viewport is the observed viewport in CSS pixels: the report places
	// the actions' marks on the screenshot relative to it.
	Viewport *agent.Viewport `json:"viewport,omitempty"`
	// AfterScreenshot is the page after the step's actions, when they
	// changed it and no later step shows it (the run's last step), with
	// its SHA-256; a path relative to the trace's directory.
	AfterScreenshot       string `json:"after_screenshot,omitempty"`
	AfterScreenshotSHA256 string `json:"after_screenshot_sha256,omitempty"`
	// Handoffs are the step's hand-offs to a person, in order.
	Handoffs []agent.Handoff `json:"handoffs,omitempty"`
	// Notes are what the agent told the model at the next step about this
	// one: a batch stopped by the fence, a forced final answer, a
	// hand-off's outcome.
	Notes []string `json:"notes,omitempty"`
}

// PlanItem is one item of the model's plan: status done, current or
// pending.
type PlanItem struct {
	Text   string `json:"text"`
	Status string `json:"status"`
}

// Compaction is a summary of older history written by a model.
type Compaction struct {
	FromStep    int    `json:"from_step"`
	ToStep      int    `json:"to_step"`
	Summary     string `json:"summary,omitempty"`
	Error       string `json:"error,omitempty"`
	CharsBefore int    `json:"chars_before,omitempty"`
	CharsAfter  int    `json:"chars_after,omitempty"`
}

// Blocked is how many requests to one host the URL policy refused, and of
// which resource types (lower-cased, in the order first seen).
type Blocked struct {
	Host  string   `json:"host"`
	Count int      `json:"count"`
	Types []string `json:"types,omitempty"`
}

// Action is one action of a step with its verdict and evidence.
type Action struct {
	Name    string          `json:"name"`
	Params  json.RawMessage `json:"params,omitempty"`
	Verdict string          `json:"verdict,omitempty"`
	Detail  string          `json:"detail,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Before and After are the page evidence (URL, fingerprint, focus).
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Requests are the network requests the action caused.
	Requests []events.Request `json:"requests,omitempty"`
	// RequestsOmitted counts the requests the action sent after those
	// listed.
	RequestsOmitted int `json:"requests_omitted,omitempty"`
	// Mark is where the action landed (element box, point), in the
	// viewport's CSS pixels of the step's observation.
	Mark *agent.ActionMark `json:"mark,omitempty"`
	// Element identifies the element the action targeted as the step
	// observed it (tag, role, name, identifying attributes, XPath, hashes);
	// nil for actions that target no element.
	Element *match.Element `json:"element,omitempty"`
	// Match says how a replayed or cached action's element was found on
	// the page (strategy, score, unique or ambiguous, the candidates); nil
	// when the model chose the element.
	Match *match.Result `json:"match,omitempty"`
}

// Model is the data of a TypeModel record: one model call.
type Model struct {
	Step  int    `json:"step"`
	Model string `json:"model"`
	// Purpose is what the call was for: step, extract, compact or judge.
	Purpose     string `json:"purpose,omitempty"`
	PromptChars int    `json:"prompt_chars"`
	Images      int    `json:"images,omitempty"`
	Tokens
	// Cost is the call's price (Cost.Unpriced names the model when its
	// price is unknown).
	Cost      *pricing.Cost `json:"cost,omitempty"`
	LatencyMS float64       `json:"latency_ms"`
	Error     string        `json:"error,omitempty"`
}

// Run is the data of a TypeRun record: the run's result.
type Run struct {
	Task      string          `json:"task"`
	Success   bool            `json:"success"`
	Done      bool            `json:"done"`
	FinalText string          `json:"final_text,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Errors    []string        `json:"errors,omitempty"`
	Steps     int             `json:"steps"`
	// DurationMS, the token totals and the cost cover the whole run (the
	// judge's call included).
	DurationMS float64 `json:"duration_ms"`
	Tokens
	Cost *pricing.Cost `json:"cost,omitempty"`
	// BudgetExceeded is the reason the run stopped when Settings.MaxCost
	// or MaxTokens stopped it, in the words of Errors' last entry.
	BudgetExceeded string `json:"budget_exceeded,omitempty"`
	// Cache is what the action cache did in the run (hits, misses,
	// invalidated and stored entries); nil when the cache was off.
	Cache *agent.CacheStats `json:"cache,omitempty"`
}
