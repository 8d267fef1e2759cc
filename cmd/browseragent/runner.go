package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/agent/llm/providers"
	"github.com/browseragent/browseragent/report"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/telemetry"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/recording"
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
	// human is --human, --human-timeout and --live-addr, checked; the zero
	// value is off. stdinTTY says whether stdin is a terminal (Enter ends a
	// hand-off).
	human    humanFlags
	stdinTTY bool
	// replay, when set, replays a recorded history instead of running the
	// task with model (which, if set, heals; nil: no healing).
	replay *replayConfig
	// lease, when set, gives the run a started session instead of one of
	// its own (browser is then unused): batch leases them from a pool.
	// opts are the run's session options (the trace's bus hook, the
	// recording), to be in place before the session starts; release hands
	// the session back.
	lease func(ctx context.Context, opts ...session.Option) (s *session.Session, release func() error, err error)
}

// replayConfig is what a replay runs: the recording and its options (their
// Settings are the run's).
type replayConfig struct {
	history *agent.History
	path    string // the history file, for the trace's metadata
	opts    agent.ReplayOptions
}

// replaySummary is what a replay did, for the outcome (the run's result and
// history are there already).
type replaySummary struct {
	Actions    []agent.ReplayedAction `json:"actions"`
	ModelCalls int                    `json:"model_calls"`
	Healed     int                    `json:"healed"`
	// Error is the step that could not be replayed (exit code 5); nil
	// otherwise.
	Error *replayFailure `json:"error,omitempty"`
}

// runOutcome is what a run leaves behind.
type runOutcome struct {
	Result  *agent.Result `json:"result"`
	Trace   string        `json:"trace"`
	Head    string        `json:"trace_head"`
	Report  string        `json:"report"`
	History string        `json:"history"`
	// Budget says which budget stopped the run (--max-cost, --max-tokens).
	Budget *agent.BudgetError `json:"budget_exceeded,omitempty"`
	// Replay is what a replay did; nil for a model's run.
	Replay *replaySummary `json:"replay,omitempty"`
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
	modelName := "none (replay)"
	if cfg.model != nil {
		modelName = cfg.model.Name()
	}
	meta := map[string]any{"task": cfg.task, "model": modelName, "started": time.Now().UTC()}
	if cfg.replay != nil {
		meta["replay"] = replayMeta(cfg.replay, cfg.model, progress)
	}
	tw, err := trace.Create(out.Trace, trace.WithSecrets(cfg.secrets), trace.WithMetadata(meta))
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
		opts = append(opts, session.WithWatchdogs(recording.New(recording.Config{Dir: dir})))
	}
	var (
		s       *session.Session
		release func() error
	)
	if cfg.lease != nil {
		s, release, err = cfg.lease(ctx, opts...)
	} else if s, err = startSession(ctx, &cfg.browser, opts...); err == nil {
		release = func() error { return stopSession(s) }
	}
	if err != nil {
		closeTrace()
		return nil, err
	}

	set := cfg.settings
	hs, err := cfg.human.setup(s, os.Stdin, cfg.stdinTTY, progress)
	if err != nil {
		release()
		closeTrace()
		return nil, err
	}
	set.Human = hs.handler
	if cfg.human.timeout > 0 {
		set.HumanTimeout = cfg.human.timeout
	}
	set.RunDir = cfg.outDir
	set.SensitiveData = cfg.secrets
	traced := trace.NewAgentObserver(tw, filepath.Dir(out.Trace))
	set.Observers = append(set.Observers, traced)
	if !cfg.quiet && progress != nil {
		set.Observers = append(set.Observers, progressPrinter{w: progress})
	}
	if cfg.otel {
		tp, shutdown, err := newOTLP(ctx)
		if err != nil {
			release()
			closeTrace()
			return nil, err
		}
		defer func() {
			if err := shutdown(); err != nil {
				fmt.Fprintf(os.Stderr, "otel: %v\n", err)
			}
		}()
		var spans *telemetry.Run
		ctx, spans = telemetry.Start(ctx, tp, cfg.task, modelName)
		set.Observers = append(set.Observers, spans)
	}
	var (
		res    *agent.Result
		hist   *agent.History
		runErr error
	)
	if cfg.replay != nil {
		opts := cfg.replay.opts
		opts.Settings, opts.Model = set, cfg.model
		var rr *agent.ReplayResult
		rr, runErr = agent.Replay(ctx, s, cfg.replay.history, opts)
		if rr != nil {
			res, hist = rr.Result, rr.History
			out.Replay = &replaySummary{Actions: rr.Actions, ModelCalls: rr.ModelCalls, Healed: rr.Healed}
		}
	} else {
		a, err := agent.New(cfg.task, cfg.model, s, set)
		if err != nil {
			hs.close()
			release()
			closeTrace()
			return nil, err
		}
		res, runErr = a.Run(ctx)
		hist = a.History()
	}
	if err := hs.close(); err != nil {
		fmt.Fprintf(os.Stderr, "live view: %v\n", err)
	}
	out.Result = res
	errors.As(runErr, &out.Budget)
	if err := traced.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "trace: %v\n", err)
	}
	if hist != nil {
		if err := hist.Save(out.History); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := release(); err != nil && runErr == nil {
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

// progressPrinter prints one human line per step as the run goes.
type progressPrinter struct {
	agent.BaseObserver
	w io.Writer
}

// StepEnded implements agent.Observer.
func (p progressPrinter) StepEnded(_ context.Context, it agent.HistoryItem) { printStep(p.w, it) }

// printStep writes one human line per step, and one per action.
func printStep(w io.Writer, it agent.HistoryItem) {
	goal := ""
	if it.Output != nil {
		goal = it.Output.NextGoal
	}
	src := ""
	if it.Source != agent.SourceModel {
		src = "[" + string(it.Source) + "] "
	}
	fmt.Fprintf(w, "step %d  %s%s\n", it.Step, src, oneLine(goal, 100))
	for _, a := range it.Actions {
		status := string(a.Verdict)
		if a.Error != "" {
			status = "error: " + oneLine(a.Error, 80)
		}
		if a.Match != nil && a.Match.Strategy != "" {
			status += fmt.Sprintf(" (element found by %s)", a.Match.Strategy)
		}
		fmt.Fprintf(w, "  %-16s %s\n", a.Name, status)
	}
	if it.Error != "" {
		fmt.Fprintf(w, "  step error: %s\n", oneLine(it.Error, 120))
	}
	if u := usageLine(it.Usage, it.Cost); u != "" {
		fmt.Fprintf(w, "  %s\n", u)
	}
}

// usageLine words a step's or a run's tokens and cost: "tokens 3.1k in
// (2.0k cached) / 150 out · $0.0021" (or "· cost unknown (no price for
// openai:local)"); "" when no model was called.
func usageLine(u llm.Usage, c pricing.Cost) string {
	if u == (llm.Usage{}) && c.Known() && c.Total == 0 {
		return ""
	}
	return "tokens " + agent.FormatUsage(u) + " · " + c.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-1] + "…"
	}
	return s
}

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
	if r != nil && r.Cache != nil {
		fmt.Fprintln(w, cacheLine(r.Cache))
	}
	if r != nil {
		if u := usageLine(r.Usage, r.Cost); u != "" {
			fmt.Fprintf(w, "%s\n", u)
			if !r.Cost.Known() {
				fmt.Fprintf(w, "(pass --prices FILE to price %s)\n", strings.Join(r.Cost.Unpriced, ", "))
			}
		}
	}
	fmt.Fprintf(w, "trace:   %s (head %s)\nhistory: %s\nreport:  %s\n", out.Trace, out.Head, out.History, out.Report)
}

