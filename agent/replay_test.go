package agent_test

// Replay over agenttest's fake browser: a run is recorded with the scripted
// model on one version of a site and replayed on another.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
)

const (
	rpOrigin = "https://jobs.test"
	rpForm   = rpOrigin + "/apply/42"
	rpThanks = rpOrigin + "/thanks"
	rpMenu   = rpOrigin + "/apply/42?menu=open"
)

// rpSite is the application site. version: "v1" as recorded; "renamed"
// (ids, classes and element order changed); "menu" (Send moved behind a
// More button); "gone" (no Send at all); "inert" (Send does nothing).
func rpSite(origin, version string) []agenttest.Page {
	form := origin + "/apply/42"
	thanks := origin + "/thanks"
	name := agenttest.Element{Tag: "input", Attrs: map[string]string{"type": "text", "name": "fullname", "id": "fn", "placeholder": "Full name"}}
	email := agenttest.Element{Tag: "input", Attrs: map[string]string{"type": "email", "name": "email", "id": "em", "placeholder": "Email"}}
	send := agenttest.Element{Attrs: map[string]string{"type": "submit", "id": "send", "class": "btn primary"}, Text: "Send application", Href: thanks}
	help := agenttest.Element{Tag: "a", Attrs: map[string]string{"href": origin + "/help"}, Text: "Help"}
	els := []agenttest.Element{name, email, send, help}
	switch version {
	case "renamed":
		name.Attrs = map[string]string{"type": "text", "name": "fullname", "id": "x-1", "placeholder": "Full name", "class": "f-a"}
		email.Attrs = map[string]string{"type": "email", "name": "email", "id": "x-2", "placeholder": "Email", "class": "f-b"}
		send.Attrs = map[string]string{"type": "submit", "id": "btn-77", "class": "c-9"}
		els = []agenttest.Element{help, name, email, send}
	case "menu":
		more := agenttest.Element{Attrs: map[string]string{"aria-haspopup": "menu"}, Text: "More", Href: origin + "/apply/42?menu=open"}
		els = []agenttest.Element{name, email, more, help}
	case "gone":
		draft := agenttest.Element{Attrs: map[string]string{"type": "submit", "id": "draft"}, Text: "Save draft"}
		els = []agenttest.Element{name, email, draft, help}
	case "confirm":
		// Send now only re-renders the form; a Confirm button sends it.
		send.Href, send.Rerender = "", true
		confirm := agenttest.Element{Attrs: map[string]string{"type": "submit"}, Text: "Confirm", Href: thanks}
		els = []agenttest.Element{name, email, send, confirm, help}
	case "inert":
		send.Href = ""
		els = []agenttest.Element{name, email, send, help}
	}
	for i := range els {
		els[i].Index = 10 + i*3 // indexes differ from the recording's
		if version == "v1" {
			els[i].Index = i + 1
		}
	}
	pages := []agenttest.Page{
		{URL: form, Title: "Apply", Text: "Apply for Go engineer", Elements: els},
		{URL: thanks, Title: "Thanks", Text: "Application received"},
	}
	if version == "menu" {
		menu := []agenttest.Element{name, email, send, help}
		for i := range menu {
			menu[i].Index = 30 + i
		}
		pages = append(pages, agenttest.Page{URL: origin + "/apply/42?menu=open", Title: "Apply", Text: "Apply for Go engineer", Elements: menu})
	}
	return pages
}

// rpScript fills the form in one step, sends it, and reports.
func rpScript(nameValue string) []scripted.Step {
	return []scripted.Step{
		{NextGoal: "fill in the form and send it", Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": nameValue}},
			{Name: "input", Label: "Email", Params: map[string]any{"text": "ada@example.com"}},
		}},
		{Action: "click", Label: "Send application"},
		{Action: "done", Params: map[string]any{"text": "applied", "success": true}},
	}
}

