package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/report"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/telemetry"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs"
)

// runConfig is one agent run as the CLI performs it.
type runConfig struct {
	task     string
	model    llm.Model
	browser  browserFlags
	settings agent.Settings
	outDir   string // trace, report, history, screenshots
	// tracePath and reportPath override the files in outDir.
	tracePath, reportPath string
	quiet                 bool // no progress lines
	secrets               map[string]string
	otel                  bool // export OpenTelemetry spans over OTLP/HTTP
	record                bool // screencast frames into OUT/frames for the report
}

// runOutcome is what a run leaves behind.
type runOutcome struct {
	Result  *agent.Result `json:"result"`
	Trace   string        `json:"trace"`
	Head    string        `json:"trace_head"`
	Report  string        `json:"report"`
	History string        `json:"history"`
}

// runAgent starts a browser, runs the task, and writes the trace, the
// history and the HTML report into cfg.outDir. Progress goes to progress
// (one line per step) unless quiet.
func runAgent(ctx context.Context, cfg runConfig, progress io.Writer) (*runOutcome, error) {
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return nil, err
	}
	out := &runOutcome{
		Trace:   filepath.Join(cfg.outDir, "trace.jsonl"),
		Report:  filepath.Join(cfg.outDir, "report.html"),
		History: filepath.Join(cfg.outDir, "history.json"),
	}
	if cfg.tracePath != "" {
		out.Trace = cfg.tracePath
	}
	if cfg.reportPath != "" {
		out.Report = cfg.reportPath
	}
	tw, err := trace.Create(out.Trace,
		trace.WithSecrets(cfg.secrets),
		trace.WithMetadata(map[string]any{"task": cfg.task, "model": cfg.model.Name(), "started": time.Now().UTC()}))
	if err != nil {
		return nil, err
	}
	closeTrace := func() error {
		err := tw.Close()
		out.Head = tw.Head()
		return err
	}

	opts := []session.Option{session.WithBusHook(tw.ObserveBus)}
	if cfg.record {
		dir := filepath.Join(filepath.Dir(out.Trace), report.FramesDir)
		opts = append(opts, session.WithWatchdogs(watchdogs.NewRecording(watchdogs.RecordingConfig{Dir: dir})))
	}
	s, err := startSession(ctx, &cfg.browser, opts...)
	if err != nil {
		closeTrace()
		return nil, err
	}

	set := cfg.settings
	set.RunDir = cfg.outDir
	set.SensitiveData = cfg.secrets
	var step int
	prevStart := set.OnStepStart
	set.OnStepStart = func(ctx context.Context, n int) {
		step = n
		if prevStart != nil {
			prevStart(ctx, n)
		}
	}
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) {
		if err := tw.Write(trace.TypeStep, traceStep(filepath.Dir(out.Trace), it)); err != nil {
			fmt.Fprintf(os.Stderr, "trace: %v\n", err)
		}
		if !cfg.quiet && progress != nil {
			printStep(progress, it)
		}
	}
	var model llm.Model = &tracedModel{inner: cfg.model, w: tw, step: func() int { return step }}
	var spans *telemetry.Run
	if cfg.otel {
		tp, shutdown, err := newOTLP(ctx)
		if err != nil {
			stopSession(s)
			closeTrace()
			return nil, err
		}
		defer func() {
			if err := shutdown(); err != nil {
				fmt.Fprintf(os.Stderr, "otel: %v\n", err)
			}
		}()
		ctx, spans = telemetry.Start(ctx, tp, cfg.task, cfg.model.Name())
		model = spans.Model(model)
		onStart, onEnd := set.OnStepStart, set.OnStepEnd
		set.OnStepStart = func(ctx context.Context, n int) {
			onStart(ctx, n)
			spans.OnStepStart(ctx, n)
		}
		set.OnStepEnd = func(ctx context.Context, it agent.HistoryItem) {
			onEnd(ctx, it)
			spans.OnStepEnd(ctx, it)
		}
	}
	a, err := agent.New(cfg.task, model, s, set)
	if err != nil {
		stopSession(s)
		closeTrace()
		return nil, err
	}
	started := time.Now()
	res, runErr := a.Run(ctx)
	out.Result = res
	if spans != nil {
		spans.End(res, runErr)
	}
	if res != nil {
		run := traceRun(cfg.task, res)
		run.DurationMS = float64(time.Since(started)) / float64(time.Millisecond)
		_ = tw.Write(trace.TypeRun, run)
	}
	if err := a.History().Save(out.History); err != nil && runErr == nil {
		runErr = err
	}
	if err := stopSession(s); err != nil && runErr == nil {
		runErr = err
	}
	if err := closeTrace(); err != nil && runErr == nil {
		runErr = err
	}
	if err := report.WriteFile(out.Trace, out.Report); err != nil && runErr == nil {
		runErr = err
	}
	return out, runErr
}

