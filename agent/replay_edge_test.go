package agent_test

// Replay's edge cases: rebased absolute links, cancellation, secrets on
// the live page, a heal whose model fails, outcomes that differ mid-batch,
// actions recorded without their element, a heal that did the step before
// a navigation.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
)

// A link recorded with an absolute href on one origin is found on the
// rebased origin: its href is rebased with the URLs.
func TestReplayRebaseAbsoluteHref(t *testing.T) {
	site := func(origin string) []agenttest.Page {
		return []agenttest.Page{{URL: origin + "/jobs", Title: "Jobs", Elements: []agenttest.Element{
			{Index: 1, Tag: "a", Attrs: map[string]string{"href": origin + "/jobs/go"}, Text: "Go engineer", Href: origin + "/jobs/go"},
			{Index: 2, Tag: "a", Attrs: map[string]string{"href": origin + "/jobs/sre"}, Text: "SRE", Href: origin + "/jobs/sre"},
		}}, {URL: origin + "/jobs/go", Title: "Go"}, {URL: origin + "/jobs/sre", Title: "SRE"}}
	}
	const other = "http://127.0.0.1:9999"
	b := agenttest.New(t, site(rpOrigin)...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Label: "Go engineer"},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := agent.Settings{RunDir: t.TempDir(), InitialActions: []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpOrigin + `/jobs"}`)}}}
	a := newAgent(t, "open the go job", model, b, set)
	run(t, a, model)
	h := a.History()

	b2 := agenttest.New(t, site(other)...)
	opt := replayOpts(t)
	opt.Rebase = map[string]string{rpOrigin: other, "https://typo.test": other}
	rr, err := agent.Replay(replayCtx(t), b2, h, opt)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	for _, x := range rr.Actions {
		if x.Skipped {
			t.Errorf("%s skipped: %s", x.Name, x.Why)
		}
		if x.Name == "click" && (x.Match == nil || !x.Match.Unique || x.Got != events.VerdictNavigated) {
			t.Errorf("click %+v", x)
		}
	}
	if got := clicks(b2); len(got) != 1 || got[0] != 1 {
		t.Fatalf("clicks %v, want [1]", got)
	}
	p, err := agent.PlanReplay(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(p.Notes, "\n"); !strings.Contains(n, "rebase https://typo.test: no recorded URL") || strings.Contains(n, "rebase "+rpOrigin) {
		t.Fatalf("notes %q", n)
	}
	opt.Rebase = map[string]string{"jobs.test": other}
	if _, err := agent.PlanReplay(h, opt); !errors.Is(err, agent.ErrReplay) {
		t.Fatalf("a rebase key without a scheme: %v", err)
	}
}

// Cancelling the replay while a step's precondition is awaited returns
// the context's error, not a broken step, and asks no heal.
func TestReplayCancelDuringSettle(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "gone")...)
	ctx, cancel := context.WithCancel(replayCtx(t))
	defer cancel()
	opt := replayOpts(t)
	opt.SettleTimeout = 60 * time.Second
	opt.Model = scripted.New([]scripted.Step{{Action: "scroll"}})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Cancels once the step after the typing re-observed the page
		// twice: it is then waiting for the missing element.
		defer wg.Done()
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		n0 := -1
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			obs := len(b.Events(events.BrowserStateRequest.Name))
			if n0 < 0 && len(typed(b)) == 2 {
				n0 = obs
			}
			if n0 >= 0 && obs >= n0+3 {
				return
			}
		}
	}()
	rr, err := agent.Replay(ctx, b, h, opt)
	wg.Wait()
	if !errors.Is(err, context.Canceled) || errors.Is(err, agent.ErrReplay) {
		t.Fatalf("err %v, want context.Canceled and no replay failure", err)
	}
	if rr == nil || rr.ModelCalls != 0 {
		t.Fatalf("result %+v: a heal was asked on a cancelled run", rr)
	}
}

