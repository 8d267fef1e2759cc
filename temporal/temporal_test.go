package temporal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/pool"
)

// Short heartbeats so a killed worker is noticed within seconds; the
// overall deadlines are generous (a busy two-core machine).
const (
	testHeartbeat = 5 * time.Second
	testDeadline  = 15 * time.Minute
)

func taskInput(s *site, id string) TaskInput {
	return TaskInput{
		Task:                    fmt.Sprintf("Fill in and submit each of the three form pages of task %s, then finish.", id),
		StartURL:                s.URL(id),
		MaxSteps:                20,
		StepTimeout:             3 * time.Minute,
		HeartbeatTimeout:        testHeartbeat,
		SessionHeartbeatTimeout: testHeartbeat,
		MaxResumes:              3,
	}
}

// startWorker runs a worker process on queue; the test's cleanup stops it
// (SIGTERM, then SIGKILL after a minute) and reaps it.
func startWorker(t *testing.T, ts *temporaltest.TestServer, queue, name, modelURL string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, workerBin, "worker",
		"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", queue, "--max-sessions", "3", "--mode", "shared",
		"--model", "openai:fixture", "--base-url", modelURL,
		"--run-dir", filepath.Join(dir, "runs"), "--identity", name)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=fixture")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Start(); err != nil {
		cancel()
		logf.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		err := cmd.Wait()
		logf.Close()
		t.Logf("worker %s exited: %v", name, err)
		if t.Failed() {
			logTail(t, name, logPath, 60)
		}
	})
	return cmd
}

// submitted is what `submit --wait --json` prints.
type submitted struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	TaskResult
}

// submitCmd is the command's `submit --wait --json` of in as workflow id;
// its stdout goes to out.
func submitCmd(ctx context.Context, ts *temporaltest.TestServer, queue, id string, in TaskInput, out *strings.Builder) *exec.Cmd {
	cmd := exec.CommandContext(ctx, workerBin, "submit", in.Task, "--wait", "--json",
		"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", queue, "--id", id, "--start-url", in.StartURL,
		"--max-steps", fmt.Sprint(in.MaxSteps), "--step-timeout", in.StepTimeout.String(),
		"--heartbeat-timeout", in.HeartbeatTimeout.String(),
		"--session-heartbeat-timeout", in.SessionHeartbeatTimeout.String(),
		"--max-resumes", fmt.Sprint(in.MaxResumes))
	cmd.Stdout = out
	cmd.Stderr = os.Stderr
	return cmd
}

// exitCode is cmd's exit code after Wait returned err (-1: it did not exit).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func logTail(t *testing.T, name, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("worker %s log (last %d lines):\n%s", name, len(lines), strings.Join(lines, "\n"))
}

