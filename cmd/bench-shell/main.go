// Command bench-shell measures what a shell step costs over the same action
// in the library: on one fixture page (agent-form.html, its "Nothing"
// button), rounds alternate between
//
//	lib    agent.Driver.Do(ctx, "click", {"index": N}) in this process, on a
//	       launched browser of its own
//	shell  the built browseragent binary run as a subprocess:
//	       `browseragent click N --session bench`, timed from fork to exit
//	       (the process starts, connects to the background session's
//	       socket, the session runs the same Driver.Do, the verdict is
//	       printed)
//
// and, to tell the process start from the rest, the same click request
// sent to the session's socket by this process (control.Client: the
// protocol and the session, no process start),
// then the same for a page state (Driver.State vs `browseragent state`) and
// for a request that touches no browser (Driver.Tabs vs `browseragent
// tabs`: the fixed cost of a command), and `browseragent help` against
// nothing (the process start alone: the runtime, the package inits, the
// page faults of the binary). The order within a round alternates
// too, so drifting load hits both sides alike. It also reports the
// background session's Go memory (runtime.MemStats through the socket's
// info request) and its resident set, idle after open and after the rounds.
//
//	go run ./cmd/bench-shell [-n 40] [-warmup 5] [-binary PATH]
//
// Without -binary it builds ./cmd/browseragent with `go build` into a
// temporary directory (run it from the repository root).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-shell:", err)
		os.Exit(1)
	}
}

type options struct {
	n, warmup int
	binary    string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench-shell", flag.ContinueOnError)
	var o options
	fs.IntVar(&o.n, "n", 40, "measured rounds")
	fs.IntVar(&o.warmup, "warmup", 5, "warm-up rounds (not measured)")
	fs.StringVar(&o.binary, "binary", "", "the browseragent binary (default: build ./cmd/browseragent)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.n < 1 || o.warmup < 0 {
		return errors.New("-n must be at least 1 and -warmup not negative")
	}
	return bench(ctx, o, out)
}

