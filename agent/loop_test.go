package agent_test

// Loop-logic tests: the agent over agenttest's fake browser, no Chromium.
// The end-to-end paths stay in agent_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

const (
	formURL  = "https://form.test/signup"
	planURL  = "https://form.test/plan"
	helpURL  = "https://help.test/"
	loginURL = "https://api.test/login"
	doneURL  = "https://api.test/connected"
)

// formSite is the fake counterpart of testdata/agent-form.html and
// agent-form2.html, with a link that opens a tab and a button that opens a
// dialog.
func formSite() []agenttest.Page {
	return []agenttest.Page{{
		URL:   formURL,
		Title: "Agent form: contact",
		Text:  "Sign up (1 of 2)",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "name": "fullname", "placeholder": "Full name"}},
			{Index: 2, Tag: "input", Attrs: map[string]string{"type": "text", "name": "email", "placeholder": "Email address"}},
			{Index: 3, Attrs: map[string]string{"type": "submit"}, Text: "Next", Href: planURL},
			{Index: 4, Attrs: map[string]string{"id": "noop"}, Text: "Nothing"},
			{Index: 5, Tag: "a", Text: "Help", NewTab: helpURL},
			{Index: 6, Text: "Delete", Dialog: "Delete everything?"},
		},
	}, {
		URL:   planURL,
		Title: "Agent form: plan",
		Text:  "Sign up (2 of 2)",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "select", Attrs: map[string]string{"name": "plan"}, Options: []string{"Basic", "Pro"}},
			{Index: 2, Attrs: map[string]string{"type": "submit"}, Text: "Finish"},
		},
	}, {URL: helpURL, Title: "Help", Text: "How to sign up"}}
}

// loginSite is the fake counterpart of testdata/agent-login.html.
func loginSite() []agenttest.Page {
	return []agenttest.Page{{
		URL:   loginURL,
		Title: "Agent login",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "id": "key", "placeholder": "API key"}},
			{Index: 2, Text: "Connect", Href: doneURL},
		},
	}, {URL: doneURL, Title: "Connected", Text: "Key accepted"}}
}

// newAgent makes an agent for task over b; the task names no URL, so step 0
// is the first model step unless the test says otherwise.
func newAgent(t *testing.T, task string, model llm.Model, b agent.Browser, set agent.Settings) *agent.Agent {
	t.Helper()
	a, err := agent.New(task, model, b, set)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run runs a and fails the test if the script did not go as written (a
// label not on the page, a wait that never ended).
func run(t *testing.T, a *agent.Agent, model *scripted.Model) *agent.Result {
	t.Helper()
	res := runAgent(t, a)
	if errs := model.Errors(); len(errs) > 0 {
		t.Fatalf("the script failed: %v", errs)
	}
	return res
}

// kinds lists the kinds of events, in order.
func kinds(evs []agenttest.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// After MaxFailures failed steps the model gets one step offering only
// done: in both forms the reply schema it receives has done alone, not
// Loose (constrained decoding can only answer done), while the compact
// form's system prompt, with its action list, stays the run's.
func TestLoopFailuresThenForcedDone(t *testing.T) {
	for _, form := range []agent.ActionSchema{agent.ActionSchemaCompact, agent.ActionSchemaFull} {
		t.Run(string(form), func(t *testing.T) { testForcedDone(t, form) })
	}
}

func testForcedDone(t *testing.T, form agent.ActionSchema) {
	b := agenttest.New(t, formSite()...)
	var steps []scripted.Step
	for range 5 {
		steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "could not find the button", "success": false}})
	model := scripted.New(steps)
	set := settings(t)
	set.ActionSchema = form
	a := newAgent(t, "Sign up", model, b, set)
	res := run(t, a, model)
	if !res.Done || res.Success || res.FinalText != "could not find the button" {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model calls, want 6", len(reqs))
	}
	for i := 1; i < 5; i++ {
		if !strings.Contains(userText(reqs[i]), "is not in the current page state") {
			t.Fatalf("request %d does not report the missing element:\n%s", i, userText(reqs[i]))
		}
	}
	last := reqs[5]
	if !strings.Contains(userText(last), "You failed 5 times in a row") {
		t.Fatalf("forced-done message missing:\n%s", userText(last))
	}
	var sch map[string]any
	if err := json.Unmarshal(last.Schema.JSON, &sch); err != nil {
		t.Fatal(err)
	}
	items := sch["properties"].(map[string]any)["action"].(map[string]any)["items"].(map[string]any)
	alts, _ := items["anyOf"].([]any)
	if len(alts) != 1 || last.Schema.Loose {
		t.Fatalf("forced step offers %d actions (loose %v): %s", len(alts), last.Schema.Loose, last.Schema.JSON)
	}
	only, _ := alts[0].(map[string]any)["properties"].(map[string]any)
	if _, ok := only["done"]; !ok || len(only) != 1 {
		t.Fatalf("the forced step's only action is not done: %v", alts[0])
	}
	if form == agent.ActionSchemaCompact {
		if !reqs[4].Schema.Loose || last.Messages[0].TextContent() != reqs[4].Messages[0].TextContent() {
			t.Fatal("the compact run's schema was not loose before the forced step, or its system prompt changed on it")
		}
		if last.CacheKey == reqs[4].CacheKey {
			t.Fatal("the forced step's schema changed but its cache key did not")
		}
	}
	h := a.History()
	for _, it := range h.Items[:5] {
		if !it.Failed || it.Actions[0].Verdict != events.VerdictFailed {
			t.Fatalf("step %d should be a failure: %+v", it.Step, it)
		}
	}
	if n := len(b.Events(events.ClickElement.Name)); n != 5 {
		t.Fatalf("%d clicks dispatched, want 5", n)
	}
}

// mustSpec is a built-in action's spec.
func mustSpec(t *testing.T, name string) agent.ActionSpec {
	t.Helper()
	s, ok := agent.DefaultRegistry().Get(name)
	if !ok {
		t.Fatalf("no built-in %q", name)
	}
	return s
}

func TestLoopFailuresStopWhenForcedAnswerFails(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	var steps []scripted.Step
	for range 7 {
		steps = append(steps, scripted.Step{Action: "click", Params: map[string]any{"index": 987654}})
	}
	model := scripted.New(steps)
	set := settings(t)
	set.MaxFailures = 2
	res := run(t, newAgent(t, "Sign up", model, b, set), model)
	if res.Done || len(res.Errors) < 2 || !strings.Contains(res.Errors[len(res.Errors)-1], "too many consecutive failures") {
		t.Fatalf("result %+v", res)
	}
	// 2 failures, then the forced step (click is not offered: a parse error).
	if n := len(model.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	if !strings.Contains(res.Errors[len(res.Errors)-2], `"click" is not available this step; available: done`) {
		t.Fatalf("errors %q", res.Errors)
	}
	if n := len(b.Events(events.ClickElement.Name)); n != 2 {
		t.Fatalf("%d clicks dispatched, want 2 (the forced step's click must not run)", n)
	}
}

func TestLoopNudges(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	var steps []scripted.Step
	for range 8 {
		steps = append(steps, scripted.Step{Action: "click", Label: "Nothing"})
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "looped", "success": false}})
	model := scripted.New(steps)
	res := run(t, newAgent(t, "Sign up", model, b, settings(t)), model)
	if !res.Done {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if len(reqs) != 9 {
		t.Fatalf("%d model calls", len(reqs))
	}
	for i, r := range reqs {
		txt := userText(r)
		switch {
		case i < 5 && strings.Contains(txt, "LOOP"):
			t.Fatalf("request %d nudges too early:\n%s", i, txt)
		case i >= 5 && i < 8 && !strings.Contains(txt, "LOOP CHECK: you repeated the same action"):
			t.Fatalf("request %d lacks the first nudge", i)
		case i == 8 && !strings.Contains(txt, "LOOP WARNING"):
			t.Fatalf("request 8 lacks the second nudge:\n%s", txt)
		}
	}
	if !strings.Contains(userText(reqs[5]), "The page has not changed for 5 steps") {
		t.Fatalf("stagnation nudge missing:\n%s", userText(reqs[5]))
	}
	clicks := b.Events(events.ClickElement.Name)
	if len(clicks) != 8 || clicks[7].Payload.(events.ClickElementEvent).Index != 4 {
		t.Fatalf("nudges must not block: %d clicks ran", len(clicks))
	}
}

func TestLoopApprovalDenial(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "click", Label: "Next"},
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "a@b.c"}},
		}},
		{Action: "done", Params: map[string]any{"text": "blocked", "success": false}},
	})
	set := settings(t)
	var asked []agent.ApprovalRequest
	set.Approver = agent.ApproverFunc(func(ctx context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
		asked = append(asked, r)
		return agent.DenyRisks{agent.RiskSubmit: "clicks need a human"}.Approve(ctx, r)
	})
	a := newAgent(t, "Sign up", model, b, set)
	run(t, a, model)
	if got := kinds(b.Events()); !slices.Equal(got, []string{"BrowserStateRequest", "TypeText", "BrowserStateRequest"}) {
		t.Fatalf("the denied click ran or the batch went on: %v", got)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, "denied by approval policy: clicks need a human") || !strings.Contains(txt, "NOT run: 3 input") {
		t.Fatalf("denial not reported:\n%s", txt)
	}
	// input, click (denied), done
	if len(asked) != 3 || asked[1].Risk != agent.RiskSubmit || asked[1].Action != "click" || asked[1].URL != formURL || asked[1].Step != 0 {
		t.Fatalf("approver calls %+v", asked)
	}
	it := a.History().Items[0]
	if len(it.Actions) != 2 || it.Actions[1].Verdict != events.VerdictFailed || !strings.HasPrefix(it.Actions[1].Error, "denied by approval policy") {
		t.Fatalf("step 0 actions %+v", it.Actions)
	}
}

