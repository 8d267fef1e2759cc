package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// callLog records the model calls the observers see.
type callLog struct {
	agent.BaseObserver
	mu    sync.Mutex
	calls []agent.ModelCall
}

func (o *callLog) ModelCalled(_ context.Context, c agent.ModelCall) {
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
}

// bigMemory is a step's memory of about 2,000 characters, as a model
// writing down every listing it read would produce.
func bigMemory(step int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Read listing page %d.", step)
	for j := 0; b.Len() < 2000; j++ {
		fmt.Fprintf(&b, " Item %d-%d: Trail tent model %d, 2 persons, $%d.%02d, rating 4.%d, ships in %d days.", step, j, step*31+j, 80+step+j, j*7%100, j%10, 2+j%5)
	}
	return b.String()
}

// A 55-step task whose history outgrows the trigger: the summary is asked
// of the compaction model once 25 steps passed; its first call fails and is
// retried on the next step without failing anything; the history sent
// afterwards is the first step, the summary (marked unverified) and the
// last 6 steps, under the threshold; each time the history passes the
// threshold again (at steps 38 and 49) it is summarised again with the
// previous summary as input; the task completes
// and every call's usage is counted.
func TestLoopCompaction(t *testing.T) {
	b := agenttest.New(t, formSite()...)
	const total = 55
	var steps []scripted.Step
	for i := range total - 1 {
		steps = append(steps, scripted.Step{Action: "scroll", Params: map[string]any{"down": i%2 == 0, "pages": 1}, Memory: bigMemory(i)})
	}
	steps = append(steps, scripted.Step{Action: "done", Params: map[string]any{"text": "cheapest: Trail tent model 31 at $81.00", "success": true}})
	model := scripted.New(steps)
	compactor := scripted.New([]scripted.Step{
		{Error: "503 overloaded"},
		{Text: "SUMMARY ONE: read listing pages 1 to 19; cheapest so far Trail tent model 31 at $81.00."},
		{Text: "SUMMARY TWO: read listing pages 1 to 31; cheapest Trail tent model 31 at $81.00."},
		{Text: "SUMMARY THREE: read listing pages 1 to 42; cheapest Trail tent model 31 at $81.00."},
	}, scripted.WithName("compactor"))
	extractor := &funcModel{fn: func(int) (*llm.Response, error) {
		t.Error("the extraction model was asked although CompactionModel is set")
		return &llm.Response{Content: "x"}, nil
	}}
	calls := &callLog{}
	set := settings(t)
	set.CompactionModel = compactor
	set.ExtractModel = extractor
	set.Observers = []agent.Observer{calls}
	set.PlanNudgeStep = -1
	a := newAgent(t, "Find the cheapest 2-person tent in the listings", model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success || len(res.Errors) != 0 {
		t.Fatalf("result %+v", res)
	}
	reqs := model.Requests()
	if len(reqs) != total {
		t.Fatalf("%d step requests, want %d", len(reqs), total)
	}

	// The compaction model's calls: step 25 (fails), 26 (retry), then
	// whenever the history passes the threshold again, at least 7 steps
	// (CompactKeepLast+1) later: 38 and 49.
	creqs := compactor.Requests()
	if len(creqs) != 4 {
		t.Fatalf("%d compaction calls, want 4", len(creqs))
	}
	var compactSteps []int
	for _, c := range calls.calls {
		if c.Purpose == "compact" {
			if c.Model != "compactor" {
				t.Fatalf("compaction call to %s", c.Model)
			}
			compactSteps = append(compactSteps, c.Step)
		}
	}
	if fmt.Sprint(compactSteps) != "[25 26 38 49]" {
		t.Fatalf("compaction calls at steps %v", compactSteps)
	}
	for i, r := range creqs {
		if r.Schema != nil {
			t.Fatalf("compaction call %d asks for a schema", i)
		}
		sys, in := r.Messages[0].TextContent(), userText(r)
		if !strings.Contains(sys, "at most 6000 characters") || !strings.Contains(in, "Find the cheapest 2-person tent") {
			t.Fatalf("compaction call %d:\n%s\n%s", i, sys, shortText(in))
		}
		// A summary folds all but step 0 and the last 6 steps: 1..18 at
		// step 25, 1..19 on the retry at step 26.
		switch i {
		case 0, 1:
			last := 18 + i
			if !strings.Contains(in, "<step_1>") || !strings.Contains(in, fmt.Sprintf("<step_%d>", last)) || strings.Contains(in, "<step_0>") || strings.Contains(in, fmt.Sprintf("<step_%d>", last+1)) || strings.Contains(in, "<previous_summary>") {
				t.Fatalf("compaction call %d input:\n%s", i, shortText(in))
			}
		case 2, 3:
			prev, first, last := "SUMMARY ONE", 20, 31
			if i == 3 {
				prev, first, last = "SUMMARY TWO", 32, 42
			}
			if !strings.Contains(in, "<previous_summary>\n"+prev) || !strings.Contains(in, fmt.Sprintf("<step_%d>", first)) || !strings.Contains(in, fmt.Sprintf("<step_%d>", last)) || strings.Contains(in, fmt.Sprintf("<step_%d>", first-1)) || strings.Contains(in, fmt.Sprintf("<step_%d>", last+1)) {
				t.Fatalf("re-summary %d input:\n%s", i, shortText(in))
			}
		}
	}

	h := a.History()
	if len(h.Items) != total {
		t.Fatalf("the history keeps every step: %d items", len(h.Items))
	}
	c25, c26, c38, c49 := h.Items[25].Compaction, h.Items[26].Compaction, h.Items[38].Compaction, h.Items[49].Compaction
	if c25 == nil || !strings.Contains(c25.Error, agent.ErrCompaction.Error()) || !strings.Contains(c25.Error, "503 overloaded") || h.Items[25].Failed {
		t.Fatalf("failed summary at step 25: %+v failed=%v", c25, h.Items[25].Failed)
	}
	if c26 == nil || c26.Error != "" || !strings.HasPrefix(c26.Summary, "SUMMARY ONE") || c26.FromStep != 1 || c26.ToStep != 19 || c26.CharsBefore <= agent.DefaultCompactTrigger || c26.CharsAfter >= agent.DefaultCompactTrigger {
		t.Fatalf("summary at step 26: %+v", c26)
	}
	if c38 == nil || !strings.HasPrefix(c38.Summary, "SUMMARY TWO") || c38.FromStep != 1 || c38.ToStep != 31 || c38.CharsAfter >= agent.DefaultCompactTrigger {
		t.Fatalf("summary at step 38: %+v", c38)
	}
	if c49 == nil || !strings.HasPrefix(c49.Summary, "SUMMARY THREE") || c49.FromStep != 1 || c49.ToStep != 42 {
		t.Fatalf("summary at step 49: %+v", c49)
	}
	for i, it := range h.Items {
		if it.Compaction != nil && i != 25 && i != 26 && i != 38 && i != 49 {
			t.Fatalf("unexpected compaction at step %d: %+v", i, it.Compaction)
		}
	}

	// What the step model read.
	if hist := section(userText(reqs[25]), "agent_history"); len(hist) <= agent.DefaultCompactTrigger || strings.Contains(hist, "compacted_memory") {
		t.Fatalf("step 25 (failed summary) history: %d chars", len(hist))
	}
	for _, c := range []struct {
		step            int
		summary         string
		keep, gone      []string
		prevSummaryGone string
	}{
		{26, "SUMMARY ONE", []string{"<step_0>", "<step_20>", "<step_25>"}, []string{"<step_1>", "<step_19>"}, ""},
		{38, "SUMMARY TWO", []string{"<step_0>", "<step_32>", "<step_37>"}, []string{"<step_1>", "<step_20>", "<step_31>"}, "SUMMARY ONE"},
		{51, "SUMMARY THREE", []string{"<step_0>", "<step_43>", "<step_50>"}, []string{"<step_1>", "<step_32>", "<step_42>"}, "SUMMARY TWO"},
	} {
		hist := section(userText(reqs[c.step]), "agent_history")
		if len(hist) >= agent.DefaultCompactTrigger {
			t.Fatalf("step %d history is %d chars, not under the threshold", c.step, len(hist))
		}
		mem := section(hist, "compacted_memory")
		if !strings.Contains(mem, c.summary) || !strings.Contains(mem, "treat it as unverified") {
			t.Fatalf("step %d compacted memory:\n%s", c.step, mem)
		}
		for _, k := range c.keep {
			if !strings.Contains(hist, k) {
				t.Fatalf("step %d history lacks %s", c.step, k)
			}
		}
		for _, g := range c.gone {
			if strings.Contains(hist, g) {
				t.Fatalf("step %d history still has %s", c.step, g)
			}
		}
		if c.prevSummaryGone != "" && strings.Contains(hist, c.prevSummaryGone) {
			t.Fatalf("step %d history still has the previous summary", c.step)
		}
		if strings.Index(hist, "<step_0>") > strings.Index(hist, "<compacted_memory>") {
			t.Fatalf("step %d: the summary should follow the first step", c.step)
		}
	}

	// Usage: every call counted once, the summaries' included.
	var sum llm.Usage
	for _, c := range calls.calls {
		sum.PromptTokens += c.Usage.PromptTokens
		sum.CompletionTokens += c.Usage.CompletionTokens
	}
	if sum.PromptTokens != res.Usage.PromptTokens || sum.CompletionTokens != res.Usage.CompletionTokens || h.Items[26].Usage.PromptTokens <= reqTokens(reqs[26]) {
		t.Fatalf("usage: calls %+v, result %+v, step 26 %+v", sum, res.Usage, h.Items[26].Usage)
	}
}

// reqTokens is the scripted model's prompt-token count for one request.
func reqTokens(r llm.Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.TextContent())/4 + 1
	}
	return n
}

