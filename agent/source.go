package agent

import (
	"context"

	"github.com/browseragent/browseragent/events"
)

// StepSource says where a step's actions came from.
type StepSource string

// Step sources.
const (
	SourceModel  StepSource = ""       // the model chose them
	SourceReplay StepSource = "replay" // a recorded run's actions, replayed without the model
	SourceHeal   StepSource = "heal"   // the model, asked to mend one replayed step
	SourceCache  StepSource = "cache"  // the action cache, instead of a model call
	// SourceResume: a resumed run's first step, the restore of the page the
	// recorded run had reached, without a model call (Resume).
	SourceResume StepSource = "resume"
)

// stepSource supplies a step's actions instead of (or before) the model:
// the replay of a recorded run, the action cache. Sources are asked in
// order after the step's observation (and any hand-off); the first that
// answers decides the step. Every answer runs through the same path as
// the model's: approval, fences, evidence, history, observers.
type stepSource interface {
	// next returns the actions for the page observed in st. ok false: no
	// answer here (the next source, finally the model, is asked); nudges
	// are added to the model's prompt if it is asked, and a src given with
	// ok false marks the model's step as done on this source's behalf
	// (SourceHeal). A non-nil halt ends the run after this step
	// (Result.Err, Run's error) without asking anyone else.
	next(ctx context.Context, st *events.BrowserState, item *HistoryItem) (out *AgentOutput, src StepSource, nudges []string, ok bool, halt error)
	// stepped is told, after the step's actions ran, what they did (item
	// is the finished step, out what was run, nil when the step chose
	// nothing). A non-nil halt ends the run after this step.
	stepped(ctx context.Context, st *events.BrowserState, out *AgentOutput, item *HistoryItem) (halt error)
}

// CacheStats count what the action cache did in a Run (Settings.Cache).
type CacheStats struct {
	// Hits are steps whose actions came from the cache: each saved a
	// model call. Misses are steps that asked the cache and then the model.
	Hits   int `json:"hits"`
	Misses int `json:"misses"`
	// Invalidated counts entries found but not used because they came from
	// another model or prompt version (each also counts as a miss); Stored
	// counts entries written.
	Invalidated int `json:"invalidated,omitempty"`
	Stored      int `json:"stored,omitempty"`
}
