package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildFakeAddon builds testdata/fakeaddon (a real executable standing in
// for browseragent-temporal) as dir/browseragent-temporal.
func buildFakeAddon(t *testing.T, dir string) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("the hand-off tests build a stand-in add-on and need the go command: %v", err)
		}
	}
	out := filepath.Join(dir, addonName)
	cmd := exec.Command(goBin, "build", "-o", out, "./testdata/fakeaddon")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in add-on: %v\n%s", err, b)
	}
	return out
}

// cliIn is cli with stdin, run as the executable exe.
func cliIn(t *testing.T, exe string, stdin io.Reader, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(append(os.Environ(), "BROWSERAGENT_CLI=1"), env...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the command: %v", err)
	}
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// addonArgs is the stand-in's first stdout line: the arguments it got.
func addonArgs(t *testing.T, stdout string) []string {
	t.Helper()
	line, _, _ := strings.Cut(stdout, "\n")
	var got struct{ Args []string }
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("the add-on did not print its arguments: %v\n%s", err, stdout)
	}
	return got.Args
}

// worker, submit and cancel run browseragent-temporal with the same
// arguments, stdio passed through, its exit code ours; found next to the
// executable before PATH; missing, a clear error; interrupted, the add-on
// gets os.Interrupt, and is killed after the grace when it ignores it.
func TestHandoff(t *testing.T) {
	onPath := t.TempDir()
	buildFakeAddon(t, onPath)
	empty := t.TempDir()

	t.Run("args and exit code", func(t *testing.T) {
		r := cli(t, []string{"PATH=" + onPath}, "submit", "--wait", "find the docs", "--task-queue", "q")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if got, want := addonArgs(t, r.stdout), []string{"submit", "--wait", "find the docs", "--task-queue", "q"}; !slices.Equal(got, want) {
			t.Errorf("the add-on got %q, want %q", got, want)
		}
		if !strings.Contains(r.stderr, "fakeaddon: stderr line") {
			t.Errorf("the add-on's stderr is not passed through: %q", r.stderr)
		}
		for _, name := range []string{"worker", "cancel"} {
			r := cli(t, []string{"PATH=" + onPath}, name, "--exit", "7")
			if r.code != 7 {
				t.Errorf("%s: exit %d, want the add-on's 7\n%s", name, r.code, r.stderr)
			}
			if got := addonArgs(t, r.stdout); got[0] != name {
				t.Errorf("%s: the add-on got %q", name, got)
			}
			// The add-on said why it failed; no second message.
			if strings.Contains(r.stderr, "browseragent "+name+":") {
				t.Errorf("%s: an add-on's exit is explained again: %q", name, r.stderr)
			}
		}
	})

	t.Run("stdin", func(t *testing.T) {
		r := cliIn(t, os.Args[0], strings.NewReader("task one\ntask two\n"), []string{"PATH=" + onPath}, "submit", "--stdin")
		if r.code != 0 || !strings.HasSuffix(r.stdout, "task one\ntask two\n") {
			t.Fatalf("exit %d, stdout %q: want stdin copied through", r.code, r.stdout)
		}
	})

	t.Run("next to the executable first", func(t *testing.T) {
		dir := t.TempDir()
		exe := filepath.Join(dir, "browseragent")
		linkOrCopy(t, os.Args[0], exe)
		buildFakeAddon(t, dir)
		// On PATH, another browseragent-temporal that fails.
		other := t.TempDir()
		if err := os.WriteFile(filepath.Join(other, addonName), []byte("#!/bin/sh\necho wrong add-on >&2\nexit 9\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		r := cliIn(t, exe, nil, []string{"PATH=" + other}, "worker", "--task-queue", "q")
		if r.code != 0 || strings.Contains(r.stderr, "wrong add-on") {
			t.Fatalf("exit %d, stderr %q: want the add-on next to the executable", r.code, r.stderr)
		}
		if got := addonArgs(t, r.stdout); !slices.Equal(got, []string{"worker", "--task-queue", "q"}) {
			t.Errorf("the add-on got %q", got)
		}
		// Without one next to it, PATH's is run.
		r = cli(t, []string{"PATH=" + other}, "worker")
		if r.code != 9 || !strings.Contains(r.stderr, "wrong add-on") {
			t.Errorf("exit %d, stderr %q: want PATH's add-on (exit 9)", r.code, r.stderr)
		}
	})

	t.Run("missing", func(t *testing.T) {
		r := cli(t, []string{"PATH=" + empty}, "worker", "--temporal", "127.0.0.1:7233")
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
		for _, want := range []string{
			"browseragent worker: browseragent-temporal not found",
			"on PATH",
			"go install github.com/browseragent/browseragent/temporal/cmd/browseragent-temporal@latest",
			"make temporal",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		t.Setenv("PATH", empty)
		if _, err := findAddon(); !errors.Is(err, errAddonNotFound) {
			t.Errorf("findAddon: %v, want errAddonNotFound", err)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		t.Setenv("PATH", onPath)
		var out watchWriter
		out.want("ready")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		code := make(chan int, 1)
		go func() { code <- run(ctx, []string{"worker", "--wait-interrupt"}, &out, io.Discard) }()
		awaitReady(t, &out, code)
		cancel()
		if c := <-code; c != 3 || !strings.Contains(out.String(), "interrupted") {
			t.Errorf("exit %d, stdout %q: want the add-on's clean stop on os.Interrupt (exit 3)", c, out.String())
		}
	})

	t.Run("killed after the grace", func(t *testing.T) {
		t.Setenv("PATH", onPath)
		defer func(g time.Duration) { addonGrace = g }(addonGrace)
		addonGrace = time.Second
		var out watchWriter
		out.want("ready")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		code := make(chan int, 1)
		go func() { code <- run(ctx, []string{"worker", "--ignore-interrupt"}, &out, io.Discard) }()
		awaitReady(t, &out, code)
		cancel()
		if c := <-code; c != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, want %d (killed)", c, 128+int(syscall.SIGKILL))
		}
	})
}

// awaitReady waits until out saw its text, failing if the command ended first.
func awaitReady(t *testing.T, out *watchWriter, code <-chan int) {
	t.Helper()
	select {
	case <-out.seen:
	case c := <-code:
		t.Fatalf("the command ended (exit %d) before the add-on was ready: %q", c, out.String())
	case <-time.After(time.Minute):
		t.Fatalf("the add-on never said ready: %q", out.String())
	}
}

// watchWriter is a buffer that closes seen once it holds a text.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	text string
	seen chan struct{}
}

func (w *watchWriter) want(text string) { w.text, w.seen = text, make(chan struct{}) }

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.text)
	n, err := w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.text) {
		close(w.seen)
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// linkOrCopy makes dst the executable src (a hard link, or a copy across
// file systems).
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err == nil {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
