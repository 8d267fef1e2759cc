// Package telemetry exports an agent run as OpenTelemetry spans, following
// the GenAI semantic conventions' agent spans: one "invoke_agent" span for
// the run, a span per step, a "chat" span per model call and an
// "execute_tool" span per action (with its verdict). It depends on the
// OpenTelemetry API only; the caller brings the TracerProvider and its
// exporter, and without one nothing is recorded (the API's no-op default).
// It is off unless the embedding program (or `browseragent run --otel`)
// turns it on.
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
	"github.com/browseragent/browseragent/agent/llm"
)

// Instrumentation names the tracer.
const Instrumentation = "github.com/browseragent/browseragent/telemetry"

// Run is one traced agent run. Its methods are safe for concurrent use.
type Run struct {
	tracer oteltrace.Tracer
	span   oteltrace.Span

	mu   sync.Mutex
	step oteltrace.Span // the step in progress, if OnStepStart opened one
	sctx context.Context
}

// Start begins the run span. Pass the returned context to agent.Run so that
// model calls made through Model become its children.
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

// Model wraps m so that each call is a "chat" span with token usage, a
// child of the step in progress (or of the run).
func (r *Run) Model(m llm.Model) llm.Model { return &model{inner: m, run: r} }

// OnStepStart opens the step's span; use it as (or from)
// agent.Settings.OnStepStart. Steps without it get their span from the
// recorded times in OnStepEnd.
func (r *Run) OnStepStart(_ context.Context, n int) {
	ctx, sp := r.tracer.Start(oteltrace.ContextWithSpan(context.Background(), r.span), "step",
		oteltrace.WithAttributes(attribute.Int("browseragent.step", n)))
	r.mu.Lock()
	r.step, r.sctx = sp, ctx
	r.mu.Unlock()
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

// OnStepEnd records a finished step and its actions. Use it as (or from)
// agent.Settings.OnStepEnd. Action spans are built from the recorded
// durations: the actions ran one after another and ended with the step.
func (r *Run) OnStepEnd(_ context.Context, it agent.HistoryItem) {
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

// End closes the run span with the result.
func (r *Run) End(res *agent.Result, err error) {
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

type model struct {
	inner llm.Model
	run   *Run
}

func (m *model) Name() string { return m.inner.Name() }

// Generate traces one call. The span's parent is the step in progress; the
// caller's context still carries cancellation to the provider.
func (m *model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	_, sp := m.run.tracer.Start(m.run.parent(), "chat "+m.inner.Name(), oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", m.inner.Name()),
		))
	defer sp.End()
	resp, err := m.inner.Generate(oteltrace.ContextWithSpan(ctx, sp), req)
	if resp != nil {
		sp.SetAttributes(
			attribute.String("gen_ai.response.model", resp.Model),
			attribute.Int("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
		)
	}
	if err != nil {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, err.Error())
	}
	return resp, err
}

// CloseIdleConnections passes through to providers that pool connections.
func (m *model) CloseIdleConnections() { llm.CloseIdleConnections(m.inner) }