// traceStep turns a history item into the trace's step record; the
// screenshot is referenced relative to the run folder with its hash.
func traceStep(dir string, it agent.HistoryItem) trace.Step {
	st := trace.Step{
		Step: it.Step, URL: it.State.URL, Title: it.State.Title, Error: it.Error,
		DurationMS:   float64(it.EndedAt.Sub(it.StartedAt)) / float64(time.Millisecond),
		PromptTokens: it.Usage.PromptTokens, CompletionTokens: it.Usage.CompletionTokens,
	}
	if o := it.Output; o != nil {
		st.Evaluation, st.Memory, st.NextGoal = o.EvaluationPreviousGoal, o.Memory, o.NextGoal
	}
	for _, ar := range it.Actions {
		ta := trace.Action{Name: ar.Name, Params: ar.Params, Verdict: string(ar.Verdict), Detail: ar.Result.Text, Error: ar.Error}
		if oc := ar.Result.Outcome; oc != nil {
			ta.Before, _ = json.Marshal(oc.Before)
			ta.After, _ = json.Marshal(oc.After)
			if oc.Detail != "" {
				ta.Detail = oc.Detail
			}
		}
		st.Actions = append(st.Actions, ta)
	}
	if p := it.State.ScreenshotPath; p != "" {
		if b, err := os.ReadFile(p); err == nil {
			sum := sha256.Sum256(b)
			st.ScreenshotSHA256 = hex.EncodeToString(sum[:])
			if rel, err := filepath.Rel(dir, p); err == nil {
				st.Screenshot = rel
			}
		}
	}
	return st
}

func traceRun(task string, r *agent.Result) trace.Run {
	return trace.Run{
		Task: task, Success: r.Success, Done: r.Done, FinalText: r.FinalText, Output: r.StructuredOutput,
		Errors: r.Errors, Steps: r.Steps, PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens,
	}
}

// printStep writes one human line per step, and one per action.
func printStep(w io.Writer, it agent.HistoryItem) {
	goal := ""
	if it.Output != nil {
		goal = it.Output.NextGoal
	}
	fmt.Fprintf(w, "step %d  %s\n", it.Step, oneLine(goal, 100))
	for _, a := range it.Actions {
		status := string(a.Verdict)
		if a.Error != "" {
			status = "error: " + oneLine(a.Error, 80)
		}
		fmt.Fprintf(w, "  %-16s %s\n", a.Name, status)
	}
	if it.Error != "" {
		fmt.Fprintf(w, "  step error: %s\n", oneLine(it.Error, 120))
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-1] + "…"
	}
	return s
}

// tracedModel records every model call in the trace: prompt size, images,
// tokens, latency, error.
type tracedModel struct {
	inner llm.Model
	w     *trace.Writer
	step  func() int
}

func (m *tracedModel) Name() string { return m.inner.Name() }

func (m *tracedModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	rec := trace.Model{Step: m.step(), Model: m.inner.Name()}
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			rec.PromptChars += len(p.Text)
			if p.Image != nil {
				rec.Images++
			}
		}
	}
	start := time.Now()
	resp, err := m.inner.Generate(ctx, req)
	rec.LatencyMS = float64(time.Since(start)) / float64(time.Millisecond)
	if resp != nil {
		rec.PromptTokens, rec.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		if resp.Model != "" {
			rec.Model = resp.Model
		}
	}
	if err != nil {
		rec.Error = err.Error()
	}
	_ = m.w.Write(trace.TypeModel, rec)
	return resp, err
}

// CloseIdleConnections passes through to providers that pool connections.
func (m *tracedModel) CloseIdleConnections() { llm.CloseIdleConnections(m.inner) }

// printOutcome prints a finished run as JSON or for people; nothing when
// the run did not start.
func printOutcome(w io.Writer, out *runOutcome, asJSON bool) {
	switch {
	case out == nil:
	case asJSON:
		printJSON(w, out)
	default:
		printResult(w, out)
	}
}

// printResult writes the run's end: the answer, where the files are.
func printResult(w io.Writer, out *runOutcome) {
	r := out.Result
	switch {
	case r == nil:
	case r.Done && r.Success:
		fmt.Fprintf(w, "\ndone: %s\n", oneLine(r.FinalText, 400))
	case r.Done:
		fmt.Fprintf(w, "\nfinished without success: %s\n", oneLine(r.FinalText, 400))
	default:
		fmt.Fprintf(w, "\nnot finished: %s\n", strings.Join(r.Errors, "; "))
	}
	fmt.Fprintf(w, "trace:   %s (head %s)\nhistory: %s\nreport:  %s\n", out.Trace, out.Head, out.History, out.Report)
}

var errNotSuccessful = errors.New("the task did not finish successfully")