// bench sets up both sides, runs the rounds and prints the tables.
func bench(ctx context.Context, o options, out io.Writer) (err error) {
	tmp, err := os.MkdirTemp("", "bsh")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.binary == "" {
		o.binary = filepath.Join(tmp, "browseragent")
		fmt.Fprintln(out, "building ./cmd/browseragent ...")
		b := exec.CommandContext(ctx, "go", "build", "-o", o.binary, "./cmd/browseragent")
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	srv, err := testbrowser.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	page := srv.URL1 + "/agent-form.html"

	// The library side: a Driver in this process.
	s := watchdogs.NewSession(session.Profile{})
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, s.Stop(ctx))
	}()
	d, err := agent.NewDriver(s, agent.Settings{RunDir: filepath.Join(tmp, "lib"), Vision: agent.VisionOff})
	if err != nil {
		return err
	}
	defer d.Close(context.Background())
	if _, err := d.Do(ctx, "navigate", params(map[string]any{"url": page})); err != nil {
		return err
	}
	obs, err := d.State(ctx, agent.StateOptions{})
	if err != nil {
		return err
	}
	libIndex, err := noopIndex(obs.State)
	if err != nil {
		return err
	}

	// The shell side: a background session of the built binary.
	rt := filepath.Join(tmp, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		return err
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "BROWSERAGENT_SESSION=bench")
	var shCPU time.Duration // the last command's CPU time (user + system)
	sh := func(args ...string) (time.Duration, string, error) {
		c := exec.CommandContext(ctx, o.binary, args...)
		c.Env = env
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		start := time.Now()
		err := c.Run()
		d := time.Since(start)
		if c.ProcessState != nil {
			shCPU = c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		}
		if err != nil {
			return d, "", fmt.Errorf("browseragent %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		return d, stdout.String(), nil
	}
	if _, _, err := sh("open", page, "--idle", "0", "--out", filepath.Join(tmp, "shell")); err != nil {
		return err
	}
	defer func() {
		if _, _, cerr := sh("close"); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	_, js, err := sh("state", "--json")
	if err != nil {
		return err
	}
	var st struct {
		State *events.BrowserState `json:"state"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil || st.State == nil {
		return fmt.Errorf("state --json: %v", err)
	}
	shIndex, err := noopIndex(st.State)
	if err != nil {
		return err
	}
	sock := filepath.Join(rt, "browseragent", "bench.sock")
	memIdle, err := memory(ctx, sock)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel())
	fmt.Fprintf(out, "date: %s\n", time.Now().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(out, "load average at start: %s\n", loadavg())
	fmt.Fprintf(out, "rounds: %d measured after %d warm-up\n\n", o.n, o.warmup)

	type pair struct {
		name      string
		lib       func() error
		shell     []string
		lib1, sh1 []time.Duration
		paired    []time.Duration
		cpu       []time.Duration // the shell command's own CPU time
	}
	click := params(map[string]any{"index": libIndex})
	shClick := params(map[string]any{"index": shIndex})
	client := control.Client{Socket: sock, Timeout: time.Minute}
	pairs := []*pair{
		{name: "click N", shell: []string{"click", strconv.Itoa(shIndex)}, lib: func() error {
			rec, err := d.Do(ctx, "click", click)
			if err == nil && rec.Verdict == events.VerdictFailed {
				err = errors.New(rec.Error)
			}
			return err
		}},
		{name: "click N, socket only", shell: nil, lib: func() error {
			rec, err := d.Do(ctx, "click", click)
			if err == nil && rec.Verdict == events.VerdictFailed {
				err = errors.New(rec.Error)
			}
			return err
		}},
		{name: "state", shell: []string{"state"}, lib: func() error {
			_, err := d.State(ctx, agent.StateOptions{})
			return err
		}},
		{name: "tabs (no browser call)", shell: []string{"tabs"}, lib: func() error {
			d.Tabs()
			return nil
		}},
		{name: "help (process start only)", shell: []string{"help"}, lib: func() error { return nil }},
	}
	for round := range o.warmup + o.n {
		for _, p := range pairs {
			var tl, ts time.Duration
			lib := func() error {
				start := time.Now()
				err := p.lib()
				tl = time.Since(start)
				return err
			}
			var tc time.Duration
			shell := func() error {
				var err error
				if p.shell == nil {
					// The same request from this process: the socket,
					// the protocol and the session, without a process
					// start.
					start := time.Now()
					_, err = client.Call(ctx, control.Request{Op: control.OpDo, Action: "click", Params: shClick})
					ts = time.Since(start)
					return err
				}
				ts, _, err = sh(p.shell...)
				tc = shCPU
				return err
			}
			first, second := lib, shell
			if round%2 == 1 {
				first, second = shell, lib
			}
			if err := first(); err != nil {
				return err
			}
			if err := second(); err != nil {
				return err
			}
			if round >= o.warmup {
				p.lib1, p.sh1, p.paired, p.cpu = append(p.lib1, tl), append(p.sh1, ts), append(p.paired, ts-tl), append(p.cpu, tc)
			}
		}
	}
	memAfter, err := memory(ctx, sock)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "load average at end: %s\n\n", loadavg())

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tlib median\tlib p90\tshell median\tshell p90\tshell − lib (paired median)\tshell ÷ lib\tcommand's CPU (median)\t")
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t\n", p.name, ms(quantile(p.lib1, 0.5)), ms(quantile(p.lib1, 0.9)),
			ms(quantile(p.sh1, 0.5)), ms(quantile(p.sh1, 0.9)), ms(quantile(p.paired, 0.5)),
			float64(quantile(p.sh1, 0.5))/float64(max(quantile(p.lib1, 0.5), time.Microsecond)), ms(quantile(p.cpu, 0.5)))
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "background session\tGo heap in use\tGo heap live+garbage\tGo runtime total (Sys)\tgoroutines\tprocess RSS\t")
	for _, m := range []struct {
		when string
		m    mem
	}{{"idle after open", memIdle}, {fmt.Sprintf("after %d rounds", o.warmup+o.n), memAfter}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t\n", m.when, mib(m.m.info.HeapInuse), mib(m.m.info.HeapAlloc), mib(m.m.info.Sys), m.m.info.Goroutines, mib(m.m.rss))
	}
	tw.Flush()
	return nil
}

func params(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// noopIndex finds the "Nothing" button (id=noop).
func noopIndex(st *events.BrowserState) (int, error) {
	for i, el := range st.Elements {
		if el.Attributes["id"] == "noop" {
			return i, nil
		}
	}
	return 0, errors.New("no element id=noop on the page")
}

type mem struct {
	info control.Info
	rss  uint64
}

// memory asks the session for its Go figures and reads its resident set.
func memory(ctx context.Context, sock string) (mem, error) {
	c := control.Client{Socket: sock, Timeout: time.Minute}
	r, err := c.Call(ctx, control.Request{Op: control.OpInfo})
	if err != nil {
		return mem{}, err
	}
	m := mem{info: *r.Info}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.Info.PID))
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.rss = kb << 10
			}
		}
	}
	return m, nil
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

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

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}
