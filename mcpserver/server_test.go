package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/imgsize"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/mcpserver"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// launcher is a Config.Start that launches a browser of its own each time,
// as the CLI does, and keeps the sessions for the test to look into.
type launcher struct {
	t        *testing.T
	dir      string // made before the server, so removed after it closed
	approver agent.Approver
	mu       sync.Mutex
	sessions []*session.Session
	drivers  []*agent.Driver
}

func (l *launcher) start(ctx context.Context) (*mcpserver.Browser, error) {
	s := watchdogs.NewSession(session.Profile{})
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(l.dir, "run")
	if err != nil {
		return nil, errors.Join(err, stop(s))
	}
	d, err := agent.NewDriver(s, agent.Settings{RunDir: dir, Vision: agent.VisionOff, Approver: l.approver})
	if err != nil {
		return nil, errors.Join(err, stop(s))
	}
	l.mu.Lock()
	l.sessions = append(l.sessions, s)
	l.drivers = append(l.drivers, d)
	l.mu.Unlock()
	return &mcpserver.Browser{Driver: d, Ready: s.Ready, Close: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return errors.Join(d.Close(ctx), stop(s))
	}}, nil
}

func newLauncher(t *testing.T, approver agent.Approver) *launcher {
	return &launcher{t: t, dir: t.TempDir(), approver: approver}
}

func (l *launcher) session(i int) *session.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i >= len(l.sessions) {
		l.t.Fatalf("no browser %d (%d started)", i, len(l.sessions))
	}
	return l.sessions[i]
}

func (l *launcher) history(i int) *agent.History {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drivers[i].History()
}

func (l *launcher) started() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

func stop(s *session.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Stop(ctx)
}

func newServer(t *testing.T, cfg mcpserver.Config) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv
}

// connect connects a client to srv in memory, at the given protocol
// version ("" = the SDK's latest).
func connect(t *testing.T, srv *mcpserver.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	text, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s: tool error: %s", name, text)
	}
	return text
}

func index(t *testing.T, state, re string) int {
	t.Helper()
	m := regexp.MustCompile(`\[(\d+)\]<[^\n]*(?:\n\t[^\n]*)?` + re).FindStringSubmatch(state)
	if m == nil {
		t.Fatalf("no element matching %q in:\n%s", re, state)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func site(t *testing.T) *testbrowser.Server {
	t.Helper()
	s, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noops reads how often the fixture's "Nothing" button was clicked.
func noops(t *testing.T, s *session.Session) int {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := testbrowser.Eval(cs, `window.__noop || 0`, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConfirmByElicitation: submit actions wait for the user's answer,
// asked through the client — during the call on the 2025 protocol, as an
// input-required result answered by calling again on 2026-07-28 — and run
// only on yes. A client that cannot be asked is refused.
func TestConfirmByElicitation(t *testing.T) {
	web := site(t)
	l := newLauncher(t, mcpserver.Confirm([]agent.Risk{agent.RiskSubmit}, agent.DenyRisks{agent.RiskUpload: "no uploads here"}))
	srv := newServer(t, mcpserver.Config{Start: l.start})

	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmp(version, "latest"), func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			answers := []*mcp.ElicitResult{
				{Action: "accept", Content: map[string]any{"allow": true}},
				{Action: "decline"},
				{Action: "accept", Content: map[string]any{"allow": false}},
			}
			cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, r.Params.Message)
				if len(answers) == 0 {
					return nil, fmt.Errorf("asked once too often: %s", r.Params.Message)
				}
				a := answers[0]
				answers = answers[1:]
				return a, nil
			}}, version)
			if v := cs.InitializeResult().ProtocolVersion; version != "" && v != version || version == "" && v < "2026-07-28" {
				t.Fatalf("negotiated protocol %s", v)
			}
			mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/agent-form.html"})
			st := mustCall(t, cs, "state", nil)
			noop := index(t, st, "Nothing")
			s := l.session(0)

			mustCall(t, cs, "click", map[string]any{"index": noop})
			if n := noops(t, s); n != 1 {
				t.Fatalf("after yes: clicked %d times", n)
			}
			text, isErr := call(t, cs, "click", map[string]any{"index": noop})
			if !isErr || !strings.Contains(text, "the user declined") {
				t.Fatalf("after decline: %v %q", isErr, text)
			}
			text, isErr = call(t, cs, "click", map[string]any{"index": noop})
			if !isErr || !strings.Contains(text, "the user said no") {
				t.Fatalf("after no: %v %q", isErr, text)
			}
			if n := noops(t, s); n != 1 {
				t.Fatalf("refused clicks ran: clicked %d times", n)
			}
			// The deny list decides before the user is asked.
			text, isErr = call(t, cs, "upload", map[string]any{"index": noop, "path": "x.txt"})
			if !isErr || !strings.Contains(text, "no uploads here") {
				t.Fatalf("upload: %v %q", isErr, text)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 3 {
				t.Fatalf("asked %d times (navigate and state must not ask): %q", len(asked), asked)
			}
			if q := asked[0]; !strings.Contains(q, "click") || !strings.Contains(q, fmt.Sprintf(`{"index":%d}`, noop)) || !strings.Contains(q, "agent-form.html") {
				t.Fatalf("question %q", q)
			}
		})
	}

	t.Run("client without elicitation", func(t *testing.T) {
		cs := connect(t, srv, nil, "2025-11-25")
		mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/agent-form.html"})
		noop := index(t, mustCall(t, cs, "state", nil), "Nothing")
		text, isErr := call(t, cs, "click", map[string]any{"index": noop})
		if !isErr || !strings.Contains(text, "cannot ask") {
			t.Fatalf("click: %v %q", isErr, text)
		}
		if n := noops(t, l.session(0)); n != 0 {
			t.Fatalf("clicked %d times", n)
		}
	})
	if n := l.started(); n != 1 {
		t.Fatalf("%d browsers started for one server", n)
	}
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestConfirmOutsideACall: the approver refuses what it cannot ask about,
// and lets the other risks through.
func TestConfirmOutsideACall(t *testing.T) {
	a := mcpserver.Confirm([]agent.Risk{agent.RiskSubmit}, nil)
	d, err := a.Approve(context.Background(), agent.ApprovalRequest{Action: "click", Risk: agent.RiskSubmit})
	if err != nil || d.Allow || !strings.Contains(d.Reason, "no MCP client") {
		t.Fatalf("submit: %+v %v", d, err)
	}
	if d, err := a.Approve(context.Background(), agent.ApprovalRequest{Action: "scroll", Risk: agent.RiskRead}); err != nil || !d.Allow {
		t.Fatalf("read: %+v %v", d, err)
	}
}

