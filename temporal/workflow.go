package temporal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/browseragent/browseragent/agent"
)

// Registered names of the workflow and its activities.
const (
	WorkflowName  = "browseragent.Task"
	activityOpen  = "browseragent.Open"
	activityStep  = "browseragent.Step"
	activityClose = "browseragent.Close"
	// activityPrefix is the prefix the Activities methods are registered
	// under (Open, Step, Close).
	activityPrefix = "browseragent."
)

// closeTimeout bounds the Close activity (EndRun, the lease released, the
// trace closed).
const closeTimeout = 2 * time.Minute

// noRetry: an activity is never retried by Temporal; a lost session is
// resumed by the workflow instead.
var noRetry = &temporal.RetryPolicy{MaximumAttempts: 1}

// TaskWorkflow runs one task: see the package doc. It returns the task's
// result; a cancelled workflow ends with a *temporal.CanceledError whose
// details hold the partial TaskResult.
func TaskWorkflow(ctx workflow.Context, in TaskInput) (TaskResult, error) {
	if strings.TrimSpace(in.Task) == "" {
		return TaskResult{}, temporal.NewNonRetryableApplicationError(ErrNoTask.Error(), "NoTask", ErrNoTask)
	}
	in = in.withDefaults()
	info := workflow.GetInfo(ctx)
	log := workflow.GetLogger(ctx)
	var (
		res   TaskResult
		items []agent.HistoryItem
	)
	for n := 0; ; n++ {
		key := fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.ID, info.WorkflowExecution.RunID, n)
		at, outcome := runAttempt(ctx, in, key, n, &items, &res)
		res.Attempts = append(res.Attempts, at)
		res.Steps = len(items)
		switch outcome {
		case outcomeEnded:
			return res, nil
		case outcomeCancelled:
			res.Cancelled = true
			return res, temporal.NewCanceledError(res)
		}
		if in.MaxResumes < 0 || n >= in.MaxResumes {
			res.Errors = append(res.Errors, fmt.Sprintf("%v (%d attempts)", ErrTooManyResumes, n+1))
			return res, temporal.NewNonRetryableApplicationError(ErrTooManyResumes.Error(), "TooManyResumes", ErrTooManyResumes, res)
		}
		log.Info("resuming the task on a new session", "attempt", n+1, "steps", len(items), "cause", at.Error)
	}
}

type outcome int

const (
	outcomeEnded outcome = iota
	outcomeLost
	outcomeCancelled
)

