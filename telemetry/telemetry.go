// Package telemetry exports an agent run as OpenTelemetry spans, following
// the GenAI semantic conventions' agent spans: one "invoke_agent" span for
// the run, a span per step, a "chat" span per model call and an
// "execute_tool" span per action (with its verdict). It depends on the
// OpenTelemetry API only; the caller brings the TracerProvider and its
// exporter, and without one nothing is recorded (the API's no-op default).
// It is off unless the embedding program (or `browseragent run --otel`)
// turns it on: Start returns a Run, which is an agent.Observer to put in
// agent.Settings.Observers.
package telemetry

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/browseragent/browseragent/agent"
)

// Instrumentation names the tracer.
const Instrumentation = "github.com/browseragent/browseragent/telemetry"

// Run is one traced agent run, an agent.Observer. Its methods are safe for
// concurrent use.
type Run struct {
	tracer oteltrace.Tracer
	span   oteltrace.Span

	mu   sync.Mutex
	step oteltrace.Span // the step in progress, if OnStepStart opened one
	sctx context.Context
}

// Start begins the run span; put the Run in agent.Settings.Observers (its
// RunEnded closes the span). The returned context carries the run span for
// the caller's own spans.
func Start(ctx context.Context, tp oteltrace.TracerProvider, task, model string) (context.Context, *Run) {
	tr := tp.Tracer(Instrumentation)
	ctx, span := tr.Start(ctx, "invoke_agent browseragent",
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "browseragent"),
			attribute.String("gen_ai.request.model", model),
			attribute.Int("browseragent.task.length", len(task)),
		))
	return ctx, &Run{tracer: tr, span: span}
}

var _ agent.Observer = (*Run)(nil)

// RunStarted implements agent.Observer; the run span began in Start.
func (r *Run) RunStarted(context.Context, agent.RunInfo) {}

// StepStarted implements agent.Observer: it opens the step's span. Steps
// reported only by StepEnded get their span from the recorded times.
func (r *Run) StepStarted(_ context.Context, n int) {
	ctx, sp := r.tracer.Start(oteltrace.ContextWithSpan(context.Background(), r.span), "step",
		oteltrace.WithAttributes(attribute.Int("browseragent.step", n)))
	r.mu.Lock()
	r.step, r.sctx = sp, ctx
	r.mu.Unlock()
}

// ModelCalled implements agent.Observer: a "chat" span with token usage, a
// child of the step in progress (or of the run), timed as the call was.
func (r *Run) ModelCalled(_ context.Context, c agent.ModelCall) {
	_, sp := r.tracer.Start(r.parent(), "chat "+c.Model, oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithTimestamp(c.Started),
		oteltrace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", c.Model),
			attribute.String("browseragent.model_purpose", c.Purpose),
		))
	if c.ResponseModel != "" {
		sp.SetAttributes(attribute.String("gen_ai.response.model", c.ResponseModel))
	}
	sp.SetAttributes(
		attribute.Int("gen_ai.usage.input_tokens", c.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", c.Usage.CompletionTokens),
	)
	if c.Err != nil {
		sp.RecordError(c.Err)
		sp.SetStatus(codes.Error, c.Err.Error())
	}
	sp.End(oteltrace.WithTimestamp(c.Started.Add(c.Latency)))
}

// parent is the context new spans hang under: the open step, else the run.
func (r *Run) parent() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sctx != nil {
		return r.sctx
	}
	return oteltrace.ContextWithSpan(context.Background(), r.span)
}

// StepEnded implements agent.Observer: it records a finished step and its
// actions. Action spans are built from the recorded durations: the actions
// ran one after another and ended with the step.
func (r *Run) StepEnded(_ context.Context, it agent.HistoryItem) {
	r.mu.Lock()
	step, ctx := r.step, r.sctx
	r.step, r.sctx = nil, nil
	r.mu.Unlock()
	if step == nil {
		ctx, step = r.tracer.Start(oteltrace.ContextWithSpan(context.Background(), r.span), "step",
			oteltrace.WithTimestamp(it.StartedAt))
	}
	step.SetAttributes(
		attribute.Int("browseragent.step", it.Step),
		attribute.String("url.full", it.State.URL),
		attribute.Int("gen_ai.usage.input_tokens", it.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", it.Usage.CompletionTokens),
	)
	if it.Output != nil {
		step.SetAttributes(attribute.String("browseragent.next_goal", it.Output.NextGoal))
	}
	// Actions ran one after another and ended with the step.
	var total time.Duration
	for _, a := range it.Actions {
		total += a.Duration
	}
	start := it.EndedAt.Add(-total)
	for _, a := range it.Actions {
		_, sp := r.tracer.Start(ctx, "execute_tool "+a.Name, oteltrace.WithTimestamp(start),
			oteltrace.WithAttributes(
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", a.Name),
				attribute.String("browseragent.risk", string(a.Risk)),
				attribute.String("browseragent.verdict", string(a.Verdict)),
				attribute.String("gen_ai.tool.call.arguments", compact(a.Params)),
			))
		if a.Error != "" {
			sp.SetStatus(codes.Error, a.Error)
		}
		start = start.Add(a.Duration)
		sp.End(oteltrace.WithTimestamp(start))
	}
	if it.Error != "" {
		step.SetStatus(codes.Error, it.Error)
	}
	step.End(oteltrace.WithTimestamp(it.EndedAt))
}

// RunEnded implements agent.Observer: it closes the run span with the
// result.
func (r *Run) RunEnded(_ context.Context, res *agent.Result, err error) {
	if res != nil {
		r.span.SetAttributes(
			attribute.Bool("browseragent.done", res.Done),
			attribute.Bool("browseragent.success", res.Success),
			attribute.Int("browseragent.steps", res.Steps),
			attribute.Int("gen_ai.usage.input_tokens", res.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", res.Usage.CompletionTokens),
		)
		if !res.Success {
			r.span.SetStatus(codes.Error, "task not completed successfully")
		}
	}
	if err != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
	}
	r.span.End()
}

func compact(raw json.RawMessage) string {
	if len(raw) > 1024 {
		return string(raw[:1024]) + "…"
	}
	return string(raw)
}
