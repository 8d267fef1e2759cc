package agent

// Replay runs a recorded run's actions again without the model.
//
// How the engine works (docs/replay.md describes it for users):
//
//   - Steps. Every recorded step that ran actions is replayed as one step of
//     a normal Run (same observation, approval, fences, evidence, observers,
//     trace and history as a model's step; HistoryItem.Source "replay").
//     Only actions that ran are replayed: denied and failed ones are
//     skipped and say so (ReplayedAction.Skipped). A step whose batch a
//     fence cut short on replay continues with its remaining actions in the
//     next step.
//   - Elements. Each element action re-identifies its element on the new
//     observation with agent/match (match.Find: hash, stable hash, role and
//     name, attributes, XPath, position); the action's index is rewritten
//     to the element found, and ActionRecord.Match says how. A recorded
//     href is rebased with the URLs (Rebase). A match that fell back on
//     position (Ambiguous), and an element action recorded without its
//     element (an older history: its recorded index is a choice by
//     position), is put to Settings.Approver in the action's one approval
//     request (ApprovalRequest.Match and Note); a denial fails the step
//     as ambiguous (ErrReplayAmbiguous and ErrDenied; a heal may name the
//     element). Any other denial ends the replay (ErrReplayOutcome and
//     ErrDenied).
//   - Preconditions, per step, polled on fresh observations (every 100 ms,
//     no fixed pause) until they hold, or the page stayed unchanged with
//     no request pending for max(1 s, SettleTimeout/5) with them failing,
//     or ReplayOptions.SettleTimeout passes: the page's URL
//     matches the recorded one (after Rebase: same scheme and host, same
//     path where path segments that look like ids — digits, UUIDs, long hex
//     — match any id; the query and fragment are ignored), every element
//     action's element is found uniquely, and the page is settled (the
//     same fingerprint on two observations in a row when an element or the
//     URL was missing at first). Steps that begin with a navigation (navigate,
//     search, go_back, switch_tab) do not depend on the page and have no URL
//     precondition.
//   - Outcome. Each replayed action's verdict is compared with the recorded
//     one (compatibleVerdict): the same verdict always agrees; a recorded
//     no_change accepts anything but failed; a recorded changed also
//     accepts navigated (a site that now reloads instead of re-rendering);
//     a recorded "" (actions without evidence) accepts anything but failed;
//     an action that sets a field's value (input, select_dropdown,
//     upload_file) recorded as changed also accepts no_change; navigate
//     accepts anything but failed (a tab already at the URL reloads it
//     without a URL change). A replayed done that the done check holds
//     back fails. Otherwise (e.g. expected
//     navigated, got no_change) the step failed (HistoryItem.Error). The
//     batch goes on after such an action as in a Run: every action that
//     ran is accounted (RunStep, Got), the first failure is the step's.
//   - Healing. A step whose element is not found uniquely, whose
//     precondition fails or whose outcome differs is handed to
//     ReplayOptions.Model for that step alone (HistoryItem.Source "heal"):
//     its prompt carries the original task, the recorded step's goal and
//     evaluation, the action and its element described and what went
//     wrong. After the model's step replay resumes: a heal for a missing
//     element or precondition retries the recorded step when its
//     precondition now holds (the model opened a menu), else moves on when
//     the next recorded step's precondition holds (the model did the action
//     itself; when the next step begins with a navigation, being on the
//     page it was recorded on, if that differs from the broken step's, is
//     the evidence); a heal for an outcome moves on first, and a retry
//     runs the failed action again but never an action after it that ran.
//     A held-back done in the last recorded step is not replayed again:
//     the heal's own accepted done ends the replay (Healed, not Replayed).
//     At most MaxHealCalls model calls per recorded step; a heal whose
//     model call fails ends the replay at once (ErrReplayNeedsModel with
//     the model's error and the step's failure), as another call would
//     most likely fail alike. Without a model the run stops with a
//     *ReplayError naming the step, the action, the element and the
//     candidates (secrets the live page shows scrubbed). Cancelling ctx
//     ends the replay with ctx's error, never a ReplayError, and asks no
//     heal.
//   - Variables. Values typed (input text), selected (select_dropdown text)
//     and uploaded (upload_file path) are variables, named from their
//     element (name, id, placeholder, aria-label, label, type; snake_case,
//     made unique), ReplayVariables lists them; ReplayOptions.Vars
//     overrides them by name (an unknown name is an error listing the
//     known ones). A recorded <secret>name</secret> placeholder stays a
//     placeholder: it is resolved from Settings.SensitiveData when the
//     action runs, as in a Run, and never stored.
//   - Non-element actions (navigate with its URL rebased, scroll of the
//     page, send_keys, go_back, files...) replay as recorded; a wait
//     lasts at most 1 s (the next step's settle polling awaits what it
//     awaited);
//     switch_tab and close_tab name the open tab showing the page the
//     recorded tab showed (tab ids differ from run to run; none or several:
//     ErrReplayPrecondition). extract asks a model: without one the step stops with
//     ErrReplayNeedsModel. done replays the recorded done (text and
//     success): ReplayResult says it was replayed, not re-derived.
//   - Lean. Replayed steps take no screenshot (unless Settings.Vision is
//     VisionOn; a heal's step takes one unless it is VisionOff), no pause
//     between actions (1 ms instead of WaitBetweenActions), no prompt and
//     no token counting; no history compaction (it would be a second model
//     call in a heal's step) unless Settings.CompactionModel is set.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
)