func shortText(s string) string {
	if len(s) > 3000 {
		return s[:1500] + "\n...\n" + s[len(s)-1500:]
	}
	return s
}

// The summary goes to CompactionModel, else the extraction model, else the
// step model; settings change the gates; negative CompactEverySteps
// disables it.
func TestLoopCompactionModelChoice(t *testing.T) {
	steps := func(n int) []scripted.Step {
		var s []scripted.Step
		for i := range n {
			s = append(s, scripted.Step{Action: "scroll", Params: map[string]any{"down": i%2 == 0, "pages": 1}, Memory: strings.Repeat("m", 300)})
		}
		return s
	}
	done := scripted.Step{Action: "done", Params: map[string]any{"text": "ok", "success": true}}
	small := func(s *agent.Settings) {
		s.CompactEverySteps, s.CompactTriggerChars, s.CompactKeepLast, s.PlanNudgeStep = 3, 1000, 1, -1
	}

	t.Run("extraction model", func(t *testing.T) {
		model := scripted.New(append(steps(4), done))
		extractor := scripted.New([]scripted.Step{{Text: "short summary"}})
		set := settings(t)
		small(&set)
		set.ExtractModel = extractor
		a := newAgent(t, "Scroll around", model, agenttest.New(t, formSite()...), set)
		run(t, a, model)
		if len(extractor.Requests()) != 1 || a.History().Items[3].Compaction.Summary != "short summary" {
			t.Fatalf("%d calls to the extraction model; step 3 %+v", len(extractor.Requests()), a.History().Items[3].Compaction)
		}
		if txt := userText(model.Requests()[3]); !strings.Contains(txt, "short summary") || strings.Contains(txt, "<step_1>") {
			t.Fatalf("history after the summary:\n%s", section(txt, "agent_history"))
		}
	})
	t.Run("step model", func(t *testing.T) {
		s := append(steps(3), scripted.Step{Text: "main model summary"})
		model := scripted.New(append(append(s, steps(1)...), done))
		set := settings(t)
		small(&set)
		a := newAgent(t, "Scroll around", model, agenttest.New(t, formSite()...), set)
		run(t, a, model)
		reqs := model.Requests()
		if reqs[3].Schema != nil || !strings.Contains(reqs[3].Messages[0].TextContent(), "You condense the history") {
			t.Fatalf("request 3 is not the summary call")
		}
		if a.History().Items[3].Compaction.Summary != "main model summary" {
			t.Fatalf("step 3 %+v", a.History().Items[3].Compaction)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		model := scripted.New(append(steps(6), done))
		set := settings(t)
		small(&set)
		set.CompactEverySteps = -1
		a := newAgent(t, "Scroll around", model, agenttest.New(t, formSite()...), set)
		run(t, a, model)
		for _, it := range a.History().Items {
			if it.Compaction != nil {
				t.Fatalf("step %d compacted although disabled", it.Step)
			}
		}
	})
}
