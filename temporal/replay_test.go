package temporal

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replayHistories replays each finished workflow's recorded history
// against TaskWorkflow as it is now: a workflow change that would break
// the tasks in flight on a rolling deploy (a non-deterministic command
// order) fails here, on the histories of the paths the test took (a lost
// worker and its resume, a cancellation).
func replayHistories(t *testing.T, ctx context.Context, c client.Client, workflowIDs ...string) {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	// The check has teeth: a workflow that starts with a timer the
	// recording never had must fail the same histories.
	changed := worker.NewWorkflowReplayer()
	changed.RegisterWorkflowWithOptions(func(ctx workflow.Context, in TaskInput) (TaskResult, error) {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return TaskResult{}, err
		}
		return TaskWorkflow(ctx, in)
	}, workflow.RegisterOptions{Name: WorkflowName})
	for _, id := range workflowIDs {
		h := &historypb.History{}
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			h.Events = append(h.Events, ev)
		}
		if len(h.Events) == 0 {
			t.Errorf("history of %s: no events", id)
			continue
		}
		if err := r.ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("replaying %s's history (%d events) against TaskWorkflow: %v", id, len(h.Events), err)
		}
		if err := changed.ReplayWorkflowHistory(nil, h); err == nil {
			t.Errorf("%s's history replays against a changed workflow too: the replay checks nothing", id)
		}
	}
}