// A secret the live page shows never reaches the error, the result's
// errors, the candidates or the saved history.
func TestReplaySecretOnPageScrubbed(t *testing.T) {
	const secret = "hunter2-very-secret"
	h := record(t, agent.Settings{}, "Ada")
	pages := rpSite(rpOrigin, "gone")
	pages[0].Elements = append(pages[0].Elements, agenttest.Element{Index: 99, Attrs: map[string]string{"type": "submit"}, Text: secret})
	b := agenttest.New(t, pages...)
	opt := replayOpts(t)
	opt.Settings.SensitiveData = map[string]string{"pw": secret}
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayNoMatch) {
		t.Fatalf("err %v", err)
	}
	named := false
	for _, c := range re.Candidates {
		if strings.Contains(c.Name, secret) {
			t.Errorf("candidate %+v shows the secret", c)
		}
		named = named || strings.Contains(c.Name, "<secret>pw</secret>")
	}
	if !named {
		t.Errorf("candidates %+v: the secret's element is not among them (the test checks nothing)", re.Candidates)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the secret: %v", err)
	}
	for _, e := range rr.Result.Errors {
		if strings.Contains(e, secret) {
			t.Errorf("Result.Errors holds the secret: %s", e)
		}
	}
	p := filepath.Join(t.TempDir(), "h.json")
	if err := rr.History.Save(p); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(secret)) {
		t.Errorf("the saved history holds the secret")
	}
	// The step that stopped the replay is the replay's, not the model's.
	if last := rr.History.Items[len(rr.History.Items)-1]; last.Source != agent.SourceReplay {
		t.Errorf("halted step's source %q, want replay", last.Source)
	}
}

// failModel fails every call, as a model with a bad key does.
type failModel struct {
	mu sync.Mutex
	n  int
}

func (m *failModel) Generate(context.Context, llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.n++
	m.mu.Unlock()
	return nil, errors.New("401 unauthorized: bad api key")
}

func (m *failModel) Name() string { return "fail" }

func (m *failModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// A heal whose model call fails ends the replay at once, with the model's
// error and the step's own failure (ErrReplayNeedsModel and
// ErrReplayNoMatch), however many heal calls are allowed.
func TestReplayHealModelFails(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	for _, heals := range []int{0, 8} {
		b := agenttest.New(t, rpSite(rpOrigin, "gone")...)
		opt := replayOpts(t)
		fm := &failModel{}
		opt.Model = fm
		opt.MaxHealCalls = heals
		rr, err := agent.Replay(replayCtx(t), b, h, opt)
		var re *agent.ReplayError
		if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayNeedsModel) || !errors.Is(err, agent.ErrReplayNoMatch) || re.Step != 2 {
			t.Fatalf("heals %d: err %v", heals, err)
		}
		if !strings.Contains(err.Error(), "401 unauthorized") || !strings.Contains(err.Error(), "heal's model call failed") {
			t.Fatalf("heals %d: message %q", heals, err)
		}
		if fm.calls() != 1 || rr.ModelCalls != 1 {
			t.Fatalf("heals %d: model called %d times (counted %d), want 1", heals, fm.calls(), rr.ModelCalls)
		}
	}
}