// Replay defaults.
const (
	// DefaultMaxHealCalls bounds the model calls that mend one recorded
	// step.
	DefaultMaxHealCalls = 3
	// DefaultSettleTimeout bounds the wait for a step's precondition.
	DefaultSettleTimeout = 10 * time.Second
)

// Replay errors. Every error Replay and PlanReplay return for a recording
// that cannot be replayed wraps ErrReplay; the others say why.
var (
	ErrReplay = errors.New("agent: replay")
	// ErrReplayNoMatch: an element action's element is not on the page.
	ErrReplayNoMatch = fmt.Errorf("%w: element not found", ErrReplay)
	// ErrReplayAmbiguous: several elements match and none could be chosen
	// (or the approval policy refused the choice by position).
	ErrReplayAmbiguous = fmt.Errorf("%w: element ambiguous", ErrReplay)
	// ErrReplayOutcome: the action ran but its verdict differs from the
	// recording's.
	ErrReplayOutcome = fmt.Errorf("%w: outcome differs from the recording", ErrReplay)
	// ErrReplayPrecondition: the page is not where the recorded step ran
	// (URL) within SettleTimeout.
	ErrReplayPrecondition = fmt.Errorf("%w: precondition not met", ErrReplay)
	// ErrReplayNeedsModel: the step needs a model (extract, or a heal) and
	// ReplayOptions.Model is nil, or its heal calls are used up.
	ErrReplayNeedsModel = fmt.Errorf("%w: needs a model", ErrReplay)
	// ErrReplayVars: ReplayOptions.Vars names a variable the recording
	// does not have, or sets a secret.
	ErrReplayVars = fmt.Errorf("%w: variables", ErrReplay)
	// ErrReplayEmpty: the history has no step to replay.
	ErrReplayEmpty = fmt.Errorf("%w: nothing to replay", ErrReplay)
)

