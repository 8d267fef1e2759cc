package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
)

// recordingObserver keeps what a Driver tells its observers.
type recordingObserver struct {
	agent.BaseObserver
	runs    []string // "start:<task>" and "end:<steps>"
	steps   []agent.HistoryItem
	started []int
}

func (o *recordingObserver) RunStarted(_ context.Context, r agent.RunInfo) {
	o.runs = append(o.runs, "start:"+r.Task)
}
func (o *recordingObserver) StepStarted(_ context.Context, n int) { o.started = append(o.started, n) }
func (o *recordingObserver) StepEnded(_ context.Context, it agent.HistoryItem) {
	o.steps = append(o.steps, it)
}
func (o *recordingObserver) RunEnded(_ context.Context, res *agent.Result, _ error) {
	o.runs = append(o.runs, "end")
}

// indexWhere finds the index of the element whose attribute key is value.
func indexWhere(t *testing.T, st *events.BrowserState, key, value string) int {
	t.Helper()
	for i, el := range st.Elements {
		if el.Attributes[key] == value || (key == "name" && el.Name == value) {
			return i
		}
	}
	t.Fatalf("no element with %s=%q in %d elements", key, value, len(st.Elements))
	return 0
}

func params(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDriverStepByStep(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obs := &recordingObserver{}
	set := settings(t)
	set.SensitiveData = map[string]string{"mail": "ada@secret.example"}
	set.Observers = []agent.Observer{obs}
	set.Approver = agent.DenyRisks{agent.RiskScript: "no page scripts here"}
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}

	rec, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/agent-form.html")}))
	if err != nil || rec.Verdict != events.VerdictNavigated {
		t.Fatalf("navigate: %+v, %v", rec, err)
	}

	// No state yet: an index means nothing.
	_, err = d.Do(ctx, "click", params(t, map[string]any{"index": 3}))
	var stale *agent.StaleIndexError
	if !errors.As(err, &stale) || !errors.Is(err, agent.ErrStaleIndex) || !strings.Contains(err.Error(), "take a new state") {
		t.Fatalf("click before any state: %v", err)
	}

	o, err := d.State(ctx, agent.StateOptions{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.Text, "Full name") || o.ScreenshotPath == "" {
		t.Fatalf("state text %q, screenshot %q", o.Text, o.ScreenshotPath)
	}
	if _, err := os.Stat(o.ScreenshotPath); err != nil {
		t.Fatal(err)
	}
	email := indexWhere(t, o.State, "placeholder", "Email address")
	noop := indexWhere(t, o.State, "id", "noop")
	next := indexWhere(t, o.State, "type", "submit")

	rec, err = d.Do(ctx, "input", params(t, map[string]any{"index": email, "text": "<secret>mail</secret>"}))
	if err != nil {
		t.Fatalf("input: %+v %v", rec, err)
	}
	if strings.Contains(rec.Result.Text, "ada@secret.example") || !strings.Contains(rec.Result.Text, "mail") {
		t.Fatalf("input text %q", rec.Result.Text)
	}
	var val string
	evalPage(t, s, `document.querySelector('[name=email]').value`, &val)
	if val != "ada@secret.example" {
		t.Fatalf("field holds %q", val)
	}

	// The approval policy applies: evaluate is a script.
	rec, err = d.Do(ctx, "evaluate", params(t, map[string]any{"code": "window.__ran = 1"}))
	var denied *agent.DeniedError
	if !errors.As(err, &denied) || !errors.Is(err, agent.ErrDenied) || denied.Reason != "no page scripts here" || !rec.Denied {
		t.Fatalf("evaluate: %+v, %v", rec, err)
	}
	var ran any
	evalPage(t, s, `window.__ran`, &ran)
	if ran != nil {
		t.Fatalf("the denied script ran: %v", ran)
	}

	// Unknown actions and bad parameters are the caller's errors, before
	// anything runs.
	if _, err := d.Do(ctx, "fly", nil); !errors.Is(err, agent.ErrUnknownAction) || !strings.Contains(err.Error(), "click") {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := d.Do(ctx, "click", params(t, map[string]any{"index": "x"})); !errors.Is(err, agent.ErrBadParams) {
		t.Fatalf("bad params: %v", err)
	}
	if _, err := d.Do(ctx, "done", params(t, map[string]any{"text": "x", "success": true})); !errors.Is(err, agent.ErrUnknownAction) {
		t.Fatalf("done is not a driver action: %v", err)
	}
	// An index the state does not have.
	if _, err := d.Do(ctx, "click", params(t, map[string]any{"index": 999999})); !errors.As(err, &stale) || !strings.Contains(stale.Reason, "not in the last state") {
		t.Fatalf("unknown index: %v", err)
	}

	rec, err = d.Do(ctx, "click", params(t, map[string]any{"index": next}))
	if err != nil || rec.Verdict != events.VerdictNavigated {
		t.Fatalf("next: %+v, %v", rec, err)
	}
	// The page navigated: the old indexes are stale, and nothing is clicked.
	_, err = d.Do(ctx, "click", params(t, map[string]any{"index": noop}))
	if !errors.As(err, &stale) || !strings.Contains(stale.Reason, "navigated") {
		t.Fatalf("click after navigation: %v", err)
	}

	text, url, total, err := d.PageText(ctx, 0, 0)
	if err != nil || !strings.Contains(url, "agent-form2.html") || total == 0 || text == "" {
		t.Fatalf("page text %q %q %d %v", text, url, total, err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.State(ctx, agent.StateOptions{}); !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("state after close: %v", err)
	}

	// Every call was a step, told to the observers, numbered in order; the
	// history on disk matches.
	h, err := agent.LoadHistory(filepath.Join(d.RunDir(), "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.steps) != len(h.Items) || len(obs.steps) != 9 || h.Items[8].Actions[0].Name != agent.PageTextAction {
		t.Fatalf("%d steps observed, %d in history", len(obs.steps), len(h.Items))
	}
	for i, it := range obs.steps {
		if it.Step != i || obs.started[i] != i {
			t.Fatalf("step %d numbered %d (started %v)", i, it.Step, obs.started)
		}
	}
	if got := strings.Join(obs.runs, ","); got != "start:"+agent.DriverTask+",end" {
		t.Fatalf("runs %s", got)
	}
	b, _ := os.ReadFile(filepath.Join(d.RunDir(), "history.json"))
	if strings.Contains(string(b), "ada@secret.example") {
		t.Fatal("the secret reached the history")
	}
}

func TestDriverRunTaskContinuesTheSession(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obs := &recordingObserver{}
	set := settings(t)
	set.Observers = []agent.Observer{obs}
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/agent-form.html")})); err != nil {
		t.Fatal(err)
	}
	if _, err := d.State(ctx, agent.StateOptions{}); err != nil {
		t.Fatal(err)
	}
	model := scripted.New([]scripted.Step{
		{Action: "input", Label: "Full name", Params: map[string]any{"text": "Grace"}},
		{Action: "done", Params: map[string]any{"text": "typed", "success": true}},
	})
	var progress []int
	res, err := d.RunTask(ctx, model, "Type Grace as the full name", agent.TaskOptions{MaxSteps: 5, Observers: []agent.Observer{stepFunc(func(it agent.HistoryItem) { progress = append(progress, it.Step) })}})
	if err != nil || !res.Success {
		t.Fatalf("task: %+v %v (model errors %v)", res, err, model.Errors())
	}
	if len(progress) != 2 || progress[0] != 2 {
		t.Fatalf("task steps %v: numbering should continue after the caller's two steps", progress)
	}
	// A task's observations replace the caller's: its indexes are gone.
	if _, err := d.Do(ctx, "click", params(t, map[string]any{"index": 1})); !errors.Is(err, agent.ErrStaleIndex) {
		t.Fatalf("index after a task: %v", err)
	}
	if _, err := d.RunTask(ctx, nil, "x", agent.TaskOptions{}); !errors.Is(err, agent.ErrNoModel) {
		t.Fatalf("no model: %v", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The Driver's run, the task's run, the Driver's run resumed.
	want := "start:" + agent.DriverTask + ",start:Type Grace as the full name,end,start:" + agent.DriverTask + ",end"
	if got := strings.Join(obs.runs, ","); got != want {
		t.Fatalf("runs\n%s\nwant\n%s", got, want)
	}
	var val string
	evalPage(t, s, `document.querySelector('[name=fullname]').value`, &val)
	if val != "Grace" {
		t.Fatalf("field %q", val)
	}
}

// stepFunc is an Observer of ended steps.
type stepFunc func(agent.HistoryItem)

func (f stepFunc) RunStarted(context.Context, agent.RunInfo)         {}
func (f stepFunc) StepStarted(context.Context, int)                  {}
func (f stepFunc) ModelCalled(context.Context, agent.ModelCall)      {}
func (f stepFunc) StepEnded(_ context.Context, it agent.HistoryItem) { f(it) }
func (f stepFunc) RunEnded(context.Context, *agent.Result, error)    {}

// select_dropdown's clear reaches the page: on a multi-select with two
// options chosen, the picked option becomes the only one; without clear
// options are added.
func TestDriverSelectOnlyThisOption(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := agent.NewDriver(s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if _, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/person-controls.html")})); err != nil {
		t.Fatal(err)
	}
	o, err := d.State(ctx, agent.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	toppings := indexWhere(t, o.State, "id", "toppings")
	selected := func() string {
		var v string
		evalPage(t, s, `Array.from(document.getElementById('toppings').selectedOptions, (o) => o.text).join(',')`, &v)
		return v
	}
	if rec, err := d.Do(ctx, "select_dropdown", params(t, map[string]any{"index": toppings, "text": "Basil"})); err != nil {
		t.Fatalf("add Basil: %+v %v", rec, err)
	}
	if got := selected(); got != "Cheese,Olives,Basil" {
		t.Fatalf("after adding Basil the page has %q selected", got)
	}
	rec, err := d.Do(ctx, "select_dropdown", params(t, map[string]any{"index": toppings, "text": "Capers", "clear": true}))
	if err != nil {
		t.Fatalf("only Capers: %+v %v", rec, err)
	}
	if got := selected(); got != "Capers" {
		t.Fatalf("after clear+Capers the page has %q selected; result %q", got, rec.Text())
	}
}
