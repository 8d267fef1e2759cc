package trace

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// The agent observer writes model, step and run records; a failed action's
// verdict and evidence reach the step record.
func TestAgentObserverRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	o := NewAgentObserver(w, dir)
	var _ agent.Observer = o
	ctx := context.Background()
	t0 := time.Now()
	o.RunStarted(ctx, agent.RunInfo{Task: "buy milk", Model: "m", Started: t0})
	o.StepStarted(ctx, 1)
	o.ModelCalled(ctx, agent.ModelCall{Step: 1, Purpose: "step", Model: "m", ResponseModel: "m-2026", PromptChars: 900, Images: 1,
		Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 40}, Started: t0, Latency: 1500 * time.Millisecond})
	o.ModelCalled(ctx, agent.ModelCall{Step: 1, Purpose: "extract", Model: "m", Err: errors.New("rate limited")})
	outcome := &events.ActionOutcome{Verdict: events.VerdictFailed, Detail: "element 5 is gone",
		Before: events.Evidence{URL: "http://shop.test/", Fingerprint: "a"}, After: events.Evidence{URL: "http://shop.test/", Fingerprint: "a"}}
	o.StepEnded(ctx, agent.HistoryItem{Step: 1, StartedAt: t0, EndedAt: t0.Add(2 * time.Second), State: agent.StateRecord{URL: "http://shop.test/"},
		Actions: []agent.ActionRecord{{Name: "click", Params: json.RawMessage(`{"index":5}`), Verdict: events.VerdictFailed, Error: "element 5 is gone",
			Result: agent.ActionResult{Text: "Clicked element 5: failed.", Outcome: outcome}}}})
	o.RunEnded(ctx, &agent.Result{Done: true, FinalText: "no milk", Steps: 1}, nil)
	if err := w.Close(); err != nil || o.Err() != nil {
		t.Fatal(err, o.Err())
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var models []Model
	var steps []Step
	var runs []Run
	for _, r := range recs {
		switch r.Type {
		case TypeModel:
			var m Model
			mustDecode(t, r.Data, &m)
			models = append(models, m)
		case TypeStep:
			var s Step
			mustDecode(t, r.Data, &s)
			steps = append(steps, s)
		case TypeRun:
			var run Run
			mustDecode(t, r.Data, &run)
			runs = append(runs, run)
		}
	}
	if len(models) != 2 || models[0].Model != "m-2026" || models[0].PromptTokens != 300 || models[0].LatencyMS != 1500 || models[1].Error != "rate limited" {
		t.Fatalf("model records %+v", models)
	}
	if len(steps) != 1 || len(steps[0].Actions) != 1 {
		t.Fatalf("step records %+v", steps)
	}
	a := steps[0].Actions[0]
	var before events.Evidence
	mustDecode(t, a.Before, &before)
	if a.Verdict != "failed" || a.Error == "" || a.Detail != "element 5 is gone" || before.URL != "http://shop.test/" {
		t.Fatalf("failed action record %+v", a)
	}
	if len(runs) != 1 || runs[0].Task != "buy milk" || runs[0].FinalText != "no milk" || runs[0].DurationMS <= 0 {
		t.Fatalf("run records %+v", runs)
	}
}

// A failed handler's value is written with its error (it is the failure's
// evidence); a zero value with an error is not.
func TestBusRecordKeepsAFailedHandlersValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New()
	w.ObserveBus(b)
	type result struct{ Verdict string }
	k := bus.Kind[int, result]{Name: "Act"}
	if _, err := bus.Handle(b, k, "h", func(_ context.Context, n int) (result, error) {
		if n == 1 {
			return result{Verdict: "failed"}, errors.New("covered")
		}
		return result{}, errors.New("no evidence")
	}); err != nil {
		t.Fatal(err)
	}
	_, _ = bus.Call(context.Background(), b, k, 1)
	_, _ = bus.Call(context.Background(), b, k, 2)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var withData, withoutData int
	for _, r := range recs {
		if r.Type != TypeBus || r.Phase != "handler_finished" {
			continue
		}
		switch r.Error {
		case "":
			t.Fatalf("handler record without its error: %+v", r)
		default:
			if string(r.Data) == `{"Verdict":"failed"}` {
				withData++
			} else if len(r.Data) == 0 {
				withoutData++
			}
		}
	}
	if withData != 1 || withoutData != 1 {
		t.Fatalf("records with the failed value %d, without a value %d; want 1 and 1", withData, withoutData)
	}
}

func mustDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}
