package trace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/match"
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
	o.StepEnded(ctx, agent.HistoryItem{Step: 1, StartedAt: t0, EndedAt: t0.Add(2 * time.Second), State: agent.StateRecord{URL: "http://shop.test/",
		Blocked: []events.BlockedRequests{{Host: "tracker.example", Count: 3, Types: []string{"script", "fetch"}}}},
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
	if bl := steps[0].Blocked; len(bl) != 1 || bl[0].Host != "tracker.example" || bl[0].Count != 3 || len(bl[0].Types) != 2 {
		t.Fatalf("step record blocked %+v", bl)
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

// A RequestBlocked event is written whole, though it has a Summary: its
// resource type and initiator are the evidence an auditor reads.
func TestBusRecordKeepsRequestBlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New()
	w.ObserveBus(b)
	if _, err := bus.Handle(b, events.RequestBlocked, "dom", func(context.Context, events.RequestBlockedEvent) (events.None, error) {
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ev := events.RequestBlockedEvent{TargetID: "T1", TabID: "T1", URL: "https://tracker.example/a.js", Host: "tracker.example",
		ResourceType: "Script", Initiator: "https://shop.test/", Reason: "host not allowed", Layer: "interception"}
	if _, err := bus.Call(context.Background(), b, events.RequestBlocked, ev); err != nil {
		t.Fatal(err)
	}
	// Other summarized events still keep only their summary (typed text
	// must not reach the trace).
	k := bus.Kind[events.TypeTextEvent, events.None]{Name: "TypeText"}
	if _, err := bus.Handle(b, k, "actions", func(context.Context, events.TypeTextEvent) (events.None, error) {
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Call(context.Background(), b, k, events.TypeTextEvent{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
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
	var got []events.RequestBlockedEvent
	for _, r := range recs {
		if r.Type != TypeBus || r.Phase != "dispatched" {
			continue
		}
		switch r.Kind {
		case events.RequestBlocked.Name:
			var e events.RequestBlockedEvent
			mustDecode(t, r.Data, &e)
			if r.Summary != ev.Summary() {
				t.Errorf("summary %q", r.Summary)
			}
			got = append(got, e)
		case "TypeText":
			if len(r.Data) != 0 {
				t.Errorf("a summarized event was written whole: %s", r.Data)
			}
		}
	}
	if len(got) != 1 || got[0] != ev {
		t.Fatalf("RequestBlocked records %+v, want %+v", got, ev)
	}
}

// A step's plan and history summary, and a model call's purpose, reach the
// trace.
func TestStepRecordPlanAndCompaction(t *testing.T) {
	it := agent.HistoryItem{Step: 7,
		Plan:       []agent.PlanItem{{Text: "find the form", Status: agent.PlanDone}, {Text: "fill it", Status: agent.PlanCurrent}},
		Compaction: &agent.Compaction{FromStep: 2, ToStep: 5, Summary: "read two pages", CharsBefore: 900, CharsAfter: 300},
	}
	st := StepRecord(t.TempDir(), it)
	if len(st.Plan) != 2 || st.Plan[1] != (PlanItem{Text: "fill it", Status: "current"}) {
		t.Errorf("plan %+v", st.Plan)
	}
	if c := st.Compaction; c == nil || c.FromStep != 2 || c.ToStep != 5 || c.Summary != "read two pages" || c.CharsAfter != 300 {
		t.Errorf("compaction %+v", st.Compaction)
	}
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	o := NewAgentObserver(w, dir)
	o.ModelCalled(context.Background(), agent.ModelCall{Step: 7, Purpose: "compact", Model: "m"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var m Model
	for _, r := range recs {
		if r.Type == TypeModel {
			if err := json.Unmarshal(r.Data, &m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m.Purpose != "compact" {
		t.Fatalf("model record %+v", m)
	}
}

// A step's source, an action's element and how it was found, and the
// run's cache counts reach the trace, which still verifies; editing a
// match's score breaks the chain.
func TestTraceRecordsSourcesMatchesAndCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := Create(path, WithSecrets(map[string]string{"card": "4111-1111"}))
	if err != nil {
		t.Fatal(err)
	}
	o := NewAgentObserver(w, dir)
	ctx := context.Background()
	t0 := time.Now()
	o.RunStarted(ctx, agent.RunInfo{Task: "apply", Started: t0})
	elem := &match.Element{Tag: "button", Role: "button", Name: "Apply for this job", XPath: "/html/body/main[1]/button[1]",
		Attrs: map[string]string{"id": "apply", "title": "card 4111-1111"}, Hash: "0011", StableHash: "2233", Ordinal: 1, Similar: 1}
	res := &match.Result{Index: 12, Strategy: match.ByRoleName, Score: 0.93, Unique: true,
		Candidates: []match.Candidate{{Index: 12, Tag: "button", Name: "Apply for this job", Score: 0.93}, {Index: 4, Tag: "button", Name: "Delete", Score: 0.2}}}
	click := agent.ActionRecord{Name: "click", Params: json.RawMessage(`{"index":12}`), Verdict: events.VerdictNavigated, Element: elem, Match: res}
	o.StepEnded(ctx, agent.HistoryItem{Step: 1, Source: agent.SourceReplay, StartedAt: t0, EndedAt: t0.Add(time.Second),
		Actions: []agent.ActionRecord{click, {Name: "wait", Params: json.RawMessage(`{"seconds":1}`)}}})
	o.StepEnded(ctx, agent.HistoryItem{Step: 2, Source: agent.SourceHeal, StartedAt: t0, EndedAt: t0.Add(time.Second)})
	o.StepEnded(ctx, agent.HistoryItem{Step: 3, StartedAt: t0, EndedAt: t0.Add(time.Second)})
	o.RunEnded(ctx, &agent.Result{Done: true, Steps: 3, Cache: &agent.CacheStats{Hits: 2, Misses: 1, Invalidated: 1, Stored: 1}}, nil)
	if err := w.Close(); err != nil || o.Err() != nil {
		t.Fatal(err, o.Err())
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatalf("verify: %v", err)
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	var run Run
	for _, r := range recs {
		switch r.Type {
		case TypeStep:
			var s Step
			mustDecode(t, r.Data, &s)
			steps = append(steps, s)
		case TypeRun:
			mustDecode(t, r.Data, &run)
		}
	}
	if len(steps) != 3 || steps[0].Source != agent.SourceReplay || steps[1].Source != agent.SourceHeal || steps[2].Source != agent.SourceModel {
		t.Fatalf("step sources %+v", steps)
	}
	a := steps[0].Actions[0]
	if a.Element == nil || a.Element.Name != "Apply for this job" || a.Element.Hash != "0011" || a.Element.Attrs["id"] != "apply" {
		t.Fatalf("element %+v", a.Element)
	}
	if a.Element.Attrs["title"] != "card <secret:card>" {
		t.Fatalf("a secret in an element's attribute reached the trace: %q", a.Element.Attrs["title"])
	}
	if m := a.Match; m == nil || m.Strategy != match.ByRoleName || m.Score != 0.93 || !m.Unique || len(m.Candidates) != 2 || m.Candidates[1].Name != "Delete" {
		t.Fatalf("match %+v", a.Match)
	}
	if w := steps[0].Actions[1]; w.Element != nil || w.Match != nil {
		t.Fatalf("a wait has an element or match: %+v", w)
	}
	if run.Cache == nil || *run.Cache != (agent.CacheStats{Hits: 2, Misses: 1, Invalidated: 1, Stored: 1}) {
		t.Fatalf("run cache %+v", run.Cache)
	}

	// The match is covered by the chain.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `"score":0.93`, `"score":0.99`, 1)
	if edited == string(raw) {
		t.Fatal("no match score in the trace")
	}
	if _, err := Verify(strings.NewReader(edited)); !errors.Is(err, ErrTampered) {
		t.Fatalf("an edited match score verified: %v", err)
	}

	// Without the cache the run record has no cache field.
	if b, _ := json.Marshal(Run{}); strings.Contains(string(b), "cache") {
		t.Fatalf("an empty run record names the cache: %s", b)
	}
}
