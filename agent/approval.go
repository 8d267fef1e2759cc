package agent

import (
	"context"
	"encoding/json"

	"github.com/browseragent/browseragent/agent/match"
)

// ApprovalRequest describes an action about to run.
type ApprovalRequest struct {
	// Action is the action name; Params its parameters as the model wrote
	// them (secret placeholders are not resolved).
	Action string
	Params json.RawMessage
	// Risk is the action's risk class.
	Risk Risk
	// URL is the focused page's URL when the step observed it, secrets
	// scrubbed.
	URL string
	// Step is the step number.
	Step int
	// Match is set when a replay chose the action's element by its
	// position among look-alikes (match.Result.Ambiguous), or took the
	// recorded index of an action recorded without its element: the
	// candidates and their scores (secrets scrubbed), for the person or
	// rule deciding; Note says so in words. This is the action's only
	// approval request. A denial fails the replayed step as ambiguous
	// (ErrReplayAmbiguous and ErrDenied).
	Match *match.Result
	Note  string
}

// approvalNote is ApprovalRequest.Match and Note for one call, set by the
// replay and read by act, so the Approver is asked once per action.
type approvalNote struct {
	match *match.Result
	note  string
}

// Decision is an Approver's answer.
type Decision struct {
	Allow bool
	// Reason is shown to the model when the action is denied.
	Reason string
}

// Approver decides, before each action runs, whether it may run. A denial
// becomes that action's result ("denied by approval policy: <reason>") and
// stops the batch; an error does the same with the error's text. Approve is
// called on the Run goroutine, never under a lock; it may block (a person
// answering), bounded by the step's context.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// AllowAll is the default Approver: every action runs.
type AllowAll struct{}

// Approve allows.
func (AllowAll) Approve(context.Context, ApprovalRequest) (Decision, error) {
	return Decision{Allow: true}, nil
}

// DenyRisks is an Approver that denies the listed risk classes and allows
// the rest, e.g. DenyRisks{RiskScript: "no page scripts in this deployment"}.
type DenyRisks map[Risk]string

// Approve denies the listed classes with their reason.
func (d DenyRisks) Approve(_ context.Context, req ApprovalRequest) (Decision, error) {
	if reason, ok := d[req.Risk]; ok {
		return Decision{Allow: false, Reason: reason}, nil
	}
	return Decision{Allow: true}, nil
}

// JudgeInput is what a Judge grades.
type JudgeInput struct {
	Task        string
	FinalText   string
	Success     bool
	History     *History
	Screenshots [][]byte // the last screenshots of the run (PNG), at most 10
}

// Judgement is a Judge's verdict.
type Judgement struct {
	Verdict       bool   `json:"verdict"`
	Reasoning     string `json:"reasoning"`
	FailureReason string `json:"failure_reason,omitempty"`
	Impossible    bool   `json:"impossible_task,omitempty"`
}

// Judge grades a finished run. It is optional (Settings.Judge): a model
// judge doubles the cost of the final step. The verdict is attached to the
// Result and never changes the agent's own Success.
type Judge interface {
	Judge(ctx context.Context, in JudgeInput) (Judgement, error)
}
