package pricing_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestLookup(t *testing.T) {
	tab := pricing.Default()
	for _, c := range []struct {
		spec      string
		in, out   float64
		cached, w float64
	}{
		{"openai:gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40},
		{"openai:gpt-4.1-mini-2025-04-14", 0.40, 1.60, 0.10, 0.40},
		{"openai:GPT-4.1", 2, 8, 0.50, 2},
		{"openai:gpt-5", 1.25, 10, 0.125, 1.25},
		{"openai:gpt-5-2025-08-07", 1.25, 10, 0.125, 1.25},
		{"openai:gpt-5-mini", 0.25, 2, 0.025, 0.25},
		{"openai:gpt-5-nano", 0.05, 0.40, 0.005, 0.05},
		{"openai:gpt-4o-2024-08-06", 2.50, 10, 1.25, 2.50},
		{"openai:gpt-4o-2024-05-13", 5, 15, 5, 5}, // its own, older price
		{"openai:o3", 2, 8, 0.50, 2},
		{"openai:o4-mini-2025-04-16", 1.10, 4.40, 0.275, 1.10},
		{"anthropic:claude-sonnet-4-5", 3, 15, 0.30, 3.75},
		{"anthropic:claude-sonnet-4-5-20250929", 3, 15, 0.30, 3.75},
		{"claude:claude-sonnet-4.5", 3, 15, 0.30, 3.75},
		{"anthropic:claude-3-7-sonnet-latest", 3, 15, 0.30, 3.75},
		{"anthropic:claude-opus-4-1-20250805", 15, 75, 1.50, 18.75},
		{"anthropic:claude-opus-4-5-20251101", 5, 25, 0.50, 6.25},
		{"anthropic:claude-haiku-4-5", 1, 5, 0.10, 1.25},
		{"anthropic:claude-3-5-haiku-20241022", 0.80, 4, 0.08, 1},
		{"gemini:gemini-2.5-flash", 0.30, 2.50, 0.03, 0.30},
		{"google:models/gemini-2.5-pro", 1.25, 10, 0.125, 1.25},
		{"gemini:gemini-2.5-flash-lite-preview-06-17", 0.10, 0.40, 0.01, 0.10},
		{"gemini:gemini-2.0-flash-001", 0.10, 0.40, 0.025, 0.10},
		{"openrouter:anthropic/claude-sonnet-4.5", 3, 15, 0.30, 3.75},
		{"openrouter:openai/gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40},
		{"ollama:llama3.1", 0, 0, 0, 0},
	} {
		p, err := tab.Lookup(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if !near(p.Input, c.in) || !near(p.Output, c.out) || !near(p.CachedInput, c.cached) || !near(p.CacheWrite, c.w) {
			t.Errorf("%s: got %+v, want in %g cached %g write %g out %g", c.spec, p, c.in, c.cached, c.w, c.out)
		}
	}
	for _, spec := range []string{"openai:gpt-5-pro", "openai:local-model", "gemini:gemini-1.0-ultra", "gpt-4.1", "mistral:mistral-large", "anthropic:claude-sonnet"} {
		_, err := tab.Lookup(spec)
		if !errors.Is(err, pricing.ErrUnknownModel) {
			t.Errorf("%s: err %v, want ErrUnknownModel", spec, err)
		}
		c, ok := tab.Cost(spec, llm.Usage{PromptTokens: 1000, CompletionTokens: 10})
		if ok || c.Known() || c.Total != 0 || c.String() != "cost unknown (no price for "+spec+")" {
			t.Errorf("%s: cost %+v ok=%v %q", spec, c, ok, c.String())
		}
	}
}

// A call with cache reads, cache writes and reasoning tokens is priced by
// kind; the kinds add up to the total.
func TestCostByKind(t *testing.T) {
	// claude-sonnet-4-5: $3 in, $0.30 cache read, $3.75 cache write, $15 out.
	p, err := pricing.Default().Lookup("anthropic:claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	u := llm.Usage{PromptTokens: 10000, CachedTokens: 6000, CacheWriteTokens: 1000, CompletionTokens: 800, ReasoningTokens: 300}
	c := p.Cost(u)
	want := pricing.Cost{Input: 3000 * 3 / 1e6, CachedInput: 6000 * 0.30 / 1e6, CacheWrite: 1000 * 3.75 / 1e6, Output: 800 * 15 / 1e6, Reasoning: 300 * 15 / 1e6}
	want.Total = 0.009 + 0.0018 + 0.00375 + 0.012
	if !near(c.Input, want.Input) || !near(c.CachedInput, want.CachedInput) || !near(c.CacheWrite, want.CacheWrite) ||
		!near(c.Output, want.Output) || !near(c.Reasoning, want.Reasoning) || !near(c.Total, want.Total) {
		t.Fatalf("cost %+v, want %+v", c, want)
	}
	if c.String() != pricing.FormatUSD(c.Total) || !strings.HasPrefix(c.String(), "$0.026") {
		t.Errorf("String %q", c.String())
	}
	var sum pricing.Cost
	sum.Add(c)
	sum.Add(c)
	unk, _ := pricing.Default().Cost("openai:local", u)
	sum.Add(unk)
	sum.Add(unk)
	if !near(sum.Total, 2*want.Total) || sum.Known() || len(sum.Unpriced) != 1 {
		t.Fatalf("sum %+v", sum)
	}
	for v, s := range map[float64]string{0: "$0", 0.0000341: "$0.000034", 0.000072: "$0.000072", 0.00213: "$0.0021", 0.001: "$0.0010", 0.5: "$0.5000", 12.345: "$12.35"} {
		if got := pricing.FormatUSD(v); got != s {
			t.Errorf("FormatUSD(%g) = %q, want %q", v, got, s)
		}
	}
}

func TestOverrideFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(good, []byte(`{
  "_comment": "our negotiated prices",
  "openai:gpt-4.1-mini": {"input": 0.2, "output": 0.8},
  "openai:local-model": {"input": 0.01, "cached_input": 0.001, "output": 0.02, "aliases": ["local"]}
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := pricing.LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tab.Lookup("openai:gpt-4.1-mini-2025-04-14"); !near(p.Input, 0.2) || !near(p.CachedInput, 0.2) || !near(p.CacheWrite, 0.2) || !near(p.Output, 0.8) {
		t.Errorf("replaced entry: %+v", p)
	}
	if p, err := tab.Lookup("openai:local"); err != nil || !near(p.CachedInput, 0.001) {
		t.Errorf("added alias: %+v %v", p, err)
	}
	if p, _ := tab.Lookup("anthropic:claude-haiku-4-5"); !near(p.Input, 1) {
		t.Errorf("built-in entry lost: %+v", p)
	}
	if p, _ := pricing.Default().Lookup("openai:gpt-4.1-mini"); !near(p.Input, 0.4) {
		t.Errorf("the default table changed: %+v", p)
	}

	for _, c := range []struct{ name, text, want string }{
		{"syntax", "{\n  \"openai:x\": {\"input\": 1,, \"output\": 2}\n}", "bad.json:2: "},
		{"missing output", "{\n  \"openai:x\": {\"input\": 1}\n}", `bad.json:2: "openai:x": field "output": is required`},
		{"unknown field", "{\n  \"openai:x\": {\n    \"input\": 1,\n    \"ouptut\": 2\n  }\n}", `bad.json:4: "openai:x": field "ouptut": unknown field`},
		{"wrong type", "{\n\n  \"openai:x\": {\"input\": \"cheap\", \"output\": 2}\n}", `bad.json:3: "openai:x": field "input": want a float64, got a JSON string`},
		{"negative", "{\"openai:x\": {\"input\": -1, \"output\": 2}}", `bad.json:1: "openai:x": field "input": is negative`},
		{"no provider", "{\n\"gpt-4.1\": {\"input\": 1, \"output\": 2}}", `bad.json:2: "gpt-4.1": the key must be provider:model`},
		{"twice", "{\"openai:x\": {\"input\": 1, \"output\": 2},\n\"openai:x\": {\"input\": 1, \"output\": 2}}", `bad.json:2: "openai:x": the model is listed twice`},
		{"not an object", `[1, 2]`, `bad.json:1: want a JSON object`},
	} {
		_, err := pricing.ParseOverrides("bad.json", strings.NewReader(c.text))
		var fe *pricing.FileError
		if !errors.Is(err, pricing.ErrBadPrices) || !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err %v, want prefix %q", c.name, err, c.want)
		}
	}
	if _, err := pricing.LoadFile(filepath.Join(dir, "missing.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// An override of a model's name reprices its aliases (and dated snapshots
// of them) too; an override of an alias takes that name alone; Entries
// lists each model once, at its current price.
func TestOverrideReachesAliases(t *testing.T) {
	entries, err := pricing.ParseOverrides("prices.json", strings.NewReader(`{
  "openai:gpt-5": {"input": 1, "output": 8},
  "openai:gpt-5-mini": {"input": 0.2, "output": 1.5, "aliases": ["gpt-5-mini-codex"]},
  "openai:gpt-5.1-codex-mini": {"input": 0.3, "output": 2.5}
}`))
	if err != nil {
		t.Fatal(err)
	}
	tab := pricing.Default().Merge(entries...)
	for spec, want := range map[string]float64{
		"openai:gpt-5":                     1,
		"openai:gpt-5.1":                   1,
		"openai:gpt-5-codex":               1,
		"openai:gpt-5-chat-latest":         1,
		"openai:gpt-5.1-2025-11-13":        1,
		"openai:gpt-5-mini":                0.2,
		"openai:gpt-5-mini-codex":          0.2,
		"openai:gpt-5.1-codex-mini":        0.3,
		"openrouter:openai/gpt-5.1":        1,
		"openai:gpt-5-nano":                0.05,
		"anthropic:claude-opus-4-0":        15,
		"anthropic:claude-sonnet-4.5":      3,
		"openai:gpt-4o-2024-05-13":         5,
		"openai:chatgpt-4o-latest":         2.5,
		"anthropic:claude-4-opus-20250514": 15,
	} {
		p, err := tab.Lookup(spec)
		if err != nil || !near(p.Input, want) {
			t.Errorf("%s: %+v %v, want input %g", spec, p, err, want)
		}
	}
	seen := map[string]int{}
	var mini pricing.Entry
	for _, e := range tab.Entries() {
		seen[e.Provider+":"+e.Model]++
		for _, a := range e.Aliases {
			seen[e.Provider+":"+a]++
		}
		if e.Model == "gpt-5-mini" {
			mini = e
		}
		if p, err := tab.Lookup(e.Provider + ":" + e.Model); err != nil || p != e.Price {
			t.Errorf("entry %s at %+v, looked up %+v %v", e.Model, e.Price, p, err)
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
	}
	if seen["openai:gpt-5.1"] != 1 || seen["openai:gpt-5.1-codex-mini"] != 1 || !near(mini.Price.Input, 0.2) || strings.Join(mini.Aliases, ",") != "gpt-5-mini-codex" {
		t.Errorf("entries: gpt-5-mini %+v, names %v", mini, seen)
	}
	if p, _ := pricing.Default().Lookup("openai:gpt-5.1"); !near(p.Input, 1.25) {
		t.Errorf("the default table changed: %+v", p)
	}
}
