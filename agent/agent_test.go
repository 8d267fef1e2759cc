package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// newSession starts a session on the shared test browser with the watchdogs
// the agent needs.
func newSession(t *testing.T) (*testbrowser.Env, *session.Session) {
	t.Helper()
	env := testbrowser.Start(t)
	opts := []session.Option{session.WithWatchdogs(
		actions.New(actions.Config{}),
		dom.New(dom.Config{}),
		screenshot.New(screenshot.Config{}),
	)}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	return env, s
}

func runAgent(t *testing.T, a *agent.Agent) *agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := a.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
	return res
}

// userText is the text of a request's user message.
func userText(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			b.WriteString(m.TextContent())
		}
	}
	return b.String()
}

func evalPage(t *testing.T, s *session.Session, expr string, out any) {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, expr, out); err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
}

func settings(t *testing.T) agent.Settings {
	return agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff}
}

func TestAgentMultiPageForm(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
			{Name: "click", Label: "Next"},
		}},
		{WaitForLabel: "Finish", Action: "select_dropdown", Label: "plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Action: "click", Label: "Finish"},
		{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Signed up Ada on the Pro plan", "success": true}},
	})
	set := settings(t)
	set.Vision = agent.VisionOn
	judge := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: `{"reasoning":"confirmation visible","verdict":true,"failure_reason":"","impossible_task":false}`}, nil
	}}
	set.Judge = agent.ModelJudge{Model: judge}
	var starts, ends []int
	set.OnStepStart = func(_ context.Context, n int) { starts = append(starts, n) }
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) { ends = append(ends, it.Step) }
	a, err := agent.New("Open "+env.URL("/agent-form.html")+" and sign up Ada Lovelace (ada@example.com) on the Pro plan.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success || res.FinalText != "Signed up Ada on the Pro plan" {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	if res.Judgement == nil || !res.Judgement.Verdict || len(judge.reqs) != 1 {
		t.Fatalf("judgement %+v (%s)", res.Judgement, res.JudgeError)
	}
	var msg string
	evalPage(t, s, `document.getElementById('msg').textContent`, &msg)
	if msg != "Thank you, Ada Lovelace! Your plan: pro" {
		t.Fatalf("confirmation %q", msg)
	}
	h := a.History()
	if h.Items[0].Step != 0 || h.Items[0].Actions[0].Name != "navigate" {
		t.Fatalf("step 0 should open the task's URL: %+v", h.Items[0])
	}
	if len(starts) != len(h.Items) || len(ends) != len(h.Items) {
		t.Fatalf("callbacks %v %v for %d items", starts, ends, len(h.Items))
	}
	// Step 1's batch ran all three actions: the form did not re-render.
	if got := len(h.Items[1].Actions); got != 3 {
		t.Fatalf("step 1 ran %d actions: %+v", got, h.Items[1])
	}
	if h.Items[1].State.ScreenshotPath == "" {
		t.Fatal("vision on: no screenshot saved")
	}
	if _, err := os.Stat(h.Items[1].State.ScreenshotPath); err != nil {
		t.Fatal(err)
	}
	// The state message has upstream's sections.
	req := model.Requests()[0]
	txt := userText(req)
	for _, want := range []string{"<user_request>", "<agent_history>", "<agent_state>", "<browser_state>", "[Start of page]", "[End of page]", "<step_info>", "Current tab: ", "Today: "} {
		if !strings.Contains(txt, want) {
			t.Errorf("state message lacks %q", want)
		}
	}
	hasImage := false
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		hasImage = hasImage || p.Image != nil
	}
	if !hasImage {
		t.Error("vision on: no screenshot in the request")
	}
	// History round trip (Run saved it).
	path := filepath.Join(a.RunDir(), "history.json")
	h2, err := agent.LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h2.Items) != len(h.Items) || h2.Items[1].Actions[2].Name != "click" {
		t.Fatalf("loaded history differs: %d items", len(h2.Items))
	}
	if fin, ok := h2.FinalResult(); !ok || !fin.Success {
		t.Fatalf("final result %+v %v", fin, ok)
	}
}

