package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpCommand is `browseragent mcp args...` as a child process.
func mcpCommand(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(append(os.Environ(), "BROWSERAGENT_CLI=1", "BROWSERAGENT_MODEL="), env...)
	cmd.Dir = t.TempDir()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	return cmd, stderr
}

// fixtureSite starts the fixture web site on its own (the MCP server
// launches its own browser).
func fixtureSite(t *testing.T) *testbrowser.Server {
	t.Helper()
	site, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	return site
}

// modelServer is an OpenAI-compatible chat completions endpoint answering
// the agent's steps from a script, and extraction requests with a fixed
// text.
type modelServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies []string // step replies, in order
	steps   int
	extract int
	bodies  [][]byte // the step requests, in order
}

func newModelServer(t *testing.T) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		m.mu.Lock()
		var content string
		switch {
		case bytes.Contains(body, []byte("You extract information")):
			m.extract++
			content = "EXTRACTED: the page asks for a plan"
		case m.steps < len(m.replies):
			content = m.replies[m.steps]
			m.steps++
			m.bodies = append(m.bodies, body)
		default:
			content = `{"action":[{"done":{"text":"out of script","success":false}}]}`
		}
		m.mu.Unlock()
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *modelServer) script(replies ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies, m.steps = replies, 0
}

// callText calls a tool and returns its text and whether it is a tool error.
func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

// mustCall calls a tool that must succeed.
func mustCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	text, isErr := callText(t, ctx, cs, name, args)
	if isErr {
		t.Fatalf("%s %v: tool error: %s", name, args, text)
	}
	return text
}

