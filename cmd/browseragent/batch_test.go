package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/scriptserver"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// pageModel answers every call from the page it is shown, with no state,
// so that concurrent runs sharing it do not consume each other's script:
// on "batch page ID" it is done ("saw ID"); on a page the URL policy
// refused it gives up; otherwise it waits. On "batch page slow" it blocks
// until its caller goes away, after saying so on entered.
type pageModel struct{ entered chan struct{} }

var batchPage = regexp.MustCompile(`batch page ([a-z0-9]+)`)

func (m *pageModel) Name() string { return "batch-test" }

func (m *pageModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	page := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			page = req.Messages[i].TextContent()
			break
		}
	}
	var step scripted.Step
	switch id := batchPage.FindStringSubmatch(page); {
	case id != nil && id[1] == "slow":
		select {
		case m.entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	case id != nil:
		step = scripted.Step{Action: "done", Params: map[string]any{"text": "saw " + id[1], "success": true}}
	case strings.Contains(page, "blocked by policy"):
		step = scripted.Step{Action: "done", Params: map[string]any{"text": "the page was refused", "success": false}}
	default:
		step = scripted.Step{WaitFor: "batch page"}
	}
	return scripted.New([]scripted.Step{step}).Generate(ctx, req)
}

// batchSite serves /p/ID: a page saying "batch page ID".
func batchSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/p/")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>batch page %s</h1>", id, id)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func startModel(t *testing.T, m llm.Model) *scriptserver.Server {
	t.Helper()
	srv, err := scriptserver.Start(m, scriptserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// batchLines decodes batch's stdout, one line per finished task.
func batchLines(t *testing.T, stdout string) map[string]batchLine {
	t.Helper()
	got := map[string]batchLine{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var l batchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q is not a task's JSON line: %v", sc.Text(), err)
		}
		if _, dup := got[l.ID]; dup {
			t.Fatalf("task %s printed twice:\n%s", l.ID, stdout)
		}
		got[l.ID] = l
	}
	return got
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkTaskRun wants a task's trace closed and intact, and its history
// written.
func checkTaskRun(t *testing.T, l batchLine) {
	t.Helper()
	rep, err := trace.VerifyFile(l.Trace)
	if err != nil || !rep.Closed {
		t.Errorf("task %s: trace %s: %+v, %v; want closed and intact", l.ID, l.Trace, rep, err)
	}
	if _, err := os.Stat(l.History); err != nil {
		t.Errorf("task %s: no history: %v", l.ID, err)
	}
	// The trace is hooked to the session before it starts: its start-up
	// is recorded as run's is.
	if b, err := os.ReadFile(l.Trace); err != nil || !strings.Contains(string(b), `"BrowserConnected"`) {
		t.Errorf("task %s: trace %s lacks the session's start-up (BrowserConnected): %v", l.ID, l.Trace, err)
	}
}

// batch runs 4 tasks, 2 at a time, in both modes (shared: in the test's
// browser, a context each; per-session: a browser each), every task done
// with what its own page says; in the shared run a fifth task whose URL
// the policy refuses fails alone (exit 1).
func TestBatch(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test")
	env := testbrowser.Start(t)
	site := batchSite(t)
	model := startModel(t, &pageModel{})
	port := site.URL[strings.LastIndex(site.URL, ":")+1:]
	var in strings.Builder
	for _, id := range []string{"a", "b", "c", "d"} {
		fmt.Fprintf(&in, `{"id": %q, "task": "Say what the page says", "url": %q}`+"\n", id, site.URL+"/p/"+id)
	}
	common := []string{"--model", "openai:test", "--base-url", model.URL(), "--vision", "off", "--max-steps", "4",
		"--concurrency", "2", "--allowed-domains", "127.0.0.1"}

	for _, c := range []struct {
		mode  string
		extra []string
		lines string
		code  int
	}{
		{"shared", []string{"--cdp-url", env.Browser.WebSocketURL()},
			in.String() + "# refused: localhost is not in --allowed-domains\n" +
				`{"id": "refused", "task": "Say what the page says", "url": "http://localhost:` + port + `/p/refused"}` + "\n", 1},
		{"per-session", nil, in.String(), 0},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			file := writeFile(t, "tasks.jsonl", c.lines)
			args := append(append([]string{"batch", "--mode", c.mode, "--out", dir}, common...), c.extra...)
			var stdout, stderr syncBuffer
			code := run(context.Background(), append(args, file), &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout.String(), stderr.String())
			}
			got := batchLines(t, stdout.String())
			t.Logf("stdout:\n%sstderr:\n%s", stdout.String(), stderr.String())
			for _, id := range []string{"a", "b", "c", "d"} {
				l, ok := got[id]
				if !ok || !l.ok() || l.FinalText != "saw "+id || l.Steps < 2 {
					t.Errorf("task %s: %+v; want done with \"saw %s\"", id, l, id)
					continue
				}
				if want := filepath.Join(dir, id, "trace.jsonl"); l.Trace != want {
					t.Errorf("task %s: trace %s, want %s", id, l.Trace, want)
				}
				checkTaskRun(t, l)
			}
			ok := 4
			if c.code == 1 {
				l, found := got["refused"]
				if !found || l.Success || l.FinalText != "the page was refused" {
					t.Errorf("the refused task: %+v; want a failure on the refused page", l)
				}
				if !strings.Contains(stderr.String(), "1 of 5 failed") {
					t.Errorf("stderr does not say one of five failed:\n%s", stderr.String())
				}
			}
			// The note on the network guard says what the sessions
			// reported (their traces hold the start-up): per-session
			// launches each browser, so its guard is on.
			reported := false
			for _, l := range got {
				if b, err := os.ReadFile(l.Trace); err == nil && strings.Contains(string(b), "PolicyGuardOff") {
					reported = true
				}
			}
			if warned := strings.Contains(stderr.String(), guardOffNote); warned != reported || (c.mode == "per-session" && reported) {
				t.Errorf("%s mode with --allowed-domains: guard off in a trace %v, note printed %v:\n%s", c.mode, reported, warned, stderr.String())
			}
			summary := fmt.Sprintf("batch: %d runs, %d ok, %d failed", len(got), ok, len(got)-ok)
			if !strings.Contains(stderr.String(), summary) || !strings.Contains(stderr.String(), "runs per minute") {
				t.Errorf("stderr lacks %q:\n%s", summary, stderr.String())
			}
		})
	}
}