// ReplayOptions configure Replay and PlanReplay.
type ReplayOptions struct {
	// Settings are the Run's (Approver, Observers, RunDir, SensitiveData,
	// Tools, StepTimeout, Human, Logger...). Replay sets MaxSteps (per
	// recorded step one per action and its heals, plus 2), MaxFailures
	// (at least MaxHealCalls+2), CompactEverySteps (off unless
	// CompactionModel is set), WaitBetweenActions (1 ms),
	// DirectlyOpenURL (off: the recording's own navigation replays),
	// InitialActions (none) and Vision (auto, so that only heals take a
	// screenshot, unless VisionOn or VisionOff is asked) itself.
	Settings Settings
	// Model heals the steps that break; nil: no healing, a broken step
	// ends the replay with a *ReplayError.
	Model llm.Model
	// Vars override recorded values by variable name (ReplayVariables).
	Vars map[string]string
	// Rebase maps a recorded origin ("http://127.0.0.1:8080") to the
	// origin to use instead, for navigations, URL preconditions, tabs and
	// recorded link hrefs. Keys and values must be origins (scheme and
	// host; no path, query or fragment), else an error wrapping ErrReplay;
	// origins compare case-insensitively. PlanReplay notes a key no
	// recorded URL has.
	Rebase map[string]string
	// MaxHealCalls bounds the model calls per recorded step; 0:
	// DefaultMaxHealCalls.
	MaxHealCalls int
	// SettleTimeout bounds the wait for a step's precondition (a page
	// still changing or loading is awaited up to it; a page unchanged with
	// no request pending for max(1 s, SettleTimeout/5) fails sooner); 0:
	// DefaultSettleTimeout.
	SettleTimeout time.Duration
}

// ReplayedAction is what became of one recorded action.
type ReplayedAction struct {
	// Step and Action locate the action in the recording (Action is its
	// 0-based position in the step); Name is the action's name.
	Step   int    `json:"step"`
	Action int    `json:"action"`
	Name   string `json:"name"`
	// RunStep is the step of the replay that ran it (0 when it did not).
	RunStep int `json:"run_step,omitempty"`
	// Match is how its element was found; nil for actions without one.
	Match *match.Result `json:"match,omitempty"`
	// Expected is the recorded verdict, Got the replay's.
	Expected events.Verdict `json:"expected,omitempty"`
	Got      events.Verdict `json:"got,omitempty"`
	// Error is the replayed action's error, if it failed.
	Error string `json:"error,omitempty"`
	// Healed reports that the model mended this action's step (it ran
	// after a heal, or the heal did it in its place: then RunStep is the
	// heal's step and Skipped says so).
	Healed bool `json:"healed,omitempty"`
	// Skipped reports that the action was not replayed; Why says why
	// (denied or failed in the recording, done by a heal, the run ended).
	Skipped bool   `json:"skipped,omitempty"`
	Why     string `json:"why,omitempty"`
	// Replayed marks a done whose text and success are the recording's,
	// not re-derived from the page.
	Replayed bool `json:"replayed,omitempty"`
}

// ReplayResult is what Replay did.
type ReplayResult struct {
	// Result is the underlying Run's result.
	Result *Result
	// Actions has one entry per recorded action, in order.
	Actions []ReplayedAction
	// ModelCalls counts the model calls made (heals, extracts, also with
	// Settings.ExtractModel, compaction with Settings.CompactionModel);
	// Healed the recorded steps a heal mended.
	ModelCalls int
	Healed     int
	// History is the replay's own history (HistoryItem.Source says which
	// steps were replayed and which healed).
	History *History
}

// ReplayError says which recorded step could not be replayed and why.
type ReplayError struct {
	// Step is the recorded step, Action the action's position in it (-1
	// for the step as a whole), Name the action's name.
	Step   int
	Action int
	Name   string
	// URL is the page's URL when the step failed.
	URL string
	// Element describes the recorded element ("" for none).
	Element string
	// Err is one of the ErrReplay* sentinels, possibly wrapped with detail.
	Err error
	// Candidates are the elements the matcher considered, best first.
	Candidates []match.Candidate
}

func (e *ReplayError) Error() string {
	s := fmt.Sprintf("replay step %d", e.Step)
	if e.Action >= 0 {
		s += fmt.Sprintf(" action %d (%s)", e.Action, e.Name)
	}
	if e.Element != "" {
		s += " on " + e.Element
	}
	if e.URL != "" {
		s += " at " + e.URL
	}
	s += ": " + e.Err.Error()
	if len(e.Candidates) > 0 {
		s += "; candidates:"
		for _, c := range e.Candidates {
			s += fmt.Sprintf(" [%d]<%s>%q %.2f", c.Index, c.Tag, c.Name, c.Score)
		}
	}
	return s
}