// elementIndex finds the [index] of the element whose line (or the text
// line under it) matches re in a state text.
func elementIndex(t *testing.T, state, re string) int {
	t.Helper()
	m := regexp.MustCompile(`\[(\d+)\]<[^\n]*(?:\n\t[^\n]*)?` + re).FindStringSubmatch(state)
	if m == nil {
		t.Fatalf("no element matching %q in state:\n%s", re, state)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestMCPStdio runs `browseragent mcp` as a subprocess and drives it with
// the SDK's client over stdio: the tool list, step tools on a fixture form
// (checked against what the site received), a secret, a stale index, a
// policy refusal, extract and run_task with a local model server sending
// progress, then a clean exit when stdin closes with a verified trace.
func TestMCPStdio(t *testing.T) {
	site := fixtureSite(t)
	model := newModelServer(t)
	out := filepath.Join(t.TempDir(), "mcp")
	// A secret that a URL carries as it is (the form is sent with GET).
	const secret = "s3cr3t-ada"
	refusedHost := strings.TrimPrefix(site.URL2, "http://")
	refusedHost, _, _ = strings.Cut(refusedHost, ":")
	cmd, stderr := mcpCommand(t, []string{"MCP_TEST_MAIL=" + secret},
		"--out", out, "--secret-env", "mail=MCP_TEST_MAIL", "--prohibited-domains", refusedHost,
		"--model", "openai:test", "--base-url", model.URL+"/v1", "--vision", "off")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progMu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progMu.Lock()
			progress = append(progress, r.Params)
			progMu.Unlock()
		},
	})
	began := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	}()

	t.Run("tools", func(t *testing.T) {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("initialize and tools/list took %v", time.Since(began))
		var names []string
		size := 0
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
			b, _ := json.Marshal(tool)
			size += len(b)
			if tool.InputSchema == nil {
				t.Errorf("%s has no input schema", tool.Name)
			}
		}
		t.Logf("%d tools, %d bytes of JSON", len(names), size)
		slices.Sort(names)
		want := []string{"click", "drag", "extract", "find_elements", "find_text", "go_back", "hover", "keys", "navigate", "read_pdf", "read_value", "run_task", "scroll", "search_page", "select", "state", "tabs", "type", "upload", "wait"}
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v\nwant %v", names, want)
		}
		for _, tool := range lt.Tools {
			if tool.Name != "click" {
				continue
			}
			b, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(b), `"index"`) || !strings.Contains(string(b), `"required":["index"]`) {
				t.Fatalf("click schema %s", b)
			}
		}
		// Listing started nothing.
		if _, err := os.Stat(filepath.Join(out, "trace.jsonl")); !os.IsNotExist(err) {
			t.Fatalf("a trace exists before any tool call (err %v)", err)
		}
	})

	var form string
	t.Run("navigate state type click", func(t *testing.T) {
		mustCall(t, ctx, cs, "navigate", map[string]any{"url": site.URL1 + "/agent-form.html"})
		// An index before any state is refused, as a tool error.
		text, isErr := callText(t, ctx, cs, "click", map[string]any{"index": 1})
		if !isErr || !strings.Contains(text, "stale") || !strings.Contains(text, "take a new state") {
			t.Fatalf("click before state: %v %q", isErr, text)
		}
		form = mustCall(t, ctx, cs, "state", nil)
		if !strings.Contains(form, "agent-form.html") || !strings.Contains(form, "Full name") {
			t.Fatalf("state:\n%s", form)
		}
		name := elementIndex(t, form, "Full name")
		email := elementIndex(t, form, "Email address")
		next := elementIndex(t, form, "Next")
		mustCall(t, ctx, cs, "type", map[string]any{"index": name, "text": "Ada"})
		typed := mustCall(t, ctx, cs, "type", map[string]any{"index": email, "text": "<secret>mail</secret>"})
		if strings.Contains(typed, secret) || !strings.Contains(typed, "mail") {
			t.Fatalf("type result %q", typed)
		}
		mustCall(t, ctx, cs, "click", map[string]any{"index": next})
		// The site received the form, the secret resolved in the page.
		want := "/agent-form2.html?fullname=Ada&email=" + url.QueryEscape(secret)
		if !slices.Contains(site.Requests(testbrowser.Site1), want) {
			t.Fatalf("the site did not receive %s: %v", want, site.Requests(testbrowser.Site1))
		}
		// The old page's index is stale now.
		text, isErr = callText(t, ctx, cs, "click", map[string]any{"index": name})
		if !isErr || !strings.Contains(text, "navigated") {
			t.Fatalf("click after navigation: %v %q", isErr, text)
		}
	})

	t.Run("state screenshot select tabs", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "state", Arguments: map[string]any{"screenshot": true}})
		if err != nil || res.IsError || len(res.Content) != 2 {
			t.Fatalf("state with screenshot: %v %+v", err, res)
		}
		st := res.Content[0].(*mcp.TextContent).Text
		img, ok := res.Content[1].(*mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
			t.Fatalf("second content is not a PNG image: %T", res.Content[1])
		}
		if strings.Contains(st, secret) || !strings.Contains(st, "email=<secret>mail</secret>") {
			t.Fatalf("the secret in the URL is not scrubbed in the state:\n%s", st)
		}
		plan := elementIndex(t, st, "plan")
		opts := mustCall(t, ctx, cs, "select", map[string]any{"index": plan})
		if !strings.Contains(opts, `"Pro"`) {
			t.Fatalf("options: %q", opts)
		}
		mustCall(t, ctx, cs, "select", map[string]any{"index": plan, "option": "Pro"})
		tabs := mustCall(t, ctx, cs, "tabs", nil)
		if !strings.Contains(tabs, "(current)") || !strings.Contains(tabs, "agent-form2.html") || !strings.Contains(tabs, "<secret>mail</secret>") || strings.Contains(tabs, secret) {
			t.Fatalf("tabs: %q", tabs)
		}
	})

	t.Run("extract with the model", func(t *testing.T) {
		text := mustCall(t, ctx, cs, "extract", map[string]any{"query": "what does the page ask for?"})
		if !strings.Contains(text, "EXTRACTED: the page asks for a plan") {
			t.Fatalf("extract: %q", text)
		}
	})

	t.Run("policy refusal", func(t *testing.T) {
		text, isErr := callText(t, ctx, cs, "navigate", map[string]any{"url": site.URL2 + "/index.html"})
		if !isErr || !strings.Contains(text, "blocked by policy") || !strings.Contains(text, "prohibited") {
			t.Fatalf("navigate to a prohibited host: %v %q", isErr, text)
		}
		if slices.Contains(site.Requests(testbrowser.Site2), "/index.html") {
			t.Fatal("the prohibited site was reached")
		}
	})

	t.Run("run_task with progress", func(t *testing.T) {
		model.script(
			`{"next_goal":"open the first form","action":[{"navigate":{"url":"`+site.URL1+`/agent-form.html"}}]}`,
			`{"next_goal":"report","action":[{"done":{"text":"The first form is open.","success":true}}]}`,
		)
		p := &mcp.CallToolParams{Name: "run_task", Arguments: map[string]any{"task": "Open the first form page", "max_steps": 5}}
		p.SetProgressToken("task-1")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError || !strings.Contains(text, "Done (success)") || !strings.Contains(text, "The first form is open.") || !strings.Contains(text, "Trace: "+filepath.Join(out, "trace.jsonl")) ||
			!strings.Contains(text, "Tokens: 200 in / 40 out · cost unknown") { // openai:test has no price
			t.Fatalf("run_task: %v\n%s", res.IsError, text)
		}
		// Each step was told to the client (notifications precede the
		// result on the stream, but the handler may still be running).
		deadline := time.Now().Add(10 * time.Second)
		for {
			progMu.Lock()
			n := len(progress)
			progMu.Unlock()
			if n >= 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		progMu.Lock()
		defer progMu.Unlock()
		if len(progress) < 2 {
			t.Fatalf("%d progress notifications", len(progress))
		}
		for i, p := range progress {
			if p.ProgressToken != "task-1" || p.Progress != float64(i+1) || p.Total != 5 || !strings.HasPrefix(p.Message, "step ") {
				t.Fatalf("progress %d: %+v", i, p)
			}
		}
		if !strings.Contains(progress[0].Message, "navigate") {
			t.Fatalf("first progress message %q", progress[0].Message)
		}
		if !slices.Contains(site.Requests(testbrowser.Site1), "/agent-form.html") {
			t.Fatal("the task's navigation did not reach the site")
		}
	})

	// Closing stdin ends the server: it closes the browser and writes the
	// trace, the history and the report.
	closeStart := time.Now()
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	closed = true
	t.Logf("shutdown took %v", time.Since(closeStart))
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("server exit: %v\nstderr:\n%s", cmd.ProcessState, stderr)
	}
	if !strings.Contains(stderr.String(), "trace: "+filepath.Join(out, "trace.jsonl")) {
		t.Fatalf("stderr does not say where the trace is:\n%s", stderr)
	}
	rep, err := trace.VerifyFile(filepath.Join(out, "trace.jsonl"))
	if err != nil || !rep.Closed {
		t.Fatalf("trace: %+v %v", rep, err)
	}
	// history.json is not checked: the agent records the URLs of action
	// outcomes (result.outcome.After.URL) as the browser reports them, so a
	// secret a form sent in its URL is there.
	for _, f := range []string{"trace.jsonl", "report.html"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret reached %s", f)
		}
	}
}

