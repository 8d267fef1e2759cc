// Package temporal runs browseragent tasks as Temporal workflows: one
// workflow per task, the browser session pinned to one worker with the
// SDK's sessions, each agent step a heartbeating activity, and a run whose
// worker died resumed on another worker from the steps the workflow
// recorded (agent.Resume), not started over.
//
// The workflow (TaskWorkflow) is:
//
//	CreateSession → Open (a pool lease, agent.New or agent.Resume, a trace)
//	  → Step … Step (one agent step each; the workflow keeps every step's
//	    HistoryItem) → Close (EndRun when needed, the lease released, the
//	    trace closed) → CompleteSession
//
// When the session fails (its worker stopped heartbeating) or a step's
// heartbeat times out, a new session is created on whichever worker takes
// it and Open resumes from the recorded steps, at most TaskInput.MaxResumes
// times. Step activities are never retried by Temporal: the resume is the
// retry. See docs/scaling.md ("Runs on Temporal").
//
// This package lives in its own Go module so that the core module never
// depends on Temporal.
package temporal

import (
	"errors"
	"time"

	"github.com/browseragent/browseragent/agent"
)

// Defaults of TaskInput's zero fields.
const (
	DefaultMaxSteps                = 50
	DefaultStepTimeout             = 5 * time.Minute
	DefaultHeartbeatTimeout        = 20 * time.Second
	DefaultSessionHeartbeatTimeout = 20 * time.Second
	DefaultSessionCreationTimeout  = 10 * time.Minute
	DefaultOpenTimeout             = 3 * time.Minute
	DefaultMaxResumes              = 3
	DefaultIdleTimeout             = time.Minute
)

// TaskInput is one task submitted to TaskWorkflow. Zero fields take the
// documented defaults. It is stored in Temporal's history as it is: it
// has no secrets field on purpose. Secrets are the worker's
// (WorkerConfig.Settings.SensitiveData, the command's --secret-env),
// and the agent keeps them out of the recorded steps.
type TaskInput struct {
	// Task is what the agent is asked to do. Required.
	Task string `json:"task"`
	// StartURL, when set, is opened as step 0 (before the first model
	// call); otherwise the agent opens a URL the task names.
	StartURL string `json:"start_url,omitempty"`
	// MaxSteps is the agent's step budget for the whole task, across
	// resumes. Default DefaultMaxSteps (50).
	MaxSteps int `json:"max_steps,omitempty"`
	// StepTimeout bounds one Step activity (observation, model call,
	// actions). Default DefaultStepTimeout (5 min).
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
	// HeartbeatTimeout: a Step (or Open) activity that has not heartbeated
	// for this long is taken as lost with its worker. The activity
	// heartbeats every third of it. Default DefaultHeartbeatTimeout (20 s).
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// SessionHeartbeatTimeout: a session whose worker has not heartbeated
	// for this long fails (workflow.ErrSessionFailed). Default
	// DefaultSessionHeartbeatTimeout (20 s).
	SessionHeartbeatTimeout time.Duration `json:"session_heartbeat_timeout,omitempty"`
	// SessionCreationTimeout bounds the wait for a worker with a free
	// session slot. Default DefaultSessionCreationTimeout (10 min).
	SessionCreationTimeout time.Duration `json:"session_creation_timeout,omitempty"`
	// OpenTimeout bounds the Open activity (a pool slot, a browser context
	// or a browser, the resume's restore runs in the first Step). Default
	// DefaultOpenTimeout (3 min).
	OpenTimeout time.Duration `json:"open_timeout,omitempty"`
	// MaxResumes is how many times a lost session is resumed on a new
	// one; the task fails with ErrTooManyResumes after that. Default
	// DefaultMaxResumes (3); negative: never resume.
	MaxResumes int `json:"max_resumes,omitempty"`
	// IdleTimeout: an attempt open on a worker that no Step reaches for
	// this long after Open or the previous Step is closed there (run
	// ended, trace closed, pool slot freed). It reclaims the slot of a
	// session the workflow gave up on while its worker lived on (a
	// network split: the worker never hears of it, no Close comes). It
	// must exceed the workflow's own pause between two steps (a workflow
	// task, retried after the workflow task timeout of 10 s when the
	// worker running it died). Default DefaultIdleTimeout (1 min).
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"`
	// FromStart makes a resume replay every recorded step from the start
	// (agent.ResumeOptions.FromStart) instead of re-navigating to the last
	// page reached.
	FromStart bool `json:"from_start,omitempty"`
}

// ErrNoTask is the workflow's error for an input without a task.
var ErrNoTask = errors.New("temporal: the task is empty")

// ErrTooManyResumes ends a task whose session was lost more than
// TaskInput.MaxResumes times.
var ErrTooManyResumes = errors.New("temporal: the task's session was lost too many times")

func (in TaskInput) withDefaults() TaskInput {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if in.MaxSteps <= 0 {
		in.MaxSteps = DefaultMaxSteps
	}
	def(&in.StepTimeout, DefaultStepTimeout)
	def(&in.HeartbeatTimeout, DefaultHeartbeatTimeout)
	def(&in.SessionHeartbeatTimeout, DefaultSessionHeartbeatTimeout)
	def(&in.SessionCreationTimeout, DefaultSessionCreationTimeout)
	def(&in.OpenTimeout, DefaultOpenTimeout)
	def(&in.IdleTimeout, DefaultIdleTimeout)
	if in.MaxResumes == 0 {
		in.MaxResumes = DefaultMaxResumes
	}
	return in
}