func TestLoopEmptyReplyTwice(t *testing.T) {
	for _, structured := range []bool{false, true} {
		t.Run(fmt.Sprint("structured=", structured), func(t *testing.T) {
			b := agenttest.New(t, formSite()...)
			model := &funcModel{fn: func(n int) (*llm.Response, error) {
				if n == 0 {
					return &llm.Response{Content: ""}, &llm.ReplyError{Provider: "test", Kind: llm.ErrEmptyReply}
				}
				return &llm.Response{Content: `{"thinking":"","evaluation_previous_goal":"","memory":"","next_goal":"","action":[]}`}, nil
			}}
			set := settings(t)
			if structured {
				set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`)
			}
			a := newAgent(t, "Sign up", model, b, set)
			res := runAgent(t, a)
			if !res.Done || res.Success || !strings.Contains(res.FinalText, "no action") || res.StructuredOutput != nil || res.Steps != 1 {
				t.Fatalf("result %+v", res)
			}
			if len(model.reqs) != 2 || !strings.Contains(model.reqs[1].Messages[len(model.reqs[1].Messages)-1].TextContent(), "no action") {
				t.Fatalf("the model was not asked again: %d calls", len(model.reqs))
			}
			if fin, ok := a.History().FinalResult(); !ok || fin.Success {
				t.Fatalf("history final %+v %v", fin, ok)
			}
			if got := kinds(b.Events()); !slices.Equal(got, []string{"BrowserStateRequest"}) {
				t.Fatalf("events %v", got)
			}
		})
	}
}

func TestLoopMalformedReply(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := &funcModel{fn: func(n int) (*llm.Response, error) {
		switch n {
		case 0:
			return &llm.Response{Content: `{"action": [{"click": {"index": 1}` /* cut */}, nil
		case 1:
			return &llm.Response{Content: `{"action": [{"fly": {}}]}`}, nil
		default:
			return &llm.Response{Content: "```json\n{\"action\": [{\"done\": {\"text\": \"ok\", \"success\": true}}]}\n```"}, nil
		}
	}}
	a := newAgent(t, "Sign up", model, b, settings(t))
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if txt := userText(model.reqs[1]); !strings.Contains(txt, "could not be used") || !strings.Contains(txt, "not a JSON object") {
		t.Fatalf("parse error not shown:\n%s", txt)
	}
	if txt := userText(model.reqs[2]); !strings.Contains(txt, `"fly" is not available`) {
		t.Fatalf("unknown action not shown:\n%s", txt)
	}
	h := a.History()
	if !h.Items[0].Failed || !h.Items[1].Failed || h.Items[2].Failed {
		t.Fatal("parse errors must count as failures")
	}
	if n := len(b.Events(events.ClickElement.Name)); n != 0 {
		t.Fatal("an action of a malformed reply ran")
	}
}

func TestLoopFollowUpTask(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"text": "first", "success": true}},
		{Action: "write_file", Params: map[string]any{"file_name": "notes.md", "content": "hello"}},
		{Action: "done", Params: map[string]any{"text": "second", "success": true}},
	})
	a := newAgent(t, "Open "+formURL, model, b, settings(t))
	if res := run(t, a, model); res.FinalText != "first" || res.Steps != 2 {
		t.Fatalf("first run %+v", res)
	}
	// A follow-up names a URL too: it is not opened.
	if err := a.AddTask("Now write notes about " + helpURL); err != nil {
		t.Fatal(err)
	}
	res := run(t, a, model)
	if res.FinalText != "second" || res.Steps != 2 {
		t.Fatalf("second run %+v", res)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, "<initial_user_request>") || !strings.Contains(txt, "<follow_up_user_request>\nNow write notes") || !strings.Contains(txt, "<step_1>") {
		t.Fatalf("follow-up message:\n%s", txt)
	}
	if !strings.Contains(userText(model.Requests()[2]), `<file name="notes.md"`) {
		t.Fatal("file not shown in agent_state")
	}
	if b, err := os.ReadFile(filepath.Join(a.RunDir(), "files", "notes.md")); err != nil || string(b) != "hello" {
		t.Fatalf("file on disk %q %v", b, err)
	}
	if got := a.History().Items; got[len(got)-1].Step != 3 {
		t.Fatalf("step numbers must continue: last %d", got[len(got)-1].Step)
	}
	nav := b.Events(events.NavigateToURL.Name)
	if len(nav) != 1 || nav[0].Payload.(events.NavigateToURLEvent).URL != formURL {
		t.Fatalf("navigations %+v: only the first task's URL is opened", nav)
	}
}

