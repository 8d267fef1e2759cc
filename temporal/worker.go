package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/pool"
)

// WorkerConfig configures NewWorker. Pool and Model are required.
type WorkerConfig struct {
	// Pool holds the worker's browser sessions; the caller owns it (closes
	// it after the worker stopped).
	Pool *pool.Pool
	// MaxSessions is the number of tasks this worker runs at once (the
	// SDK's MaxConcurrentSessionExecutionSize): the pool's MaxSessions.
	// Default 1.
	MaxSessions int
	// Model answers every step. Settings are the agent's settings
	// (RunDir, MaxSteps and InitialActions are set per attempt).
	Model    llm.Model
	Settings agent.Settings
	// RunDir holds one directory per attempt (trace.jsonl, history.json,
	// the agent's files). Default $TMPDIR/browseragent-temporal.
	RunDir string
	// Identity names the worker in Temporal and in TaskResult.Attempts.
	// Default "browseragent@HOST:PID".
	Identity string
	// Logger; default zap.NewNop().
	Logger *zap.Logger
}

// ErrConfig is NewWorker's error for a missing pool or model.
var ErrConfig = errors.New("temporal: invalid worker config")

// Worker is a Temporal worker running TaskWorkflow and its activities.
// Stop (or the end of Run) closes the attempts still open on it: their
// runs end with "the worker is stopping", their traces are closed and
// their leases released. The pool stays the caller's.
type Worker struct {
	worker.Worker
	acts *Activities
}

// NewWorker returns a worker for queue that runs TaskWorkflow with
// sessions pinned to it (at most cfg.MaxSessions at once).
func NewWorker(c client.Client, queue string, cfg WorkerConfig) (*Worker, error) {
	if cfg.Pool == nil || cfg.Model == nil {
		return nil, fmt.Errorf("%w: Pool and Model are required", ErrConfig)
	}
	if c == nil || queue == "" {
		return nil, fmt.Errorf("%w: a client and a task queue are required", ErrConfig)
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 1
	}
	if cfg.RunDir == "" {
		cfg.RunDir = filepath.Join(os.TempDir(), "browseragent-temporal")
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("browseragent@%s:%d", host, os.Getpid())
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, err
	}
	acts := newActivities(cfg)
	w := worker.New(c, queue, worker.Options{
		Identity:                          cfg.Identity,
		EnableSessionWorker:               true,
		MaxConcurrentSessionExecutionSize: cfg.MaxSessions,
	})
	register(w, acts)
	return &Worker{Worker: w, acts: acts}, nil
}

// register registers TaskWorkflow and acts' activities on r under their
// names (WorkflowName; browseragent.Open, .Step, .Close).
func register(r worker.Registry, acts *Activities) {
	r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(acts.Open, activity.RegisterOptions{Name: activityOpen})
	r.RegisterActivityWithOptions(acts.Step, activity.RegisterOptions{Name: activityStep})
	r.RegisterActivityWithOptions(acts.Close, activity.RegisterOptions{Name: activityClose})
}

// Stop stops the worker and closes the attempts still open on it.
func (w *Worker) Stop() {
	w.Worker.Stop()
	w.closeAll()
}

// Run runs the worker until interruptCh delivers (worker.InterruptCh()),
// then stops it like Stop.
func (w *Worker) Run(interruptCh <-chan interface{}) error {
	err := w.Worker.Run(interruptCh)
	w.closeAll()
	return err
}

func (w *Worker) closeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.acts.closeAll(ctx); err != nil {
		w.acts.log.Warn("closing open attempts", zap.Error(err))
	}
}

// OpenRuns is the number of attempts open on this worker.
func (w *Worker) OpenRuns() int { return w.acts.OpenRuns() }
