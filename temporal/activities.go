package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/pool"
	"github.com/browseragent/browseragent/trace"
)

// ErrUnknownRun is a Step for an attempt this worker does not hold (it
// restarted, or the attempt was closed): the workflow resumes elsewhere.
var ErrUnknownRun = errors.New("temporal: no such run on this worker")

// Activities are the task's activities on one worker: Open, Step and Close
// (registered as browseragent.Open, .Step, .Close). Each open attempt holds
// a pool lease, an agent and a trace until Close. Safe for concurrent use;
// Step and Close of one attempt are serialised.
type Activities struct {
	pool     *pool.Pool
	model    llm.Model
	settings agent.Settings
	runDir   string
	identity string
	log      *zap.Logger

	mu   sync.Mutex
	runs map[string]*run
	// reaping counts the idle attempts being closed (closeAll waits).
	reaping sync.WaitGroup
}

// run is one open attempt.
type run struct {
	// busy is held by Step and Close: one at a time.
	busy   sync.Mutex
	lease  *pool.Lease
	agent  *agent.Agent
	tw     *trace.Writer
	traced *trace.AgentObserver
	dir    string
	trace  string
	result *agent.Result // set when the run ended
	closed bool
	// idle closes the attempt when no Step comes for idleAfter after Open
	// or the previous Step (nil: never). Stopped while a Step runs.
	idle      *time.Timer
	idleAfter time.Duration

	// cancelMu guards cancel, the running Step's cancel (Close stops it).
	cancelMu sync.Mutex
	cancel   context.CancelFunc
}

func (r *run) setCancel(c context.CancelFunc) {
	r.cancelMu.Lock()
	r.cancel = c
	r.cancelMu.Unlock()
}

func (r *run) stopStep() {
	r.cancelMu.Lock()
	c := r.cancel
	r.cancelMu.Unlock()
	if c != nil {
		c()
	}
}

func newActivities(cfg WorkerConfig) *Activities {
	return &Activities{pool: cfg.Pool, model: cfg.Model, settings: cfg.Settings, runDir: cfg.RunDir,
		identity: cfg.Identity, log: cfg.Logger, runs: map[string]*run{}}
}

// heartbeat records progress every third of timeout until the returned
// stop is called (stop waits for the goroutine to end).
func heartbeat(ctx context.Context, timeout time.Duration, progress func() any) (stop func()) {
	every := timeout / 3
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, progress())
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// dirName makes an attempt key a directory name.
func dirName(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, key)
}

// Open acquires a pool lease and starts the attempt's agent: agent.New, or
// agent.Resume when in.Items holds recorded steps. Its trace is
// RUNDIR/KEY/trace.jsonl. It heartbeats while it waits for a slot.
func (a *Activities) Open(ctx context.Context, in OpenInput) (OpenResult, error) {
	a.mu.Lock()
	_, dup := a.runs[in.Key]
	a.mu.Unlock()
	if dup {
		return OpenResult{}, temporal.NewNonRetryableApplicationError("attempt "+in.Key+" is already open", "DuplicateOpen", nil)
	}
	stop := heartbeat(ctx, in.HeartbeatTimeout, func() any { return "open" })
	defer stop()
	lease, err := a.pool.Acquire(ctx)
	if err != nil {
		return OpenResult{}, fmt.Errorf("acquire a session: %w", err)
	}
	r, err := a.start(ctx, in, lease)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := lease.Release(rctx); rerr != nil {
			a.log.Warn("release after a failed open", zap.String("key", in.Key), zap.Error(rerr))
		}
		return OpenResult{}, err
	}
	a.mu.Lock()
	a.runs[in.Key] = r
	if in.IdleTimeout > 0 {
		r.idleAfter = in.IdleTimeout
		r.idle = time.AfterFunc(in.IdleTimeout, func() { a.reap(in.Key, r) })
	}
	a.mu.Unlock()
	a.log.Info("attempt opened", zap.String("key", in.Key), zap.Int("recorded_steps", len(in.Items)), zap.String("trace", r.trace))
	return OpenResult{Worker: a.identity, RunDir: r.dir, Trace: r.trace}, nil
}

func (a *Activities) start(ctx context.Context, in OpenInput, lease *pool.Lease) (*run, error) {
	dir := filepath.Join(a.runDir, dirName(in.Key))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &run{lease: lease, dir: dir, trace: filepath.Join(dir, "trace.jsonl")}
	info := activity.GetInfo(ctx)
	meta := map[string]any{"task": in.Task, "model": a.model.Name(), "started": time.Now().UTC(),
		"workflow_id": info.WorkflowExecution.ID, "run_id": info.WorkflowExecution.RunID,
		"attempt_key": in.Key, "worker": a.identity, "resumed_steps": len(in.Items)}
	tw, err := trace.Create(r.trace, trace.WithSecrets(a.settings.SensitiveData), trace.WithMetadata(meta))
	if err != nil {
		return nil, err
	}
	s := lease.Session()
	tw.ObserveBus(s.Bus())
	r.tw = tw
	r.traced = trace.NewAgentObserver(tw, dir)

	set := a.settings
	set.RunDir = dir
	set.MaxSteps = in.MaxSteps
	set.Observers = append(slices.Clone(set.Observers), r.traced)
	if len(in.Items) > 0 {
		h := &agent.History{Task: in.Task, Items: in.Items}
		r.agent, err = agent.Resume(in.Task, a.model, s, set, h, agent.ResumeOptions{FromStart: in.FromStart})
	} else {
		if in.StartURL != "" {
			p, _ := json.Marshal(map[string]string{"url": in.StartURL})
			set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: p}}
		}
		r.agent, err = agent.New(in.Task, a.model, s, set)
	}
	if err != nil {
		tw.Close()
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "AgentStart", err)
	}
	return r, nil
}

