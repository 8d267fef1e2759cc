package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
)

// AgentObserver writes an agent run into a trace: a TypeModel record per
// model call, a TypeStep record per step (goal, actions with verdicts and
// evidence — failed ones included —, the screenshot's path and SHA-256) and
// a TypeRun record with the result. It is an agent.Observer: put it in
// agent.Settings.Observers. Write errors are kept (Err), not returned: an
// agent does not stop because its trace failed, but the caller can tell.
type AgentObserver struct {
	agent.BaseObserver
	w       *Writer
	dir     string
	task    string
	started time.Time
	err     error
}

// NewAgentObserver returns an observer writing to w. dir is the directory
// the trace file is in: screenshot paths are recorded relative to it, so
// that the report finds them next to the trace.
func NewAgentObserver(w *Writer, dir string) *AgentObserver {
	return &AgentObserver{w: w, dir: dir}
}

// Err returns the first write error, if any.
func (o *AgentObserver) Err() error { return o.err }

func (o *AgentObserver) write(typ string, data any) {
	if err := o.w.Write(typ, data); err != nil && o.err == nil {
		o.err = err
	}
}

// RunStarted implements agent.Observer.
func (o *AgentObserver) RunStarted(_ context.Context, r agent.RunInfo) {
	o.task, o.started = r.Task, r.Started
}

// ModelCalled implements agent.Observer.
func (o *AgentObserver) ModelCalled(_ context.Context, c agent.ModelCall) {
	rec := Model{
		Step: c.Step, Model: c.Model, Purpose: c.Purpose, PromptChars: c.PromptChars, Images: c.Images,
		Tokens: tokens(c.Usage), LatencyMS: float64(c.Latency) / float64(time.Millisecond),
	}
	cost := c.Cost
	rec.Cost = &cost
	if c.ResponseModel != "" {
		rec.Model = c.ResponseModel
	}
	if c.Err != nil {
		rec.Error = c.Err.Error()
	}
	o.write(TypeModel, rec)
}

// StepEnded implements agent.Observer.
func (o *AgentObserver) StepEnded(_ context.Context, it agent.HistoryItem) {
	o.write(TypeStep, StepRecord(o.dir, it))
}

// RunEnded implements agent.Observer.
func (o *AgentObserver) RunEnded(_ context.Context, res *agent.Result, _ error) {
	if res == nil {
		return
	}
	run := Run{
		Task: o.task, Success: res.Success, Done: res.Done, FinalText: res.FinalText, Output: res.StructuredOutput,
		Errors: res.Errors, Steps: res.Steps, Tokens: tokens(res.Usage), Cache: res.Cache,
	}
	if res.Usage != (llm.Usage{}) || !res.Cost.Known() || res.Cost.Total > 0 {
		cost := res.Cost
		run.Cost = &cost
	}
	var be *agent.BudgetError
	if errors.As(res.Err, &be) {
		run.BudgetExceeded = be.Error()
	}
	if !o.started.IsZero() {
		run.DurationMS = float64(time.Since(o.started)) / float64(time.Millisecond)
	}
	o.write(TypeRun, run)
}

// tokens copies a usage's counts by kind.
func tokens(u llm.Usage) Tokens {
	return Tokens{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens}
}

// StepRecord turns an agent history item into a TypeStep record's data; the
// screenshot is referenced relative to dir with its SHA-256.
func StepRecord(dir string, it agent.HistoryItem) Step {
	st := Step{
		Step: it.Step, Source: it.Source, URL: it.State.URL, Title: it.State.Title, Error: it.Error,
		DurationMS: float64(it.EndedAt.Sub(it.StartedAt)) / float64(time.Millisecond),
		Tokens:     tokens(it.Usage),
	}
	if it.Cost.Total > 0 || !it.Cost.Known() || it.Usage != (llm.Usage{}) {
		cost := it.Cost
		st.Cost = &cost
	}
	if o := it.Output; o != nil {
		st.Evaluation, st.Memory, st.NextGoal = o.EvaluationPreviousGoal, o.Memory, o.NextGoal
	}
	for _, p := range it.Plan {
		st.Plan = append(st.Plan, PlanItem{Text: p.Text, Status: string(p.Status)})
	}
	if c := it.Compaction; c != nil {
		st.Compaction = &Compaction{FromStep: c.FromStep, ToStep: c.ToStep, Summary: c.Summary, Error: c.Error, CharsBefore: c.CharsBefore, CharsAfter: c.CharsAfter}
	}
	for _, b := range it.State.Blocked {
		st.Blocked = append(st.Blocked, Blocked{Host: b.Host, Count: b.Count, Types: b.Types})
	}
	for _, ar := range it.Actions {
		ta := Action{Name: ar.Name, Params: ar.Params, Verdict: string(ar.Verdict), Detail: ar.Result.Text, Error: ar.Error,
			Requests: ar.Requests, RequestsOmitted: ar.RequestsOmitted, Mark: ar.Mark, Element: ar.Element, Match: ar.Match}
		if oc := ar.Result.Outcome; oc != nil {
			ta.Before, _ = json.Marshal(oc.Before)
			ta.After, _ = json.Marshal(oc.After)
			if oc.Detail != "" {
				ta.Detail = oc.Detail
			}
		}
		st.Actions = append(st.Actions, ta)
	}
	st.Screenshot, st.ScreenshotSHA256 = shotRef(dir, it.State.ScreenshotPath)
	st.AfterScreenshot, st.AfterScreenshotSHA256 = shotRef(dir, it.State.AfterScreenshotPath)
	st.ObserveMS, st.ModelMS, st.ActionsMS = ms(it.ObserveTime), ms(it.ModelTime), ms(it.ActionsTime)
	st.Viewport = it.State.Viewport
	for _, h := range it.Handoffs {
		// The trace names files relative to its directory, as for the
		// step's own screenshots: a run directory that moved stays whole.
		h.ScreenshotPath, _ = shotRef(dir, h.ScreenshotPath)
		st.Handoffs = append(st.Handoffs, h)
	}
	st.Notes = it.Notes
	return st
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// shotRef is a screenshot's path relative to dir and its SHA-256; empty
// when p is "" or unreadable.
func shotRef(dir, p string) (rel, sum string) {
	if p == "" {
		return "", ""
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", ""
	}
	h := sha256.Sum256(b)
	if rel, err = filepath.Rel(dir, p); err != nil {
		return "", ""
	}
	return rel, hex.EncodeToString(h[:])
}