func TestLoopBudgetAndInitialActions(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	var steps []scripted.Step
	for i := range 4 {
		steps = append(steps, scripted.Step{Action: "write_file", Params: map[string]any{"file_name": "n.md", "content": fmt.Sprint(i)}})
	}
	model := scripted.New(steps)
	set := settings(t)
	set.MaxSteps = 4
	set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + planURL + `"}`)}}
	a := newAgent(t, "Note things down, starting at "+helpURL, model, b, set)
	res := run(t, a, model)
	if res.Done || len(res.Errors) == 0 || !strings.Contains(res.Errors[len(res.Errors)-1], "maximum number of steps") {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if !strings.Contains(userText(reqs[0]), "Current URL: "+planURL) {
		t.Fatal("initial action did not run before the first step")
	}
	if strings.Contains(userText(reqs[1]), "BUDGET WARNING") || !strings.Contains(userText(reqs[2]), "BUDGET WARNING: you have used 3 of 4 steps") {
		t.Fatal("budget warning at 75 %")
	}
	if !strings.Contains(userText(reqs[3]), "This is the last step of the budget") {
		t.Fatal("last-step message")
	}
	if res.Steps != 5 { // step 0 + 4
		t.Fatalf("steps %d", res.Steps)
	}
	// InitialActions replace the task's URL.
	nav := b.Events(events.NavigateToURL.Name)
	if len(nav) != 1 || nav[0].Payload.(events.NavigateToURLEvent).URL != planURL {
		t.Fatalf("navigations %+v", nav)
	}
	if r := a.History().Items[0].Actions[0]; r.Name != "navigate" || r.Verdict != events.VerdictNavigated || a.History().Items[0].Output != nil {
		t.Fatalf("step 0 %+v", r)
	}
}

func TestLoopDOMErrorShown(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	b.SetDOMError("DOM build failed: capture timed out; no element indexes are valid this step")
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "page unreadable", "success": false}}})
	a := newAgent(t, "read the page", model, b, settings(t))
	run(t, a, model)
	txt := userText(model.Requests()[0])
	if !strings.Contains(txt, "<browser_state_error>\nDOM build failed: capture timed out") || strings.Contains(txt, "[Start of page]") {
		t.Fatalf("DOM failure not shown as such:\n%s", txt)
	}
	if a.History().Items[0].State.DOMError == "" {
		t.Fatal("history lacks the DOM error")
	}
}

// An observation that fails is a failed step without a model call; the
// next step tells the model.
func TestLoopObservationError(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	b.Fail(events.BrowserStateRequest.Name, errors.New("target crashed"))
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "ok", "success": true}}})
	a := newAgent(t, "read the page", model, b, settings(t))
	res := run(t, a, model)
	if !res.Done || res.Steps != 2 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "step 0: could not observe the page") {
		t.Fatalf("result %+v", res)
	}
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	if it := a.History().Items[0]; !it.Failed || !strings.Contains(it.Error, "target crashed") {
		t.Fatalf("step 0 %+v", it)
	}
	if txt := userText(model.Requests()[0]); !strings.Contains(txt, "<step_0>\nERROR: could not observe the page") {
		t.Fatalf("the failed observation is not in the history:\n%s", txt)
	}
}

func TestLoopNotStarted(t *testing.T) {
	closed := agenttest.New(nil)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	unstarted := session.New(session.Profile{}) // never started: no browser is launched
	for name, b := range map[string]agent.Browser{"closed fake": closed, "unstarted session": unstarted} {
		var ended []error
		set := settings(t)
		set.Observers = []agent.Observer{endObserver(func(err error) { ended = append(ended, err) })}
		a := newAgent(t, "do something", scripted.New(nil), b, set)
		if _, err := a.Run(context.Background()); !errors.Is(err, agent.ErrNotStarted) {
			t.Fatalf("%s: run: %v", name, err)
		}
		if len(ended) != 1 || !errors.Is(ended[0], agent.ErrNotStarted) {
			t.Fatalf("%s: RunEnded got %v", name, ended)
		}
	}
	if _, err := agent.New("x", nil, closed, agent.Settings{}); !errors.Is(err, agent.ErrNoModel) {
		t.Fatal(err)
	}
	if _, err := agent.New("x", scripted.New(nil), nil, agent.Settings{}); !errors.Is(err, agent.ErrNoBrowser) {
		t.Fatal(err)
	}
	if _, err := agent.New(" ", scripted.New(nil), closed, agent.Settings{}); !errors.Is(err, agent.ErrSettings) {
		t.Fatal(err)
	}
}

type endObserver func(error)

func (endObserver) RunStarted(context.Context, agent.RunInfo)                {}
func (endObserver) StepStarted(context.Context, int)                         {}
func (endObserver) ModelCalled(context.Context, agent.ModelCall)             {}
func (endObserver) StepEnded(context.Context, agent.HistoryItem)             {}
func (f endObserver) RunEnded(_ context.Context, _ *agent.Result, err error) { f(err) }