// record runs the script on v1 and returns its history.
func record(t *testing.T, set agent.Settings, nameValue string) *agent.History {
	t.Helper()
	b := agenttest.New(t, rpSite(rpOrigin, "v1")...)
	model := scripted.New(rpScript(nameValue))
	set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpForm + `"}`)}}
	set.RunDir = t.TempDir()
	a := newAgent(t, "Apply for the Go engineer job at "+rpOrigin, model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("recording: %+v", res)
	}
	h := a.History()
	// Through the file, as the CLI reads it.
	p := filepath.Join(t.TempDir(), "history.json")
	if err := h.Save(p); err != nil {
		t.Fatal(err)
	}
	h, err := agent.LoadHistory(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func replayCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func replayOpts(t *testing.T) agent.ReplayOptions {
	return agent.ReplayOptions{Settings: agent.Settings{RunDir: t.TempDir()}, SettleTimeout: 500 * time.Millisecond}
}

func typed(b *agenttest.Browser) []string {
	var out []string
	for _, e := range b.Events(events.TypeText.Name) {
		out = append(out, e.Payload.(events.TypeTextEvent).Text)
	}
	return out
}

func clicks(b *agenttest.Browser) []int {
	var out []int
	for _, e := range b.Events(events.ClickElement.Name) {
		out = append(out, e.Payload.(events.ClickElementEvent).Target.Index)
	}
	return out
}

// The recording replays on a version with renamed ids and classes and
// reordered elements with no model: every element is found again (new
// indexes), every verdict agrees, the recorded done is replayed, and each
// replayed step is marked as such in the history with how its elements
// were found.
func TestReplayWithoutModel(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada Lovelace")
	b := agenttest.New(t, rpSite(rpOrigin, "renamed")...)
	rr, err := agent.Replay(replayCtx(t), b, h, replayOpts(t))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.ModelCalls != 0 || rr.Healed != 0 {
		t.Fatalf("model calls %d, healed %d; want 0, 0", rr.ModelCalls, rr.Healed)
	}
	if !rr.Result.Done || !rr.Result.Success || rr.Result.FinalText != "applied" {
		t.Fatalf("result: %+v", rr.Result)
	}
	if got := typed(b); strings.Join(got, "|") != "Ada Lovelace|ada@example.com" {
		t.Fatalf("typed %q", got)
	}
	if got := clicks(b); len(got) != 1 || got[0] != 19 {
		t.Fatalf("clicks %v, want [19] (Send application on the renamed page)", got)
	}
	// One entry per recorded action: navigate, input, input, click, done.
	var names []string
	for _, x := range rr.Actions {
		names = append(names, x.Name)
		if x.Skipped {
			t.Errorf("action %+v skipped", x)
		}
		if x.Name == "click" && (x.Match == nil || !x.Match.Unique || x.Expected != events.VerdictNavigated || x.Got != events.VerdictNavigated) {
			t.Errorf("click: %+v", x)
		}
		if x.Name == "done" && !x.Replayed {
			t.Errorf("done not marked replayed: %+v", x)
		}
	}
	if strings.Join(names, ",") != "navigate,input,input,click,done" {
		t.Fatalf("actions %v", names)
	}
	matched := 0
	for _, it := range rr.History.Items {
		if it.Source != agent.SourceReplay {
			t.Errorf("step %d source %q", it.Step, it.Source)
		}
		for _, a := range it.Actions {
			if a.Match != nil {
				matched++
				if a.Match.Strategy == "" || a.Element == nil {
					t.Errorf("step %d %s: match %+v element %+v", it.Step, a.Name, a.Match, a.Element)
				}
			}
		}
	}
	if matched != 3 {
		t.Fatalf("%d actions carry a match, want 3", matched)
	}
}

// Without a model, an element that is gone stops the replay with a
// *ReplayError naming the step, the action, the element and the
// candidates; the run's history names the step too.
func TestReplayNoModelMissingElement(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "gone")...)
	rr, err := agent.Replay(replayCtx(t), b, h, replayOpts(t))
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayNoMatch) || !errors.Is(err, agent.ErrReplay) {
		t.Fatalf("err %v, want a *ReplayError wrapping ErrReplayNoMatch", err)
	}
	if re.Step != 2 || re.Name != "click" || !strings.Contains(re.Element, "Send application") || len(re.Candidates) == 0 {
		t.Fatalf("replay error %+v", re)
	}
	if !strings.Contains(err.Error(), "step 2") || !strings.Contains(err.Error(), "candidates") {
		t.Fatalf("message %q", err)
	}
	if rr == nil || rr.Result == nil || !errors.Is(rr.Result.Err, agent.ErrReplayNoMatch) {
		t.Fatalf("result %+v", rr)
	}
	last := rr.History.Items[len(rr.History.Items)-1]
	if !strings.Contains(last.Error, "replay step 2") {
		t.Fatalf("last step's error %q", last.Error)
	}
	if len(clicks(b)) != 0 {
		t.Fatalf("clicked %v", clicks(b))
	}
}