// funcModel answers with a function of the call number.
type funcModel struct {
	mu   sync.Mutex
	n    int
	reqs []llm.Request
	fn   func(n int) (*llm.Response, error)
}

func (m *funcModel) Name() string { return "func" }
func (m *funcModel) Generate(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	n := m.n
	m.n++
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.fn(n)
}

// dynModel answers each call with a function of the request (for steps whose
// parameters depend on the page, like tab ids).
func dynModel(steps ...func(txt string) string) *funcModel {
	m := &funcModel{}
	m.fn = func(n int) (*llm.Response, error) {
		if n >= len(steps) {
			return &llm.Response{Content: `{"action":[{"done":{"text":"script over","success":false}}]}`}, nil
		}
		m.mu.Lock()
		txt := userText(m.reqs[n])
		m.mu.Unlock()
		return &llm.Response{Content: steps[n](txt)}, nil
	}
	return m
}

func act(name string, params any) string {
	b, _ := json.Marshal(map[string]any{"action": []any{map[string]any{name: params}}})
	return string(b)
}

func indexOf(t *testing.T, txt, label, tag string) int {
	el, err := scripted.Find(scripted.ParseElements(txt), label, tag)
	if err != nil {
		t.Errorf("find %q: %v", label, err)
		return 0
	}
	return el.Index
}

var tabRE = regexp.MustCompile(`Tab (\w{4}): (\S+)`)

func tabID(txt, urlPart string) string {
	for _, m := range tabRE.FindAllStringSubmatch(txt, -1) {
		if strings.Contains(m[2], urlPart) {
			return m[1]
		}
	}
	return "none"
}