// How an attempt ended (Attempt.Ended).
const (
	EndedDone      = "done"      // the run ended (done, step budget, fatal error)
	EndedLost      = "lost"      // the session or a step's heartbeat was lost: resumed
	EndedFailed    = "failed"    // Open or a step failed on the worker: resumed
	EndedCancelled = "cancelled" // the workflow was cancelled
)

// TaskResult is TaskWorkflow's result: the run's outcome, every attempt,
// and every step's verdicts.
type TaskResult struct {
	// Done reports that the agent called done; Success is its claim.
	Done    bool   `json:"done"`
	Success bool   `json:"success"`
	Final   string `json:"final_text,omitempty"`
	// Steps is the number of steps recorded (the resume steps included).
	Steps int `json:"steps"`
	// Errors are the run's step-level errors and why it stopped when it
	// stopped without done.
	Errors []string `json:"errors,omitempty"`
	// Cancelled reports that the workflow was cancelled; the result holds
	// what was done until then.
	Cancelled bool `json:"cancelled,omitempty"`
	// Attempts are the sessions the task ran in, in order.
	Attempts []Attempt `json:"attempts"`
	// Verdicts are the steps' actions and their outcomes, in step order.
	Verdicts []StepVerdict `json:"verdicts,omitempty"`
}

// Attempt is one session of a task: one worker, one browser context or
// browser, one trace.
type Attempt struct {
	// Worker is the worker's identity (WorkerConfig.Identity).
	Worker string `json:"worker"`
	// Session is the SDK session's ID.
	Session string `json:"session,omitempty"`
	// RunDir and Trace are the attempt's directory and trace file on that
	// worker's disk.
	RunDir string `json:"run_dir,omitempty"`
	Trace  string `json:"trace,omitempty"`
	// TraceHead is the trace's last record hash once it was closed.
	TraceHead string `json:"trace_head,omitempty"`
	// Resumed reports that the attempt continued recorded steps.
	Resumed bool `json:"resumed"`
	// FirstStep is the number of the attempt's first step (0 for a fresh
	// run; the resume step's number for a resumed one).
	FirstStep int `json:"first_step"`
	// Steps is how many steps the attempt recorded.
	Steps int `json:"steps"`
	// Ended is how the attempt ended: EndedDone, EndedLost, EndedFailed or
	// EndedCancelled; Error says why when it did not end done.
	Ended string `json:"ended"`
	Error string `json:"error,omitempty"`
}

// StepVerdict is one step's actions and their outcomes.
type StepVerdict struct {
	Step    int             `json:"step"`
	Attempt int             `json:"attempt"` // index into TaskResult.Attempts
	Source  string          `json:"source,omitempty"`
	URL     string          `json:"url,omitempty"`
	Error   string          `json:"error,omitempty"`
	Actions []ActionVerdict `json:"actions,omitempty"`
}

// ActionVerdict is one action of a step and how it went.
type ActionVerdict struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict,omitempty"`
	Error   string `json:"error,omitempty"`
}

func verdictOf(it agent.HistoryItem, attempt int) StepVerdict {
	v := StepVerdict{Step: it.Step, Attempt: attempt, Source: string(it.Source), URL: it.State.URL, Error: it.Error}
	for _, a := range it.Actions {
		v.Actions = append(v.Actions, ActionVerdict{Name: a.Name, Verdict: string(a.Verdict), Error: a.Error})
	}
	return v
}

// Activity payloads.

// OpenInput is the Open activity's input.
type OpenInput struct {
	// Key names the attempt on the worker (workflow ID, run ID, attempt).
	Key       string              `json:"key"`
	Task      string              `json:"task"`
	StartURL  string              `json:"start_url,omitempty"`
	MaxSteps  int                 `json:"max_steps"`
	FromStart bool                `json:"from_start,omitempty"`
	Items     []agent.HistoryItem `json:"items,omitempty"` // recorded steps: resume when non-empty
	// HeartbeatTimeout paces Open's own heartbeats.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
	// IdleTimeout closes the attempt when no Step reaches it for this
	// long (TaskInput.IdleTimeout); zero: never.
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"`
}

// OpenResult is what Open reports of the attempt.
type OpenResult struct {
	Worker string `json:"worker"`
	RunDir string `json:"run_dir"`
	Trace  string `json:"trace"`
}

// StepInput is the Step activity's input.
type StepInput struct {
	Key              string        `json:"key"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
}

// StepResult is one agent step: its record and, when the run ended, the
// result.
type StepResult struct {
	Item   agent.HistoryItem `json:"item"`
	Result *RunResult        `json:"result,omitempty"`
}

// RunResult is the serialisable part of agent.Result.
type RunResult struct {
	Done    bool     `json:"done"`
	Success bool     `json:"success"`
	Final   string   `json:"final_text,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

func runResultOf(r *agent.Result) *RunResult {
	if r == nil {
		return nil
	}
	return &RunResult{Done: r.Done, Success: r.Success, Final: r.FinalText, Errors: r.Errors}
}

// CloseInput is the Close activity's input.
type CloseInput struct {
	Key string `json:"key"`
	// Cause, when set, ends a run that has no result yet with it
	// (agent.EndRun).
	Cause string `json:"cause,omitempty"`
}

// CloseResult is what Close reports.
type CloseResult struct {
	TraceHead string     `json:"trace_head,omitempty"`
	Result    *RunResult `json:"result,omitempty"`
}
