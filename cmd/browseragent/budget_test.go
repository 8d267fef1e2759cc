package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
)

// Bad budget flags are usage errors (exit 2) that say what is wrong, before
// any browser starts: a malformed prices file names its line and field, a
// cost budget needs the model's price, budgets are not negative.
func TestRunBudgetFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(bad, []byte("{\n  \"openai:my-model\": {\"input\": 0.1}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(good, []byte(`{"openai:my-model": {"input": 0.1, "output": 0.2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "openai:gpt-4.1-mini", "--prices", bad}, bad + `:2: "openai:my-model": field "output": is required`},
		{[]string{"--model", "openai:my-model", "--max-cost", "0.5"}, "--max-cost needs the model's price: pricing: no price known for the model: openai:my-model"},
		{[]string{"--model", "openai:gpt-4.1-mini", "--compaction-model", "openai:my-model", "--prices", good, "--max-cost", "0.5", "--max-tokens", "-3"}, "must not be negative"},
	} {
		r := cli(t, []string{"OPENAI_API_KEY=test"}, append(append([]string{"run"}, c.args...), "say ok")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// run prints the run's tokens and cost at the end; with --max-tokens too
// small for the first call it makes no call, prints the reason, puts the
// budget in --json and exits 4.
func TestRunCostAndBudgetExit(t *testing.T) {
	model := newModelServer(t) // 100 prompt and 20 completion tokens a call
	model.script(`{"memory":"Nothing to do.","action":[{"done":{"text":"ok","success":true}}]}`)
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:gpt-4.1-mini", "--base-url", model.URL+"/v1",
		"--vision", "off", "--max-cost", "0.05", "--out", filepath.Join(t.TempDir(), "run"), "say ok")
	// gpt-4.1-mini: 100 × $0.40 + 20 × $1.60 per million = $0.000072.
	if r.code != 0 || !strings.Contains(r.stdout, "tokens 100 in / 20 out · $0.000072\n") {
		t.Fatalf("run exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	model.script(`{"memory":"Nothing to do.","action":[{"done":{"text":"ok","success":true}}]}`)
	r = cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:gpt-4.1-mini", "--base-url", model.URL+"/v1",
		"--vision", "off", "--max-tokens", "100", "--json", "--out", filepath.Join(t.TempDir(), "run"), "say ok")
	if r.code != exitBudget || !strings.Contains(r.stderr, "stopped before the model call of step") || !strings.Contains(r.stderr, "of the 100 budget") {
		t.Fatalf("budget run exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitBudget, r.stdout, r.stderr)
	}
	model.mu.Lock()
	calls := model.steps
	model.mu.Unlock()
	if calls != 0 {
		t.Fatalf("%d model calls, want none", calls)
	}
	var out struct {
		Result struct {
			Done   bool
			Errors []string
			Cost   pricing.Cost
		}
		Budget *agent.BudgetError `json:"budget_exceeded"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if out.Budget == nil || out.Budget.Budget != "tokens" || out.Budget.MaxTokens != 100 || out.Budget.SpentTokens != 0 || out.Result.Done ||
		len(out.Result.Errors) == 0 || out.Result.Errors[len(out.Result.Errors)-1] != out.Budget.Error() {
		t.Fatalf("json outcome %+v", out)
	}
}

// The live progress line of a step: its tokens by kind and its cost.
func TestStepProgressLine(t *testing.T) {
	var b bytes.Buffer
	p, _ := pricing.Default().Lookup("openai:gpt-4.1-mini")
	u := llm.Usage{PromptTokens: 3100, CachedTokens: 2048, CompletionTokens: 150, ReasoningTokens: 64}
	printStep(&b, agent.HistoryItem{Step: 3, Usage: u, Cost: p.Cost(u)})
	// 1,052 × $0.40 + 2,048 × $0.10 + 150 × $1.60 per million = $0.000866.
	if want := "  tokens 3.1k in (2.0k cached) / 150 out (64 reasoning) · $0.00087\n"; !strings.HasSuffix(b.String(), want) {
		t.Fatalf("progress:\n%q\nwant suffix %q", b.String(), want)
	}
	b.Reset()
	printStep(&b, agent.HistoryItem{Step: 4, Usage: u, Cost: pricing.Cost{Unpriced: []string{"openai:local"}}})
	if !strings.HasSuffix(b.String(), "· cost unknown (no price for openai:local)\n") {
		t.Fatalf("progress:\n%q", b.String())
	}
	b.Reset()
	printStep(&b, agent.HistoryItem{Step: 0})
	if strings.Contains(b.String(), "tokens") {
		t.Fatalf("a step without a model call shows tokens: %q", b.String())
	}
}

// mcp takes the budget flags too: run_task stopped by --max-tokens is a
// tool error that says why, and no model call is made; --max-cost needs
// the model's price.
func TestMCPRunTaskBudget(t *testing.T) {
	if r := cli(t, nil, "mcp", "--model", "openai:test", "--max-cost", "1"); r.code != exitUsage || !strings.Contains(r.stderr, "--max-cost needs the model's price") {
		t.Fatalf("mcp --max-cost with an unpriced model: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := cli(t, nil, "mcp", "--help"); !strings.Contains(r.stderr, "stop each run_task before a model call that would bring its cost over") || !strings.Contains(r.stderr, "the extract tool's single model calls are priced but not budgeted") {
		t.Fatalf("mcp --help:\n%s", r.stderr)
	}
	model := newModelServer(t)
	model.script(`{"memory":"Nothing to do.","action":[{"done":{"text":"ok","success":true}}]}`)
	cmd, stderr := mcpCommand(t, []string{"OPENAI_API_KEY=test"}, "--out", filepath.Join(t.TempDir(), "mcp"),
		"--model", "openai:gpt-4.1-mini", "--base-url", model.URL+"/v1", "--vision", "off", "--max-tokens", "100")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_task", Arguments: map[string]any{"task": "say ok"}})
	if err != nil {
		t.Fatalf("run_task: protocol error %v\nstderr:\n%s", err, stderr)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "Not finished: stopped before the model call of step") || !strings.Contains(text, "of the 100 budget") {
		t.Fatalf("run_task: error %v\n%s", res.IsError, text)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.steps != 0 {
		t.Fatalf("%d model calls, want none", model.steps)
	}
}
