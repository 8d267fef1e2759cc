package report

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// A real hand-off (the model asks for a person, who greets Ada on the
// page) reaches the report from the agent's history through the trace:
// who asked and why (escaped), via what, the note, that the page changed,
// and the person's time as its own phase of the step's timeline.
func TestReportShowsARealHandoff(t *testing.T) {
	env := testbrowser.Start(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("testdata", "marks"))))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.jsonl")
	tw, err := trace.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{})), session.WithBusHook(tw.ObserveBus))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	model := scripted.New([]scripted.Step{
		{Action: "request_human", Params: map[string]any{"reason": "please greet <b>Ada</b>"}},
		{WaitFor: "Hello, Ada", Action: "done", Params: map[string]any{"text": "greeted", "success": true}},
	})
	person := agent.HumanHandlerFunc(func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
		cs, err := s.PageSession("")
		if err == nil {
			err = testbrowser.Eval(cs, `document.getElementById('name').value = 'Ada', document.getElementById('greet').click(), true`, nil)
		}
		// The person takes a while (not a wait for anything): long enough
		// that counting their time twice would show in the timeline.
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
		return agent.HumanResponse{Note: "greeted her", Via: "the test"}, err
	})
	a, err := agent.New("Open "+srv.URL+"/form.html and greet Ada.", model, s, agent.Settings{
		RunDir: dir, Vision: agent.VisionOff, MaxSteps: 5, Human: person,
		Observers: []agent.Observer{trace.NewAgentObserver(tw, dir)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.Run(ctx); err != nil || !res.Success {
		t.Fatalf("run: %v %+v; model errors %v", err, res, model.Errors())
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(tracePath, out); err != nil {
		t.Fatal(err)
	}
	pg := env.NewPage(t, "file://"+out)
	var f struct {
		Handoffs []string
		Phases   []string
	}
	pg.Eval(t, `(() => ({
		Handoffs: [...document.querySelectorAll('tr.handoff')].map(r => r.textContent.replace(/\s+/g, ' ').trim()),
		Phases: [...document.querySelectorAll('section.step[data-step="1"] .timeline .phase')].map(p => p.dataset.phase),
	}))()`, &f)
	if len(f.Handoffs) != 1 {
		t.Fatalf("hand-offs %q", f.Handoffs)
	}
	for _, w := range []string{"asked by model: please greet <b>Ada</b>", "via the test", "done; the page changed", "note: greeted her", "/form.html"} {
		if !strings.Contains(f.Handoffs[0], w) {
			t.Errorf("hand-off %q lacks %q", f.Handoffs[0], w)
		}
	}
	if strings.Join(f.Phases, ",") != "observe,model,actions,person" {
		t.Errorf("step 1 timeline %v", f.Phases)
	}
	// The person's time is counted once: the model's hand-off is one of
	// the step's actions, and the phases add up to at most the step.
	d, err := Load(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range d.Steps {
		sum := 0.0
		for _, p := range st.Phases {
			sum += p.MS
		}
		if sum > st.DurationMS+5 {
			t.Errorf("step %d: phases %+v add up to %.1f ms of a %.1f ms step", st.Step.Step, st.Phases, sum, st.DurationMS)
		}
	}
}