func TestLoopBatchFences(t *testing.T) {
	t.Run("navigated", func(t *testing.T) {
		b := agenttest.New(t, formSite()...)
		model := scripted.New([]scripted.Step{
			{Actions: []scripted.Action{
				{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
				{Name: "click", Label: "Next"},
				{Name: "input", Label: "Email address", Params: map[string]any{"text": "late"}},
			}},
			{Actions: []scripted.Action{
				{Name: "navigate", Params: map[string]any{"url": formURL}},
				{Name: "click", Label: "Finish"},
			}},
			{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
		})
		a := newAgent(t, "Sign up", model, b, settings(t))
		run(t, a, model)
		reqs := model.Requests()
		txt := userText(reqs[1])
		if !strings.Contains(txt, "Batch stopped: action 2 (click) navigated to "+planURL) || !strings.Contains(txt, "NOT run: 3 input") ||
			!strings.Contains(txt, "Current URL: "+planURL) {
			t.Fatalf("navigation mid-batch:\n%s", txt)
		}
		if txt := userText(reqs[2]); !strings.Contains(txt, "Batch stopped: action 1 (navigate) changes the page, so it always ends the batch") {
			t.Fatalf("terminating fence:\n%s", txt)
		}
		h := a.History()
		if len(h.Items[0].Actions) != 2 || len(h.Items[1].Actions) != 1 {
			t.Fatalf("batches ran %d and %d actions", len(h.Items[0].Actions), len(h.Items[1].Actions))
		}
		if typed := b.Events(events.TypeText.Name); len(typed) != 1 || b.Events(events.ClickElement.Name)[0].Payload.(events.ClickElementEvent).Index != 3 {
			t.Fatalf("typed %d times; typing into the new page must never happen", len(typed))
		}
	})
	// The click reports no change and the page navigates just after it (a
	// late form submit): the fingerprint check before the next element
	// action stops the batch.
	t.Run("late navigation", func(t *testing.T) {
		b := agenttest.New(t, formSite()...)
		b.After(events.ClickElement.Name, func() { b.Navigate(planURL) })
		model := scripted.New([]scripted.Step{
			{Actions: []scripted.Action{
				{Name: "click", Label: "Nothing"},
				{Name: "input", Label: "Email address", Params: map[string]any{"text": "late"}},
			}},
			{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
		})
		a := newAgent(t, "Sign up", model, b, settings(t))
		run(t, a, model)
		if txt := userText(model.Requests()[1]); !strings.Contains(txt, "Batch stopped: the page navigated to "+planURL) || !strings.Contains(txt, "NOT run: 2 input") {
			t.Fatalf("late navigation:\n%s", txt)
		}
		if r := a.History().Items[0].Actions[0]; r.Verdict != events.VerdictNoChange || len(b.Events(events.TypeText.Name)) != 0 {
			t.Fatalf("click %+v; typed %d times", r, len(b.Events(events.TypeText.Name)))
		}
	})
}

func TestLoopMutationFence(t *testing.T) {
	// The fake counterpart of testdata/agent-rerender.html.
	profile := agenttest.Page{
		URL:   "https://app.test/profile",
		Title: "Agent rerender",
		Elements: []agenttest.Element{
			{Index: 1, Text: "Load profile", Rerender: true},
			{Index: 2, Tag: "input", Attrs: map[string]string{"type": "text", "placeholder": "Nickname"}},
			{Index: 3, Text: "Save"},
		},
	}
	for _, c := range []struct {
		name  string
		first string // the label of the batch's first click
		after func(*agenttest.Browser)
		cause string
	}{
		{name: "by the action", first: "Load profile", cause: "action 1 (click) re-rendered it"},
		{name: "on its own", first: "Save", after: func(b *agenttest.Browser) {
			// Save changes nothing; the page re-renders just after it.
			b.After(events.ClickElement.Name, b.Rerender)
		}, cause: "it re-rendered on its own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := agenttest.New(t, profile)
			if c.after != nil {
				c.after(b)
			}
			model := scripted.New([]scripted.Step{
				{Actions: []scripted.Action{
					{Name: "click", Label: c.first},
					{Name: "input", Label: "Nickname", Params: map[string]any{"text": "stale"}},
					{Name: "click", Label: "Save"},
				}},
				{Action: "done", Params: map[string]any{"text": "stopped", "success": false}},
			})
			a := newAgent(t, "Set the nickname", model, b, settings(t))
			if res := run(t, a, model); !res.Done {
				t.Fatalf("result %+v", res)
			}
			it := a.History().Items[0]
			if len(it.Actions) != 1 || it.Actions[0].Name != "click" || len(b.Events(events.TypeText.Name)) != 0 || len(b.Events(events.ClickElement.Name)) != 1 {
				t.Fatalf("batch ran %+v", it.Actions)
			}
			next := userText(model.Requests()[1])
			for _, want := range []string{
				"Batch stopped: the page changed since it was observed (" + c.cause,
				"element indexes may now point to different elements",
				"Ran: 1 click", "NOT run: 2 input", "3 click",
			} {
				if !strings.Contains(next, want) {
					t.Errorf("next message lacks %q:\n%s", want, next)
				}
			}
		})
	}
}

func TestLoopStepTimeout(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	b.Block(events.Wait.Name)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "wait", Params: map[string]any{"seconds": 30}},
			{Name: "click", Label: "Next"},
		}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := settings(t)
	// The input must run within the step on a loaded machine; the blocked
	// wait then holds the step until its deadline.
	set.StepTimeout = time.Second
	set.WaitBetweenActions = -1
	a := newAgent(t, "Sign up", model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v: the step after the timeout must run normally", res)
	}
	h := a.History()
	if !h.Items[0].Failed || !strings.Contains(h.Items[0].Error, "timed out") {
		t.Fatalf("step 0 should have timed out: %+v", h.Items[0])
	}
	next := userText(model.Requests()[1])
	for _, want := range []string{"timed out after 1s", "actions that ran: 1 input (ok), 2 wait (interrupted", "not run: 3 click"} {
		if !strings.Contains(next, want) {
			t.Errorf("next message lacks %q:\n%s", want, next)
		}
	}
	typed := b.Events(events.TypeText.Name)
	if len(typed) != 1 || typed[0].Payload.(events.TypeTextEvent).Text != "Ada" || typed[0].Err != nil {
		t.Fatalf("the input that ran before the timeout: %+v", typed)
	}
	// The step returns at its deadline; the blocked handler records its
	// error when it sees the cancellation, which may come a moment later.
	var w []agenttest.Event
	for deadline := time.Now().Add(10 * time.Second); ; {
		w = b.Events(events.Wait.Name)
		if len(w) != 1 || w[0].Err != nil || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	if len(w) != 1 || !errors.Is(w[0].Err, context.DeadlineExceeded) {
		t.Fatalf("the wait %+v should have ended with the step's deadline", w)
	}
	if n := len(b.Events(events.ClickElement.Name)); n != 0 {
		t.Fatal("an action after the timeout ran")
	}
}

func TestLoopStructuredOutput(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"success": true, "data": map[string]any{"name": 5, "total": 3}}},
		{Action: "done", Params: map[string]any{"success": true, "data": map[string]any{"name": "Ada", "total": 3}}},
	})
	set := settings(t)
	set.OutputSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"total":{"type":"integer"}},"required":["name","total"],"additionalProperties":false}`)
	res := run(t, newAgent(t, "Report the sign-up", model, b, set), model)
	var out struct {
		Name  string `json:"name"`
		Total int    `json:"total"`
	}
	if err := json.Unmarshal(res.StructuredOutput, &out); err != nil || out.Name != "Ada" || out.Total != 3 || !res.Success {
		t.Fatalf("structured output %s (%v), result %+v", res.StructuredOutput, err, res)
	}
	if txt := userText(model.Requests()[1]); !strings.Contains(txt, "$.data.name: want string") {
		t.Fatalf("schema violation not reported:\n%s", txt)
	}
	if txt := userText(model.Requests()[0]); !strings.Contains(txt, "<expected_output>") {
		t.Fatal("output schema not shown to the model")
	}
}

// recorder collects every bus record's summary (what a trace writes).
type recorder struct {
	mu   sync.Mutex
	sums []string
}

func (r *recorder) Observe(rec bus.Record) {
	s := rec.Summary(0)
	if rec.Err != nil {
		s += " err=" + rec.Err.Error()
	}
	r.mu.Lock()
	r.sums = append(r.sums, rec.Kind+" "+s)
	r.mu.Unlock()
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.sums, "\n")
}

func TestLoopSensitiveData(t *testing.T) {
	const secret = "sk-live-7Hq2ZX9w"
	b := agenttest.New(t, loginSite()...)
	rec := &recorder{}
	obs := b.Bus().Observe(rec)
	model := scripted.New([]scripted.Step{
		{Action: "input", Label: "API key", Params: map[string]any{"text": "<secret>api_key</secret>"}},
		{Action: "click", Label: "Connect"},
		{WaitFor: "Key accepted", Action: "done", Params: map[string]any{"text": "connected", "success": true}},
	})
	set := settings(t)
	set.SensitiveDataByDomain = map[string]map[string]string{"api.test": {"api_key": secret}}
	a := newAgent(t, "Connect with the API key", model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v (%v)", res, model.Errors())
	}
	typed := b.Events(events.TypeText.Name)
	if len(typed) != 1 {
		t.Fatalf("typed %d times", len(typed))
	}
	if ev := typed[0].Payload.(events.TypeTextEvent); ev.Text != secret || !ev.Sensitive || ev.SensitiveKey != "api_key" {
		t.Fatalf("the secret was not typed as one: %+v", ev)
	}
	reqs := model.Requests()
	for i, r := range reqs {
		txt := userText(r)
		if strings.Contains(txt, secret) {
			t.Fatalf("request %d shows the secret:\n%s", i, txt)
		}
		if !strings.Contains(txt, "<secret>api_key</secret>") {
			t.Fatalf("request %d lacks the placeholder", i)
		}
	}
	// The next state shows the field's value (the secret): scrubbed.
	if txt := userText(reqs[1]); !strings.Contains(txt, "Typed the secret api_key") || !strings.Contains(txt, "placeholder=API key") ||
		!strings.Contains(txt, "value=<secret>api_key</secret>") {
		t.Fatalf("state after typing:\n%s", txt)
	}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := a.History().Save(path); err != nil {
		t.Fatal(err)
	}
	if h, _ := os.ReadFile(path); strings.Contains(string(h), secret) {
		t.Fatal("history file holds the secret")
	}
	obs.Stop()
	<-obs.Done() // every record buffered so far has been delivered
	if obs.Dropped() != 0 {
		t.Fatalf("%d records dropped", obs.Dropped())
	}
	if all := rec.all(); strings.Contains(all, secret) || !strings.Contains(all, "TypeText type <secret api_key>") {
		t.Fatalf("bus records leak the secret or miss TypeText:\n%s", all)
	}
}

func TestLoopSensitiveDataWrongDomain(t *testing.T) {
	b := agenttest.New(t, loginSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "input", Label: "API key", Params: map[string]any{"text": "<secret>api_key</secret>"}},
		{Action: "done", Params: map[string]any{"text": "refused", "success": false}},
	})
	set := settings(t)
	set.SensitiveDataByDomain = map[string]map[string]string{"bank.example": {"api_key": "s3cr3t-value"}}
	a := newAgent(t, "Connect", model, b, set)
	run(t, a, model)
	if n := len(b.Events(events.TypeText.Name)); n != 0 {
		t.Fatalf("secret typed on a domain it is not allowed on (%d TypeText)", n)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, `secret \"api_key\" is not available on api.test`) && !strings.Contains(txt, `secret "api_key" is not available on api.test`) {
		t.Fatalf("refusal not reported:\n%s", txt)
	}
	if strings.Contains(userText(model.Requests()[0]), "<sensitive_data>") {
		t.Fatal("placeholders offered on a page where they are not usable")
	}
	if it := a.History().Items[0]; !it.Failed || it.Actions[0].Verdict != events.VerdictFailed {
		t.Fatalf("refused input %+v", it)
	}
}