// With a model, the step whose control moved into a menu is healed with
// exactly one model call (the model opens the menu), then the recorded
// click is retried and the replay goes on without the model.
func TestReplayHealsWithOneModelCall(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "menu")...)
	healer := scripted.New([]scripted.Step{{Action: "click", Label: "More"}})
	opt := replayOpts(t)
	opt.Model = healer
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.ModelCalls != 1 || rr.Healed != 1 || len(healer.Requests()) != 1 {
		t.Fatalf("model calls %d, healed %d, requests %d; want 1, 1, 1", rr.ModelCalls, rr.Healed, len(healer.Requests()))
	}
	if !rr.Result.Done || !rr.Result.Success {
		t.Fatalf("result %+v", rr.Result)
	}
	if n := len(images(healer.Requests()[0])); n != 1 {
		t.Errorf("the heal's request has %d screenshots, want 1", n)
	}
	screenshots := 0
	for _, it := range rr.History.Items {
		if it.State.ScreenshotPath != "" {
			screenshots++
		}
	}
	if screenshots != 1 {
		t.Errorf("%d steps took a screenshot, want 1 (the heal's)", screenshots)
	}
	prompt := userText(healer.Requests()[0])
	for _, want := range []string{"REPLAY REPAIR", "Send application", "element not found"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("heal prompt lacks %q", want)
		}
	}
	var sources []agent.StepSource
	for _, it := range rr.History.Items {
		sources = append(sources, it.Source)
	}
	want := []agent.StepSource{agent.SourceReplay, agent.SourceReplay, agent.SourceHeal, agent.SourceReplay, agent.SourceReplay}
	if len(sources) != len(want) {
		t.Fatalf("sources %v, want %v", sources, want)
	}
	for i := range want {
		if sources[i] != want[i] {
			t.Fatalf("sources %v, want %v", sources, want)
		}
	}
	// More (on the menu version), then Send application on the open menu.
	if got := clicks(b); len(got) != 2 || got[0] != 16 || got[1] != 32 {
		t.Fatalf("clicks %v", got)
	}
}

// A heal's model that calls done ends the run, but the replay did not
// reach the recording's end: that is an error naming the step.
func TestReplayHealDoneIsNotTheRecordings(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "gone")...)
	opt := replayOpts(t)
	opt.Model = scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "sent it", "success": true}}})
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	var re *agent.ReplayError
	if !errors.As(err, &re) || re.Step != 2 || !strings.Contains(err.Error(), "called done") {
		t.Fatalf("err %v", err)
	}
	if rr.ModelCalls != 1 || !rr.Result.Done {
		t.Fatalf("model calls %d, result %+v", rr.ModelCalls, rr.Result)
	}
}

// An outcome that differs (expected navigated, got changed) is healed:
// the model does what the step meant (Confirm), and since the page is
// already where the recorded click led (the next recorded step's
// precondition holds), the replay moves on without retrying the click.
func TestReplayHealsOutcome(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "confirm")...)
	healer := scripted.New([]scripted.Step{{Action: "click", Label: "Confirm"}})
	opt := replayOpts(t)
	opt.Model = healer
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.ModelCalls != 1 || rr.Healed != 1 || !rr.Result.Success {
		t.Fatalf("model calls %d, healed %d, result %+v", rr.ModelCalls, rr.Healed, rr.Result)
	}
	if !strings.Contains(userText(healer.Requests()[0]), "expected navigated, got changed") {
		t.Error("the heal's prompt does not say what went wrong")
	}
	// Send (changed, a failed step), then Confirm by the heal; Send is
	// not clicked again.
	if got := clicks(b); len(got) != 2 || got[0] != 16 || got[1] != 19 {
		t.Fatalf("clicks %v", got)
	}
	for _, x := range rr.Actions {
		if x.Name == "click" && (!x.Healed || x.Skipped || x.Got != events.VerdictChanged) {
			t.Errorf("click %+v: want healed, run, got changed", x)
		}
	}
	var failed []int
	for _, it := range rr.History.Items {
		if it.Failed {
			failed = append(failed, it.Step)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("failed steps %v, want the one whose outcome differed", failed)
	}
}