// When an outcome differs mid-batch, the actions after it that ran are
// reported as run and never run again by the heal's retry.
func TestReplayMidBatchMismatch(t *testing.T) {
	site := func(rerender bool) []agenttest.Page {
		return []agenttest.Page{{URL: rpOrigin + "/f", Title: "F", Elements: []agenttest.Element{
			{Index: 1, Attrs: map[string]string{"type": "button", "id": "t"}, Text: "Toggle", Rerender: rerender},
		}}}
	}
	b := agenttest.New(t, site(true)...)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Toggle"}, {Name: "send_keys", Params: map[string]any{"keys": "Enter"}}}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	set := agent.Settings{RunDir: t.TempDir(), InitialActions: []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpOrigin + `/f"}`)}}}
	a := newAgent(t, "toggle", model, b, set)
	run(t, a, model)
	h := a.History()
	for _, heal := range []bool{false, true} {
		b2 := agenttest.New(t, site(false)...)
		opt := replayOpts(t)
		if heal {
			opt.Model = scripted.New([]scripted.Step{{Action: "scroll"}, {Action: "scroll"}, {Action: "scroll"}})
		}
		rr, err := agent.Replay(replayCtx(t), b2, h, opt)
		if !heal && !errors.Is(err, agent.ErrReplayOutcome) {
			t.Fatalf("without a model: err %v, want ErrReplayOutcome", err)
		}
		if heal && err != nil {
			t.Fatalf("healed: %v", err)
		}
		if n := len(b2.Events(events.SendKeys.Name)); n != 1 {
			t.Fatalf("heal=%v: Enter sent %d times, want 1", heal, n)
		}
		for _, x := range rr.Actions {
			if x.Name == "send_keys" && (x.Skipped || x.RunStep == 0 || x.Got == "") {
				t.Fatalf("heal=%v: send_keys ran but is reported %+v", heal, x)
			}
			if x.Name == "click" && (x.Got != events.VerdictNoChange || x.Healed != heal) {
				t.Fatalf("heal=%v: click %+v", heal, x)
			}
		}
	}
}

// An element action recorded without its element (an older history) is a
// choice by position: the approval policy is asked once, with the match
// and a note; a denial fails the step as ambiguous and denied.
func TestReplayElementlessActionAsksApprover(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	for i := range h.Items {
		for j := range h.Items[i].Actions {
			if h.Items[i].Actions[j].Name == "click" {
				h.Items[i].Actions[j].Element = nil
			}
		}
	}
	p, err := agent.PlanReplay(h, agent.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(p.Notes, "\n"); !strings.Contains(n, "step 2 action 1 (click): recorded without its element") {
		t.Fatalf("notes %q", n)
	}
	for _, allow := range []bool{false, true} {
		var (
			mu   sync.Mutex
			asks []agent.ApprovalRequest
		)
		opt := replayOpts(t)
		opt.Settings.Approver = agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
			if req.Action != "click" {
				return agent.Decision{Allow: true}, nil
			}
			mu.Lock()
			asks = append(asks, req)
			mu.Unlock()
			return agent.Decision{Allow: allow, Reason: "not sure"}, nil
		})
		b := agenttest.New(t, rpSite(rpOrigin, "v1")...)
		_, err := agent.Replay(replayCtx(t), b, h, opt)
		mu.Lock()
		got := append([]agent.ApprovalRequest(nil), asks...)
		mu.Unlock()
		if len(got) != 1 || got[0].Match == nil || !got[0].Match.Ambiguous || got[0].Match.Strategy != "position" || got[0].Match.Index != 3 || !strings.Contains(got[0].Note, "no record of its element") {
			t.Fatalf("allow=%v: approval requests %+v, want one with a position match", allow, got)
		}
		if allow {
			if err != nil || len(clicks(b)) != 1 {
				t.Fatalf("allowed: err %v clicks %v", err, clicks(b))
			}
		} else if !errors.Is(err, agent.ErrReplayAmbiguous) || !errors.Is(err, agent.ErrDenied) || len(clicks(b)) != 0 {
			t.Fatalf("denied: err %v clicks %v", err, clicks(b))
		}
	}
}

// A heal that did the broken step itself is seen to have moved on when
// the next recorded step begins with a navigation: the page the next
// step was recorded on is the evidence.
func TestReplayHealMovedOnBeforeNavigation(t *testing.T) {
	help := agenttest.Page{URL: rpOrigin + "/help", Title: "Help", Text: "Help"}
	b := agenttest.New(t, append(rpSite(rpOrigin, "v1"), help)...)
	script := rpScript("Ada")
	script = append(script[:2], scripted.Step{Action: "navigate", Params: map[string]any{"url": rpOrigin + "/help"}}, script[2])
	model := scripted.New(script)
	set := agent.Settings{RunDir: t.TempDir(), InitialActions: []agent.ActionCall{{Name: "navigate", Params: json.RawMessage(`{"url":"` + rpForm + `"}`)}}}
	a := newAgent(t, "apply, then read the help", model, b, set)
	run(t, a, model)
	h := a.History()

	pages := rpSite(rpOrigin, "gone")
	// Send is now "Submit application", which the matcher does not take
	// for the recorded button; the model does.
	pages[0].Elements[2] = agenttest.Element{Index: 16, Attrs: map[string]string{"type": "submit", "id": "go"}, Text: "Submit application", Href: rpThanks}
	b2 := agenttest.New(t, append(pages, help)...)
	opt := replayOpts(t)
	opt.Model = scripted.New([]scripted.Step{{Action: "click", Label: "Submit application"}})
	rr, err := agent.Replay(replayCtx(t), b2, h, opt)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.ModelCalls != 1 || rr.Healed != 1 {
		t.Fatalf("model calls %d, healed %d; want 1, 1", rr.ModelCalls, rr.Healed)
	}
	if got := clicks(b2); len(got) != 1 || got[0] != 16 {
		t.Fatalf("clicks %v, want the heal's [16]", got)
	}
	for _, x := range rr.Actions {
		if x.Name == "click" && (!x.Healed || !x.Skipped) {
			t.Errorf("click %+v, want done by the heal", x)
		}
		if x.Name == "navigate" && x.Step > 1 && (x.Skipped || x.RunStep == 0) {
			t.Errorf("navigate %+v, want replayed", x)
		}
	}
}

// A recorded wait replays for at most a second: the next step's settle
// polling awaits what the wait awaited.
func TestReplayWaitCapped(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	it := &h.Items[2]
	it.Actions = append([]agent.ActionRecord{{Name: "wait", Params: json.RawMessage(`{"seconds":20}`)}}, it.Actions...)
	p, err := agent.PlanReplay(h, agent.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Steps {
		for _, a := range s.Actions {
			if a.Name == "wait" && string(a.Params) != `{"seconds":1}` {
				t.Fatalf("wait params %s, want seconds 1", a.Params)
			}
		}
	}
	b := agenttest.New(t, rpSite(rpOrigin, "v1")...)
	if _, err := agent.Replay(replayCtx(t), b, h, replayOpts(t)); err != nil {
		t.Fatal(err)
	}
	ws := b.Events(events.Wait.Name)
	if len(ws) != 1 || ws[0].Payload.(events.WaitEvent).Duration != time.Second {
		t.Fatalf("wait events %+v, want one of 1s", ws)
	}
}

// A denial by the approval policy ends the replay without a heal, and is
// errors.Is ErrDenied as well as ErrReplayOutcome.
func TestReplayDenialIsErrDenied(t *testing.T) {
	h := record(t, agent.Settings{}, "Ada")
	b := agenttest.New(t, rpSite(rpOrigin, "v1")...)
	opt := replayOpts(t)
	opt.Settings.Approver = agent.DenyRisks{agent.RiskSubmit: "no submitting in this test"}
	opt.Model = scripted.New([]scripted.Step{{Action: "scroll"}})
	rr, err := agent.Replay(replayCtx(t), b, h, opt)
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrDenied) || !errors.Is(err, agent.ErrReplayOutcome) || re.Name != "click" {
		t.Fatalf("err %v, want the click's denial", err)
	}
	if !strings.Contains(err.Error(), "no submitting in this test") {
		t.Fatalf("message %q lacks the reason", err)
	}
	if rr.ModelCalls != 0 || len(clicks(b)) != 0 {
		t.Fatalf("model calls %d, clicks %v; want none", rr.ModelCalls, clicks(b))
	}
}
