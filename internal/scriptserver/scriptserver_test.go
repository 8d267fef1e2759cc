package scriptserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/openai"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, m llm.Model, cfg Config) *Server {
	t.Helper()
	s, err := Start(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func client(t *testing.T, s *Server) *openai.Model {
	t.Helper()
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	m, err := openai.New(openai.Config{Model: "scripted", BaseURL: s.URL(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const page = "Current page: http://127.0.0.1/\n[7]<a />\n\tCareers\n[12]<a />\n\tSenior Go Engineer\n[13]<button />\n\tMore"

var stepSchema = &llm.Schema{Name: "agent_output", JSON: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string"},"action":{"type":"array","items":{"type":"object","properties":{"click":{"type":"object","properties":{"index":{"type":"integer"}},"required":["index"],"additionalProperties":false}},"required":["click"],"additionalProperties":false}}},"required":["memory","action"],"additionalProperties":false}`)}

// TestScriptedThroughOpenAI: the openai provider, pointed at the server,
// gets the scripted model's answer, which found its element in the page
// text the request carried.
func TestScriptedThroughOpenAI(t *testing.T) {
	sm := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Senior Go Engineer", Tag: "a"}}},
		{Actions: []scripted.Action{{Name: "click", Label: "More"}}},
	})
	s := start(t, sm, Config{})
	m := client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, want := range []int{12, 13} {
		resp, err := m.Generate(ctx, llm.Request{
			Messages: []llm.Message{llm.SystemMessage("You are a browser agent."), llm.UserMessage(llm.Text("Task: apply."), llm.Text(page), llm.ImagePart("image/png", []byte("\x89PNG")))},
			Schema:   stepSchema,
		})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		var out struct {
			Memory string
			Action []map[string]map[string]int
		}
		if err := json.Unmarshal([]byte(resp.Content), &out); err != nil {
			t.Fatalf("reply %q: %v", resp.Content, err)
		}
		if len(out.Action) != 1 || out.Action[0]["click"]["index"] != want || out.Memory == "" {
			t.Fatalf("call %d: reply %s, want a click on %d", i+1, resp.Content, want)
		}
		if resp.Usage.TotalTokens == 0 {
			t.Errorf("call %d: no usage", i+1)
		}
	}
	if s.Calls() != 2 {
		t.Fatalf("Calls() = %d, want 2", s.Calls())
	}
	reqs := sm.Requests()
	if len(reqs) != 2 || reqs[0].Schema == nil || !strings.Contains(reqs[0].Messages[1].TextContent(), "Senior Go Engineer") {
		t.Fatalf("the model did not get the page and schema: %+v", reqs)
	}
	if img := reqs[0].Messages[1].Parts[2].Image; img == nil || img.MediaType != "image/png" {
		t.Errorf("the screenshot part did not reach the model: %+v", reqs[0].Messages[1].Parts)
	}
	// The script is used up: the scripted model answers done(success=false)
	// naming why, as it does in-process.
	resp, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(page))}, Schema: stepSchema})
	if err != nil || !strings.Contains(resp.Content, `"success":false`) || !strings.Contains(resp.Content, "script exhausted") {
		t.Fatalf("exhausted script: %v %+v", err, resp)
	}
	if s.Calls() != 3 {
		t.Errorf("Calls() = %d, want 3", s.Calls())
	}
}

// TestLatencyWaitsForTheClient: a call waits its latency before the model
// is asked; a client that gives up first ends the call, and the model is
// never asked. Close ends calls still waiting.
func TestLatencyWaitsForTheClient(t *testing.T) {
	sm := scripted.New([]scripted.Step{{Actions: []scripted.Action{{Name: "click", Label: "More"}}}})
	s := start(t, sm, Config{Latency: time.Hour})
	m := client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(page))}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call during an hour's latency: %v, want the client's deadline", err)
	}
	if n := len(sm.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times during the latency", n)
	}
	if s.Calls() != 1 {
		t.Errorf("Calls() = %d, want 1 (the abandoned call counts)", s.Calls())
	}

	// A second call still waiting when the server closes ends with it.
	errc := make(chan error, 1)
	go func() {
		_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(page))}})
		errc <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for s.Calls() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls the condition
	}
	if s.Calls() != 2 {
		t.Fatal("the second call never reached the server")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a call cut by Close succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the waiting call")
	}
}

// TestModelError: a model that fails is a 500 carrying its error, which the
// provider reports; Errors keeps it.
func TestModelError(t *testing.T) {
	s := start(t, scripted.New(nil, scripted.FailWithError()), Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client(t, s).Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(page))}})
	if !errors.Is(err, llm.ErrProviderUnavailable) || !strings.Contains(err.Error(), "script exhausted") {
		t.Fatalf("model error through the server: %v", err)
	}
	if errs := s.Errors(); len(errs) != 1 || !errors.Is(errs[0], scripted.ErrScriptExhausted) {
		t.Fatalf("Errors() = %v", errs)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Start(scripted.New(nil), Config{Addr: "0.0.0.0:0"}); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("non-loopback address: %v", err)
	}
	if _, err := Start(nil, Config{}); err == nil {
		t.Error("nil model accepted")
	}
	if _, err := Start(scripted.New(nil), Config{Latency: -time.Second}); err == nil {
		t.Error("negative latency accepted")
	}
	s := start(t, scripted.New(nil), Config{})
	for _, c := range []struct{ body, want string }{
		{`not json`, "request is not JSON"},
		{`{"messages":[{"role":"user","content":42}]}`, "message 0: content is neither"},
		{`{"stream":true,"messages":[]}`, "streaming is not supported"},
	} {
		resp, err := http.Post(s.URL()+"/chat/completions", "application/json", bytes.NewBufferString(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Message, Type string }
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.want) || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %+v", c.body, resp.StatusCode, e)
		}
	}
	if s.Calls() != 0 {
		t.Errorf("bad requests counted as calls: %d", s.Calls())
	}
}

// gate is a model whose calls block until released (or their context
// ends), counting how many run at once.
type gate struct {
	in, maxIn, returned atomic.Int64
	entered             chan struct{}
	release             chan struct{}
}

func (g *gate) Name() string { return "gate" }

func (g *gate) Generate(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	n := g.in.Add(1)
	for {
		m := g.maxIn.Load()
		if n <= m || g.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	defer g.returned.Add(1)
	defer g.in.Add(-1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return &llm.Response{Content: `{"memory":"ok","action":[]}`}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestCallsOneAtATime: two concurrent requests reach the model one after
// the other, and both are answered.
func TestCallsOneAtATime(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 2), release: make(chan struct{})}
	s := start(t, g, Config{})
	m := client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("hi"))}})
			errs <- err
		}()
	}
	<-g.entered
	// Both requests are in (the second waits for the model).
	for s.Calls() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the second request never arrived")
		case <-time.After(10 * time.Millisecond):
		}
	}
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := g.maxIn.Load(); n != 1 {
		t.Fatalf("%d model calls ran at once, want 1", n)
	}
}

// TestCloseWaitsForHandlers: Close returns only after a call in progress
// in the model has returned.
func TestCloseWaitsForHandlers(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s, err := Start(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("hi"))}})
		errc <- err
	}()
	<-g.entered
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if g.returned.Load() != 1 {
		t.Fatal("Close returned while the model's call was still running")
	}
	if err := <-errc; err == nil {
		t.Fatal("a call cut by Close succeeded")
	}
}
