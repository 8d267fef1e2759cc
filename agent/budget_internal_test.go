package agent

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm"
)

// The estimate before a call: characters over 4 and 500 output tokens at
// first; then the model's own chars-per-token from its last reported
// prompt, DefaultImageTokens per image, the run's average completion (of
// the purpose when there is one, capped by the request's MaxTokens), and
// the last call's cache reads priced as such.
func TestMeterEstimate(t *testing.T) {
	set, err := Settings{MaxTokens: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	text := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 4000)))}}
	estimate := func(purpose, model string, req llm.Request) *BudgetError {
		t.Helper()
		m.stopped = nil // each check below is refused (MaxTokens 1); look at its estimate
		be := m.check(7, purpose, model, req)
		if be == nil || be.Budget != "tokens" || be.Step != 7 || be.Purpose != purpose {
			t.Fatalf("check: %+v", be)
		}
		return be
	}
	if be := estimate("step", "openai:gpt-4.1-mini", text); be.EstimateTokens != 4000/4+DefaultOutputTokens {
		t.Fatalf("first estimate %d", be.EstimateTokens)
	}
	m.record("step", "openai:gpt-4.1-mini", text, &llm.Response{Usage: llm.Usage{PromptTokens: 2000, CachedTokens: 1500, CompletionTokens: 100}})
	if be := estimate("step", "openai:gpt-4.1-mini", text); be.EstimateTokens != 2000+100 || be.SpentTokens != 2100 {
		t.Fatalf("calibrated estimate %+v", be)
	}
	withShot := text
	withShot.Messages = []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 4000)), llm.ImagePart("image/png", []byte{1}))}
	if be := estimate("step", "openai:gpt-4.1-mini", withShot); be.EstimateTokens != 2000+DefaultImageTokens+100 {
		t.Fatalf("estimate with an image %d", be.EstimateTokens)
	}
	if be := estimate("step", "openai:gpt-4o", text); be.EstimateTokens != 1000+100 {
		t.Fatalf("another model keeps the default ratio: %d", be.EstimateTokens)
	}
	m.record("extract", "openai:gpt-4.1-mini", text, &llm.Response{Usage: llm.Usage{PromptTokens: 2000, CompletionTokens: 300}})
	if be := estimate("extract", "openai:gpt-4.1-mini", text); be.EstimateTokens != 2000+300 {
		t.Fatalf("extract's own average: %d", be.EstimateTokens)
	}
	if be := estimate("compact", "openai:gpt-4.1-mini", text); be.EstimateTokens != 2000+200 {
		t.Fatalf("no summary yet: the average of all calls: %d", be.EstimateTokens)
	}
	capped := text
	capped.MaxTokens = 50
	if be := estimate("step", "openai:gpt-4.1-mini", capped); be.EstimateTokens != 2000+50 {
		t.Fatalf("capped by MaxTokens: %d", be.EstimateTokens)
	}

	// The cost estimate prices the previous call's cache reads as such.
	m.maxTokens, m.maxCost, m.stopped = 0, 1e-9, nil
	be := m.check(7, "step", "openai:gpt-4.1-mini", text)
	want := (500*0.40 + 1500*0.10 + 100*1.60) / 1e6
	if be == nil || be.Budget != "cost" || !nearUSD(be.EstimateUSD, want) {
		t.Fatalf("cost estimate %+v, want %g", be, want)
	}
	m.stopped = nil
	if be := m.check(7, "step", "openai:local-model", text); be == nil || !be.UnknownPrice || !strings.Contains(be.Error(), "the price of openai:local-model is unknown") {
		t.Fatalf("unknown price under a cost budget: %+v", be)
	}
	if be := m.check(8, "step", "openai:gpt-4.1-mini", text); be == nil || be.Step != 7 {
		t.Fatalf("a refusal stops the run: every later call is refused with it, got %+v", be)
	}
	m.endRun()
	if be := m.check(9, "step", "openai:local-model", text); be != nil {
		t.Fatalf("no budget outside a Run: %+v", be)
	}
}

func nearUSD(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// A fallback model ("a|b") is priced by the model that answered.
func TestPricedSpec(t *testing.T) {
	for _, c := range []struct{ model, answered, want string }{
		{"openai:gpt-4.1", "gpt-4.1-2025-04-14", "openai:gpt-4.1"},
		{"openai:gpt-4.1|openai:gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", "openai:gpt-4.1-mini"},
		{"openai:gpt-4.1|openai:gpt-4.1-mini", "gpt-4.1-2025-04-14", "openai:gpt-4.1"},
		{"openai:gpt-4.1|anthropic:claude-haiku-4-5", "claude-haiku-4-5-20251001", "anthropic:claude-haiku-4-5"},
		{"openai:gpt-4.1|anthropic:claude-haiku-4-5", "", "openai:gpt-4.1|anthropic:claude-haiku-4-5"},
	} {
		if got := pricedSpec(c.model, c.answered); got != c.want {
			t.Errorf("pricedSpec(%q, %q) = %q, want %q", c.model, c.answered, got, c.want)
		}
	}
	for n, s := range map[int]string{950: "950", 2048: "2.0k", 3100: "3.1k", 12345: "12k", 1250000: "1.2M"} {
		if got := Tokens(n); got != s {
			t.Errorf("Tokens(%d) = %q, want %q", n, got, s)
		}
	}
}
