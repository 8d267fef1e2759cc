package agent

import (
	"context"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
)

// Observer is told about a run as it happens: what an audit trace, a
// telemetry exporter or a progress display needs, without wrapping the
// model or the callbacks. The agent calls its methods on the Run goroutine,
// in this order: RunStarted; per step StepStarted, ModelCalled (each model
// call of the step, the extraction model's included), StepEnded; the
// judge's ModelCalled (Settings.Judge a ModelJudge); RunEnded.
// Calls never happen under a lock; an observer that blocks blocks the run.
// Embed BaseObserver to implement only some methods.
type Observer interface {
	RunStarted(ctx context.Context, r RunInfo)
	StepStarted(ctx context.Context, step int)
	ModelCalled(ctx context.Context, c ModelCall)
	StepEnded(ctx context.Context, item HistoryItem)
	RunEnded(ctx context.Context, res *Result, err error)
}

// RunInfo describes a Run as it starts.
type RunInfo struct {
	Task    string // the first task
	Tasks   []string
	Model   string // the model's name
	Started time.Time
}

// ModelCall is one model call of a step.
type ModelCall struct {
	Step int
	// Purpose says what the call was for: "step" (choose actions),
	// "extract" (the extract action's model), "compact" (a summary of
	// older history, Settings.CompactEverySteps) or "judge" (a ModelJudge's
	// verdict, after the last step).
	Purpose string
	// Model is the name of the model asked; ResponseModel the one that
	// answered, when the provider says.
	Model, ResponseModel string
	// PromptChars and Images measure the request; Usage is the provider's
	// token count (zero when the call failed before an answer).
	PromptChars int
	Images      int
	Usage       llm.Usage
	// Cost is the call's price from Settings.Prices (Cost.Unpriced names
	// the model when its price is unknown).
	Cost    pricing.Cost
	Started time.Time
	Latency time.Duration
	Err     error
}

// BaseObserver implements Observer with methods that do nothing; embed it
// to implement only what you need.
type BaseObserver struct{}

// RunStarted implements Observer.
func (BaseObserver) RunStarted(context.Context, RunInfo) {}

// StepStarted implements Observer.
func (BaseObserver) StepStarted(context.Context, int) {}

// ModelCalled implements Observer.
func (BaseObserver) ModelCalled(context.Context, ModelCall) {}

// StepEnded implements Observer.
func (BaseObserver) StepEnded(context.Context, HistoryItem) {}

// RunEnded implements Observer.
func (BaseObserver) RunEnded(context.Context, *Result, error) {}

// observedModel wraps each of the agent's models (step, extract, compact,
// judge): before a call it asks the meter whether the budget allows it
// (a refused call is not made: Generate returns the *BudgetError); after
// it, the meter prices the call and adds it to the step's and the run's
// totals, and the observers are told.
type observedModel struct {
	inner   llm.Model
	a       *Agent
	purpose string
}

func (m *observedModel) Name() string { return m.inner.Name() }

// BoundsAttempts says what the wrapped model says (llm.BoundsAttempts).
func (m *observedModel) BoundsAttempts() bool { return llm.BoundsAttempts(m.inner) }

func (m *observedModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if be := m.a.meter.check(m.a.curStep, m.purpose, m.inner.Name(), req); be != nil {
		return nil, be
	}
	c := ModelCall{Step: m.a.curStep, Purpose: m.purpose, Model: m.inner.Name(), Started: time.Now()}
	c.PromptChars, c.Images = promptChars(req)
	resp, err := m.inner.Generate(ctx, req)
	c.Latency = time.Since(c.Started)
	if resp != nil {
		c.Usage, c.ResponseModel = resp.Usage, resp.Model
	}
	c.Err = err
	c.Cost = m.a.meter.record(m.purpose, m.inner.Name(), req, resp)
	for _, o := range m.a.set.Observers {
		o.ModelCalled(ctx, c)
	}
	return resp, err
}

// promptChars measures a request's messages: text characters and images.
func promptChars(req llm.Request) (chars, images int) {
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			chars += len(p.Text)
			if p.Image != nil {
				images++
			}
		}
	}
	return chars, images
}

// CloseIdleConnections passes through to providers that pool connections.
func (m *observedModel) CloseIdleConnections() { llm.CloseIdleConnections(m.inner) }