// A heal budget used up ends the replay with ErrReplayNeedsModel and the
// underlying reason.
func TestReplayHealBudget(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "gone")...)
	healer := scripted.New([]scripted.Step{{Action: "scroll"}, {Action: "scroll"}})
	opt := replayOpts(t)
	opt.Model = healer
	opt.MaxHealCalls = 2
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if !errors.Is(err, agent.ErrReplayNeedsModel) || !errors.Is(err, agent.ErrReplayNoMatch) {
		t.Fatalf("err %v", err)
	}
	if rr.ModelCalls != 2 {
		t.Fatalf("model calls %d, want 2", rr.ModelCalls)
	}
}

// An action whose verdict differs from the recording's (expected
// navigated, got no_change) fails its step; without a model the replay
// stops there.
func TestReplayOutcomeMismatch(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "inert")...)
	rr, err := agent.Replay(replayCtx(t), b, h, replayOpts(t))
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayOutcome) {
		t.Fatalf("err %v", err)
	}
	if re.Step != 2 || re.Name != "click" || !strings.Contains(err.Error(), "expected navigated, got no_change") {
		t.Fatalf("replay error %v", err)
	}
	for _, x := range rr.Actions {
		if x.Name == "click" && (x.Got != events.VerdictNoChange || x.Expected != events.VerdictNavigated) {
			t.Fatalf("click %+v", x)
		}
		if x.Name == "done" && (!x.Skipped || x.Why == "") {
			t.Fatalf("done %+v", x)
		}
	}
}

// Twin elements (same tag, name, attributes) leave only the position to
// choose by: the Approver is asked with the match; a denial fails the
// step as ambiguous, an approval runs it.
func TestReplayAmbiguousAsksApprover(t *testing.T) {
	twins := func() []agenttest.Page {
		return []agenttest.Page{{URL: rpForm, Title: "Jobs", Elements: []agenttest.Element{
			{Index: 1, Text: "Apply", Href: rpOrigin + "/a"},
			{Index: 2, Text: "Apply", Href: rpOrigin + "/b"},
		}}, {URL: rpOrigin + "/b", Title: "B"}, {URL: rpOrigin + "/a", Title: "A"}}
	}
	b := agenttest.New(t, twins()...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Params: map[string]any{"index": 2}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := agent.Settings{RunDir: t.TempDir(), InitialActions: []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpForm + `"}`)}}}
	a := newAgent(t, "apply to the second job", model, b, set)
	run(t, a, model)
	h := a.History()

	for _, allow := range []bool{false, true} {
		var (
			mu   sync.Mutex
			asks []agent.ApprovalRequest
		)
		opt := replayOpts(t)
		opt.Settings.Approver = agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
			if req.Action == "click" {
				// Asked once per click, with the match (not once more
				// without it when the click runs).
				mu.Lock()
				asks = append(asks, req)
				mu.Unlock()
				return agent.Decision{Allow: allow, Reason: "not sure"}, nil
			}
			return agent.Decision{Allow: true}, nil
		})
		b2 := agenttest.New(t, twins()...)
		_, err := agent.Replay(replayCtx(t), b2, h, opt)
		mu.Lock()
		n := len(asks)
		var req agent.ApprovalRequest
		if n > 0 {
			req = asks[0]
		}
		mu.Unlock()
		if n != 1 || req.Match == nil || !req.Match.Ambiguous || req.Match.Index != 2 || !strings.Contains(req.Note, "position") {
			t.Fatalf("allow=%v: asked %d times, %+v", allow, n, req)
		}
		if allow {
			if err != nil || len(clicks(b2)) != 1 || clicks(b2)[0] != 2 {
				t.Fatalf("allowed: err %v clicks %v", err, clicks(b2))
			}
		} else if !errors.Is(err, agent.ErrReplayAmbiguous) || !errors.Is(err, agent.ErrDenied) || len(clicks(b2)) != 0 {
			t.Fatalf("denied: err %v clicks %v", err, clicks(b2))
		}
	}
}

