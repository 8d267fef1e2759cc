package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
)

// SourceResume marks the first step of a resumed run: the restore of the
// page the recorded run had reached, without a model call (Resume).
const SourceResume StepSource = "resume"

// Errors of Step, EndRun and Resume.
var (
	// ErrRunEnded: Step was called after the run it belongs to ended
	// (Step returned a Result) and no follow-up task was added.
	ErrRunEnded = errors.New("agent: the run has ended")
	// ErrResume: a recorded run cannot be resumed (nothing to resume, the
	// history ends with done, the restore failed). A restore that failed on
	// a step is a *ResumeError.
	ErrResume = errors.New("agent: resume")
)

// ResumeOptions configure Resume.
type ResumeOptions struct {
	// FromStart replays every recorded action (Replay's semantics: clicks
	// and submits included) instead of re-navigating to the last page and
	// re-applying only the input actions done on it. For sites whose state
	// lives in the browser (a login) and is lost with it.
	FromStart bool
	// Vars override recorded values by variable name (ReplayVariables).
	Vars map[string]string
	// Rebase maps a recorded origin to the origin to use instead
	// (ReplayOptions.Rebase).
	Rebase map[string]string
	// SettleTimeout bounds the wait for each restored step's precondition;
	// 0: DefaultSettleTimeout.
	SettleTimeout time.Duration
}

// ResumeError says which recorded step the restore could not re-apply.
type ResumeError struct {
	// Step is the recorded step, Action the action's position in it (-1
	// for the step as a whole), Name the action's name.
	Step   int
	Action int
	Name   string
	// Err is why (wraps a replay sentinel when the replay machinery failed).
	Err error
}

func (e *ResumeError) Error() string {
	s := fmt.Sprintf("agent: resume: recorded step %d", e.Step)
	if e.Action >= 0 {
		s += fmt.Sprintf(" action %d (%s)", e.Action, e.Name)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns ErrResume and Err.
func (e *ResumeError) Unwrap() []error { return []error{ErrResume, e.Err} }

// Resume returns an agent that continues the run recorded in h (the items
// of the steps done so far, e.g. collected from Step's returned items) on b,
// a started browser that has lost the page (a new worker). task, model and
// set are as for New.
//
// Its first Step is the restore, recorded as a HistoryItem whose Source is
// SourceResume, with no model call: it navigates to the page the last
// navigating step of h reached and re-applies the input actions (input,
// select_dropdown, upload_file, scroll) done on that page since, matched
// with Replay's cascade; clicks, key presses, drags and other actions that
// may have committed something are not repeated (a resumed run must not
// repeat a side effect: the model sees the history and the fresh page and
// decides). opt.FromStart replays every recorded action instead. Then the
// model continues: the agent's History starts with h's items, so step
// numbers and the model's memory carry on.
//
// A restore that cannot find an element or gets another outcome ends the
// resumed run: the first Step returns a *ResumeError (errors.Is ErrResume)
// naming the recorded step. An h with no step is no resume: the agent
// starts like New's. An h whose last step is an accepted done is an error
// (ErrResume): there is nothing to resume.
func Resume(task string, model llm.Model, b Browser, set Settings, h *History, opt ResumeOptions) (*Agent, error) {
	return nil, fmt.Errorf("%w: not implemented", ErrResume)
}

// Step runs one step of the run and returns its item. The first Step of a
// run opens it (observers see RunStarted) and runs the initial actions as
// step 0 when there are any; each later Step runs one step. When the run
// ends (done, MaxSteps, MaxFailures, the budget, a source's halt, the
// browser gone, ctx cancelled) Step returns the Result (non-nil), with
// history.json saved and RunEnded told once; the error is then Run's.
// Run is Step until the Result is non-nil. A Step after the end returns
// ErrRunEnded, unless AddTask added a task: then it opens the next run as
// Run does. Step must not be called concurrently with itself or Run
// (ErrRunning).
func (a *Agent) Step(ctx context.Context) (HistoryItem, *Result, error) {
	return HistoryItem{}, nil, errors.New("agent: Step not implemented")
}

// EndRun ends a stepped run early (cancellation, a worker shutting down):
// the run's Result so far gets cause in Errors (and Err), history.json is
// saved and observers see RunEnded. It returns that Result; nil when no run
// is open (never stepped, or already ended) or a Step or Run is in
// progress. Idempotent.
func (a *Agent) EndRun(ctx context.Context, cause error) *Result {
	return nil
}