// getForStep returns the attempt key names with its idle timer stopped.
func (a *Activities) getForStep(key string) *run {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.runs[key]
	if r != nil && r.idle != nil {
		r.idle.Stop()
	}
	return r
}

// reap closes r when no Step came for r.idleAfter: the workflow gave the
// session up (its heartbeats did not reach the server: a network split)
// while this worker lives on, so no Close will come either. Without it
// the pool slot would stay taken until the worker stops.
func (a *Activities) reap(key string, r *run) {
	a.mu.Lock()
	if a.runs[key] != r {
		a.mu.Unlock()
		return
	}
	delete(a.runs, key)
	a.reaping.Add(1)
	a.mu.Unlock()
	defer a.reaping.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.log.Warn("closing an attempt no step reached", zap.String("key", key), zap.Duration("idle", r.idleAfter))
	if _, err := a.closeRun(ctx, key, r, fmt.Sprintf("no step came for %s: the workflow gave this session up", r.idleAfter)); err != nil {
		a.log.Warn("closing an idle attempt", zap.String("key", key), zap.Error(err))
	}
}

// Step runs one agent step of the attempt, heartbeating while it runs
// (a cancellation reaches it through the heartbeats, or Close). It returns
// the step's record and, when the run ended, its result.
func (a *Activities) Step(ctx context.Context, in StepInput) (StepResult, error) {
	r := a.getForStep(in.Key)
	if r == nil {
		return StepResult{}, temporal.NewNonRetryableApplicationError(ErrUnknownRun.Error()+": "+in.Key, "UnknownRun", ErrUnknownRun)
	}
	r.busy.Lock()
	defer r.busy.Unlock()
	if r.closed {
		return StepResult{}, temporal.NewNonRetryableApplicationError(ErrUnknownRun.Error()+": "+in.Key+" is closed", "UnknownRun", ErrUnknownRun)
	}
	if r.idle != nil {
		// The next Step has idleAfter to come (busy keeps a Close out).
		defer r.idle.Reset(r.idleAfter)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.setCancel(cancel)
	defer r.setCancel(nil)
	started := time.Now()
	stop := heartbeat(ctx, in.HeartbeatTimeout, func() any {
		return fmt.Sprintf("step running for %s", time.Since(started).Round(time.Second))
	})
	item, res, err := r.agent.Step(sctx)
	stop()
	if res != nil {
		r.result = res
		return StepResult{Item: item, Result: runResultOf(res)}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return StepResult{}, ctx.Err()
		}
		return StepResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "StepFailed", err)
	}
	return StepResult{Item: item}, nil
}

// Close ends the attempt: it stops a running Step, ends a run without a
// result with in.Cause (agent.EndRun), closes the trace and releases the
// lease. Closing an attempt this worker does not hold does nothing.
func (a *Activities) Close(ctx context.Context, in CloseInput) (CloseResult, error) {
	a.mu.Lock()
	r := a.runs[in.Key]
	delete(a.runs, in.Key)
	a.mu.Unlock()
	if r == nil {
		return CloseResult{}, nil
	}
	return a.closeRun(ctx, in.Key, r, in.Cause)
}

func (a *Activities) closeRun(ctx context.Context, key string, r *run, cause string) (CloseResult, error) {
	r.stopStep()
	r.busy.Lock()
	defer r.busy.Unlock()
	r.closed = true
	if r.idle != nil {
		r.idle.Stop()
	}
	if r.result == nil {
		if cause == "" {
			cause = "the attempt was closed"
		}
		r.result = r.agent.EndRun(ctx, errors.New(cause))
	}
	var errs []error
	if err := r.traced.Err(); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	if err := r.tw.Close(); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	if err := r.lease.Release(ctx); err != nil {
		errs = append(errs, fmt.Errorf("release: %w", err))
	}
	a.log.Info("attempt closed", zap.String("key", key), zap.String("trace_head", r.tw.Head()))
	return CloseResult{TraceHead: r.tw.Head(), Result: runResultOf(r.result)}, errors.Join(errs...)
}

// closeAll closes every open attempt (the worker is stopping).
func (a *Activities) closeAll(ctx context.Context) error {
	a.mu.Lock()
	runs := a.runs
	a.runs = map[string]*run{}
	a.mu.Unlock()
	var errs []error
	for key, r := range runs {
		if _, err := a.closeRun(ctx, key, r, "the worker is stopping"); err != nil {
			errs = append(errs, err)
		}
	}
	a.reaping.Wait()
	return errors.Join(errs...)
}

// Open reports how many attempts are open on this worker.
func (a *Activities) OpenRuns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.runs)
}
