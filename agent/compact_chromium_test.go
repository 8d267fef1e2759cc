package agent_test

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// A 42-step task on a real page in Chromium: the history passes the
// threshold, the compaction model summarises it at step 25 and again when
// it passes the threshold once more, every step after the first summary
// sends a history below the threshold, and the task completes.
func TestCompactionOnARealPage(t *testing.T) {
	env, s := newSession(t)
	const total = 42
	steps := []scripted.Step{{Action: "navigate", Params: map[string]any{"url": env.URL("/agent-queries.html")}, Memory: bigMemory(0)}}
	for i := 1; i < total-1; i++ {
		steps = append(steps, scripted.Step{Action: "scroll", Params: map[string]any{"down": i%2 == 1, "pages": 1}, Memory: bigMemory(i)})
	}
	steps = append(steps, scripted.Step{WaitFor: "Price list", Action: "done", Params: map[string]any{"text": "Gopher mug: $8.00", "success": true}})
	model := scripted.New(steps)
	compactor := scripted.New([]scripted.Step{
		{Text: "SUMMARY: scrolled the price list up and down; the mug costs $8.00."},
		{Text: "SUMMARY: scrolled the price list up and down; the mug costs $8.00 (again)."},
	}, scripted.WithName("compactor"))
	set := settings(t)
	set.CompactionModel = compactor
	set.PlanNudgeStep = -1
	a := newAgent(t, "Find the price of the gopher mug", model, s, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if n := len(compactor.Requests()); n != 2 {
		t.Fatalf("%d compaction calls, want 2 (at step 25, and when the history passed the threshold again)", n)
	}
	h := a.History()
	c := h.Items[25].Compaction
	if c == nil || c.Error != "" || c.CharsBefore <= agent.DefaultCompactTrigger || c.CharsAfter >= agent.DefaultCompactTrigger {
		t.Fatalf("step 25 compaction %+v", c)
	}
	for i, r := range model.Requests()[26:] {
		txt := userText(r)
		hist := txt[strings.Index(txt, "<agent_history>"):strings.Index(txt, "</agent_history>")]
		if len(hist) >= agent.DefaultCompactTrigger {
			t.Fatalf("step %d sent %d characters of history", 26+i, len(hist))
		}
		if !strings.Contains(hist, "SUMMARY: scrolled the price list") {
			t.Fatalf("step %d does not show the summary", 26+i)
		}
	}
}
