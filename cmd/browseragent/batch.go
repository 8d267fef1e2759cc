package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/providers"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/pool"
	"github.com/browseragent/browseragent/session"
)

// batchTask is one line of a batch file: a plain task, or a JSON object.
type batchTask struct {
	// ID names the task in the output and its run folder (OUT/ID); default
	// its line number.
	ID string `json:"id"`
	// Task is what the agent is asked to do.
	Task string `json:"task"`
	// URL, when set, is opened before the first model call (step 0).
	URL string `json:"url,omitempty"`
	// line is where the task was read, for errors.
	line int
}

// batchLine is the JSON line printed for each finished task.
type batchLine struct {
	ID         string `json:"id"`
	Done       bool   `json:"done"`
	Success    bool   `json:"success"`
	FinalText  string `json:"final_text,omitempty"`
	Steps      int    `json:"steps"`
	DurationMS int64  `json:"duration_ms"`
	Trace      string `json:"trace,omitempty"`
	History    string `json:"history,omitempty"`
	Error      string `json:"error,omitempty"`
}

// ok reports whether the task counts as succeeded.
func (l *batchLine) ok() bool { return l.Done && l.Success && l.Error == "" }

// errBatchInput is wrapped by every error about the batch file's contents.
var errBatchInput = errors.New("bad batch input")

// batchID is what an id may hold: it names a folder.
var batchID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// readBatch reads every task of r (named name in errors) before anything
// runs, so that a mistake on line 90 does not cost 89 runs: one task a line,
// or a JSON object {"id", "task", "url"} a line; blank lines and lines
// starting with # are skipped.
func readBatch(r io.Reader, name string) ([]batchTask, error) {
	var tasks []batchTask
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t := batchTask{line: n}
		if strings.HasPrefix(line, "{") {
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&t); err != nil {
				return nil, fmt.Errorf("%w: %s:%d: %v (want {\"id\": ..., \"task\": ..., \"url\": ...})", errBatchInput, name, n, err)
			}
			if dec.More() {
				return nil, fmt.Errorf("%w: %s:%d: more than one JSON value on the line", errBatchInput, name, n)
			}
			t.Task = strings.TrimSpace(t.Task)
			if t.Task == "" {
				return nil, fmt.Errorf("%w: %s:%d: no \"task\"", errBatchInput, name, n)
			}
			if t.URL != "" && !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
				return nil, fmt.Errorf("%w: %s:%d: url %q is not an http(s) URL", errBatchInput, name, n, t.URL)
			}
		} else {
			t.Task = line
		}
		if t.ID == "" {
			t.ID = strconv.Itoa(n)
		}
		if !batchID.MatchString(t.ID) {
			return nil, fmt.Errorf("%w: %s:%d: id %q: want letters, digits, '.', '_' or '-' (it names the task's run folder)", errBatchInput, name, n, t.ID)
		}
		if prev, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("%w: %s:%d: id %q is also on line %d", errBatchInput, name, n, t.ID, prev)
		}
		seen[t.ID] = n
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%w: %s has no task", errBatchInput, name)
	}
	return tasks, nil
}

// errBatchFailed is batch's error when a task did not succeed (exit 1).
var errBatchFailed = errors.New("not every task succeeded")

func runBatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	model := fs.String("model", os.Getenv("BROWSERAGENT_MODEL"), "model as provider:name, as for run (default $BROWSERAGENT_MODEL)")
	baseURL := fs.String("base-url", "", "the provider's API base URL (OpenAI-compatible servers, proxies)")
	maxSteps := fs.Int("max-steps", 100, "stop each task after this many steps")
	concurrency := fs.Int("concurrency", pool.DefaultMaxSessions, "tasks run at once (the pool's sessions)")
	mode := fs.String("mode", "shared", "shared: one browser, a browser context per session (with --cdp-url, that browser); per-session: one browser per session")
	var af agentFlags
	af.register(fs, "send screenshots to the model: on (every step), auto (when it asks, or the page is a canvas/video its text cannot show) or off")
	outDir := fs.String("out", "", "folder of the tasks' run folders OUT/ID (trace, history, report) (default ./out/batch-TIMESTAMP)")
	cacheDir := fs.String("cache", "", "action cache folder shared by the tasks (see run --cache)")
	record := fs.Bool("record", false, "record a screencast of each task into OUT/ID/frames, shown by its report (see run --record)")
	secrets := secretFlags{}
	fs.Var(secrets, "secret-env", "a secret the model may use as <secret>name</secret>, read from an environment variable: name=ENVVAR (repeatable)")
	var files fileFlags
	fs.Var(&files, "file", "a local file the model may upload or read (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: browseragent batch [flags] FILE|-

Runs every task of FILE (- for stdin) on a pool of browser sessions, at most
--concurrency at once. A line is a task, or a JSON object:
  {"id": "pricing", "task": "Find the price of the Pro plan", "url": "https://example.com"}
Prints one JSON line per finished task on stdout (id, done, success,
final_text, steps, duration_ms, trace, history, error) and a summary on
stderr; exits 1 if any task failed. Ctrl-C stops the running tasks (their
traces are closed) and runs no more.`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	var notHere []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "new-tab" || f.Name == "start-timeout" {
			notHere = append(notHere, "--"+f.Name)
		}
	})
	if len(notHere) > 0 {
		return usagef("%s: not for batch (its sessions come from a pool, each in a tab of its own)", strings.Join(notHere, ", "))
	}
	if fs.NArg() != 1 {
		return usagef("want the batch file (or - for stdin) as one argument")
	}
	if *concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	pm, err := pool.ParseMode(*mode)
	if err != nil {
		return usagef("--mode: want shared or per-session, got %q", *mode)
	}
	if pm == pool.BrowserPerSession && bf.cdpURL != "" {
		return usagef("--cdp-url needs --mode shared: per-session launches a browser for each session")
	}
	set, err := modelSettings(&af, *model, *baseURL, *maxSteps, files, *cacheDir)
	if err != nil {
		return err
	}
	tasks, err := readTasks(fs.Arg(0))
	if err != nil {
		return err
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", "batch-"+time.Now().UTC().Format("20060102-150405"))
	}
	m, err := providers.New(*model, providers.Options{BaseURL: *baseURL})
	if err != nil {
		return err
	}
	defer llm.CloseIdleConnections(m)
	p, err := pool.New(pool.Config{Mode: pm, MaxSessions: *concurrency, Profile: bf.profile()})
	if err != nil {
		return err
	}
	b := &batch{pool: p, model: m, settings: set, secrets: secrets, dir: dir, record: *record}
	sum := b.run(ctx, tasks, min(*concurrency, len(tasks)), stdout)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	closeErr := p.Close(cctx)
	if n := b.guardOff.Load(); n > 0 {
		fmt.Fprintf(stderr, "%s (%d sessions reported it off)\n", guardOffNote, n)
	}
	fmt.Fprintln(stderr, sum.String(pm, *concurrency))
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %d of %d tasks not run", sum.notRun, len(tasks))
	case closeErr != nil:
		return closeErr
	case sum.failed > 0:
		return fmt.Errorf("%w: %d of %d failed", errBatchFailed, sum.failed, sum.runs)
	}
	return nil
}

// guardOffNote is printed when a task's session ran its URL policy
// without the network guard (the security watchdog's BrowserError
// "PolicyGuardOff": a session that did not launch its browser).
const guardOffNote = "batch: note: the URL policy judged every request by interception, but without the network guard: WebSocket handshakes and preconnects to refused hosts were not stopped (--mode per-session launches a browser per session, which has it)"

// readTasks reads the batch file, or stdin for "-".
func readTasks(name string) ([]batchTask, error) {
	if name == "-" {
		return readBatch(os.Stdin, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBatch(f, name)
}

// batch runs tasks on a pool.
type batch struct {
	pool     *pool.Pool
	model    llm.Model
	settings agent.Settings
	secrets  map[string]string
	dir      string
	record   bool // a screencast per task (run --record)

	guardOff atomic.Int32 // sessions that reported the network guard off
}

// batchSummary counts a batch's tasks.
type batchSummary struct {
	runs, ok, failed, notRun int
	wall                     time.Duration
}

func (s batchSummary) String(m pool.Mode, max int) string {
	rate := 0.0
	if s.wall > 0 {
		rate = float64(s.runs) / s.wall.Minutes()
	}
	line := fmt.Sprintf("batch: %d runs, %d ok, %d failed, %.1f runs per minute, wall time %s (%s, %d sessions)",
		s.runs, s.ok, s.failed, rate, s.wall.Round(10*time.Millisecond), m, max)
	if s.notRun > 0 {
		line += fmt.Sprintf("; %d tasks not run (interrupted)", s.notRun)
	}
	return line
}

// run runs tasks on workers goroutines, each holding a lease per task, and
// prints each finished task's line on stdout as it ends. Once ctx ends no
// task starts, and the running ones stop (their traces closed).
func (b *batch) run(ctx context.Context, tasks []batchTask, workers int, stdout io.Writer) batchSummary {
	start := time.Now()
	queue := make(chan batchTask)
	results := make(chan batchLine)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for t := range queue {
				if ctx.Err() != nil {
					continue // interrupted: counted as not run
				}
				results <- b.runOne(ctx, t)
			}
		})
	}
	go func() {
		defer close(results)
		defer wg.Wait()
		defer close(queue)
		for _, t := range tasks {
			select {
			case queue <- t:
			case <-ctx.Done():
				return
			}
		}
	}()
	var sum batchSummary
	enc := json.NewEncoder(stdout)
	for l := range results {
		sum.runs++
		if l.ok() {
			sum.ok++
		} else {
			sum.failed++
		}
		_ = enc.Encode(l)
	}
	sum.notRun = len(tasks) - sum.runs
	sum.wall = time.Since(start)
	return sum
}

// runOne runs one task on a leased session, as run would on its own, into
// OUT/ID.
func (b *batch) runOne(ctx context.Context, t batchTask) batchLine {
	line := batchLine{ID: t.ID}
	started := time.Now()
	set := b.settings
	if t.URL != "" {
		p, _ := json.Marshal(map[string]string{"url": t.URL})
		set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: p}}
	}
	out, err := runAgent(ctx, runConfig{
		task: t.Task, model: b.model, settings: set, outDir: filepath.Join(b.dir, t.ID),
		quiet: true, secrets: b.secrets, record: b.record, lease: b.lease,
	}, nil)
	line.DurationMS = time.Since(started).Milliseconds()
	if out != nil {
		line.Trace, line.History = out.Trace, out.History
		if r := out.Result; r != nil {
			line.Done, line.Success, line.FinalText, line.Steps = r.Done, r.Success, r.FinalText, r.Steps
			if err == nil && !r.Done && len(r.Errors) > 0 {
				err = errors.New(r.Errors[len(r.Errors)-1])
			}
		}
	}
	if err != nil {
		line.Error = err.Error()
	}
	return line
}

// lease acquires a pooled session started with the task's options (its
// trace's bus hook, so the trace has the session's start-up too).
func (b *batch) lease(ctx context.Context, opts ...session.Option) (*session.Session, func() error, error) {
	opts = append(opts, session.WithBusHook(b.watchGuard))
	l, err := b.pool.AcquireWith(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	s := l.Session()
	return s, func() error {
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return l.Release(rctx)
	}, nil
}

// watchGuard counts a session whose security watchdog reports that its
// URL policy runs without the network guard.
func (b *batch) watchGuard(bb *bus.Bus) {
	bb.Observe(bus.ObserverFunc(func(r bus.Record) {
		if e, ok := r.Event.(events.BrowserErrorEvent); ok && r.Phase == bus.Dispatched && e.Type == "PolicyGuardOff" {
			b.guardOff.Add(1)
		}
	}))
}