func TestAgentBrowserActions(t *testing.T) {
	env, s := newSession(t)
	model := dynModel(
		func(txt string) string {
			return act("dropdown_options", map[string]any{"index": indexOf(t, txt, "plan", "select")})
		},
		func(txt string) string {
			return act("select_dropdown", map[string]any{"index": indexOf(t, txt, "plan", "select"), "text": "Basic"})
		},
		func(txt string) string { return act("find_text", map[string]any{"text": "Sign up"}) },
		func(txt string) string { return act("scroll", map[string]any{"down": true, "pages": 0.5}) },
		func(txt string) string { return act("hover", map[string]any{"index": indexOf(t, txt, "Finish", "")}) },
		func(txt string) string {
			return act("navigate", map[string]any{"url": env.URL("/agent-login.html"), "new_tab": true})
		},
		func(txt string) string { return act("switch_tab", map[string]any{"tab_id": tabID(txt, "agent-form2")}) },
		func(txt string) string { return act("close_tab", map[string]any{"tab_id": tabID(txt, "agent-login")}) },
		func(txt string) string { return act("send_keys", map[string]any{"keys": "Tab"}) },
		func(txt string) string { return act("screenshot", map[string]any{"file_name": "page.png"}) },
		func(txt string) string {
			return act("write_file", map[string]any{"file_name": "r.md", "content": "plan=basic"})
		},
		func(txt string) string {
			return act("replace_file", map[string]any{"file_name": "r.md", "old_str": "basic", "new_str": "BASIC"})
		},
		func(txt string) string { return act("read_file", map[string]any{"file_name": "r.md"}) },
		func(txt string) string {
			return act("evaluate", map[string]any{"code": "document.querySelectorAll('option').length * 10"})
		},
		func(txt string) string { return act("extract", map[string]any{"query": "what does the heading say?"}) },
		func(txt string) string { return act("go_back", map[string]any{}) },
		func(txt string) string { return act("done", map[string]any{"text": "ok", "success": true}) },
	)
	extractor := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: "The heading says Sign up"}, nil
	}}
	set := settings(t)
	set.Vision = agent.VisionAuto
	set.ExtractModel = extractor
	a, err := agent.New("Open "+env.URL("/agent-form2.html"), model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	h := a.History()
	for _, it := range h.Items {
		for _, r := range it.Actions {
			if r.Error != "" {
				t.Errorf("step %d %s: %s", it.Step, r.Name, r.Error)
			}
		}
		if it.Error != "" {
			t.Errorf("step %d: %s", it.Step, it.Error)
		}
	}
	reqs := model.reqs
	if txt := userText(reqs[1]); !strings.Contains(txt, `"Basic" value="basic"`) || !strings.Contains(txt, "<read_state>") {
		t.Errorf("dropdown options not in read_state:\n%s", txt)
	}
	if txt := userText(reqs[2]); strings.Contains(txt, "<read_state>") {
		t.Error("read_state shown twice")
	}
	if r := h.Items[2].Actions[0]; !strings.Contains(r.Result.Text, `Selected "Basic"`) {
		t.Errorf("select result %+v", r)
	}
	if txt := userText(reqs[6]); !strings.Contains(txt, "agent-login.html") || !strings.Contains(txt, "Current URL: "+env.URL("/agent-login.html")) {
		t.Errorf("new tab not focused:\n%s", txt)
	}
	if txt := userText(reqs[8]); tabID(txt, "agent-login") != "none" {
		t.Errorf("closed tab still listed:\n%s", txt)
	}
	// Vision auto: only the step after the screenshot action has an image.
	for i, r := range reqs {
		img := false
		for _, p := range r.Messages[len(r.Messages)-1].Parts {
			img = img || p.Image != nil
		}
		if img != (i == 10) {
			t.Errorf("request %d image=%v", i, img)
		}
	}
	if _, err := os.Stat(filepath.Join(a.RunDir(), "files", "page.png")); err != nil {
		t.Error(err)
	}
	if txt := userText(reqs[13]); !strings.Contains(txt, "plan=BASIC") {
		t.Errorf("read_file content:\n%s", txt)
	}
	// evaluate runs in the real page (actions watchdog), extract reads its
	// real text (DOM watchdog).
	if txt := userText(reqs[14]); !strings.Contains(txt, "Result: 30") {
		t.Errorf("evaluate result:\n%s", txt)
	}
	if txt := userText(reqs[15]); !strings.Contains(txt, "<read_state>") || !strings.Contains(txt, "The heading says Sign up") {
		t.Errorf("extract result:\n%s", txt)
	}
	if len(extractor.reqs) != 1 || !strings.Contains(userText(extractor.reqs[0]), "Sign up (2 of 2)") {
		t.Error("extraction model did not get the page text")
	}
	if r := h.Items[16].Actions[0]; r.Name != "go_back" || r.Verdict != "navigated" {
		t.Errorf("go_back %+v", r)
	}
}

func TestAgentUpload(t *testing.T) {
	env, s := newSession(t)
	model := dynModel(
		func(txt string) string {
			return act("write_file", map[string]any{"file_name": "cv.txt", "content": "Ada's CV"})
		},
		func(txt string) string {
			return act("upload_file", map[string]any{"index": indexOf(t, txt, "Resume file", ""), "path": "/etc/passwd"})
		},
		func(txt string) string {
			return act("upload_file", map[string]any{"index": indexOf(t, txt, "Resume file", ""), "path": "cv.txt"})
		},
		func(txt string) string { return act("done", map[string]any{"text": "uploaded", "success": true}) },
	)
	a, err := agent.New("Open "+env.URL("/agent-upload.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)
	h := a.History()
	if e := h.Items[2].Actions[0].Error; !strings.Contains(e, `file "/etc/passwd" may not be uploaded`) {
		t.Fatalf("upload of an outside file: %q", e)
	}
	if e := h.Items[3].Actions[0].Error; e != "" {
		t.Fatalf("upload of an agent file: %s", e)
	}
	var name string
	evalPage(t, s, `document.getElementById('f').files[0].name`, &name)
	if name != "cv.txt" {
		t.Fatalf("uploaded %q", name)
	}
}