type colorParams struct {
	Color string `json:"color" description:"a color name" enum:"red,green"`
	Count int    `json:"count"`
	Note  string `json:"note,omitempty"`
}

func TestLoopCustomAction(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	reg := agent.DefaultRegistry()
	var got []colorParams
	var sawState bool
	err := agent.Register(reg, "paint", "Paint things", func(_ context.Context, ac *agent.ActionContext, p colorParams) (agent.ActionResult, error) {
		got = append(got, p)
		sawState = ac.BrowserState != nil && ac.BrowserState.URL == formURL && ac.Browser == agent.Browser(b)
		return agent.ActionResult{Text: fmt.Sprintf("painted %d %s", p.Count, p.Color)}, nil
	}, agent.WithRisk(agent.RiskInput))
	if err != nil {
		t.Fatal(err)
	}
	onlyElsewhere := func(context.Context, *agent.ActionContext, colorParams) (agent.ActionResult, error) {
		t.Error("domain-filtered action ran")
		return agent.ActionResult{}, nil
	}
	if err := agent.Register(reg, "elsewhere", "only on example.org", onlyElsewhere, agent.OnDomains("example.org")); err != nil {
		t.Fatal(err)
	}
	model := scripted.New([]scripted.Step{
		{Action: "paint", Params: map[string]any{"color": "purple", "count": 2}}, // enum violation: parse error
		{Action: "paint", Params: map[string]any{"color": "green", "count": 3}},
		{Action: "done", Params: map[string]any{"text": "painted", "success": true}},
	})
	set := settings(t)
	set.Tools = reg
	res := run(t, newAgent(t, "Paint", model, b, set), model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if len(got) != 1 || got[0] != (colorParams{Color: "green", Count: 3}) || !sawState {
		t.Fatalf("custom action got %+v (state %v)", got, sawState)
	}
	reqs := model.Requests()
	// The error quotes the action's signature so that the model can fix
	// its call.
	if txt := userText(reqs[1]); !strings.Contains(txt, "parameters do not fit") || !strings.Contains(txt, "purple") ||
		!strings.Contains(txt, "its parameters are paint{color: red|green (a color name), count: int, note?}") {
		t.Fatalf("enum violation not reported:\n%s", txt)
	}
	// The action is listed once, in the system prompt; the action of
	// another domain nowhere.
	sys, txt := reqs[0].Messages[0].TextContent(), userText(reqs[0])
	if !strings.Contains(sys, "\npaint{color: red|green (a color name), count: int, note?}: Paint things\n") || strings.Contains(sys+txt, "elsewhere") || strings.Contains(txt, "paint") {
		t.Fatalf("offered actions wrong:\n%s\n%s", sys, txt)
	}
	if txt := userText(reqs[2]); !strings.Contains(txt, "painted 3 green") {
		t.Fatalf("custom result not shown:\n%s", txt)
	}
}

// A failed action's evidence reaches the model: the error, and what the
// action still did to the page.
func TestLoopFailedActionEvidence(t *testing.T) {
	detached := errors.New("the element was detached during the click")
	b := agenttest.New(t, append([]agenttest.Page{{
		URL:   "https://app.test/list",
		Title: "List",
		Elements: []agenttest.Element{
			{Index: 1, Text: "Refresh", Rerender: true, Fail: detached},
			{Index: 2, Text: "Docs", NewTab: helpURL, Fail: detached},
			{Index: 3, Text: "Open", Href: formURL, Fail: detached},
		},
	}}, formSite()...)...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Refresh"},
		{Action: "click", Params: map[string]any{"index": 99}},
		{Action: "click", Label: "Docs"},
		{Action: "click", Label: "Open"},
		{Action: "done", Params: map[string]any{"text": "gave up", "success": false}},
	})
	a := newAgent(t, "Open the list", model, b, settings(t))
	run(t, a, model)
	reqs := model.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model calls", len(reqs))
	}
	for i, want := range []string{
		"Action 1/1 click {\"index\":1}: ERROR: the element was detached during the click (the page changed nevertheless)\n",
		"Action 1/1 click {\"index\":99}: ERROR: element index 99 is not in the current page state (3 indexed elements); the page may have changed, request the browser state again\n",
		"Action 1/1 click {\"index\":2}: ERROR: the element was detached during the click (a new tab opened)\n",
		"Action 1/1 click {\"index\":3}: ERROR: the element was detached during the click (the page is now " + formURL + ")\n",
	} {
		if txt := userText(reqs[i+1]); !strings.Contains(txt, want) {
			t.Errorf("request %d lacks %q:\n%s", i+1, want, txt)
		}
	}
	h := a.History()
	for i, changed := range []bool{true, false, false, true} {
		r := h.Items[i].Actions[0]
		o := r.Result.Outcome
		if r.Verdict != events.VerdictFailed || r.Error == "" || !h.Items[i].Failed || o == nil || o.Verdict != events.VerdictFailed {
			t.Fatalf("step %d record %+v", i, r)
		}
		if o.Before.URL == "" || o.After.URL == "" || (o.Before.Fingerprint != o.After.Fingerprint) != changed {
			t.Errorf("step %d evidence %+v -> %+v", i, o.Before, o.After)
		}
	}
	// A failed click does not follow the tab it opened.
	if n := len(b.Events(events.SwitchTab.Name)); n != 0 {
		t.Fatalf("%d tab switches", n)
	}
}

