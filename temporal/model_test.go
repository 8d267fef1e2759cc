package temporal

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// modelServer is an OpenAI-compatible chat-completions server on loopback
// that answers from the page state in each request, for the form fixture:
// type the answer, then submit the page, then done on the last page. Each
// worker gets its own base URL (/NAME/v1), so the server knows who asked.
//
// With onPage2 set, the first call for page 2 of a task (its field still
// empty) kills the worker that asked: calls from that worker are held from
// then on, and the kill waits until none of its tasks has a submit answered
// but not yet followed by its next call (a submit in flight would be
// counted by the site and then redone by the resumed run: no kill happens
// mid-action, as in a worker dying while waiting for its model).
type modelServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu        sync.Mutex
	changed   chan struct{}     // closed and replaced on every state change
	risky     map[string]string // task → worker: a submit answered, no call since
	calls     map[string]int    // per worker
	onPage2   func(worker string)
	triggered bool
	frozen    string // the worker being killed
	victim    string // the task whose call triggered it
}

var (
	pageRe = regexp.MustCompile(`Task (\S+): page (\d) of 3`)
	doneRe = regexp.MustCompile(`Task (\S+) complete`)
)

func newModelServer(t *testing.T) *modelServer {
	t.Helper()
	m := &modelServer{done: make(chan struct{}), changed: make(chan struct{}), risky: map[string]string{}, calls: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{w}/v1/chat/completions", m.complete)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = m.srv.Close()
		<-m.done
	})
	return m
}

// URL is the base URL worker uses (--base-url).
func (m *modelServer) URL(worker string) string {
	return fmt.Sprintf("http://%s/%s/v1", m.ln.Addr(), worker)
}

// killOnPage2 arms the kill (see modelServer).
func (m *modelServer) killOnPage2(kill func(worker string)) {
	m.mu.Lock()
	m.onPage2 = kill
	m.mu.Unlock()
}

// killed returns the worker killed and the task that triggered it.
func (m *modelServer) killed() (worker, task string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen, m.victim
}

func (m *modelServer) callsBy(worker string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[worker]
}

// signal wakes the kill's wait; m.mu is held.
func (m *modelServer) signal() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// lastUserText is the latest user message's text of a chat request.
func lastUserText(body []byte) (string, error) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", err
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		if msg.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			return s, nil
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(msg.Content, &parts); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text + "\n")
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("no user message")
}

// reply is what the fixture's model does on a page.
type reply struct {
	task   string
	page   int  // 0: the done page
	submit bool // the answer is typed: submit
	out    scripted.Output
}

// decide reads the page in text and answers.
func decide(text string) (reply, error) {
	if ms := doneRe.FindAllStringSubmatch(text, -1); len(ms) > 0 {
		id := ms[len(ms)-1][1]
		return reply{task: id, out: scripted.Output{NextGoal: "finish", Memory: "all pages sent",
			Action: []map[string]any{{"done": map[string]any{"success": true, "text": "task " + id + " finished"}}}}}, nil
	}
	ms := pageRe.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return reply{}, fmt.Errorf("no form page in the request")
	}
	id, page := ms[len(ms)-1][1], int(ms[len(ms)-1][2][0]-'0')
	r := reply{task: id, page: page}
	input, button := -1, -1
	value := ""
	for _, e := range scripted.ParseElements(text) {
		switch {
		case e.Tag == "input" && input < 0:
			input, value = e.Index, e.Attrs["value"]
		case e.Tag == "button" && button < 0:
			button = e.Index
		}
	}
	if input < 0 || button < 0 {
		return r, fmt.Errorf("task %s page %d: no field or button in the request", id, page)
	}
	if value != "" {
		r.submit = true
		r.out = scripted.Output{NextGoal: "send the form", Memory: fmt.Sprintf("typed on form %d", page),
			Action: []map[string]any{{"click": map[string]any{"index": button}}}}
		return r, nil
	}
	r.out = scripted.Output{NextGoal: "type the answer", Memory: fmt.Sprintf("on form %d", page),
		Action: []map[string]any{{"input": map[string]any{"index": input, "text": fmt.Sprintf("answer-%s-%d", id, page)}}}}
	return r, nil
}

func (m *modelServer) complete(w http.ResponseWriter, r *http.Request) {
	worker := r.PathValue("w")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	text, err := lastUserText(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rep, err := decide(text)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	m.mu.Lock()
	m.calls[worker]++
	if _, ok := m.risky[rep.task]; ok {
		delete(m.risky, rep.task)
		m.signal()
	}
	if m.frozen == worker {
		m.mu.Unlock()
		<-r.Context().Done()
		return
	}
	trigger := m.onPage2 != nil && !m.triggered && rep.page == 2 && !rep.submit
	kill := m.onPage2
	if trigger {
		m.triggered, m.frozen, m.victim = true, worker, rep.task
	}
	if rep.submit {
		m.risky[rep.task] = worker
	}
	m.mu.Unlock()
	if trigger {
		m.waitQuiet(worker)
		kill(worker)
		<-r.Context().Done()
		return
	}
	content, _ := json.Marshal(rep.out)
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fixture", "object": "chat.completion", "created": time.Now().Unix(), "model": "fixture",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": string(content)}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": len(text) / 4, "completion_tokens": len(content) / 4, "total_tokens": (len(text) + len(content)) / 4},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// waitQuiet waits (bounded) until no task of worker has a submit in
// flight.
func (m *modelServer) waitQuiet(worker string) {
	deadline := time.NewTimer(3 * time.Minute)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		busy := false
		for _, w := range m.risky {
			busy = busy || w == worker
		}
		ch := m.changed
		m.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		}
	}
}