// TestTwoWorkersKillOne: two worker processes, six tasks; the worker that
// asks for page 2 of a task first is SIGKILLed (its Chromium dies with
// it). Every task finishes; the interrupted ones resume on the other
// worker at the step after the last one recorded; the site saw each page
// of each task submitted exactly once.
func TestTwoWorkersKillOne(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	s := newSite(t)
	m := newModelServer(t)
	const queue = "browseragent-kill"
	workers := map[string]*exec.Cmd{}
	for _, name := range []string{"w1", "w2"} {
		workers[name] = startWorker(t, ts, queue, name, m.URL(name))
	}
	m.killOnPage2(func(w string) {
		t.Logf("killing worker %s (pid %d)", w, workers[w].Process.Pid)
		if err := workers[w].Process.Kill(); err != nil {
			t.Errorf("kill %s: %v", w, err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	ids := []string{"t1", "t2", "t3", "t4", "t5", "t6"}
	// t6 goes through the command: submit --wait --json, exit 0 when done.
	var out6 strings.Builder
	sub6 := submitCmd(ctx, ts, queue, "task-t6", taskInput(s, "t6"), &out6)
	if err := sub6.Start(); err != nil {
		t.Fatal(err)
	}
	runs := map[string]client.WorkflowRun{}
	for _, id := range ids[:5] {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "task-" + id, TaskQueue: queue}, WorkflowName, taskInput(s, id))
		if err != nil {
			t.Fatal(err)
		}
		runs[id] = run
	}
	results := map[string]TaskResult{}
	for _, id := range ids {
		var res TaskResult
		if id == "t6" {
			if code := exitCode(sub6.Wait()); code != 0 {
				t.Fatalf("submit --wait t6: exit %d, want 0; stdout %s", code, out6.String())
			}
			var sub submitted
			if err := json.Unmarshal([]byte(out6.String()), &sub); err != nil {
				t.Fatalf("submit --json t6: %v: %s", err, out6.String())
			}
			if sub.ID != "task-t6" || sub.RunID == "" {
				t.Errorf("submit --json t6: id %q run %q, want task-t6 and a run ID", sub.ID, sub.RunID)
			}
			res = sub.TaskResult
		} else if err := runs[id].Get(ctx, &res); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		results[id] = res
		b, _ := json.Marshal(res.Attempts)
		t.Logf("task %s: done=%v success=%v steps=%d attempts=%s", id, res.Done, res.Success, res.Steps, b)
	}

	killed, victim := m.killed()
	if killed == "" || victim == "" {
		t.Fatal("no worker was killed: no model call for page 2 arrived")
	}
	survivor := map[string]string{"w1": "w2", "w2": "w1"}[killed]
	for _, id := range ids {
		res := results[id]
		if !res.Done || !res.Success {
			t.Errorf("task %s: not done: %+v", id, res)
		}
		for n := 1; n <= 3; n++ {
			if got := s.submissions(id, n); got != 1 {
				t.Errorf("task %s page %d: submitted %d times, want exactly once", id, n, got)
			}
		}
		last := res.Attempts[len(res.Attempts)-1]
		if last.Ended != EndedDone || last.TraceHead == "" {
			t.Errorf("task %s: last attempt %+v: want ended done with its trace closed", id, last)
		}
		if len(res.Attempts) > 1 {
			checkResumed(t, id, res, killed, survivor)
		}
	}
	if res := results[victim]; len(res.Attempts) < 2 {
		t.Errorf("the interrupted task %s has %d attempts, want a resumed one", victim, len(res.Attempts))
	}
	if m.callsBy(survivor) == 0 {
		t.Errorf("the surviving worker %s answered no model call", survivor)
	}
	wids := make([]string, len(ids))
	for i, id := range ids {
		wids[i] = "task-" + id
	}
	replayHistories(t, ctx, c, wids...)
}

// checkResumed checks an interrupted task: lost on the killed worker,
// resumed on the survivor at the step after the last recorded one, with a
// resume step there.
func checkResumed(t *testing.T, id string, res TaskResult, killed, survivor string) {
	t.Helper()
	first, last := res.Attempts[0], res.Attempts[len(res.Attempts)-1]
	if first.Worker != killed || first.Ended != EndedLost {
		t.Errorf("task %s: first attempt %+v: want lost on %s", id, first, killed)
	}
	if last.Worker != survivor || !last.Resumed {
		t.Errorf("task %s: last attempt %+v: want resumed on %s", id, last, survivor)
	}
	prev := res.Attempts[len(res.Attempts)-2]
	if want := prev.FirstStep + prev.Steps; last.FirstStep != want {
		t.Errorf("task %s: resumed at step %d, want %d (after the last recorded step)", id, last.FirstStep, want)
	}
	if prev.Steps > 0 && last.FirstStep == 0 {
		t.Errorf("task %s: resumed from step 0", id)
	}
	found := false
	for _, v := range res.Verdicts {
		if v.Step == last.FirstStep && v.Source == string(agent.SourceResume) && v.Attempt == len(res.Attempts)-1 {
			found = true
		}
	}
	if !found {
		t.Errorf("task %s: no resume step %d in the verdicts: %+v", id, last.FirstStep, res.Verdicts)
	}
}

// holdModel answers nothing: each call reports itself and waits for its
// context (a step that is running when the task is cancelled).
type holdModel struct{ called chan struct{} }

func (h *holdModel) Name() string { return "hold" }

func (h *holdModel) Generate(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	select {
	case h.called <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCancel: a task submitted with the command's `submit --wait --json`
// and cancelled with its `cancel` while its step waits for the model ends
// cancelled (exit 3) with its partial result, the pool's slot is free
// again, and the attempt's trace is closed.
func TestCancel(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
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
	hold := &holdModel{called: make(chan struct{}, 1)}
	const queue = "browseragent-cancel"
	w, err := NewWorker(c, queue, WorkerConfig{Pool: p, MaxSessions: 1, Model: hold, RunDir: t.TempDir(), Identity: "inproc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var out strings.Builder
	sub := submitCmd(ctx, ts, queue, "task-c1", taskInput(s, "c1"), &out)
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.called:
	case <-ctx.Done():
		t.Fatal("the model was never called")
	}
	cancelOut, err := exec.CommandContext(ctx, workerBin, "cancel", "task-c1",
		"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace()).CombinedOutput()
	if err != nil || !strings.Contains(string(cancelOut), "cancellation requested for task-c1") {
		t.Fatalf("cancel: %v: %s", err, cancelOut)
	}
	if code := exitCode(sub.Wait()); code != 3 {
		t.Fatalf("submit --wait of a cancelled task: exit %d, want 3; stdout %s", code, out.String())
	}
	var subRes submitted
	if err := json.Unmarshal([]byte(out.String()), &subRes); err != nil {
		t.Fatalf("submit --json: %v: %s", err, out.String())
	}
	res := subRes.TaskResult
	// The workflow itself ended cancelled, its error carrying the result.
	err = c.GetWorkflow(ctx, "task-c1", "").Get(ctx, nil)
	var ce *temporal.CanceledError
	if !errors.As(err, &ce) || !ce.HasDetails() {
		t.Fatalf("want a cancelled workflow with the partial result as details, got %v", err)
	}
	if !res.Cancelled || len(res.Attempts) != 1 {
		t.Fatalf("result %+v: want cancelled after one attempt", res)
	}
	at := res.Attempts[0]
	if at.Ended != EndedCancelled || at.Worker != "inproc" || at.TraceHead == "" {
		t.Errorf("attempt %+v: want cancelled on inproc with its trace closed", at)
	}
	if res.Steps < 1 || len(res.Verdicts) != res.Steps {
		t.Errorf("partial result: %d steps, %d verdicts; want the start step recorded", res.Steps, len(res.Verdicts))
	}
	if typ := lastRecordType(t, at.Trace); typ != "close" {
		t.Errorf("the trace's last record is %q, want close", typ)
	}
	if w.OpenRuns() != 0 {
		t.Errorf("%d attempts still open on the worker", w.OpenRuns())
	}
	if st := p.Stats(); st.InUse != 0 {
		t.Errorf("pool stats after the cancel: %+v, want InUse 0", st)
	}
	replayHistories(t, ctx, c, "task-c1")
}

// lastRecordType is the type of the last record of a trace file.
func lastRecordType(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var rec struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Type
}
