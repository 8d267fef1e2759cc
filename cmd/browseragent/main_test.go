package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// The test binary doubles as the command: with BROWSERAGENT_CLI=1 it runs
// main's logic on its arguments, so the tests below exercise the real
// process (flags, exit codes, stdout/stderr) without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("BROWSERAGENT_CLI") == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	testbrowser.Main(m)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs the command in a child process with extra environment.
func cli(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "BROWSERAGENT_CLI=1"), env...)
	cmd.Dir = t.TempDir()
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

// The demo's recording (stdout, trace, report, verify, report -o) is
// checked by TestReplayDemo, which replays it.

func TestDemoJSON(t *testing.T) {
	r := cli(t, nil, "demo", "--json", "--out", filepath.Join(t.TempDir(), "d"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Result struct {
			Done, Success bool
			FinalText     string
		} `json:"result"`
		Trace string `json:"trace"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, r.stdout)
	}
	if !got.Result.Done || !got.Result.Success || got.Trace == "" {
		t.Fatalf("result %+v", got)
	}
	if strings.Contains(r.stdout, "step 1") {
		t.Fatal("progress lines leaked into JSON output")
	}
}

func TestStateOnFixturePage(t *testing.T) {
	env := testbrowser.Start(t)
	r := cli(t, nil, "state", "--cdp-url", env.Browser.WebSocketURL(), "--new-tab", env.URL("/form.html"))
	if r.code != 0 {
		t.Fatalf("state exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"<browser_state>", "[Start of page]", "<input", "type=email", "<select", "[End of page]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("state output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "hunter2") {
		t.Fatal("a password value reached the state output")
	}
	js := cli(t, nil, "state", "--json", "--cdp-url", env.Browser.WebSocketURL(), "--new-tab", env.URL("/form.html"))
	var st struct {
		URL      string
		Elements map[string]any
	}
	if js.code != 0 || json.Unmarshal([]byte(js.stdout), &st) != nil || len(st.Elements) == 0 {
		t.Fatalf("state --json: %d %s", js.code, js.stderr)
	}
}

func TestCLIErrors(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no command", nil, nil, 2, "usage: browseragent"},
		{"unknown command", nil, []string{"fly"}, 2, `unknown command "fly"`},
		{"bad flag", nil, []string{"demo", "--no-such-flag"}, 2, "flag provided but not defined"},
		{"verify without file", nil, []string{"verify"}, 2, "want exactly one trace file"},
		{"verify missing file", nil, []string{"verify", "nope.jsonl"}, 1, "no such file"},
		{"missing browser", []string{"BROWSERAGENT_CHROME=/nonexistent/chromium"}, []string{"state", "http://127.0.0.1:1/"}, 1, "BROWSERAGENT_CHROME"},
		{"unreachable cdp url", nil, []string{"state", "--cdp-url", "http://127.0.0.1:1", "about:blank"}, 1, "cannot connect to the browser at http://127.0.0.1:1"},
		{"no model", []string{"BROWSERAGENT_MODEL="}, []string{"run", "do it"}, 2, "no model"},
		{"missing key", []string{"OPENAI_API_KEY=", "BROWSERAGENT_MODEL="}, []string{"run", "--model", "openai:gpt-4.1", "do it"}, 1, "OPENAI_API_KEY"},
		{"unknown provider", nil, []string{"run", "--model", "acme:1", "do it"}, 1, "acme"},
		{"bad vision", nil, []string{"run", "--model", "ollama:x", "--vision", "sometimes", "do it"}, 2, "--vision"},
		{"bad reply mode", nil, []string{"run", "--model", "ollama:x", "--reply-mode", "terse", "do it"}, 2, "--reply-mode must be full, no_thinking or flash"},
		{"bad coordinate clicks", nil, []string{"mcp", "--coordinate-clicks", "maybe"}, 2, "--coordinate-clicks"},
		{"bad compaction model", nil, []string{"run", "--model", "ollama:x", "--compaction-model", "acme:1", "do it"}, 1, "acme"},
		{"missing --file", nil, []string{"run", "--model", "ollama:x", "--file", "/nonexistent/cv.pdf", "do it"}, 2, "no such file"},
		{"folder as --file", nil, []string{"run", "--model", "ollama:x", "--file", "/", "do it"}, 2, "is a folder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, c.code, r.stderr, c.want)
			}
		})
	}
}

// TestDemoRecordsAndExportsOpenTelemetry runs the demo with --record and
// --otel against a local OTLP/HTTP receiver: frames are written and shown
// in the report, and the spans arrive at the receiver.
func TestDemoRecordsAndExportsOpenTelemetry(t *testing.T) {
	var mu sync.Mutex
	var posts, bytesIn int
	var ctype string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts++
			bytesIn += len(body)
			ctype = r.Header.Get("Content-Type")
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	out := filepath.Join(t.TempDir(), "d")
	r := cli(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL}, "demo", "--otel", "--record", "--out", out)
	if r.code != 0 {
		t.Fatalf("demo --otel --record exit %d: %s", r.code, r.stderr)
	}
	// --record: the screencast is there and the report shows it.
	if frames, _ := filepath.Glob(filepath.Join(out, "frames", "frame-*.jpg")); len(frames) == 0 {
		t.Fatal("--record wrote no frames")
	}
	if html, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !bytes.Contains(html, []byte(`class="frame"`)) {
		t.Fatalf("report without the recording filmstrip (err %v)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts == 0 || bytesIn < 200 || ctype != "application/x-protobuf" {
		t.Fatalf("receiver got %d posts, %d bytes, content type %q", posts, bytesIn, ctype)
	}
}

// TestStatePrintsRefusals: a page whose iframe the URL policy refused says
// so in `state`, instead of printing nothing about it.
func TestStatePrintsRefusals(t *testing.T) {
	env := testbrowser.Start(t)
	refused := strings.TrimPrefix(env.Server.URL2, "http://")
	r := cli(t, nil, "state", "--cdp-url", env.Browser.WebSocketURL(), "--new-tab", "--prohibited-domains", refused, env.URL("/iframes.html"))
	if r.code != 0 {
		t.Fatalf("state exit %d: %s", r.code, r.stderr)
	}
	host, _, _ := strings.Cut(refused, ":")
	if !strings.Contains(r.stdout, "refused by the URL policy") || !strings.Contains(r.stdout, "to "+host+" (document)") {
		t.Fatalf("state output does not report the refused iframe:\n%s", r.stdout)
	}
}

// run --reply-mode flash: the request asks for memory and actions only,
// with the flash prompt, and the run finishes on the flash reply.
func TestRunFlashReplies(t *testing.T) {
	model := newModelServer(t)
	model.script(`{"memory":"Nothing to do on a blank page.","action":[{"done":{"text":"ok","success":true}}]}`)
	out := filepath.Join(t.TempDir(), "run")
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--base-url", model.URL+"/v1",
		"--vision", "off", "--reply-mode", "flash", "--out", out, "--json", "say ok")
	if r.code != 0 {
		t.Fatalf("run exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.bodies) != 1 {
		t.Fatalf("%d step requests", len(model.bodies))
	}
	var req struct {
		ResponseFormat struct {
			JSONSchema struct {
				Schema struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(model.bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	props := req.ResponseFormat.JSONSchema.Schema.Properties
	if len(props) != 2 || props["memory"] == nil || props["action"] == nil {
		t.Fatalf("flash schema properties: %v\n%s", props, model.bodies[0])
	}
	if bytes.Contains(model.bodies[0], []byte("plan_update")) || bytes.Contains(model.bodies[0], []byte(`"thinking"`)) {
		t.Fatalf("the flash request mentions thinking or plans:\n%s", model.bodies[0])
	}
}
