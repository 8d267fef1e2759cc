package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// The report shows each step's tokens by kind and cost, each model call's,
// the run's total with its breakdown, a step whose price is unknown as
// such, and the budget that stopped the run: read from the page in
// Chromium.
func TestReportShowsCost(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := trace.Create(path, trace.WithMetadata(map[string]any{"task": "compare plans"}))
	if err != nil {
		t.Fatal(err)
	}
	tok := trace.Tokens{PromptTokens: 20000, CachedTokens: 12000, CompletionTokens: 150, ReasoningTokens: 64}
	step := pricing.Cost{Input: 0.0032, CachedInput: 0.0012, Output: 0.00024, Reasoning: 0.0001024, Total: 0.00464}
	unknown := pricing.Cost{Unpriced: []string{"openai:local-model"}}
	run := pricing.Cost{Input: 0.0064, CachedInput: 0.0024, Output: 0.00048, Reasoning: 0.0002048, Total: 0.00928, Unpriced: unknown.Unpriced}
	known := run
	known.Unpriced = nil
	for _, r := range []struct {
		typ  string
		data any
	}{
		{trace.TypeModel, trace.Model{Step: 1, Purpose: "step", Model: "openai:gpt-4.1-mini", PromptChars: 61000, Tokens: tok, Cost: &step}},
		{trace.TypeStep, trace.Step{Step: 1, URL: "http://127.0.0.1/plans", Tokens: tok, Cost: &step}},
		{trace.TypeModel, trace.Model{Step: 2, Purpose: "extract", Model: "openai:local-model", PromptChars: 9000, Tokens: trace.Tokens{PromptTokens: 2300, CompletionTokens: 80}, Cost: &unknown}},
		{trace.TypeStep, trace.Step{Step: 2, URL: "http://127.0.0.1/plans", Tokens: trace.Tokens{PromptTokens: 2300, CompletionTokens: 80}, Cost: &unknown}},
		{trace.TypeStep, trace.Step{Step: 3, URL: "http://127.0.0.1/plans", Error: "stopped before the model call of step 3: ..."}},
		{trace.TypeRun, trace.Run{Task: "compare plans", Steps: 3, Tokens: trace.Tokens{PromptTokens: 22300, CachedTokens: 12000, CompletionTokens: 230, ReasoningTokens: 64}, Cost: &known,
			BudgetExceeded: "stopped before the model call of step 3: it would bring the cost to ~$0.0139 of the $0.0116 budget"}},
	} {
		if err := w.Write(r.typ, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(path, out); err != nil {
		t.Fatal(err)
	}
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "file://"+out)
	var got struct {
		Usage, Cost, Breakdown, Budget  string
		StepCosts, StepUsage, ModelRows []string
	}
	pg.Eval(t, `(() => {
		const text = id => (document.getElementById(id) || {}).textContent || '';
		return {
			Usage: text('usage'), Cost: text('cost'), Breakdown: text('cost-breakdown'), Budget: text('budget'),
			StepCosts: [...document.querySelectorAll('section.step')].map(s => (s.querySelector('.cost') || {}).textContent || ''),
			StepUsage: [...document.querySelectorAll('section.step')].map(s => (s.querySelector('.usage') || {}).textContent || ''),
			ModelRows: [...document.querySelectorAll('tr')].filter(r => r.textContent.includes('openai:')).map(r => r.innerText.replace(/\s+/g, ' ')),
		};
	})()`, &got)
	if got.Usage != "22k in (12k cached) / 230 out (64 reasoning)" || got.Cost != "$0.0093" {
		t.Errorf("header usage %q cost %q", got.Usage, got.Cost)
	}
	if got.Breakdown != "input $0.0064 · cached input $0.0024 · cache writes $0 · output $0.00048 (reasoning $0.00020)" {
		t.Errorf("breakdown %q", got.Breakdown)
	}
	if !strings.Contains(got.Budget, "of the $0.0116 budget") {
		t.Errorf("budget %q", got.Budget)
	}
	want := []string{"$0.0046", "cost unknown (no price for openai:local-model)", ""}
	if strings.Join(got.StepCosts, "|") != strings.Join(want, "|") {
		t.Errorf("step costs %q, want %q", got.StepCosts, want)
	}
	if got.StepUsage[0] != "20k in (12k cached) / 150 out (64 reasoning)" || got.StepUsage[2] != "" {
		t.Errorf("step usage %q", got.StepUsage)
	}
	if len(got.ModelRows) != 2 || !strings.Contains(got.ModelRows[0], "$0.0046") || !strings.Contains(got.ModelRows[1], "cost unknown") {
		t.Errorf("model rows %q", got.ModelRows)
	}
}
