package temporal

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/pool"
)

// TestIdleAttemptClosed: an attempt that no Step reaches within its
// IdleTimeout (the workflow gave its session up, the worker never heard:
// a network split) is closed on the worker — trace closed, pool slot
// free — and a late Step for it is refused with ErrUnknownRun. The
// activities run in the SDK's activity test environment on real Chromium.
func TestIdleAttemptClosed(t *testing.T) {
	s := newSite(t)
	p, err := pool.New(pool.Config{MaxSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("pool close: %v", err)
		}
	})
	acts := newActivities(WorkerConfig{Pool: p, Model: &holdModel{called: make(chan struct{}, 1)},
		RunDir: t.TempDir(), Identity: "idle", Logger: zap.NewNop()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := acts.closeAll(ctx); err != nil {
			t.Errorf("closeAll: %v", err)
		}
	})
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.Open, activity.RegisterOptions{Name: activityOpen})
	env.RegisterActivityWithOptions(acts.Step, activity.RegisterOptions{Name: activityStep})

	const key = "wf/run/0"
	v, err := env.ExecuteActivity(activityOpen, OpenInput{Key: key, Task: "fill the form", StartURL: s.URL("i1"),
		MaxSteps: 5, HeartbeatTimeout: testHeartbeat, IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var or OpenResult
	if err := v.Get(&or); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.InUse != 1 {
		t.Fatalf("pool stats after Open: %+v, want InUse 1", st)
	}
	// Poll for the reap (the bound is generous; IdleTimeout paces it).
	deadline := time.Now().Add(2 * time.Minute)
	for acts.OpenRuns() != 0 || p.Stats().InUse != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the idle attempt is still open: %d runs, pool %+v", acts.OpenRuns(), p.Stats())
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	if typ := lastRecordType(t, filepath.Join(or.RunDir, "trace.jsonl")); typ != "close" {
		t.Errorf("the reaped attempt's trace ends with %q, want close", typ)
	}
	_, err = env.ExecuteActivity(activityStep, StepInput{Key: key, HeartbeatTimeout: testHeartbeat})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "UnknownRun" {
		t.Errorf("a Step after the reap: %v, want an UnknownRun application error", err)
	}
}
