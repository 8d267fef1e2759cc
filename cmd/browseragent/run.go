package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/providers"
)

// secretFlags collects --secret-env name=ENVVAR pairs.
type secretFlags map[string]string

func (s secretFlags) String() string { return "" }

func (s secretFlags) Set(v string) error {
	name, env, ok := strings.Cut(v, "=")
	if !ok || name == "" || env == "" {
		return fmt.Errorf("want name=ENVVAR, got %q", v)
	}
	val, ok := os.LookupEnv(env)
	if !ok {
		return fmt.Errorf("environment variable %s (for secret %s) is not set", env, name)
	}
	s[name] = val
	return nil
}

// fileFlags collects --file paths, made absolute and checked to exist.
type fileFlags []string

func (f *fileFlags) String() string { return strings.Join(*f, ",") }

func (f *fileFlags) Set(v string) error {
	p, err := filepath.Abs(v)
	if err != nil {
		return err
	}
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a folder, want a file", v)
	}
	*f = append(*f, p)
	return nil
}

func runTask(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	model := fs.String("model", os.Getenv("BROWSERAGENT_MODEL"), "model as provider:name, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:llama3.1 (default $BROWSERAGENT_MODEL)")
	baseURL := fs.String("base-url", "", "the provider's API base URL (OpenAI-compatible servers, proxies)")
	maxSteps := fs.Int("max-steps", 100, "stop after this many steps")
	var af agentFlags
	af.register(fs, "send screenshots to the model: on (every step), auto (when it asks, or the page is a canvas/video its text cannot show) or off")
	outDir := fs.String("out", "", "folder for the trace, history, screenshots and report (default ./out/run-TIMESTAMP)")
	tracePath := fs.String("trace", "", "trace file (default OUT/trace.jsonl; its folder receives the screenshots)")
	reportPath := fs.String("report", "", "HTML report file (default OUT/report.html)")
	asJSON := fs.Bool("json", false, "print the run result as JSON")
	record := fs.Bool("record", false, "record a screencast of the run into OUT/frames; the report shows it as a filmstrip")
	otel := fs.Bool("otel", false, "export OpenTelemetry spans (run, steps, model calls, actions) over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)")
	cacheDir := fs.String("cache", "", "action cache folder: a step seen before (same task, page and progress, same model and prompt) runs its cached actions without a model call; see docs/replay.md")
	var hf humanFlags
	hf.register(fs)
	secrets := secretFlags{}
	fs.Var(secrets, "secret-env", "a secret the model may use as <secret>name</secret>, read from an environment variable: name=ENVVAR (repeatable); it never appears in prompts, history or trace")
	var files fileFlags
	fs.Var(&files, "file", "a local file the model may upload (upload_file) or read; the path is shown to the model (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: browseragent run [flags] "task"`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the task as one argument")
	}
	set, err := modelSettings(&af, *model, *baseURL, *maxSteps, files, *cacheDir)
	if err != nil {
		return err
	}
	stdinTTY := stdinIsTerminal()
	if err := hf.check(stdinTTY, stderrIsTerminal()); err != nil {
		return err
	}
	dir := *outDir
	if dir == "" && *tracePath != "" {
		dir = filepath.Dir(*tracePath)
	}
	if dir == "" {
		dir = filepath.Join("out", "run-"+time.Now().UTC().Format("20060102-150405"))
	}
	if *tracePath != "" {
		if rel, err := filepath.Rel(dir, filepath.Dir(*tracePath)); err != nil || rel != "." {
			return usagef("--trace must be in the --out folder (screenshots are stored next to it)")
		}
	}
	m, err := providers.New(*model, providers.Options{BaseURL: *baseURL})
	if err != nil {
		return err
	}
	terminal := isTerminal(stdout)
	out, err := runAgent(ctx, runConfig{
		task: fs.Arg(0), model: m, browser: bf, outDir: dir, tracePath: *tracePath, reportPath: *reportPath,
		settings: set,
		quiet:    *asJSON || !terminal, secrets: secrets, otel: *otel, record: *record,
		human: hf, stdinTTY: stdinTTY,
	}, stderr)
	printOutcome(stdout, out, *asJSON)
	if errors.Is(err, agent.ErrBudgetExceeded) {
		return &exitError{code: exitBudget, err: err}
	}
	if err != nil {
		return err
	}
	if out.Result == nil || !out.Result.Success {
		return errNotSuccessful
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal), so that
// live progress is shown to people and kept out of pipes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