// runAttempt runs one session of the task: Open, Steps until the run ends
// or the session is lost, Close. Recorded steps are appended to items and
// their verdicts to res.
func runAttempt(ctx workflow.Context, in TaskInput, key string, n int, items *[]agent.HistoryItem, res *TaskResult) (Attempt, outcome) {
	at := Attempt{Resumed: len(*items) > 0}
	if at.Resumed {
		at.FirstStep = (*items)[len(*items)-1].Step + 1
	}
	base := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.OpenTimeout,
		HeartbeatTimeout:    in.HeartbeatTimeout,
		RetryPolicy:         noRetry,
	})
	sctx, err := workflow.CreateSession(base, &workflow.SessionOptions{
		CreationTimeout: in.SessionCreationTimeout,
		// The session lasts as long as the steps may.
		ExecutionTimeout: in.OpenTimeout + closeTimeout + time.Duration(in.MaxSteps+2)*in.StepTimeout,
		HeartbeatTimeout: in.SessionHeartbeatTimeout,
	})
	if err != nil {
		if ctx.Err() != nil {
			at.Ended, at.Error = EndedCancelled, "cancelled before a session was created"
			return at, outcomeCancelled
		}
		at.Ended, at.Error = EndedFailed, "no session: "+err.Error()
		return at, outcomeLost
	}
	defer workflow.CompleteSession(sctx)
	if si := workflow.GetSessionInfo(sctx); si != nil {
		at.Session, at.Worker = si.SessionID, si.HostName
	}

	// lost classifies an activity's failure: the workflow's cancellation,
	// or a session to give up on (and resume from the recorded steps).
	lost := func(what string, err error) outcome {
		if ctx.Err() != nil {
			at.Ended, at.Error = EndedCancelled, what+": cancelled"
			return outcomeCancelled
		}
		var te *temporal.TimeoutError
		var ce *temporal.CanceledError
		switch {
		case errors.Is(err, workflow.ErrSessionFailed), errors.As(err, &te), errors.As(err, &ce):
			at.Ended = EndedLost
		default:
			at.Ended = EndedFailed
		}
		at.Error = what + ": " + failureText(err)
		return outcomeLost
	}
	// closeRun ends the attempt on its worker: on the session, or on a
	// disconnected context when the workflow was cancelled (Close then
	// ends the run with cause).
	closeRun := func(cause string) {
		cctx := sctx
		if ctx.Err() != nil {
			cctx, _ = workflow.NewDisconnectedContext(sctx)
		}
		cctx = workflow.WithActivityOptions(cctx, workflow.ActivityOptions{
			ScheduleToStartTimeout: closeTimeout,
			StartToCloseTimeout:    closeTimeout,
			RetryPolicy:            noRetry,
		})
		var cr CloseResult
		if err := workflow.ExecuteActivity(cctx, activityClose, CloseInput{Key: key, Cause: cause}).Get(cctx, &cr); err != nil {
			workflow.GetLogger(ctx).Warn("Close failed", "key", key, "error", err)
			return
		}
		at.TraceHead = cr.TraceHead
		if cr.Result != nil && at.Ended == EndedCancelled {
			res.Errors = append(res.Errors, cr.Result.Errors...)
		}
	}

	var or OpenResult
	open := OpenInput{Key: key, Task: in.Task, StartURL: in.StartURL, MaxSteps: in.MaxSteps, FromStart: in.FromStart,
		Items: *items, HeartbeatTimeout: in.HeartbeatTimeout, IdleTimeout: in.IdleTimeout}
	if err := workflow.ExecuteActivity(sctx, activityOpen, open).Get(sctx, &or); err != nil {
		o := lost("open", err)
		closeRun(at.Error)
		return at, o
	}
	at.Worker, at.RunDir, at.Trace = or.Worker, or.RunDir, or.Trace

	stepCtx := workflow.WithActivityOptions(sctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.StepTimeout,
		HeartbeatTimeout:    in.HeartbeatTimeout,
		RetryPolicy:         noRetry,
	})
	for {
		var sr StepResult
		if err := workflow.ExecuteActivity(stepCtx, activityStep, StepInput{Key: key, HeartbeatTimeout: in.HeartbeatTimeout}).Get(stepCtx, &sr); err != nil {
			o := lost("step", err)
			closeRun(at.Error)
			return at, o
		}
		if at.Steps == 0 {
			at.FirstStep = sr.Item.Step
		}
		at.Steps++
		*items = append(*items, sr.Item)
		res.Verdicts = append(res.Verdicts, verdictOf(sr.Item, n))
		if r := sr.Result; r != nil {
			res.Done, res.Success, res.Final = r.Done, r.Success, r.Final
			res.Errors = append(res.Errors, r.Errors...)
			at.Ended = EndedDone
			closeRun("")
			return at, outcomeEnded
		}
	}
}

// failureText says why an activity failed without the ActivityError's
// wrapper ("activity error (type: …, identity: )"), whose identity is
// empty when the worker was lost: the session's failure, the timeout and
// its kind, or the worker's own error message.
func failureText(err error) string {
	var te *temporal.TimeoutError
	var ce *temporal.CanceledError
	var ae *temporal.ApplicationError
	switch {
	case errors.Is(err, workflow.ErrSessionFailed):
		return "the session's worker stopped heartbeating (session failed)"
	case errors.As(err, &te):
		if te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
			return "the worker stopped heartbeating (heartbeat timeout)"
		}
		return "timed out (" + te.TimeoutType().String() + ")"
	case errors.As(err, &ce):
		return "cancelled on the worker"
	case errors.As(err, &ae):
		return ae.Error()
	}
	return err.Error()
}