// TestMCPHTTP serves streamable HTTP from the subprocess with the default
// flags: evaluate is not offered, the SDK's client works over HTTP, a
// foreign Host header and a cross-site request are refused, and SIGTERM
// shuts the server down cleanly with a verified trace.
func TestMCPHTTP(t *testing.T) {
	site := fixtureSite(t)
	out := filepath.Join(t.TempDir(), "mcp")
	cmd, stderr := mcpCommand(t, nil, "--http", "127.0.0.1:0", "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	}()
	began := time.Now()
	endpoint := waitForEndpoint(t, stderr, exited)
	t.Logf("listening %v after the start", time.Since(began))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "evaluate" || tool.Name == "run_task" {
			t.Fatalf("%s is listed without --allow-evaluate / --model", tool.Name)
		}
	}
	mustCall(t, ctx, cs, "navigate", map[string]any{"url": site.URL1 + "/form.html"})
	st := mustCall(t, ctx, cs, "state", nil)
	if !strings.Contains(st, "form.html") || !strings.Contains(st, "<select") {
		t.Fatalf("state:\n%s", st)
	}
	// Without a model, extract returns the page's text.
	if text := mustCall(t, ctx, cs, "extract", nil); !strings.Contains(text, "Text of "+site.URL1+"/form.html") {
		t.Fatalf("extract without a model: %q", text)
	}
	// A second client shares the browser.
	cs2, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tabs := mustCall(t, ctx, cs2, "tabs", nil); !strings.Contains(tabs, "form.html") {
		t.Fatalf("second client's tabs: %q", tabs)
	}
	cs2.Close()

	// DNS rebinding and cross-site requests are refused.
	for name, hdr := range map[string]http.Header{
		"foreign host": {"Host": {"evil.example"}},
		"cross site":   {"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Host = req.Header.Get("Host")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, resp.StatusCode)
		}
	}
	http.DefaultClient.CloseIdleConnections()

	termAt := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	defer func() { t.Logf("exited %v after SIGTERM", time.Since(termAt)) }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, stderr)
		}
	case <-ctx.Done():
		t.Fatal("the server did not exit after SIGTERM")
	}
	cs.Close()
	rep, err := trace.VerifyFile(filepath.Join(out, "trace.jsonl"))
	if err != nil || !rep.Closed {
		t.Fatalf("trace: %+v %v", rep, err)
	}
}