// Typed values are variables named from their fields; Vars overrides them
// by name, an unknown name is an error listing the known ones.
func TestReplayVariables(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	vars := agent.ReplayVariables(h)
	if len(vars) != 2 || vars[0].Name != "fullname" || vars[0].Value != "Ada" || vars[1].Name != "email" || vars[1].Value != "ada@example.com" {
		t.Fatalf("vars %+v", vars)
	}
	opt := replayOpts(t)
	opt.Vars = map[string]string{"emial": "x"}
	_, err := agent.Replay(replayCtx(t), agenttest.New(t, rpSite(rpOrigin, "v1")...), h, opt)
	if !errors.Is(err, agent.ErrReplayVars) || !strings.Contains(err.Error(), "emial") || !strings.Contains(err.Error(), "email, fullname") {
		t.Fatalf("unknown var: %v", err)
	}
	opt.Vars = map[string]string{"email": "grace@example.com"}
	b := agenttest.New(t, rpSite(rpOrigin, "renamed")...)
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := typed(b); strings.Join(got, "|") != "Ada|grace@example.com" {
		t.Fatalf("typed %q", got)
	}
	if rr.ModelCalls != 0 {
		t.Fatalf("model calls %d", rr.ModelCalls)
	}
}

// A <secret> placeholder stays a variable without a value: it is resolved
// from SensitiveData when the action runs and never reaches the history,
// and it cannot be set through Vars.
func TestReplaySecretsNeverStored(t *testing.T) {
	const secret = "hunter2-very-secret"
	set := agent.Settings{SensitiveData: map[string]string{"applicant_name": secret}}
	h := record(t, set, "<secret>applicant_name</secret>")
	raw, _ := json.Marshal(h)
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the recording holds the secret")
	}
	vars := agent.ReplayVariables(h)
	if len(vars) != 2 || !vars[0].Secret || vars[0].Name != "applicant_name" || vars[0].Value != "" {
		t.Fatalf("vars %+v", vars)
	}
	opt := replayOpts(t)
	opt.Vars = map[string]string{"applicant_name": "x"}
	if _, err := agent.Replay(replayCtx(t), agenttest.New(t, rpSite(rpOrigin, "v1")...), h, opt); !errors.Is(err, agent.ErrReplayVars) {
		t.Fatalf("secret through Vars: %v", err)
	}
	opt.Vars = nil
	opt.Settings.SensitiveData = map[string]string{"applicant_name": secret}
	b := agenttest.New(t, rpSite(rpOrigin, "renamed")...)
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := typed(b); len(got) != 2 || got[0] != secret {
		t.Fatalf("typed %q", got)
	}
	raw, _ = json.Marshal(rr.History)
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the replay's history holds the secret")
	}
	file, err := os.ReadFile(filepath.Join(opt.Settings.RunDir, "history.json"))
	if err != nil || bytes.Contains(file, []byte(secret)) {
		t.Fatalf("history.json: %v, holds the secret: %v", err, bytes.Contains(file, []byte(secret)))
	}
}

// Rebase moves the recording to another origin: the navigation goes
// there and the URL preconditions expect it.
func TestReplayRebase(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	const other = "http://127.0.0.1:9999"
	b := agenttest.New(t, rpSite(other, "renamed")...)
	opt := replayOpts(t)
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if !errors.Is(err, agent.ErrReplayNoMatch) || rr.Result.Success {
		// Without the rebase the navigation goes to the recorded origin,
		// which the fake does not serve: an empty page.
		t.Fatalf("without rebase: %v", err)
	}
	b = agenttest.New(t, rpSite(other, "renamed")...)
	opt = replayOpts(t)
	opt.Rebase = map[string]string{rpOrigin: other + "/"}
	rr, err = agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatal(err)
	}
	navs := b.Events(events.NavigateToURL.Name)
	if len(navs) != 1 || navs[0].Payload.(events.NavigateToURLEvent).URL != other+"/apply/42" {
		t.Fatalf("navigations %+v", navs)
	}
	if !rr.Result.Success {
		t.Fatalf("result %+v", rr.Result)
	}
}

