// Command benchpool measures the browser pool (package pool) on a short
// fixture task: a scripted agent opens a loopback sign-up form, fills two
// fields, submits and is done. For each mode (one Chromium per session, one
// shared Chromium with a browser context per session) and each number of
// concurrent sessions N (1, 4, 8 by default) it reports
//
//   - throughput: runs per minute, N workers each doing --runs runs
//     (Acquire, the agent's run, Release: a run includes its session's
//     start and stop, and in per-session mode its browser's launch);
//   - the median wall time of one run;
//   - memory per session with N sessions open, each on the submitted
//     form: the PSS (from /proc/PID/smaps_rollup: shared pages divided
//     among the processes sharing them) and the RSS (/proc/PID/status
//     VmRSS: shared pages counted in every process) of the browsers'
//     process trees, divided by N, and the Go heap (after a GC);
//
// each also as a ratio against the reference measured first in the same
// run: 1 session, one Chromium per session.
//
//	go run ./cmd/benchpool              (make bench-pool)
//	go run ./cmd/benchpool --sizes 1,4 --runs 2 --json
//
// Linux only (/proc). The numbers go into docs/performance.md and
// docs/scaling.md.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/pool"
)

//go:embed site
var siteFiles embed.FS

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "benchpool: %v\n", err)
		os.Exit(1)
	}
}

// Result is one (mode, sessions) measurement.
type Result struct {
	Mode     string `json:"mode"`
	Sessions int    `json:"sessions"`
	Runs     int    `json:"runs"`
	// WallSeconds is the timed phase's wall time: every worker's runs.
	WallSeconds      float64 `json:"wall_seconds"`
	RunsPerMinute    float64 `json:"runs_per_minute"`
	MedianRunSeconds float64 `json:"median_run_seconds"`
	// Memory with Sessions sessions open, per session.
	PSSPerSessionMB float64 `json:"pss_per_session_mb"`
	RSSPerSessionMB float64 `json:"rss_per_session_mb"`
	Processes       int     `json:"browser_processes"`
	GoHeapMB        float64 `json:"go_heap_mb"`
	// GoHeapPerSessionMB is the Go heap above the idle baseline, per session.
	GoHeapPerSessionMB float64 `json:"go_heap_per_session_mb"`
	// Failures are runs (or memory-phase sessions) that failed, counted
	// and left out; FirstFailure says why the first did.
	Failures     int    `json:"failures"`
	FirstFailure string `json:"first_failure,omitempty"`
	// Open is the number of sessions open when the memory was read (less
	// than Sessions when some failed to start).
	Open     int `json:"open"`
	Launches int `json:"browser_launches"`
	Crashes  int `json:"browser_crashes"`
	// Ratios against the reference (1 session, per-session mode).
	ThroughputX    float64 `json:"throughput_x"`
	MedianRunX     float64 `json:"median_run_x"`
	PSSPerSessionX float64 `json:"pss_per_session_x"`
	RSSPerSessionX float64 `json:"rss_per_session_x"`
}

// Report is the whole run, as --json writes it.
type Report struct {
	Date       string   `json:"date"`
	Machine    string   `json:"machine"`
	CPUs       int      `json:"cpus"`
	GoVersion  string   `json:"go_version"`
	LoadBefore string   `json:"load_before"`
	LoadAfter  string   `json:"load_after"`
	Latency    string   `json:"model_latency"`
	Reference  string   `json:"reference"`
	Results    []Result `json:"results"`
}