// waitForEndpoint reads the address the server prints on stderr.
func waitForEndpoint(t *testing.T, stderr *syncBuffer, exited <-chan error) string {
	t.Helper()
	re := regexp.MustCompile(`serving streamable HTTP at (http://\S+/mcp)`)
	deadline := time.After(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-exited:
			t.Fatalf("the server exited (%v):\n%s", err, stderr)
		case <-deadline:
			t.Fatalf("no address on stderr:\n%s", stderr)
		case <-tick.C:
		}
	}
}

// TestMCPFlagErrors: mistakes on the command line are usage errors, before
// anything starts.
func TestMCPFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--http", "127.0.0.1:0", "--http-token-env", "MCP_TEST_UNSET_TOKEN"}, "MCP_TEST_UNSET_TOKEN"},
		{[]string{"--confirm", "submit,sometimes"}, `unknown risk class "sometimes"`},
		{[]string{"--vision", "maybe"}, "--vision"},
		{[]string{"extra"}, "no arguments"},
		{[]string{"--http-token-env", "HOME"}, "apply to --http only"},
	} {
		r := cli(t, nil, append([]string{"mcp"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("mcp %v: exit %d, stderr %q (want %q)", c.args, r.code, r.stderr, c.want)
		}
		if r.stdout != "" {
			t.Errorf("mcp %v wrote to stdout: %q", c.args, r.stdout)
		}
	}
}

// TestMCPHTTPGuards: the address check and the bearer token.
func TestMCPHTTPGuards(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "localhost:8931": true, "[::1]:0": true, "0.0.0.0:0": false, ":8931": false, "192.168.1.2:80": false, "example.com:80": false} {
		if got, err := loopback(addr); err != nil || got != want {
			t.Errorf("loopback(%q) = %v, %v", addr, got, err)
		}
	}
	if _, err := loopback("8931"); err == nil {
		t.Error("an address without a port is accepted")
	}
	h := bearer("tok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for auth, want := range map[string]int{"": 401, "Bearer nope": 401, "tok": 401, "Bearer tok": http.StatusTeapot} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Authorization %q: %d, want %d", auth, w.Code, want)
		}
	}
}