// TestBrowserDiesAndRestarts: a browser that died is a tool error once;
// the next call starts a new one.
func TestBrowserDiesAndRestarts(t *testing.T) {
	web := site(t)
	l := newLauncher(t, nil)
	srv := newServer(t, mcpserver.Config{Start: l.start})
	cs := connect(t, srv, nil, "")
	mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/index.html"})
	b := l.session(0).Browser()
	if err := testbrowser.KillProcess(b.PID()); err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	text, isErr := call(t, cs, "state", nil)
	if !isErr || !strings.Contains(text, "browser is gone") || !strings.Contains(text, "next call starts a new browser") {
		t.Fatalf("state after the browser died: %v %q", isErr, text)
	}
	st := mustCall(t, cs, "state", nil)
	if !strings.Contains(st, "about:blank") {
		t.Fatalf("the new browser's state:\n%s", st)
	}
	if n := l.started(); n != 2 {
		t.Fatalf("%d browsers started", n)
	}
}

// TestPageQueryTools: search_page and find_elements answer from the page
// without a model, and find_elements names the indexes of the last state.
func TestPageQueryTools(t *testing.T) {
	web := site(t)
	l := newLauncher(t, nil)
	cs := connect(t, newServer(t, mcpserver.Config{Start: l.start}), nil, "")
	mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/agent-queries.html"})
	buy := index(t, mustCall(t, cs, "state", nil), "Buy now")
	if got := mustCall(t, cs, "search_page", map[string]any{"pattern": `\$\d+\.\d\d`, "regex": true, "css_scope": "#prices"}); !strings.Contains(got, "Found 3 match") || !strings.Contains(got, "«$8.00»") {
		t.Fatalf("search_page:\n%s", got)
	}
	if got := mustCall(t, cs, "find_elements", map[string]any{"selector": "#buy"}); !strings.Contains(got, fmt.Sprintf("[%d]<button", buy)) {
		t.Fatalf("find_elements (buy is %d):\n%s", buy, got)
	}
	if text, isErr := call(t, cs, "find_elements", map[string]any{"selector": "td[["}); !isErr || !strings.Contains(text, "invalid CSS selector") {
		t.Fatalf("a bad selector: %v %q", isErr, text)
	}
}

// TestToolList: the list follows the configuration, and listing starts
// nothing.
func TestToolList(t *testing.T) {
	l := newLauncher(t, nil)
	for _, c := range []struct {
		name string
		cfg  mcpserver.Config
		in   []string
		out  []string
	}{
		{"default", mcpserver.Config{Start: l.start}, []string{"navigate", "state", "extract"}, []string{"evaluate", "run_task"}},
		{"evaluate and a model", mcpserver.Config{Start: l.start, Evaluate: true, Model: scripted.New(nil)}, []string{"evaluate", "run_task"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := connect(t, newServer(t, c.cfg), nil, "")
			lt, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range lt.Tools {
				names = append(names, tool.Name)
			}
			for _, n := range c.in {
				if !slices.Contains(names, n) {
					t.Errorf("%s missing from %v", n, names)
				}
			}
			for _, n := range c.out {
				if slices.Contains(names, n) {
					t.Errorf("%s listed: %v", n, names)
				}
			}
		})
	}
	if n := l.started(); n != 0 {
		t.Fatalf("listing tools started %d browsers", n)
	}
}