// The dry run lists the steps, each element's cascade with the recorded
// values, the URL preconditions (rebased) and the variables.
func TestReplayPlanText(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	opt := agent.ReplayOptions{Rebase: map[string]string{rpOrigin: "http://localhost:8080"}, Vars: map[string]string{"email": "grace@example.com"}}
	p, err := agent.PlanReplay(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"Replay plan: 4 steps",
		"Step 0 (any page)",
		`navigate {"url":"http://localhost:8080/apply/42"}`,
		"Step 1 on http://localhost:8080/apply/42",
		`email = "grace@example.com"`,
		"[var fullname]",
		`match by role_name`,
		`"Send application"`,
		`match by attributes id="send"`,
		"Step 3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	if _, err := agent.PlanReplay(&agent.History{Task: "x"}, agent.ReplayOptions{}); !errors.Is(err, agent.ErrReplayEmpty) {
		t.Fatalf("empty history: %v", err)
	}
}

// extract needs a model: without one the replay stops at that step with
// ErrReplayNeedsModel, and the dry run warns.
func TestReplayExtractNeedsModel(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	// The recorded step 2 also asked a question about the page.
	it := &h.Items[2]
	it.Actions = append([]agent.ActionRecord{{Name: "extract", Params: json.RawMessage(`{"query":"the job's salary"}`), Result: agent.ActionResult{Text: "100k"}}}, it.Actions...)
	p, err := agent.PlanReplay(h, agent.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_ = p.WriteText(&buf)
	if !strings.Contains(buf.String(), "step 2: extract needs a model") {
		t.Fatalf("plan:\n%s", buf.String())
	}
	b := agenttest.New(t, rpSite(rpOrigin, "v1")...)
	_, err = agent.Replay(replayCtx(t), b, h, replayOpts(t))
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayNeedsModel) || re.Step != 2 || re.Name != "extract" {
		t.Fatalf("err %v", err)
	}
	// With Settings.ExtractModel the extract runs, and its call counts.
	b = agenttest.New(t, rpSite(rpOrigin, "v1")...)
	opt := replayOpts(t)
	em := &textModel{text: "100k"}
	opt.Settings.ExtractModel = em
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	if err != nil {
		t.Fatalf("with an extract model: %v", err)
	}
	if rr.ModelCalls != 1 || em.calls.Load() != 1 {
		t.Fatalf("model calls %d (extract model called %d times), want 1", rr.ModelCalls, em.calls.Load())
	}
}

// textModel answers every call with text.
type textModel struct {
	text  string
	calls atomic.Int64
}

func (m *textModel) Generate(context.Context, llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	return &llm.Response{Content: m.text}, nil
}

func (m *textModel) Name() string { return "text" }

// A recorded switch_tab names its tab by the page it showed: on replay the
// tab back to the form is found again and switched to.
func TestReplaySwitchTab(t *testing.T) {
	pages := func() []agenttest.Page {
		return []agenttest.Page{{URL: rpForm, Title: "Apply", Elements: []agenttest.Element{
			{Index: 1, Tag: "a", Text: "Salary guide", NewTab: rpOrigin + "/guide"},
		}}, {URL: rpOrigin + "/guide", Title: "Guide", Text: "Salaries"}}
	}
	b := agenttest.New(t, pages()...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Salary guide"},
		{Action: "switch_tab", Params: map[string]any{"tab_id": "0001"}},
		{Action: "done", Params: map[string]any{"text": "read", "success": true}},
	})
	set := agent.Settings{RunDir: t.TempDir(), InitialActions: []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpForm + `"}`)}}}
	a := newAgent(t, "read the salary guide", model, b, set)
	run(t, a, model)
	h := a.History()
	if h.Items[2].Actions[0].Name != "switch_tab" || h.Items[2].Actions[0].Error != "" {
		t.Fatalf("recording: %+v", h.Items[2].Actions)
	}
	b2 := agenttest.New(t, pages()...)
	rr, err := agent.Replay(replayCtx(t), b2, h, replayOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	sw := b2.Events(events.SwitchTab.Name)
	// The agent follows the new tab, then the replayed switch goes back.
	if len(sw) != 2 || sw[1].Payload.(events.SwitchTabEvent).TargetID != "tab-0001" || b2.FocusedTab() != "tab-0001" {
		t.Fatalf("switches %+v, focused %q", sw, b2.FocusedTab())
	}
	var p struct {
		TabID string `json:"tab_id"`
	}
	for _, it := range rr.History.Items {
		for _, x := range it.Actions {
			if x.Name == "switch_tab" {
				_ = json.Unmarshal(x.Params, &p)
			}
		}
	}
	if p.TabID != "tab-0001" {
		t.Fatalf("replayed switch_tab params name %q", p.TabID)
	}
}