// Unwrap returns Err.
func (e *ReplayError) Unwrap() error { return e.Err }

// Variable is a value the recording typed, selected or uploaded.
type Variable struct {
	Name string `json:"name"`
	// Value is the recorded value; "" for a secret.
	Value string `json:"value,omitempty"`
	// Secret marks a <secret>name</secret> placeholder: its value comes
	// from Settings.SensitiveData at replay time.
	Secret bool `json:"secret,omitempty"`
	// Step and Action locate it in the recording.
	Step   int `json:"step"`
	Action int `json:"action"`
}

// ReplayPlan is what a replay will do (PlanReplay), without a browser.
type ReplayPlan struct {
	Task  string        `json:"task"`
	Steps []PlannedStep `json:"steps"`
	Vars  []Variable    `json:"vars,omitempty"`
	// Notes are warnings: steps that will need a model, variables
	// without a value.
	Notes []string `json:"notes,omitempty"`
}

// PlannedStep is one recorded step as the replay will run it.
type PlannedStep struct {
	Step int `json:"step"`
	// URL is the precondition's URL (rebased); "" when the step begins
	// with a navigation.
	URL string `json:"url,omitempty"`
	// Goal is the recorded step's next_goal.
	Goal    string          `json:"goal,omitempty"`
	Actions []PlannedAction `json:"actions"`
}

// PlannedAction is one recorded action as the replay will run it.
type PlannedAction struct {
	Action int    `json:"action"`
	Name   string `json:"name"`
	// Params are the parameters the replay will use (variables applied,
	// URLs rebased, secrets as placeholders; the index is the recorded one
	// and is rewritten at replay time).
	Params json.RawMessage `json:"params,omitempty"`
	// Target describes the element; Cascade lists, in order, the match
	// strategies that can find it with the recorded values they compare.
	Target  string   `json:"target,omitempty"`
	Cascade []string `json:"cascade,omitempty"`
	// Var is the variable the action uses ("" for none).
	Var string `json:"var,omitempty"`
	// Skipped says why the action will not run ("" when it will).
	Skipped string `json:"skipped,omitempty"`
	// NeedsModel marks an action that will ask the model (extract).
	NeedsModel bool `json:"needs_model,omitempty"`
}

// Replay runs the recorded history h on b (a started session) without the
// model, healing the steps that break with opt.Model when it is set. The
// error is non-nil when the replay did not reach the recording's end: a
// *ReplayError (errors.Is ErrReplay and one of its sentinels) for a step
// that could not be replayed (or a run that ended before the recording's
// end, a heal's done included), ctx's error when ctx ended it, or the
// Run's own error; ReplayResult is
// then what happened so far. Bad input (an empty history, unknown or
// secret Vars, Settings the agent refuses) is an error with a nil result
// before anything runs.
func Replay(ctx context.Context, b Browser, h *History, opt ReplayOptions) (*ReplayResult, error) {
	return replay(ctx, b, h, opt)
}

// PlanReplay says what Replay would do with h and opt, without a browser:
// the steps, how each element will be matched, the URL preconditions and
// the variables. It fails as Replay would before starting: an empty
// history, an unknown variable in opt.Vars, a secret set through Vars.
func PlanReplay(h *History, opt ReplayOptions) (*ReplayPlan, error) {
	return planReplay(h, opt)
}

// ReplayVariables lists the values h's actions typed, selected or uploaded,
// by name, in recording order.
func ReplayVariables(h *History) []Variable {
	return replayVariables(h)
}

// WriteText writes the plan for a person (browseragent replay --dry-run).
func (p *ReplayPlan) WriteText(w io.Writer) error {
	return p.writeText(w)
}
