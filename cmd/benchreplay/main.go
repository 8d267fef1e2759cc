// Command benchreplay measures what replay saves: it records the demo's
// run through the real `browseragent run` path (the openai provider
// against a local model server that takes --latency per call, 1 s by
// default), then replays the recording with `browseragent replay` on the
// same site, and prints both wall times and their ratio, --runs times.
//
//	go run ./cmd/benchreplay            (make bench-replay)
//	go run ./cmd/benchreplay --runs 5 --latency 2s
//
// Two times are given per command: the process's wall time (browser
// start and stop included, what a user waits for) and the agent's (first
// step's start to last step's end, from the history). The numbers go into
// docs/performance.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/scriptserver"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "benchreplay: %v\n", err)
		os.Exit(1)
	}
}

// sample is one record-then-replay pair.
type sample struct {
	recWall, repWall   time.Duration // process wall time
	recAgent, repAgent time.Duration // first step start to last step end
	recCalls, repCalls int           // model calls
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchreplay", flag.ContinueOnError)
	runs := fs.Int("runs", 3, "record-and-replay pairs to measure")
	latency := fs.Duration("latency", time.Second, "the model server's latency per call")
	bin := fs.String("browseragent", "", "the browseragent binary (default: built from ./cmd/browseragent with go build)")
	keep := fs.Bool("keep", false, "keep the work folder (traces, histories, reports) and print its path")
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 || *latency < 0 {
		return errors.New("--runs must be at least 1 and --latency not negative")
	}
	work, err := os.MkdirTemp("", "benchreplay-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(stderr, "work folder: %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	if *bin == "" {
		*bin = filepath.Join(work, "browseragent")
		goTool := os.Getenv("GO")
		if goTool == "" {
			goTool = "go"
		}
		fmt.Fprintln(stderr, "building browseragent…")
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", *bin, "./cmd/browseragent")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/browseragent (run from the module's root): %w", err)
		}
	}
	var samples []sample
	for i := 1; i <= *runs; i++ {
		s, err := measure(ctx, *bin, filepath.Join(work, fmt.Sprint(i)), *latency)
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		fmt.Fprintf(stderr, "run %d: recorded %.2f s, replayed %.2f s\n", i, s.recWall.Seconds(), s.repWall.Seconds())
		samples = append(samples, s)
	}
	printTable(stdout, samples, *latency)
	return nil
}

// measure records the demo through `run` against a model server, then
// replays it on the same site.
func measure(ctx context.Context, bin, dir string, latency time.Duration) (sample, error) {
	var s sample
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, err
	}
	site, err := demosite.Start(demosite.Original)
	if err != nil {
		return s, err
	}
	defer site.Close()
	cv := filepath.Join(dir, demosite.CVName)
	if err := os.WriteFile(cv, []byte(demosite.CVText), 0o644); err != nil {
		return s, err
	}
	srv, err := scriptserver.Start(scripted.New(demosite.Script(cv), scripted.WithName("scripted-demo")), scriptserver.Config{Latency: latency})
	if err != nil {
		return s, err
	}
	defer srv.Close()

	rec := filepath.Join(dir, "recorded")
	task := demosite.Task + " The site is at " + site.URL() + "/"
	s.recWall, err = timed(ctx, bin, "run", "--model", "openai:scripted-demo", "--base-url", srv.URL(), "--allowed-domains", "127.0.0.1",
		"--file", cv, "--json", "--out", rec, task)
	if err != nil {
		return s, fmt.Errorf("recording: %w", err)
	}
	s.recCalls = srv.Calls()
	if n := len(site.Applications()); n != 1 {
		return s, fmt.Errorf("recording: the site received %d applications, want 1", n)
	}
	rep := filepath.Join(dir, "replayed")
	s.repWall, err = timed(ctx, bin, "replay", "--allowed-domains", "127.0.0.1", "--file", cv, "--json", "--out", rep, filepath.Join(rec, "history.json"))
	if err != nil {
		return s, fmt.Errorf("replaying: %w", err)
	}
	s.repCalls = srv.Calls() - s.recCalls
	if n := len(site.Applications()); n != 2 {
		return s, fmt.Errorf("replaying: the site received %d applications in all, want 2", n)
	}
	if s.recAgent, err = agentTime(filepath.Join(rec, "history.json")); err != nil {
		return s, err
	}
	if s.repAgent, err = agentTime(filepath.Join(rep, "history.json")); err != nil {
		return s, err
	}
	return s, nil
}

// timed runs the command and returns its wall time; a non-zero exit is an
// error carrying its stderr.
func timed(ctx context.Context, bin string, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), args[0], err, errb.String())
	}
	return d, nil
}

// agentTime is a history's first step's start to its last step's end.
func agentTime(path string) (time.Duration, error) {
	h, err := agent.LoadHistory(path)
	if err != nil {
		return 0, err
	}
	if len(h.Items) == 0 {
		return 0, fmt.Errorf("%s has no steps", path)
	}
	return h.Items[len(h.Items)-1].EndedAt.Sub(h.Items[0].StartedAt), nil
}

func printTable(w io.Writer, samples []sample, latency time.Duration) {
	fmt.Fprintf(w, "replay vs recorded run of the demo; model server latency %v per call; %s/%s, %d CPUs, %s; %s\n\n",
		latency, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintln(w, "run      recorded wall  replay wall  ratio   recorded agent  replay agent  ratio   model calls")
	row := func(name string, s sample) {
		fmt.Fprintf(w, "%-8s %11.2f s  %9.2f s  %5.1f%%  %12.2f s  %10.2f s  %5.1f%%  %d → %d\n", name,
			s.recWall.Seconds(), s.repWall.Seconds(), pct(s.repWall, s.recWall),
			s.recAgent.Seconds(), s.repAgent.Seconds(), pct(s.repAgent, s.recAgent), s.recCalls, s.repCalls)
	}
	for i, s := range samples {
		row(fmt.Sprint(i+1), s)
	}
	if len(samples) > 1 {
		row("median", median(samples))
	}
}

func pct(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a.Seconds() / b.Seconds()
}

// median takes each column's median on its own.
func median(ss []sample) sample {
	col := func(get func(sample) time.Duration) time.Duration {
		var v []time.Duration
		for _, s := range ss {
			v = append(v, get(s))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	calls := func(get func(sample) int) int {
		var v []int
		for _, s := range ss {
			v = append(v, get(s))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{
		recWall: col(func(s sample) time.Duration { return s.recWall }), repWall: col(func(s sample) time.Duration { return s.repWall }),
		recAgent: col(func(s sample) time.Duration { return s.recAgent }), repAgent: col(func(s sample) time.Duration { return s.repAgent }),
		recCalls: calls(func(s sample) int { return s.recCalls }), repCalls: calls(func(s sample) int { return s.repCalls }),
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "cpu unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "cpu unknown"
}