type options struct {
	sizes   []int
	modes   []pool.Mode
	runs    int
	latency time.Duration
	json    bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchpool", flag.ContinueOnError)
	sizes := fs.String("sizes", "1,4,8", "numbers of concurrent sessions, comma-separated")
	modes := fs.String("modes", "per-session,shared", "pool modes, comma-separated (the reference, per-session with 1 session, is always measured first)")
	runs := fs.Int("runs", 3, "runs per concurrent session in the timed phase")
	latency := fs.Duration("latency", 0, "simulated model latency per call (0: the scripted model answers at once)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 30*time.Minute, "bound on the whole measurement")
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := options{runs: *runs, latency: *latency, json: *asJSON}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--sizes: %q is not a positive number", s)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, s := range strings.Split(*modes, ",") {
		m, err := pool.ParseMode(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--modes: %w", err)
		}
		o.modes = append(o.modes, m)
	}
	if o.runs < 1 || o.latency < 0 {
		return errors.New("--runs must be at least 1 and --latency not negative")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	site, err := startSite()
	if err != nil {
		return err
	}
	defer site.close()
	work, err := os.MkdirTemp("", "benchpool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	rep := Report{
		Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Machine: cpuModel(), CPUs: runtime.NumCPU(),
		GoVersion: runtime.Version(), LoadBefore: loadavg(), Latency: o.latency.String(),
		Reference: "1 session, per-session mode",
	}
	type point struct {
		m pool.Mode
		n int
	}
	points := []point{{pool.BrowserPerSession, 1}}
	for _, m := range o.modes {
		for _, n := range o.sizes {
			if p := (point{m, n}); !slices.Contains(points, p) {
				points = append(points, p)
			}
		}
	}
	b := &bench{site: site, work: work, o: o, log: stderr}
	for _, pt := range points {
		fmt.Fprintf(stderr, "%s, %d sessions…\n", pt.m, pt.n)
		r, err := b.measure(ctx, pt.m, pt.n)
		if err != nil {
			return fmt.Errorf("%s with %d sessions: %w", pt.m, pt.n, err)
		}
		rep.Results = append(rep.Results, r)
	}
	ref := rep.Results[0]
	for i := range rep.Results {
		r := &rep.Results[i]
		r.ThroughputX = ratio(r.RunsPerMinute, ref.RunsPerMinute)
		r.MedianRunX = ratio(r.MedianRunSeconds, ref.MedianRunSeconds)
		r.PSSPerSessionX = ratio(r.PSSPerSessionMB, ref.PSSPerSessionMB)
		r.RSSPerSessionX = ratio(r.RSSPerSessionMB, ref.RSSPerSessionMB)
	}
	if want := b.runs.Load(); site.submissions.Load() < want {
		return fmt.Errorf("the site received %d submissions for %d successful runs", site.submissions.Load(), want)
	}
	rep.LoadAfter = loadavg()
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printTable(stdout, rep)
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

type bench struct {
	site *site
	work string
	o    options
	log  io.Writer
	runs atomic.Int64 // runs that reached the site, to check its count
	seq  atomic.Int64
}

// measure runs one (mode, n) point: the memory phase (n sessions open at
// once, each after one run, which also warms the pool up) then the timed
// phase (n workers, runs each).
func (b *bench) measure(ctx context.Context, m pool.Mode, n int) (Result, error) {
	res := Result{Mode: m.String(), Sessions: n, Runs: n * b.o.runs}
	baseHeap := goHeap()
	p, err := pool.New(pool.Config{Mode: m, MaxSessions: n})
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := p.Close(cctx); err != nil {
			fmt.Fprintf(b.log, "closing the pool: %v\n", err)
		}
	}()

	// Memory phase: n leases, each runs the task, then all are measured open.
	leases := make([]*pool.Lease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range leases {
		wg.Go(func() {
			l, err := p.Acquire(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			leases[i] = l
			errs[i] = b.task(ctx, l)
		})
	}
	wg.Wait()
	for _, err := range errs {
		res.fail(err)
	}
	open := 0
	for _, l := range leases {
		if l != nil {
			open++
		}
	}
	res.Open = open
	if open > 0 {
		mem, err := browserMemory(p.BrowserPIDs())
		if err != nil {
			return res, err
		}
		heap := goHeap()
		res.PSSPerSessionMB = mb(mem.pss) / float64(open)
		res.RSSPerSessionMB = mb(mem.rss) / float64(open)
		res.Processes = mem.procs
		res.GoHeapMB = mb(heap)
		res.GoHeapPerSessionMB = mb(max(heap-baseHeap, 0)) / float64(open)
	}
	for _, l := range leases {
		if l != nil {
			if rerr := l.Release(ctx); rerr != nil {
				fmt.Fprintf(b.log, "release: %v\n", rerr)
			}
		}
	}

	// Timed phase.
	durs := make([][]time.Duration, n)
	fails := make([][]error, n)
	start := time.Now()
	for w := range n {
		wg.Go(func() {
			for range b.o.runs {
				if ctx.Err() != nil {
					fails[w] = append(fails[w], ctx.Err())
					return
				}
				t0 := time.Now()
				l, err := p.Acquire(ctx)
				if err != nil {
					fails[w] = append(fails[w], err)
					continue
				}
				err = b.task(ctx, l)
				if rerr := l.Release(ctx); err == nil {
					err = rerr
				}
				if err != nil {
					fails[w] = append(fails[w], err)
					continue
				}
				durs[w] = append(durs[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, f := range fails {
		for _, err := range f {
			res.fail(err)
		}
	}
	all := slices.Concat(durs...)
	if len(all) == 0 {
		return res, fmt.Errorf("timed phase: every run failed: %s", res.FirstFailure)
	}
	slices.Sort(all)
	res.WallSeconds = wall.Seconds()
	res.RunsPerMinute = float64(len(all)) / wall.Minutes()
	res.MedianRunSeconds = all[len(all)/2].Seconds()
	st := p.Stats()
	res.Launches, res.Crashes = st.Launches, st.Crashes
	return res, nil
}

// fail counts a failed run.
func (r *Result) fail(err error) {
	if err == nil {
		return
	}
	r.Failures++
	if r.FirstFailure == "" {
		r.FirstFailure = err.Error()
	}
}

// task runs the fixture task with a scripted agent on the lease's session.
func (b *bench) task(ctx context.Context, l *pool.Lease) error {
	dir := filepath.Join(b.work, strconv.FormatInt(b.seq.Add(1), 10))
	defer os.RemoveAll(dir)
	var model llm.Model = scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
			{Name: "click", Label: "Sign up"},
		}},
		{WaitFor: "Thanks, Ada Lovelace", Action: "done", Params: map[string]any{"text": "Signed up", "success": true}},
	}, scripted.WithName("scripted-benchpool"))
	if b.o.latency > 0 {
		model = slowModel{Model: model, latency: b.o.latency}
	}
	a, err := agent.New("Open "+b.site.url+"/ and sign up Ada Lovelace (ada@example.com).", model, l.Session(),
		agent.Settings{RunDir: dir, Vision: agent.VisionOff})
	if err != nil {
		return err
	}
	before := b.site.submissions.Load()
	res, err := a.Run(ctx)
	if err != nil {
		return err
	}
	if !res.Done || !res.Success {
		return fmt.Errorf("the run did not succeed: %+v", res.Errors)
	}
	if b.site.submissions.Load() == before {
		return errors.New("the run ended without a submission reaching the site")
	}
	b.runs.Add(1)
	return nil
}

// slowModel answers after a simulated model latency.
type slowModel struct {
	llm.Model
	latency time.Duration
}

func (m slowModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	t := time.NewTimer(m.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.Model.Generate(ctx, req)
}

// site is the loopback fixture: the form at / and its submissions.
type site struct {
	url         string
	srv         *http.Server
	done        chan struct{}
	submissions atomic.Int64
}

func startSite() (*site, error) {
	form, err := siteFiles.ReadFile("site/form.html")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &site{url: "http://" + ln.Addr().String(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(form)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		s.submissions.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>Signed up</title><h1>Thanks, %s!</h1><p>We wrote to %s.</p>",
			html.EscapeString(r.PostFormValue("fullname")), html.EscapeString(r.PostFormValue("email")))
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func (s *site) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

func goHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

func printTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, "browser pool, fixture sign-up task (scripted model, latency %s); %s, %d CPUs, %s; %s\n",
		rep.Latency, runtime.GOOS+"/"+runtime.GOARCH, rep.CPUs, rep.Machine, rep.Date)
	fmt.Fprintf(w, "load before: %s; after: %s\nratios (x) against %s\n\n", rep.LoadBefore, rep.LoadAfter, rep.Reference)
	fmt.Fprintln(w, "mode         N  runs  runs/min      (x)  median run s    (x)  PSS/session MB    (x)  RSS/session MB    (x)  procs  Go heap MB (per session)  launches  failed")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-11s %2d  %4d  %8.1f  %6.2fx  %12.2f  %5.2fx  %14.0f  %5.2fx  %14.0f  %5.2fx  %5d  %10.1f (%5.1f)  %8d  %6d\n",
			r.Mode, r.Sessions, r.Runs, r.RunsPerMinute, r.ThroughputX, r.MedianRunSeconds, r.MedianRunX,
			r.PSSPerSessionMB, r.PSSPerSessionX, r.RSSPerSessionMB, r.RSSPerSessionX, r.Processes, r.GoHeapMB, r.GoHeapPerSessionMB, r.Launches, r.Failures)
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
