package agent

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
)

// The estimate before a call: characters over 4 and 500 output tokens at
// first; then the model's own chars-per-token from its last reported
// prompt, the run's average completion (of the purpose when there is one,
// capped by the request's MaxTokens).
func TestMeterEstimate(t *testing.T) {
	set, err := Settings{MaxTokens: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	text := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 4000)))}}
	estimate := meterEstimate(t, m)
	if be := estimate("step", "openai:gpt-4.1-mini", text); be.EstimateTokens != 4000/4+DefaultOutputTokens {
		t.Fatalf("first estimate %d", be.EstimateTokens)
	}
	m.record("step", "openai:gpt-4.1-mini", text, &llm.Response{Usage: llm.Usage{PromptTokens: 2000, CachedTokens: 1500, CompletionTokens: 100}})
	if be := estimate("step", "openai:gpt-4.1-mini", text); be.EstimateTokens != 2000+100 || be.SpentTokens != 2100 {
		t.Fatalf("calibrated estimate %+v", be)
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
	// A ratio out of range is kept in it.
	m.record("step", "openai:gpt-4.1-nano", text, &llm.Response{Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 100}})
	if be := estimate("step", "openai:gpt-4.1-nano", text); be.EstimateTokens != 667+100 {
		t.Fatalf("ratio capped at %g: %d", MaxCharsPerToken, be.EstimateTokens)
	}

	m.maxTokens, m.maxCost, m.stopped = 0, 1e-9, nil
	be := m.check(7, "step", "openai:gpt-4.1-mini", text)
	want := (2000*0.40 + 100*1.60) / 1e6 // no CacheKey: no cache reads assumed
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

// meterEstimate returns a function that checks a call under a budget of 1
// token and returns the refusal, whose numbers are the call's estimate.
func meterEstimate(t *testing.T, m *meter) func(purpose, model string, req llm.Request) *BudgetError {
	return func(purpose, model string, req llm.Request) *BudgetError {
		t.Helper()
		m.stopped = nil
		be := m.check(7, purpose, model, req)
		if be == nil || be.Step != 7 || be.Purpose != purpose {
			t.Fatalf("check: %+v", be)
		}
		return be
	}
}

// screenshot encodes a w×h PNG, as a screenshot the model would get.
func screenshot(t *testing.T, w, h int) llm.Part {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return llm.ImagePart("image/png", b.Bytes())
}

// Images are estimated by their size and the model's family, and a step
// with a screenshot teaches the text ratio without the image's tokens: a
// Gemini run whose first call had 1,500 text tokens and a 1229×768
// screenshot (516 tokens) estimates a 40,000-character extract at about
// 10,000 tokens, not 2,500.
func TestMeterEstimateImages(t *testing.T) {
	set, err := Settings{MaxTokens: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	estimate := meterEstimate(t, m)
	shot := screenshot(t, 1229, 768)
	withShot := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 6000)), shot)}}
	const model = "gemini:gemini-2.0-flash"
	if be := estimate("step", model, withShot); be.EstimateTokens != 1500+516+DefaultOutputTokens {
		t.Fatalf("first estimate with a Gemini screenshot: %d", be.EstimateTokens)
	}
	if be := estimate("step", "openai:gpt-4.1", withShot); be.EstimateTokens != 1500+ImageTokens(ImageOpenAI, 1229, 768, "")+DefaultOutputTokens {
		t.Fatalf("first estimate with an OpenAI screenshot: %d", be.EstimateTokens)
	}
	low := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 6000)), llm.Part{Image: &llm.Image{MediaType: "image/png", Data: shot.Image.Data, Detail: DetailLow}})}}
	if be := estimate("step", "openai:gpt-4.1", low); be.EstimateTokens != 1500+85+DefaultOutputTokens {
		t.Fatalf("first estimate with a low-detail screenshot: %d", be.EstimateTokens)
	}
	byURL := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 6000)), llm.Part{Image: &llm.Image{URL: "https://example.com/a.png"}})}}
	if be := estimate("step", model, byURL); be.EstimateTokens != 1500+DefaultImageTokens+DefaultOutputTokens {
		t.Fatalf("an image of unknown size: %d", be.EstimateTokens)
	}

	m.record("step", model, withShot, &llm.Response{Usage: llm.Usage{PromptTokens: 1500 + 516, CompletionTokens: 200}})
	extract := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 40000)))}}
	be := estimate("extract", model, extract)
	if in := be.EstimateTokens - 200; in < 10000*2/3 || in > 10000*3/2 {
		t.Fatalf("extract estimated at %d input tokens, want about 10,000", in)
	}
	// A call without images then sets the ratio; a later one with images
	// does not change it.
	m.record("extract", model, extract, &llm.Response{Usage: llm.Usage{PromptTokens: 8000, CompletionTokens: 200}})
	m.record("step", model, withShot, &llm.Response{Usage: llm.Usage{PromptTokens: 600 + 516, CompletionTokens: 200}})
	if be := estimate("extract", model, extract); be.EstimateTokens != 8000+200 {
		t.Fatalf("extract after a text-only call: %d", be.EstimateTokens)
	}
	// A model whose image billing is unknown learns nothing from calls
	// with images.
	m.record("step", "ollama:llava", withShot, &llm.Response{Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 200}})
	if m.ratio["ollama:llava"] != 0 {
		t.Fatalf("ratio learned from an image of unknown cost: %g", m.ratio["ollama:llava"])
	}
}

