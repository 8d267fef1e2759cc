package telemetry

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	ctx, run := Start(context.Background(), tp, "apply for the job", "scripted")
	run.StepStarted(ctx, 1)
	run.ModelCalled(ctx, agent.ModelCall{Step: 1, Purpose: "step", Model: "scripted", Started: time.Now(), Latency: 5 * time.Millisecond, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}})
	t0 := time.Now().Add(-2 * time.Second)
	run.StepEnded(ctx, agent.HistoryItem{
		Step: 1, StartedAt: t0, EndedAt: t0.Add(time.Second),
		Actions: []agent.ActionRecord{
			{Name: "click", Params: json.RawMessage(`{"index":3}`), Verdict: events.VerdictNavigated, Risk: agent.RiskSubmit, Duration: 200 * time.Millisecond},
			{Name: "input", Params: json.RawMessage(`{"index":4,"text":"<secret>pw</secret>"}`), Error: "element gone", Verdict: events.VerdictFailed, Duration: 100 * time.Millisecond},
		},
	})
	run.RunEnded(ctx, &agent.Result{Done: true, Success: true, Steps: 1}, nil)

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	root, ok := byName["invoke_agent browseragent"]
	if !ok || len(spans) != 5 {
		t.Fatalf("spans: %d %v", len(spans), names(spans))
	}
	if byName["step"].Parent.SpanID() != root.SpanContext.SpanID() {
		t.Error("the step is not a child of the run span")
	}
	if byName["chat scripted"].Parent.SpanID() != byName["step"].SpanContext.SpanID() {
		t.Error("the model call is not a child of its step")
	}
	click, input := byName["execute_tool click"], byName["execute_tool input"]
	if click.Parent.SpanID() != byName["step"].SpanContext.SpanID() {
		t.Error("action span is not a child of its step")
	}
	if !click.EndTime.Equal(input.StartTime) || !input.EndTime.Equal(t0.Add(time.Second)) {
		t.Errorf("action timing: click %v-%v, input %v-%v", click.StartTime, click.EndTime, input.StartTime, input.EndTime)
	}
	if input.Status.Code != codes.Error {
		t.Error("failed action not marked as error")
	}
	var verdict string
	for _, a := range click.Attributes {
		if a.Key == "browseragent.verdict" {
			verdict = a.Value.AsString()
		}
	}
	if verdict != "navigated" {
		t.Errorf("verdict attribute %q", verdict)
	}
}

func names(ss tracetest.SpanStubs) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// Without StepStarted the step span comes from the recorded times.
func TestStepWithoutStart(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	_, run := Start(context.Background(), tp, "t", "m")
	t0 := time.Now().Add(-time.Second)
	run.StepEnded(context.Background(), agent.HistoryItem{Step: 3, StartedAt: t0, EndedAt: t0.Add(500 * time.Millisecond), Error: "model timed out"})
	run.RunEnded(context.Background(), nil, nil)
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "step" || !spans[0].StartTime.Equal(t0) || spans[0].Status.Code != codes.Error {
		t.Fatalf("spans %v", names(spans))
	}
}