// Ctrl-C mid-batch: the running tasks stop (traces closed, histories
// written), the ones not started are not run and say so, and the command
// fails.
func TestBatchInterrupt(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test")
	env := testbrowser.Start(t)
	site := batchSite(t)
	pm := &pageModel{entered: make(chan struct{}, 1)}
	model := startModel(t, pm)
	lines := fmt.Sprintf(`{"id": "a", "task": "Say what the page says", "url": %q}`+"\n", site.URL+"/p/a") +
		fmt.Sprintf(`{"id": "slow", "task": "Say what the page says", "url": %q}`+"\n", site.URL+"/p/slow")
	for _, id := range []string{"x1", "x2", "x3"} {
		lines += fmt.Sprintf(`{"id": %q, "task": "Say what the page says", "url": %q}`+"\n", id, site.URL+"/p/"+id)
	}
	file := writeFile(t, "tasks.jsonl", lines)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"batch", "--model", "openai:test", "--base-url", model.URL(), "--vision", "off",
			"--max-steps", "4", "--concurrency", "1", "--cdp-url", env.Browser.WebSocketURL(),
			"--out", t.TempDir(), file}, &stdout, &stderr)
	}()
	select {
	case <-pm.entered:
	case c := <-code:
		t.Fatalf("the batch ended (exit %d) before the slow task called its model\n%s\n%s", c, stdout.String(), stderr.String())
	case <-time.After(3 * time.Minute):
		t.Fatal("the slow task never called its model")
	}
	cancel()
	var c int
	select {
	case c = <-code:
	case <-time.After(2 * time.Minute):
		t.Fatal("the batch did not stop after its context was cancelled")
	}
	if c != 1 {
		t.Errorf("exit %d, want 1", c)
	}
	got := batchLines(t, stdout.String())
	if l := got["a"]; !l.ok() {
		t.Errorf("task a finished before the interrupt: %+v", l)
	}
	l, ok := got["slow"]
	if !ok || l.Success || l.Error == "" {
		t.Errorf("the interrupted task: %+v; want a line with its error", l)
	} else {
		checkTaskRun(t, l)
	}
	if len(got) != 2 {
		t.Errorf("%d lines, want a and slow only (the others never started):\n%s", len(got), stdout.String())
	}
	if !strings.Contains(stderr.String(), "3 tasks not run (interrupted)") || !strings.Contains(stderr.String(), "interrupted: 3 of 5 tasks not run") {
		t.Errorf("stderr does not count the tasks not run:\n%s", stderr.String())
	}
}

// A batch file is read whole before anything runs; its mistakes are named
// by line.
func TestReadBatch(t *testing.T) {
	tasks, err := readBatch(strings.NewReader("# tasks\n\nFind the docs\n"+`{"id": "p", "task": "Find the price", "url": "https://example.com"}`+"\n"), "f")
	if err != nil || len(tasks) != 2 || tasks[0].ID != "3" || tasks[0].Task != "Find the docs" || tasks[1].ID != "p" || tasks[1].URL != "https://example.com" {
		t.Fatalf("%+v, %v", tasks, err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "f has no task"},
		{`{"task": "x", "ur": "https://example.com"}`, `f:1: json: unknown field "ur"`},
		{`{"id": "a", "task": "x"}` + "\n" + `{"id": "a", "task": "y"}`, `f:2: id "a" is also on line 1`},
		{`{"id": "../up", "task": "x"}`, `f:1: id "../up"`},
		{`{"id": "a"}`, `f:1: no "task"`},
		{`{"task": "x", "url": "file:///etc/passwd"}`, `f:1: url "file:///etc/passwd" is not an http(s) URL`},
		{`{"task": "x"} {"task": "y"}`, "f:1: more than one JSON value"},
		{`{"task": `, "f:1: unexpected EOF"},
	} {
		_, err := readBatch(strings.NewReader(c.in), "f")
		if !errors.Is(err, errBatchInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want errBatchInput and %q", c.in, err, c.want)
		}
	}
	// "-" reads stdin, named so in errors; nothing runs.
	r := cliIn(t, os.Args[0], strings.NewReader("Find the docs\n{\"task\": 1}\n"), nil, "batch", "--model", "openai:x", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "bad batch input: stdin:2:") || r.stdout != "" {
		t.Errorf("batch - with a bad second line: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Flags batch refuses, before reading anything.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "pooled", "-"}, "--mode: want shared or per-session"},
		{[]string{"--concurrency", "0", "-"}, "--concurrency must be at least 1"},
		{[]string{"--mode", "per-session", "--cdp-url", "http://127.0.0.1:1", "-"}, "--cdp-url needs --mode shared"},
		{[]string{"--new-tab", "-"}, "--new-tab: not for batch"},
		{[]string{"--model", "openai:x"}, "want the batch file"},
	} {
		var stderr syncBuffer
		if code := run(context.Background(), append([]string{"batch"}, c.args...), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
}
