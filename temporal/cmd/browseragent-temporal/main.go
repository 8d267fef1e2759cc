// Command browseragent-temporal runs browseragent tasks on Temporal:
//
//	browseragent-temporal worker --temporal HOST:PORT --task-queue Q --max-sessions N --model provider:name
//	browseragent-temporal submit "task" --temporal HOST:PORT --task-queue Q [--id ID] [--wait] [--json]
//	browseragent-temporal cancel ID --temporal HOST:PORT
//
// A worker runs up to --max-sessions tasks at once on a browser pool
// (--mode shared: one Chromium, a browser context per task; per-session:
// one Chromium per task). Each task is a workflow whose browser session is
// pinned to one worker; when that worker dies the task resumes on another
// from the steps it recorded. See docs/scaling.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/providers"
	"github.com/browseragent/browseragent/pool"
	"github.com/browseragent/browseragent/session"
	bat "github.com/browseragent/browseragent/temporal"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1 // an error, or a task that did not succeed
	exitUsage    = 2
	exitCanceled = 3 // submit --wait: the task was cancelled
)

// errUsage marks a usage error (exit 2).
var errUsage = errors.New("usage")

func usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

const usage = `usage:
  browseragent-temporal worker --temporal HOST:PORT --task-queue Q --max-sessions N --model provider:name [flags]
  browseragent-temporal submit "task" --temporal HOST:PORT --task-queue Q [--id ID] [--wait] [--json] [--max-steps N]
  browseragent-temporal cancel ID --temporal HOST:PORT
Run a command with -h for its flags.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		code int
		err  error
	)
	switch args[0] {
	case "worker":
		err = runWorker(ctx, args[1:], stderr)
	case "submit":
		code, err = runSubmit(ctx, args[1:], stdout, stderr)
	case "cancel":
		err = runCancel(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return exitOK
	default:
		err = usagef("unknown command %q", args[0])
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "browseragent-temporal: %v\n%s\n", err, usage)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "browseragent-temporal: %v\n", err)
		return exitFailed
	}
	return code
}

// parse parses fs over args, allowing positional arguments among the
// flags; it returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// conn are the flags that reach the Temporal server.
type conn struct {
	hostPort, namespace string
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.hostPort, "temporal", "", "the Temporal frontend, HOST:PORT (required)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Temporal namespace")
}

func (c *conn) dial(identity string) (client.Client, error) {
	if c.hostPort == "" {
		return nil, usagef("--temporal HOST:PORT is required")
	}
	cl, err := client.Dial(client.Options{HostPort: c.hostPort, Namespace: c.namespace, Identity: identity,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", c.hostPort, err)
	}
	return cl, nil
}

func runWorker(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c                   conn
		queue, model, base  string
		mode, runDir, ident string
		chrome              string
		headful             bool
		maxSessions         int
		secrets             = secretFlags{}
	)
	c.register(fs)
	fs.StringVar(&queue, "task-queue", "", "the task queue to serve (required)")
	fs.IntVar(&maxSessions, "max-sessions", pool.DefaultMaxSessions, "tasks (browser sessions) run at once")
	fs.StringVar(&mode, "mode", "shared", `"shared" (one Chromium, a browser context per session) or "per-session" (one Chromium per session)`)
	fs.StringVar(&model, "model", "", "the model, provider:name (required), e.g. openai:gpt-4.1")
	fs.StringVar(&base, "base-url", "", "the model API's base URL (an OpenAI-compatible server, say)")
	fs.StringVar(&runDir, "run-dir", "", "where each attempt's directory (trace, history) goes (default $TMPDIR/browseragent-temporal)")
	fs.StringVar(&ident, "identity", "", "the worker's name in Temporal and in task results (default browseragent@HOST:PID)")
	fs.StringVar(&chrome, "chrome", "", "browser executable (default: $BROWSERAGENT_CHROME, then chromium on PATH)")
	fs.BoolVar(&headful, "headful", false, "show the browser windows")
	fs.Var(secrets, "secret-env", "a secret the model may use as <secret>name</secret> in every task this worker runs, read from an environment variable: name=ENVVAR (repeatable); secrets stay on the worker, never in a task's input or Temporal's history")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("worker takes no arguments, got %q", pos)
	case queue == "":
		return usagef("--task-queue is required")
	case model == "":
		return usagef("--model provider:name is required")
	case maxSessions <= 0:
		return usagef("--max-sessions must be positive")
	}
	pm, err := pool.ParseMode(mode)
	if err != nil {
		return usagef("--mode: %v", err)
	}
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer logger.Sync()
	m, err := providers.New(model, providers.Options{BaseURL: base, Logger: logger})
	if err != nil {
		return usagef("--model: %v", err)
	}
	p, err := pool.New(pool.Config{Mode: pm, MaxSessions: maxSessions, Logger: logger,
		Profile: session.Profile{ExecutablePath: chrome, Headful: headful}})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(cctx); err != nil {
			logger.Warn("closing the pool", zap.Error(err))
		}
	}()
	cl, err := c.dial(ident)
	if err != nil {
		return err
	}
	defer cl.Close()
	var set agent.Settings
	if len(secrets) > 0 {
		set.SensitiveData = secrets
	}
	w, err := bat.NewWorker(cl, queue, bat.WorkerConfig{Pool: p, MaxSessions: maxSessions, Model: m,
		Settings: set, RunDir: runDir, Identity: ident, Logger: logger})
	if err != nil {
		return err
	}
	logger.Info("worker starting", zap.String("temporal", c.hostPort), zap.String("task_queue", queue),
		zap.Int("max_sessions", maxSessions), zap.String("mode", pm.String()), zap.String("model", model))
	interrupt := make(chan interface{})
	go func() {
		defer close(interrupt)
		<-ctx.Done()
	}()
	return w.Run(interrupt)
}

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c           conn
		queue, id   string
		wait, asJSN bool
		in          bat.TaskInput
	)
	c.register(fs)
	fs.StringVar(&queue, "task-queue", "", "the workers' task queue (required)")
	fs.StringVar(&id, "id", "", "the workflow ID (default: one is made up); a running task with that ID is an error")
	fs.BoolVar(&wait, "wait", false, "wait for the task's result and print it")
	fs.BoolVar(&asJSN, "json", false, "print as JSON")
	fs.IntVar(&in.MaxSteps, "max-steps", bat.DefaultMaxSteps, "the task's step budget (across resumes)")
	fs.StringVar(&in.StartURL, "start-url", "", "open this URL before the first step")
	fs.DurationVar(&in.StepTimeout, "step-timeout", bat.DefaultStepTimeout, "bound on one step")
	fs.DurationVar(&in.HeartbeatTimeout, "heartbeat-timeout", bat.DefaultHeartbeatTimeout, "a step not heard from for this long is lost with its worker")
	fs.DurationVar(&in.SessionHeartbeatTimeout, "session-heartbeat-timeout", bat.DefaultSessionHeartbeatTimeout, "a session not heard from for this long is lost with its worker")
	fs.IntVar(&in.MaxResumes, "max-resumes", bat.DefaultMaxResumes, "how many times a lost task resumes on another worker")
	pos, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return 0, usagef(`submit takes one task: submit "task" --temporal HOST:PORT --task-queue Q`)
	}
	if queue == "" {
		return 0, usagef("--task-queue is required")
	}
	in.Task = pos[0]
	cl, err := c.dial("")
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: queue}
	wr, err := cl.ExecuteWorkflow(ctx, opts, bat.WorkflowName, in)
	if err != nil {
		return 0, fmt.Errorf("submit: %w", err)
	}
	if !wait {
		if asJSN {
			printJSON(stdout, map[string]string{"id": wr.GetID(), "run_id": wr.GetRunID()})
		} else {
			fmt.Fprintf(stdout, "submitted %s (run %s)\n", wr.GetID(), wr.GetRunID())
		}
		return exitOK, nil
	}
	var res bat.TaskResult
	err = wr.Get(ctx, &res)
	var ce *temporal.CanceledError
	code := exitOK
	switch {
	case errors.As(err, &ce):
		if ce.HasDetails() {
			_ = ce.Details(&res)
		}
		res.Cancelled = true
		code = exitCanceled
	case err != nil:
		return exitFailed, fmt.Errorf("task %s: %w", wr.GetID(), err)
	case !res.Done || !res.Success:
		code = exitFailed
	}
	if asJSN {
		printJSON(stdout, struct {
			ID    string `json:"id"`
			RunID string `json:"run_id"`
			bat.TaskResult
		}{wr.GetID(), wr.GetRunID(), res})
	} else {
		printResult(stdout, wr.GetID(), res)
	}
	return code, nil
}

func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c conn
	c.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("cancel takes one workflow ID")
	}
	cl, err := c.dial("")
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.CancelWorkflow(ctx, pos[0], ""); err != nil {
		return fmt.Errorf("cancel %s: %w", pos[0], err)
	}
	fmt.Fprintf(stdout, "cancellation requested for %s\n", pos[0])
	return nil
}

// secretFlags collects --secret-env name=ENVVAR pairs (the values are
// read from the worker's environment: they never travel through Temporal).
type secretFlags map[string]string

func (s secretFlags) String() string { return "" }

func (s secretFlags) Set(v string) error {
	name, env, ok := strings.Cut(v, "=")
	if !ok || name == "" || env == "" {
		return fmt.Errorf("want name=ENVVAR, got %q", v)
	}
	val, ok := os.LookupEnv(env)
	if !ok || val == "" {
		return fmt.Errorf("environment variable %s (for secret %s) is not set", env, name)
	}
	s[name] = val
	return nil
}

func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func printResult(w io.Writer, id string, r bat.TaskResult) {
	switch {
	case r.Cancelled:
		fmt.Fprintf(w, "%s: cancelled after %d steps\n", id, r.Steps)
	case r.Done && r.Success:
		fmt.Fprintf(w, "%s: done: %s\n", id, r.Final)
	case r.Done:
		fmt.Fprintf(w, "%s: finished without success: %s\n", id, r.Final)
	default:
		fmt.Fprintf(w, "%s: not finished: %s\n", id, strings.Join(r.Errors, "; "))
	}
	for i, a := range r.Attempts {
		resumed := ""
		if a.Resumed {
			resumed = fmt.Sprintf(", resumed at step %d", a.FirstStep)
		}
		fmt.Fprintf(w, "attempt %d on %s: %d steps%s, %s %s\n  trace: %s\n", i+1, a.Worker, a.Steps, resumed, a.Ended, a.Error, a.Trace)
	}
}