// swapModel is a model whose script the test replaces between tasks.
type swapModel struct {
	mu sync.Mutex
	m  *scripted.Model
	// offeredHuman counts the requests since set that offer
	// request_human.
	offeredHuman int
}

func (s *swapModel) set(steps ...scripted.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = scripted.New(steps)
	s.offeredHuman = 0
}

func (s *swapModel) humanOffers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offeredHuman
}

func (s *swapModel) Name() string { return "scripted" }

func (s *swapModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	// Offered: in the action list (the history may name it from earlier
	// tasks) or in the reply schema.
	sch, _ := json.Marshal(req.Schema)
	offered := bytes.Contains(sch, []byte(`"request_human"`))
	for _, m := range req.Messages {
		b, _ := json.Marshal(m)
		offered = offered || bytes.Contains(b, []byte("request_human{reason}"))
	}
	s.mu.Lock()
	m := s.m
	if offered {
		s.offeredHuman++
	}
	s.mu.Unlock()
	return m.Generate(ctx, req)
}

// TestRunTaskAsksToo: approvals apply inside run_task. A 2025 client is
// asked in the middle of the task; a 2026-07-28 client cannot be (a call
// cannot be made again mid-task), so the action is refused and the task
// goes on without it.
func TestRunTaskAsksToo(t *testing.T) {
	web := site(t)
	l := newLauncher(t, mcpserver.Confirm([]agent.Risk{agent.RiskSubmit}, nil))
	model := &swapModel{}
	srv := newServer(t, mcpserver.Config{Start: l.start, Model: model, MaxSteps: 5})
	script := func() {
		model.set(
			scripted.Step{Action: "navigate", Params: map[string]any{"url": web.URL1 + "/agent-form.html"}},
			scripted.Step{WaitForLabel: "Nothing", Action: "click", Label: "Nothing"},
			scripted.Step{Action: "done", Params: map[string]any{"text": "clicked", "success": true}},
		)
	}
	for _, c := range []struct {
		version string
		clicks  int
	}{{"2025-11-25", 1}, {"", 0}} {
		t.Run("protocol "+cmp(c.version, "latest"), func(t *testing.T) {
			var asked int
			var mu sync.Mutex
			cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked++
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
			}}, c.version)
			script()
			text := mustCall(t, cs, "run_task", map[string]any{"task": "Click the Nothing button"})
			if !strings.Contains(text, "Done (success)") || !strings.Contains(text, "Steps:") {
				t.Fatalf("run_task: %s", text)
			}
			if n := noops(t, l.session(0)); n != c.clicks {
				t.Fatalf("clicked %d times, want %d", n, c.clicks)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != c.clicks {
				t.Fatalf("asked %d times", asked)
			}
			h := l.history(0)
			last := ""
			for _, it := range h.Items {
				for _, a := range it.Actions {
					if a.Name == "click" {
						last = a.Error
					}
				}
			}
			if c.clicks == 0 && !strings.Contains(last, "cannot give during run_task") {
				t.Fatalf("the refused click's error: %q", last)
			}
		})
	}
}

// An idle streamable HTTP session is closed after HTTPSessionTimeout: the
// client's next request on it is refused, and a new session works.
func TestHTTPSessionTimeout(t *testing.T) {
	srv := newServer(t, mcpserver.Config{Start: newLauncher(t, nil).start, HTTPSessionTimeout: 300 * time.Millisecond})
	hs := httptest.NewServer(srv.HTTPHandler())
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	cs := connect()
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			break // the server forgot the session
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session was never closed")
		}
		// Stay idle past the timeout before asking again: idleness is
		// what is tested.
		timer := time.NewTimer(400 * time.Millisecond)
		<-timer.C
	}
	fresh := connect()
	defer fresh.Close()
	if _, err := fresh.ListTools(ctx, nil); err != nil {
		t.Fatalf("a new session after the timeout: %v", err)
	}
}

// The state tool's screenshot says the media type of its bytes.
func TestStateScreenshotMediaType(t *testing.T) {
	web := site(t)
	l := newLauncher(t, nil)
	cs := connect(t, newServer(t, mcpserver.Config{Start: l.start}), nil, "")
	mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/agent-queries.html"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "state", Arguments: map[string]any{"screenshot": true}})
	if err != nil || res.IsError {
		t.Fatalf("state: %v %+v", err, res)
	}
	images := 0
	for _, c := range res.Content {
		img, ok := c.(*mcp.ImageContent)
		if !ok {
			continue
		}
		images++
		if _, _, err := imgsize.Of(img.Data); err != nil || img.MIMEType != imgsize.MediaType(img.Data) {
			t.Fatalf("image of %d bytes (%v) says %q, its bytes %q", len(img.Data), err, img.MIMEType, imgsize.MediaType(img.Data))
		}
	}
	if images != 1 {
		t.Fatalf("%d images in the state", images)
	}
}
