package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// formScript signs Ada up on agent-form.html.
func formScript() []scripted.Step {
	return []scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
			{Name: "click", Label: "Next"},
		}},
		{WaitForLabel: "Finish", Action: "select_dropdown", Label: "plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Action: "click", Label: "Finish"},
		{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Signed up Ada on the Pro plan", "success": true}},
	}
}

// runCounter counts the runs the observers were told of.
type runCounter struct {
	agent.BaseObserver
	mu             sync.Mutex
	started, ended int
	lastErr        error
}

func (o *runCounter) RunStarted(context.Context, agent.RunInfo) {
	o.mu.Lock()
	o.started++
	o.mu.Unlock()
}

func (o *runCounter) RunEnded(_ context.Context, _ *agent.Result, err error) {
	o.mu.Lock()
	o.ended++
	o.lastErr = err
	o.mu.Unlock()
}

func (o *runCounter) counts() (int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.started, o.ended
}

// stepShape is what must agree between two runs of one script: all but
// the times, the usage and the files.
func stepShape(t *testing.T, it agent.HistoryItem) string {
	t.Helper()
	type act struct {
		Name    string
		Params  json.RawMessage
		Verdict string
		Error   string
		Done    bool
	}
	var acts []act
	for _, r := range it.Actions {
		acts = append(acts, act{r.Name, r.Params, string(r.Verdict), r.Error, r.Result.Done})
	}
	b, err := json.Marshal(struct {
		Step   int
		Source agent.StepSource
		URL    string
		Title  string
		Error  string
		Failed bool
		Output *agent.AgentOutput
		Acts   []act
	}{it.Step, it.Source, it.State.URL, it.State.Title, it.Error, it.Failed, it.Output, acts})
	if err != nil {
		t.Fatal(err)
	}
	// Element indices are the DOM service's, not the loop's: two sessions
	// may number one page differently.
	return elementIndex.ReplaceAllString(string(b), `"index":N`)
}

var elementIndex = regexp.MustCompile(`"index":\d+`)

// The same script through Run and through a loop of Steps gives the same
// history and result; observers hear of one run; a Step after the end is
// refused until a follow-up task opens the next run.
func TestStepEqualsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	env, s := newSession(t)
	task := "Open " + env.URL("/agent-form.html") + " and sign up Ada Lovelace (ada@example.com) on the Pro plan."
	// One script for both (its length shows in the scripted thinking).
	script := append(formScript(), scripted.Step{Action: "done", Params: map[string]any{"text": "follow-up done", "success": true}})
	ran, err := agent.New(task, scripted.New(script), s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	want := runAgent(t, ran)

	_, s2 := newSession(t)
	obs := &runCounter{}
	set := settings(t)
	set.Observers = []agent.Observer{obs}
	var inner error
	var b *agent.Agent
	set.OnStepEnd = func(ctx context.Context, _ agent.HistoryItem) {
		// Called inside Step: the agent is busy.
		_, _, inner = b.Step(ctx)
	}
	model := scripted.New(script)
	b, err = agent.New(task, model, s2, set)
	if err != nil {
		t.Fatal(err)
	}
	var got *agent.Result
	var items []agent.HistoryItem
	for got == nil {
		item, res, err := b.Step(ctx)
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		items = append(items, item)
		got = res
		if started, ended := obs.counts(); started != 1 || (ended == 1) != (res != nil) {
			t.Fatalf("after step %d: RunStarted %d, RunEnded %d", item.Step, started, ended)
		}
		if len(items) > 20 {
			t.Fatal("the stepped run does not end")
		}
	}
	if !errors.Is(inner, agent.ErrRunning) {
		t.Fatalf("Step inside a Step: %v, want ErrRunning", inner)
	}
	if !got.Done || got.Success != want.Success || got.FinalText != want.FinalText || got.Steps != want.Steps || fmt.Sprint(got.Errors) != fmt.Sprint(want.Errors) {
		t.Fatalf("Step result %+v, Run result %+v", got, want)
	}
	wh, gh := ran.History().Items, b.History().Items
	if len(wh) != len(gh) || len(items) != len(gh) {
		t.Fatalf("Run recorded %d steps, Step %d (returned %d)", len(wh), len(gh), len(items))
	}
	for i := range wh {
		w, g, r := stepShape(t, wh[i]), stepShape(t, gh[i]), stepShape(t, items[i])
		if w != g || g != r {
			t.Fatalf("step %d differs:\nRun:  %s\nStep: %s\nreturned: %s", i, w, g, r)
		}
	}

	if _, _, err := b.Step(ctx); !errors.Is(err, agent.ErrRunEnded) {
		t.Fatalf("Step after the end: %v, want ErrRunEnded", err)
	}
	if r := b.EndRun(ctx, nil); r != nil {
		t.Fatalf("EndRun with no run open: %+v", r)
	}
	if err := b.AddTask("Say you are done."); err != nil {
		t.Fatal(err)
	}
	item, res, err := b.Step(ctx)
	if err != nil || res == nil || !res.Done || res.FinalText != "follow-up done" || item.Step != len(gh) {
		t.Fatalf("follow-up step: %v %+v %+v", err, res, item)
	}
	if started, ended := obs.counts(); started != 2 || ended != 2 {
		t.Fatalf("RunStarted %d, RunEnded %d after the follow-up", started, ended)
	}
}

// A Step whose ctx is cancelled during it ends the run as Run does: the
// Result comes with ctx's error, and the run is over.
func TestStepCancelled(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	set := settings(t)
	obs := &runCounter{}
	set.Observers = []agent.Observer{obs}
	set.OnStepStart = func(_ context.Context, n int) {
		if n == 1 {
			scancel()
		}
	}
	a, err := agent.New("Open "+env.URL("/agent-form.html")+" and sign up.", scripted.New(formScript()), s, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := a.Step(sctx); err != nil || res != nil {
		t.Fatalf("step 0: %v %+v", err, res)
	}
	item, res, err := a.Step(sctx)
	if !errors.Is(err, context.Canceled) || res == nil || item.Step != 1 {
		t.Fatalf("cancelled step: %v %+v %+v", err, res, item)
	}
	if _, ended := obs.counts(); ended != 1 || !errors.Is(obs.lastErr, context.Canceled) {
		t.Fatalf("RunEnded %d times, with %v", ended, obs.lastErr)
	}
	if _, _, err := a.Step(ctx); !errors.Is(err, agent.ErrRunEnded) {
		t.Fatalf("Step after the cancelled run: %v", err)
	}
}