// cacheLine is the run's action cache summary: each hit is a model call
// saved.
func cacheLine(c *agent.CacheStats) string {
	line := fmt.Sprintf("cache: %d hits, %d misses, %d model calls saved", c.Hits, c.Misses, c.Hits)
	if c.Invalidated > 0 {
		line += fmt.Sprintf(" (%d entries of another model or prompt)", c.Invalidated)
	}
	return line
}

// modelSettings builds the Settings of a command that runs tasks with a
// model (run, batch): the model is required; the agent flags, the step
// limit, the files the model may upload and the cache go in.
func modelSettings(af *agentFlags, model, baseURL string, maxSteps int, files []string, cacheDir string) (agent.Settings, error) {
	if model == "" {
		return agent.Settings{}, usagef("no model: pass --model provider:name or set BROWSERAGENT_MODEL (providers: %s)", strings.Join(providers.Known(), ", "))
	}
	set := agent.Settings{MaxSteps: maxSteps, AvailableFilePaths: files}
	if err := af.apply(&set, model, baseURL); err != nil {
		return agent.Settings{}, err
	}
	if err := useCache(&set, cacheDir); err != nil {
		return agent.Settings{}, err
	}
	return set, nil
}

// useCache sets set.Cache to a directory cache in dir ("" leaves it off).
func useCache(set *agent.Settings, dir string) error {
	if dir == "" {
		return nil
	}
	c, err := agent.NewDirCache(dir)
	if err != nil {
		return usagef("--cache: %v", err)
	}
	set.Cache = c
	return nil
}

var errNotSuccessful = errors.New("the task did not finish successfully")

// exitBudget is run's exit code when --max-cost or --max-tokens stopped
// the run before a model call that would have exceeded it.
const exitBudget = 4