// A click that opens a tab: the agent follows it and stops the batch.
func TestLoopNewTabFollowed(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	first := b.FocusedTab()
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Help"}, {Name: "click", Label: "Nothing"}}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a := newAgent(t, "Get help", model, b, settings(t))
	run(t, a, model)
	sw := b.Events(events.SwitchTab.Name)
	if len(sw) != 1 || sw[0].Payload.(events.SwitchTabEvent).TargetID == first || b.FocusedTab() == first {
		t.Fatalf("the new tab was not followed: %+v", sw)
	}
	r := a.History().Items[0].Actions[0]
	if r.Verdict != events.VerdictNewTab || !strings.Contains(r.Result.Text, "Switched to the new tab") || !strings.Contains(r.Result.Text, helpURL) {
		t.Fatalf("click %+v", r)
	}
	txt := userText(model.Requests()[1])
	if !strings.Contains(txt, "Batch stopped: action 1 (click) opened a new tab") || !strings.Contains(txt, "Current URL: "+helpURL) {
		t.Fatalf("next message:\n%s", txt)
	}
	if n := len(b.Events(events.ClickElement.Name)); n != 1 {
		t.Fatalf("%d clicks: the second was chosen on the old tab", n)
	}
}

// A click that opens a dialog: the verdict says so and the next state
// tells what was answered.
func TestLoopDialog(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Delete"},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a := newAgent(t, "Delete", model, b, settings(t))
	run(t, a, model)
	if r := a.History().Items[0].Actions[0]; r.Verdict != events.VerdictDialog || !strings.Contains(r.Result.Text, "dialog (a JavaScript alert opened)") {
		t.Fatalf("click %+v", r)
	}
	if txt := userText(model.Requests()[1]); !strings.Contains(txt, `A JavaScript alert dialog was accepted for you: "Delete everything?"`) {
		t.Fatalf("dialog not shown:\n%s", txt)
	}
}

// Requests the URL policy refused reach the model once, in the next
// observation, and the step's record keeps them.
func TestLoopBlockedRequests(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	b.AddBlocked(
		events.BlockedRequests{Host: "tracker.example", Count: 3, Types: []string{"script", "fetch"}},
		events.BlockedRequests{Host: "evil.test", Count: 1, Types: []string{"websocket"}},
	)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Nothing"},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a := newAgent(t, "Sign up", model, b, settings(t))
	run(t, a, model)
	const line = "Blocked since the last step (refused by the URL policy; do not retry them): 3 requests to tracker.example (script, fetch); 1 request to evil.test (websocket)\n"
	if txt := userText(model.Requests()[0]); !strings.Contains(txt, line) {
		t.Fatalf("blocked line not shown:\n%s", txt)
	}
	if txt := userText(model.Requests()[1]); strings.Contains(txt, "Blocked since") {
		t.Fatalf("the next step repeats the blocked line:\n%s", txt)
	}
	items := a.History().Items
	if got := items[0].State.Blocked; len(got) != 2 || got[0].Host != "tracker.example" || got[0].Count != 3 {
		t.Fatalf("step record Blocked %+v", got)
	}
	if got := items[1].State.Blocked; got != nil {
		t.Fatalf("second step record Blocked %+v", got)
	}
}

// obsLog records the Observer calls and the step callbacks, in order.
type obsLog struct {
	mu  sync.Mutex
	log []string
}

func (o *obsLog) add(format string, args ...any) {
	o.mu.Lock()
	o.log = append(o.log, fmt.Sprintf(format, args...))
	o.mu.Unlock()
}

func (o *obsLog) RunStarted(_ context.Context, r agent.RunInfo) {
	o.add("RunStarted %s %s", r.Task, r.Model)
}
func (o *obsLog) StepStarted(_ context.Context, step int) { o.add("StepStarted %d", step) }
func (o *obsLog) ModelCalled(_ context.Context, c agent.ModelCall) {
	o.add("ModelCalled %d %s err=%v", c.Step, c.Purpose, c.Err)
}
func (o *obsLog) StepEnded(_ context.Context, it agent.HistoryItem) {
	o.add("StepEnded %d %d actions", it.Step, len(it.Actions))
}
func (o *obsLog) RunEnded(_ context.Context, res *agent.Result, err error) {
	o.add("RunEnded done=%v steps=%d err=%v", res.Done, res.Steps, err)
}