// Cache reads are assumed only for the same CacheKey within CacheIdle and
// without a history summary since; the rest of the prompt is priced at the
// dearer of the input and cache-write prices (Anthropic's 1.25×).
func TestMeterEstimateCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	set, err := Settings{MaxCost: 1e-9, Now: func() time.Time { return now }}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	const model = "anthropic:claude-sonnet-4-5" // $3 in, $0.30 cache read, $3.75 cache write, $15 out
	req := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", 40000)))}, CacheKey: "ba-0123456789abcdef"}
	m.record("step", model, req, &llm.Response{Usage: llm.Usage{PromptTokens: 10000, CachedTokens: 8000, CacheWriteTokens: 2000, CompletionTokens: 100}})
	usd := func(r llm.Request) float64 {
		t.Helper()
		m.stopped = nil
		be := m.check(5, "step", model, r)
		if be == nil || be.Budget != "cost" {
			t.Fatalf("check: %+v", be)
		}
		return be.EstimateUSD
	}
	cached := (2000*3.75 + 8000*0.30 + 100*15) / 1e6
	full := (10000*3.75 + 100*15) / 1e6
	if got := usd(req); !nearUSD(got, cached) {
		t.Fatalf("same prefix: %g, want %g", got, cached)
	}
	other := req
	other.CacheKey = "ba-fedcba9876543210"
	if got := usd(other); !nearUSD(got, full) {
		t.Fatalf("another CacheKey: %g, want %g", got, full)
	}
	now = now.Add(CacheIdle)
	if got := usd(req); !nearUSD(got, full) {
		t.Fatalf("after %s idle: %g, want %g", CacheIdle, got, full)
	}
	now = now.Add(-CacheIdle + time.Second)
	if got := usd(req); !nearUSD(got, cached) {
		t.Fatalf("within %s: %g, want %g", CacheIdle, got, cached)
	}
	summary := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("<steps>...</steps>"))}}
	m.record("compact", "anthropic:claude-haiku-4-5", summary, &llm.Response{Usage: llm.Usage{PromptTokens: 3000, CompletionTokens: 200}})
	if got := usd(req); !nearUSD(got, full) {
		t.Fatalf("after a history summary: %g, want the full price", got)
	}
}

// The first output guess is larger for models that think before they
// answer; Tokens rounds to the unit it shows.
func TestMeterFirstOutputAndTokens(t *testing.T) {
	set, err := Settings{MaxTokens: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	estimate := meterEstimate(t, m)
	req := llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("abcd"))}}
	for model, out := range map[string]int{
		"openai:gpt-5": ReasoningOutputTokens, "openai:o4-mini": ReasoningOutputTokens, "gemini:gemini-2.5-pro": ReasoningOutputTokens,
		"openrouter:openai/gpt-5-mini": ReasoningOutputTokens, "openai:gpt-4.1": DefaultOutputTokens, "gemini:gemini-2.5-flash-lite": DefaultOutputTokens,
		"anthropic:claude-sonnet-4-5": DefaultOutputTokens, "openai:gpt-5-chat-latest": DefaultOutputTokens,
		"openai:gpt-4.1|openai:gpt-5": ReasoningOutputTokens,
	} {
		if be := estimate("step", model, req); be.EstimateTokens != 1+out {
			t.Errorf("%s: first estimate %d, want %d", model, be.EstimateTokens, 1+out)
		}
	}
	for n, s := range map[int]string{950: "950", 2048: "2.0k", 3100: "3.1k", 9949: "9.9k", 9999: "10k", 12345: "12k", 999499: "999k", 999999: "1.0M", 1250000: "1.2M", 12345678: "12M"} {
		if got := Tokens(n); got != s {
			t.Errorf("Tokens(%d) = %q, want %q", n, got, s)
		}
	}
}

// An action's reported usage counts once: what the meter saw during it
// (extract's ExtractModel call) is not added again; a plug-in's own
// model's tokens are added to the step and the run, unpriced.
func TestMeterActionUsage(t *testing.T) {
	set, err := Settings{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(set)
	m.startRun()
	m.startStep()
	extract := llm.Usage{PromptTokens: 5000, CompletionTokens: 80}
	mark := m.stepUsed()
	m.record("extract", "openai:gpt-4.1-mini", llm.Request{}, &llm.Response{Usage: extract})
	m.addReported(mark, extract)
	if u, c := m.takeStep(); u != extract || !nearUSD(c.Total, (5000*0.40+80*1.60)/1e6) {
		t.Fatalf("extract: %+v %+v", u, c)
	}
	plugin := llm.Usage{PromptTokens: 700, CompletionTokens: 30}
	mark = m.stepUsed()
	m.addReported(mark, plugin)
	u, c := m.takeStep()
	if u.PromptTokens != 5700 || u.CompletionTokens != 110 || !nearUSD(c.Total, (5000*0.40+80*1.60)/1e6) {
		t.Fatalf("plug-in: %+v %+v", u, c)
	}
	if run, _ := m.endRun(); run != u {
		t.Fatalf("run usage %+v, step %+v", run, u)
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
}

// CheckPrices, what New, RunTask and the CLI ask of a cost budget, checks
// each model of a fallback.
func TestCheckPrices(t *testing.T) {
	tab := pricing.Default()
	if err := CheckPrices(tab, "openai:gpt-4.1", "", "openai:gpt-4.1|anthropic:claude-haiku-4-5"); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrices(tab, "openai:gpt-4.1|openai:my-local-model"); !errors.Is(err, pricing.ErrUnknownModel) || !strings.Contains(err.Error(), "openai:my-local-model") {
		t.Fatalf("a fallback with an unpriced model: %v", err)
	}
}
