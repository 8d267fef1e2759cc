package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// thinkingModel is a scripted model during whose first call the page
// removes the element the model is about to click: the race a page that
// re-renders while the model thinks creates.
type thinkingModel struct {
	*scripted.Model
	calls  int
	during func()
}

func (m *thinkingModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.calls++
	if m.calls == 1 {
		m.during()
	}
	return m.Model.Generate(ctx, req)
}

// A click whose element vanished fails; its verdict and evidence travel
// with the error through the bus to the agent, and from there to the
// trace (the bus record and the step record) and the report.
func TestFailedActionEvidenceReachesTraceAndReport(t *testing.T) {
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.jsonl")
	tw, err := trace.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{})),
		session.WithBusHook(tw.ObserveBus))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	page := env.URL("/vanish.html")
	model := &thinkingModel{
		Model: scripted.New([]scripted.Step{
			{NextGoal: "Press the target.", Actions: []scripted.Action{{Name: "click", Label: "Target"}}},
			{NextGoal: "Report.", Actions: []scripted.Action{{Name: "done", Params: map[string]any{"success": false, "text": "the target vanished"}}}},
		}),
		during: func() {
			cs, err := s.PageSession("")
			if err == nil {
				err = testbrowser.Eval(cs, "document.getElementById('target').remove(), true", nil)
			}
			if err != nil {
				t.Errorf("removing the target: %v", err)
			}
		},
	}
	a, err := agent.New("Press the target on "+page, model, s, agent.Settings{
		RunDir: dir, Vision: agent.VisionOff, MaxSteps: 4,
		Observers: []agent.Observer{trace.NewAgentObserver(tw, dir)},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx)
	if err != nil || !res.Done {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	// The agent's history: verdict failed, with the evidence.
	var click *agent.ActionRecord
	for _, it := range a.History().Items {
		for i := range it.Actions {
			if it.Actions[i].Name == "click" {
				click = &it.Actions[i]
			}
		}
	}
	if click == nil || click.Verdict != events.VerdictFailed || click.Error == "" || click.Result.Outcome == nil ||
		click.Result.Outcome.Before.URL != page || click.Result.Outcome.After.URL != page {
		t.Fatalf("history: %+v", click)
	}

	// The trace: the bus record of the handler keeps its value with its
	// error, and the step record the action's verdict and evidence.
	recs, err := trace.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	var busLine, stepLine bool
	for _, r := range recs {
		switch {
		case r.Type == trace.TypeBus && r.Kind == events.ClickElement.Name && r.Phase == "handler_finished":
			var v events.ClickResult
			if json.Unmarshal(r.Data, &v) != nil || r.Error == "" || v.Outcome.Verdict != events.VerdictFailed || v.Outcome.Before.URL != page {
				t.Fatalf("bus line: error %q data %s", r.Error, r.Data)
			}
			busLine = true
		case r.Type == trace.TypeStep:
			var st trace.Step
			if err := json.Unmarshal(r.Data, &st); err != nil {
				t.Fatal(err)
			}
			for _, ac := range st.Actions {
				if ac.Name == "click" {
					if ac.Verdict != "failed" || ac.Error == "" || !strings.Contains(string(ac.Before), page) || !strings.Contains(string(ac.After), page) {
						t.Fatalf("step line action: %+v", ac)
					}
					stepLine = true
				}
			}
		}
	}
	if !busLine || !stepLine {
		t.Fatalf("trace lacks the failed click: bus line %v, step line %v", busLine, stepLine)
	}

	// The report shows the verdict and the evidence.
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(tracePath, out); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<td class="verdict-failed">failed</td>`, "<summary>evidence</summary>", "vanish.html"} {
		if !strings.Contains(string(html), want) {
			t.Fatalf("report lacks %q", want)
		}
	}
}