func TestLoopObservers(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	extractor := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: "Sign up", Usage: llm.Usage{PromptTokens: 100000, CompletionTokens: 7}}, nil
	}}
	model := scripted.New([]scripted.Step{
		{Action: "extract", Params: map[string]any{"query": "heading"}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	o := &obsLog{}
	set := settings(t)
	set.ExtractModel = extractor
	set.Observers = []agent.Observer{o}
	set.OnStepStart = func(_ context.Context, n int) { o.add("OnStepStart %d", n) }
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) { o.add("OnStepEnd %d", it.Step) }
	a := newAgent(t, "Read the heading", model, b, set)
	res := run(t, a, model)
	// The extraction model's tokens count in the step and the run.
	if u := a.History().Items[0].Usage; u.PromptTokens < 100000 || u.CompletionTokens < 7 {
		t.Errorf("step 0 usage %+v leaves out the extraction call", u)
	}
	if res.Usage.PromptTokens < 100000 {
		t.Errorf("run usage %+v leaves out the extraction call", res.Usage)
	}
	want := []string{
		"RunStarted Read the heading scripted",
		"StepStarted 0", "OnStepStart 0",
		"ModelCalled 0 step err=<nil>", "ModelCalled 0 extract err=<nil>",
		"StepEnded 0 1 actions", "OnStepEnd 0",
		"StepStarted 1", "OnStepStart 1",
		"ModelCalled 1 step err=<nil>",
		"StepEnded 1 1 actions", "OnStepEnd 1",
		"RunEnded done=true steps=2 err=<nil>",
	}
	if !slices.Equal(o.log, want) {
		t.Fatalf("observer calls:\n%s\nwant:\n%s", strings.Join(o.log, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoopWaitBetweenActions(t *testing.T) {
	// Five actions, four pauses: "no pause" is told from the default by the
	// sum of the gaps, which a loaded machine does not stretch by 400 ms.
	const pauses = 4
	for _, c := range []struct {
		wait     time.Duration
		min, max time.Duration
	}{
		{0, pauses * agent.DefaultWaitBetweenActions, time.Hour},
		{150 * time.Millisecond, pauses * 150 * time.Millisecond, time.Hour},
		{-1, 0, pauses * agent.DefaultWaitBetweenActions},
	} {
		t.Run(fmt.Sprint(c.wait), func(t *testing.T) {
			b := agenttest.New(t, formSite()...)
			var batch []scripted.Action
			for range pauses + 1 {
				batch = append(batch, scripted.Action{Name: "scroll", Params: map[string]any{"down": true}})
			}
			model := scripted.New([]scripted.Step{{Actions: batch}, {Action: "done", Params: map[string]any{"text": "ok", "success": true}}})
			set := settings(t)
			set.WaitBetweenActions = c.wait
			// The approver runs just before each action: the time from its
			// first to its last call holds the pauses (and four actions,
			// which the fake runs in microseconds).
			var at []time.Time
			set.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Decision, error) {
				at = append(at, time.Now())
				return agent.Decision{Allow: true}, nil
			})
			run(t, newAgent(t, "Scroll down", model, b, set), model)
			if len(at) != pauses+2 || len(b.Events(events.Scroll.Name)) != pauses+1 {
				t.Fatalf("%d approvals, %d scrolls", len(at), len(b.Events(events.Scroll.Name)))
			}
			if d := at[pauses].Sub(at[0]); d < c.min || d >= c.max {
				t.Fatalf("%d pauses took %s, want [%s, %s)", pauses, d, c.min, c.max)
			}
		})
	}
}

// evaluate and extract work through events.Evaluate and events.PageText.
func TestLoopEvaluateAndExtract(t *testing.T) {
	site := formSite()
	site[0].Eval = func(code string) (string, error) {
		switch code {
		case "document.querySelectorAll('input').length * 10":
			return "20", nil
		case "document.body.innerHTML":
			return strings.Repeat("x", 3000), nil
		}
		return "", errors.New("ReferenceError: nope is not defined")
	}
	b := agenttest.New(t, site...)
	extractor := &funcModel{fn: func(int) (*llm.Response, error) {
		return &llm.Response{Content: "The heading says Sign up"}, nil
	}}
	model := scripted.New([]scripted.Step{
		{Action: "evaluate", Params: map[string]any{"code": "document.querySelectorAll('input').length * 10"}},
		{Action: "evaluate", Params: map[string]any{"code": "nope.nope"}},
		{Action: "evaluate", Params: map[string]any{"code": "document.body.innerHTML"}},
		{Action: "extract", Params: map[string]any{"query": "what does the heading say?"}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := settings(t)
	set.ExtractModel = extractor
	a := newAgent(t, "Count the inputs", model, b, set)
	run(t, a, model)
	reqs := model.Requests()
	if txt := userText(reqs[1]); !strings.Contains(txt, "Evaluated: no_change. Result: 20") {
		t.Fatalf("evaluate result:\n%s", txt)
	}
	if txt := userText(reqs[2]); !strings.Contains(txt, "ERROR: ReferenceError: nope is not defined") {
		t.Fatalf("evaluate error:\n%s", txt)
	}
	if r := a.History().Items[1].Actions[0]; r.Verdict != events.VerdictFailed || r.Result.Outcome == nil {
		t.Fatalf("failed evaluate %+v", r)
	}
	if txt := userText(reqs[3]); !strings.Contains(txt, "Result: 3000 characters (in read_state)") || !strings.Contains(txt, "<read_state>\nevaluate:\nxxx") {
		t.Fatalf("long evaluate result:\n%s", txt)
	}
	if txt := userText(reqs[4]); !strings.Contains(txt, "<read_state>") || !strings.Contains(txt, "The heading says Sign up") || strings.Contains(txt, "xxxxxxxx") {
		t.Fatalf("extract result:\n%s", txt)
	}
	ev := b.Events(events.Evaluate.Name)
	if len(ev) != 3 || ev[0].Payload.(events.EvaluateEvent).MaxResultBytes != agent.DefaultEvaluateResultCap {
		t.Fatalf("evaluate events %+v", ev)
	}
	if n := len(b.Events(events.PageText.Name)); n != 1 {
		t.Fatalf("%d PageText events", n)
	}
	if txt := userText(extractor.reqs[0]); !strings.Contains(txt, "Sign up (1 of 2)") || !strings.Contains(txt, "<url>"+formURL+"</url>") {
		t.Fatalf("extraction model did not get the page text:\n%s", txt)
	}
}

// A browser that is gone ends the run before the next step, with a typed
// error in the Result; no model call is wasted on it.
func TestLoopBrowserGoneEndsTheRun(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Nothing"}}},
		{Action: "done", Params: map[string]any{"text": "never", "success": true}},
	})
	b.After(events.ClickElement.Name, func() { b.Gone("the browser process (pid 42) exited") })
	a := newAgent(t, "Sign up", model, b, settings(t))
	start := time.Now()
	res, err := a.Run(context.Background())
	if !errors.Is(err, events.ErrBrowserGone) || !errors.Is(res.Err, events.ErrBrowserGone) {
		t.Fatalf("run: err %v, Result.Err %v; want ErrBrowserGone", err, res.Err)
	}
	if res.Done || len(model.Requests()) != 1 || !strings.Contains(strings.Join(res.Errors, "\n"), "pid 42") {
		t.Fatalf("result %+v after %d model calls", res, len(model.Requests()))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the run took %s to end on a gone browser", d)
	}
}

// A dropped connection that is restored is waited for: no observation is
// made while it is down, the next step observes afresh, and the run
// completes.
func TestLoopWaitsForAReconnect(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Nothing"}}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	var down atomic.Bool
	var observedWhileDown atomic.Int32
	if _, err := bus.Handle(b.Bus(), events.BrowserStateRequest, "down-check", func(context.Context, events.BrowserStateRequestEvent) (events.BrowserState, error) {
		if down.Load() {
			observedWhileDown.Add(1)
		}
		return events.BrowserState{}, nil
	}, bus.First(), bus.Guard()); err != nil {
		t.Fatal(err)
	}
	var reconnect *time.Timer
	b.After(events.ClickElement.Name, func() {
		down.Store(true)
		b.Disconnect()
		// The browser comes back a little later, as a websocket restored
		// by the crash watchdog would.
		reconnect = time.AfterFunc(150*time.Millisecond, func() {
			down.Store(false)
			b.Reconnect()
		})
	})
	a := newAgent(t, "Sign up", model, b, settings(t))
	res := run(t, a, model)
	if !res.Done || !res.Success || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if reconnect == nil {
		t.Fatal("the click did not run")
	}
	if n := len(b.Events(events.BrowserStateRequest.Name)); n != 2 || observedWhileDown.Load() != 0 {
		t.Fatalf("%d observations (%d while the connection was down), want 2 and 0", n, observedWhileDown.Load())
	}
}

// A connection that is not back within ReconnectWait ends the run.
func TestLoopReconnectWaitIsBounded(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Nothing"}}},
		{Action: "done", Params: map[string]any{"text": "never", "success": true}},
	})
	b.After(events.ClickElement.Name, b.Disconnect)
	set := settings(t)
	set.ReconnectWait = 200 * time.Millisecond
	a := newAgent(t, "Sign up", model, b, set)
	res, err := a.Run(context.Background())
	if !errors.Is(err, events.ErrBrowserGone) || !strings.Contains(err.Error(), "not back within 200ms") {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
}

// A form sent with GET puts a typed secret in the next URL, encoded: the
// history (state, evidence) and the approver see the placeholder.
func TestSecretInURLIsScrubbedFromHistory(t *testing.T) {
	const secret = "ada+1@secret.example"
	next := "https://form.test/sent?email=" + url.QueryEscape(secret)
	b := agenttest.New(t, agenttest.Page{
		URL: "https://form.test/", Title: "Form",
		Elements: []agenttest.Element{{Index: 1, Attrs: map[string]string{"type": "submit"}, Text: "Send", Href: next}},
	}, agenttest.Page{URL: next, Title: "Sent " + secret})
	model := scripted.New([]scripted.Step{
		{Action: "click", Params: map[string]any{"index": 1}},
		{Action: "click", Params: map[string]any{"index": 1}},
		{Action: "done", Params: map[string]any{"text": "sent", "success": true}},
	})
	set := settings(t)
	set.SensitiveData = map[string]string{"mail": secret}
	var seen []string
	set.Approver = agent.ApproverFunc(func(_ context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
		seen = append(seen, r.URL)
		return agent.Decision{Allow: true}, nil
	})
	a := newAgent(t, "Send the form", model, b, set)
	run(t, a, model)
	h, err := json.Marshal(a.History())
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{secret, url.QueryEscape(secret)} {
		if strings.Contains(string(h), leak) || strings.Contains(strings.Join(seen, " "), leak) {
			t.Fatalf("%q leaked:\nhistory %s\napprover saw %v", leak, h, seen)
		}
	}
	if ph, _ := json.Marshal("email=<secret>mail</secret>"); !strings.Contains(string(h), strings.Trim(string(ph), `"`)) {
		t.Fatalf("no placeholder in the history: %s", h)
	}
}

// stallFirst is a custom Model that knows nothing of attempt timeouts: its
// first call stalls until its context ends, the later ones are the script's.
type stallFirst struct {
	*scripted.Model
	calls atomic.Int32
}

func (m *stallFirst) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if m.calls.Add(1) == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.Model.Generate(ctx, req)
}

// A custom model that does not bound its attempts still gets LLMTimeout,
// as a deadline on the call: the stalled call ends after it, not after the
// step's much longer timeout, and the next step runs.
func TestLLMTimeoutBoundsACustomModel(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := &stallFirst{Model: scripted.New([]scripted.Step{
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})}
	if llm.BoundsAttempts(model) {
		t.Fatal("the test model must not bound its attempts")
	}
	set := settings(t)
	set.LLMTimeout = 200 * time.Millisecond
	set.StepTimeout = 60 * time.Second
	start := time.Now()
	a := newAgent(t, "Sign up", model, b, set)
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	h := a.History()
	if len(h.Items) < 2 || !h.Items[0].Failed || !strings.Contains(h.Items[0].Error, "model call timed out after 200ms") {
		t.Fatalf("step 0 should have failed on LLMTimeout: %+v", h.Items)
	}
	// About LLMTimeout; 30 s is headroom for a loaded machine, still half
	// the step timeout the call would otherwise have waited for.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the stalled call took %s", d)
	}
	if n := model.calls.Load(); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// stallAlways is a custom extraction model that never answers before its
// context ends and knows nothing of attempt timeouts.
type stallAlways struct{ calls atomic.Int32 }

func (m *stallAlways) Name() string { return "custom:stall" }
func (m *stallAlways) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// LLMTimeout bounds an extract call of a custom model too: the action
// fails after it, with the deadline said, and the run goes on.
func TestLLMTimeoutBoundsACustomExtractModel(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "extract", Params: map[string]any{"query": "the heading"}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	extractor := &stallAlways{}
	set := settings(t)
	set.ExtractModel = extractor
	set.LLMTimeout = 200 * time.Millisecond
	set.StepTimeout = 60 * time.Second
	start := time.Now()
	a := newAgent(t, "Read the heading", model, b, set)
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	var failed bool
	for _, it := range a.History().Items {
		for _, r := range it.Actions {
			if r.Name == "extract" && strings.Contains(r.Error, "deadline exceeded") {
				failed = true
			}
		}
	}
	if !failed {
		t.Fatalf("the extract should have failed on LLMTimeout: %+v", a.History().Items)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the stalled extract took %s", d)
	}
	if n := extractor.calls.Load(); n != 1 {
		t.Errorf("%d extract calls, want 1", n)
	}
}
