package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// errReplayComplete ends the Run after the last recorded step when the
// recording had no done; Replay does not report it.
var errReplayComplete = errors.New("agent: replay complete")

// replayPoll is the pause between two observations while a step's
// precondition is awaited.
const replayPoll = 100 * time.Millisecond

// replayQuiet is how long a page must stay unchanged, with the
// precondition still failing, before the step is given up on.
const replayQuiet = time.Second

// replayWaitBetweenActions replaces Settings.WaitBetweenActions in a
// replay: the recorded batches are known to fit one observation, and the
// fence still compares fingerprints before each element action.
const replayWaitBetweenActions = time.Millisecond

func replay(ctx context.Context, b Browser, h *History, opt ReplayOptions) (*ReplayResult, error) {
	steps, _, err := compile(h, opt)
	if err != nil {
		return nil, err
	}
	if opt.MaxHealCalls <= 0 {
		opt.MaxHealCalls = DefaultMaxHealCalls
	}
	if opt.SettleTimeout <= 0 {
		opt.SettleTimeout = DefaultSettleTimeout
	}
	set := opt.Settings
	set.MaxSteps = replayBudget(steps, opt.MaxHealCalls)
	// A heal's failed model calls count as failed steps: enough of them to
	// use up the heal calls must not end the run as failures first (nor
	// make the heal's prompt done-only).
	mf := set.MaxFailures
	if mf <= 0 {
		mf = DefaultMaxFailures
	}
	set.MaxFailures = max(mf, opt.MaxHealCalls+2)
	if set.CompactionModel == nil {
		// Compaction would ask the heal's model a second time in a step.
		set.CompactEverySteps = -1
	}
	set.WaitBetweenActions = replayWaitBetweenActions
	if set.Vision != VisionOn && set.Vision != VisionOff {
		// Screenshots only where a heal asks the model (healShot).
		set.Vision = VisionAuto
	}
	no := false
	set.DirectlyOpenURL = &no
	set.InitialActions = nil
	calls := &atomic.Int64{}
	counted := &countingModel{inner: opt.Model, n: calls}
	var model llm.Model = counted
	if opt.Model == nil {
		model = noModel{}
	}
	switch {
	case set.ExtractModel != nil:
		set.ExtractModel = &countingModel{inner: set.ExtractModel, n: calls}
	case opt.Model != nil:
		set.ExtractModel = counted
	}
	if set.CompactionModel != nil {
		set.CompactionModel = &countingModel{inner: set.CompactionModel, n: calls}
	}
	a, err := newAgent(h.Task, model, b, set)
	if err != nil {
		return nil, err
	}
	rp := newReplayer(ctx, a, steps, opt)
	a.sources = append([]stepSource{rp}, a.sources...)
	res, runErr := a.Run(ctx)
	out := &ReplayResult{Result: res, History: a.History(), ModelCalls: int(calls.Load())}
	if errors.Is(runErr, errReplayComplete) {
		runErr = nil
		if res != nil {
			res.Err = nil
			var keep []string
			for _, e := range res.Errors {
				if !strings.Contains(e, errReplayComplete.Error()) {
					keep = append(keep, e)
				}
			}
			res.Errors = keep
		}
	}
	out.Actions, out.Healed = rp.report()
	if err := ctx.Err(); err != nil {
		// Cancelled: whatever step was pending did not break, it was cut.
		return out, err
	}
	if runErr == nil && rp.cur < len(rp.steps) {
		// The run ended (a heal's done, the step budget, failures) before
		// the recording was replayed through: even a successful done by
		// the heal's model is not the recording's.
		s := rp.steps[rp.cur]
		why := "the run ended before this step"
		switch {
		case res != nil && res.Done:
			why += ": the model called done during a heal"
		case res != nil && len(res.Errors) > 0:
			why += ": " + res.Errors[len(res.Errors)-1]
		}
		if rp.fail != nil {
			// The failure being mended says what broke.
			e := *rp.fail
			e.Err = fmt.Errorf("%w; %s", rp.fail.Err, why)
			runErr = &e
		} else {
			runErr = &ReplayError{Step: s.step, Action: -1, Err: fmt.Errorf("%w: %s", ErrReplay, why)}
		}
	}
	return out, runErr
}

// replayBudget is the Run's MaxSteps: per recorded step, one step per
// action (a fence may cut every batch) and the heals, plus two.
func replayBudget(steps []recStep, heals int) int {
	n := 2
	for _, s := range steps {
		n += len(s.actions) + heals + 1
	}
	return n
}

// countingModel counts the calls made to the model (heals, extracts); a
// call on a context already done is refused uncounted.
type countingModel struct {
	inner llm.Model
	n     *atomic.Int64
}

func (m *countingModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.n.Add(1)
	return m.inner.Generate(ctx, req)
}

func (m *countingModel) Name() string { return m.inner.Name() }

// CloseIdleConnections forwards to the wrapped model.
func (m *countingModel) CloseIdleConnections() { llm.CloseIdleConnections(m.inner) }

// noModel stands in for the model of a replay without one: the replayer
// never lets a step reach it.
type noModel struct{}

func (noModel) Generate(context.Context, llm.Request) (*llm.Response, error) {
	return nil, ErrReplayNeedsModel
}

func (noModel) Name() string { return "none (replay)" }

// failKind is why a recorded step needs mending.
type failKind int

const (
	failNone    failKind = iota
	failFind             // precondition, element not found or ambiguous
	failOutcome          // the action ran with another verdict
)

// replayer is the replay's step source. It is used by the Run goroutine
// only.
type replayer struct {
	a      *Agent
	runCtx context.Context // the Run's: done means cancelled, not broken
	opt    ReplayOptions
	steps  []recStep
	cur    int // the recorded step being replayed
	from   int // its first action not yet run (a fence cut the batch)
	// retry is the action of steps[cur] that runs again although it ran
	// (its outcome or its approval failed); -1 for none. The other
	// actions that ran are never run twice.
	retry int

	// The batch handed to the Run: positions in steps[cur] and matches.
	pending []int
	matches []*match.Result
	// fail is the failure awaiting a heal, kind its kind; healing marks
	// that the step being run is the model's heal.
	fail    *ReplayError
	kind    failKind
	healing bool
	// finalDone: the failure is the last recorded step's done, held back;
	// only the heal's own accepted done can end the replay then.
	finalDone bool
	// healErr is the error of a heal step whose model call failed.
	healErr string
	heals   map[int]int // model calls per recorded step (index in steps)
	healed  map[int]bool
	ran     map[[2]int]bool // (step index, action position) accounted for

	acts [][]ReplayedAction // per recorded step, per action
}

func newReplayer(ctx context.Context, a *Agent, steps []recStep, opt ReplayOptions) *replayer {
	r := &replayer{a: a, runCtx: ctx, opt: opt, steps: steps, retry: -1, heals: map[int]int{}, healed: map[int]bool{}, ran: map[[2]int]bool{}}
	r.acts = make([][]ReplayedAction, len(steps))
	for i, s := range steps {
		for _, ra := range s.actions {
			x := ReplayedAction{Step: s.step, Action: ra.pos, Name: ra.rec.Name, Expected: ra.rec.Verdict}
			if ra.skip != "" {
				x.Skipped, x.Why = true, ra.skip
			}
			r.acts[i] = append(r.acts[i], x)
		}
	}
	return r
}

// report returns the per-action account and how many steps a heal mended.
func (r *replayer) report() ([]ReplayedAction, int) {
	var out []ReplayedAction
	for i, as := range r.acts {
		for _, x := range as {
			if !x.Skipped && !r.ran[[2]int{i, x.Action}] {
				x.Skipped, x.Why = true, "not reached: the replay ended before it"
			}
			out = append(out, x)
		}
	}
	return out, len(r.healed)
}

func (r *replayer) next(ctx context.Context, st *events.BrowserState, item *HistoryItem) (*AgentOutput, StepSource, []string, bool, error) {
	r.pending, r.matches = nil, nil
	if err := r.runCtx.Err(); err != nil {
		return nil, SourceReplay, nil, false, err
	}
	if r.cur >= len(r.steps) {
		return nil, SourceReplay, nil, false, errReplayComplete
	}
	if r.healErr != "" {
		// The heal's model call failed: another would most likely fail
		// alike (a bad key, an outage), and the failure is the model's.
		f := r.fail
		if f == nil {
			f = r.errAt(r.cur, -1, st, ErrReplayNeedsModel)
		}
		e := *f
		e.Err = fmt.Errorf("%w: the heal's model call failed: %s (%w)", ErrReplayNeedsModel, r.healErr, f.Err)
		return nil, SourceReplay, nil, false, &e
	}
	if r.fail != nil && (!r.healing || r.finalDone) {
		// A failure left by the last step's outcome: heal it now. A held
		// back final done is not replayed again: only the heal's done
		// can end the replay.
		return r.heal(ctx, st, item)
	}
	// Candidates for this step, in order of preference: after a heal for
	// an outcome, the next step first (the heal did the action); otherwise
	// the step itself first.
	type target struct{ idx, from int }
	targets := []target{{r.cur, r.from}}
	if r.healing && r.cur+1 < len(r.steps) {
		nxt := target{r.cur + 1, 0}
		if r.kind == failOutcome {
			targets = []target{nxt, targets[0]}
		} else {
			targets = append(targets, nxt)
		}
	}
	var (
		calls []ActionCall
		ms    []*match.Result
		pos   []int
		fail  *ReplayError
		got   = -1
	)
	err := r.settle(ctx, st, item, func() bool {
		fail = nil
		for _, t := range targets {
			if t.idx != r.cur && r.steps[t.idx].free && !r.movedTo(t.idx, st.URL) {
				// A step beginning with a navigation runs anywhere: only
				// the page it was recorded on says the heal moved on.
				continue
			}
			c, m, p, f := r.check(st, t.idx, t.from)
			if f == nil {
				calls, ms, pos, got = c, m, p, t.idx
				return true
			}
			if fail == nil || t.idx == r.cur {
				fail = f // the step's own failure is the one to report
			}
		}
		return false
	})
	if err != nil && r.runCtx.Err() != nil {
		return nil, SourceReplay, nil, false, r.runCtx.Err()
	}
	// Otherwise err is the step's own deadline: the failure stands.
	wasHealing := r.healing
	r.healing = false
	if got < 0 {
		if errors.Is(fail.Err, ErrReplayNeedsModel) {
			return nil, SourceReplay, nil, false, fail
		}
		r.fail, r.kind = fail, failFind
		return r.heal(ctx, st, item)
	}
	if got != r.cur {
		// The heal did the recorded step: its remaining actions are
		// accounted to the heal's step.
		for _, ra := range r.steps[r.cur].actions[r.from:] {
			x := &r.acts[r.cur][ra.pos]
			switch {
			case x.Skipped:
			case r.ran[[2]int{r.cur, ra.pos}]:
				x.Healed = true // it ran, with another outcome, and the heal mended it
			default:
				x.Skipped, x.Healed, x.Why = true, true, "done by the model's heal"
				x.RunStep = item.Step - 1
				r.ran[[2]int{r.cur, ra.pos}] = true
			}
		}
		r.healed[r.cur] = true
		r.cur, r.from, r.retry = got, 0, -1
	} else if wasHealing {
		r.healed[r.cur] = true
	}
	r.fail, r.kind = nil, failNone
	r.pending, r.matches = pos, ms
	s := r.steps[r.cur]
	out := &AgentOutput{NextGoal: s.goal, EvaluationPreviousGoal: s.eval, Action: calls}
	if s.goal == "" {
		out.NextGoal = fmt.Sprintf("replay recorded step %d", s.step)
	}
	return out, SourceReplay, nil, true, nil
}

// movedTo reports whether the page at url is where steps[idx] was
// recorded, and that page differs from the current step's (so being there
// is evidence that the current step was done).
func (r *replayer) movedTo(idx int, url string) bool {
	at := r.steps[idx].at
	return at != "" && !sameRoute(r.steps[r.cur].at, at) && sameRoute(at, url)
}

// heal hands the failed step to the model, or ends the replay when there
// is none (or its calls are used up).
func (r *replayer) heal(ctx context.Context, st *events.BrowserState, item *HistoryItem) (*AgentOutput, StepSource, []string, bool, error) {
	f := r.fail
	if r.opt.Model == nil {
		return nil, SourceReplay, nil, false, f
	}
	if r.heals[r.cur] >= r.opt.MaxHealCalls {
		e := *f
		e.Err = fmt.Errorf("%w after %d heal calls (%w)", ErrReplayNeedsModel, r.heals[r.cur], f.Err)
		return nil, SourceReplay, nil, false, &e
	}
	r.heals[r.cur]++
	r.healing = true
	r.healShot(ctx, st, item)
	return nil, SourceHeal, []string{r.healNudge(f)}, false, nil
}

// healShot re-observes the page with a screenshot for the heal's model
// (replayed steps take none unless Settings.Vision is VisionOn), unless
// Settings.Vision is VisionOff.
func (r *replayer) healShot(ctx context.Context, st *events.BrowserState, item *HistoryItem) {
	if r.a.set.Vision == VisionOff || len(st.Screenshot) > 0 {
		return
	}
	start := time.Now()
	ns, err := bus.Call(ctx, r.a.browser.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true, Screenshot: r.a.screenshotOptions()})
	item.ObserveTime += time.Since(start)
	if err != nil {
		r.a.log.Debug("agent: replay heal observation failed", zap.Error(err))
		return
	}
	*st = ns
	item.State.URL, item.State.Title, item.State.Tabs, item.State.Fingerprint, item.State.DOMError = ns.URL, ns.Title, ns.Tabs, ns.Fingerprint, ns.Error
	if len(ns.Screenshot) > 0 {
		dir := filepath.Join(r.a.runDir, "screenshots")
		p := filepath.Join(dir, fmt.Sprintf("step_%d%s", item.Step, screenshotExt(&ns)))
		if os.MkdirAll(dir, 0o755) == nil && os.WriteFile(p, ns.Screenshot, 0o644) == nil {
			item.State.ScreenshotPath = p
		}
	}
}

// healNudge is the heal's instruction: the recorded intent and what broke.
func (r *replayer) healNudge(f *ReplayError) string {
	s := r.steps[r.cur]
	var b strings.Builder
	b.WriteString("REPLAY REPAIR: a recorded run of this task is being replayed without you, and one recorded step broke. ")
	fmt.Fprintf(&b, "Recorded step %d", s.step)
	if s.goal != "" {
		fmt.Fprintf(&b, " aimed to: %s", clipLine(s.goal, 300))
	}
	if s.eval != "" {
		fmt.Fprintf(&b, " (after: %s)", clipLine(s.eval, 200))
	}
	b.WriteString(". It did:")
	for _, ra := range s.actions[r.from:] {
		if ra.skip != "" {
			continue
		}
		fmt.Fprintf(&b, " %s", ra.rec.Name)
		if ra.rec.Element != nil {
			fmt.Fprintf(&b, " on %s", describeElement(ra.rec.Element))
		}
		b.WriteString(";")
	}
	fmt.Fprintf(&b, " What went wrong: %s. ", clipLine(errors.Unwrap(f).Error(), 300))
	if r.finalDone {
		b.WriteString("This was the recorded run's final answer. Do what the task still needs on the current page, then call done with your own answer: the replay ends with your done.")
	} else {
		b.WriteString("Do only what this step needs on the current page (for example open the menu or close the banner that hides the control, or do the action on the element that now stands for it), then stop: do not go on with the rest of the task, and do not call done. The replay resumes after your step.")
	}
	return r.a.secrets.scrub(b.String())
}

// settle polls fresh observations until ok holds on a settled page (the
// same fingerprint twice in a row), the page stays unchanged with no
// request pending for max(replayQuiet, SettleTimeout/5) with ok still
// false (it is not going to change by itself: the failure stands, and a
// heal need not wait), or SettleTimeout passes. It returns ctx's error
// when ctx ended the wait (the failure stands too).
func (r *replayer) settle(ctx context.Context, st *events.BrowserState, item *HistoryItem, ok func() bool) error {
	if ok() {
		return nil
	}
	quiet := max(replayQuiet, r.opt.SettleTimeout/5)
	deadline := time.Now().Add(r.opt.SettleTimeout)
	prev, quietSince := st.Fingerprint, time.Now()
	t := time.NewTimer(replayPoll)
	defer t.Stop()
poll:
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			ok()
			return ctx.Err()
		case <-t.C:
		}
		start := time.Now()
		ns, err := bus.Call(ctx, r.a.browser.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
		item.ObserveTime += time.Since(start)
		if err == nil {
			*st = ns
			item.State.URL, item.State.Title, item.State.Tabs, item.State.Fingerprint, item.State.DOMError = ns.URL, ns.Title, ns.Tabs, ns.Fingerprint, ns.Error
			same := ns.Fingerprint == prev && ns.Error == ""
			if same && ok() {
				return nil
			}
			switch {
			case !same || len(ns.PendingRequests) > 0:
				// A page still loading may yet show what is missing.
				prev, quietSince = ns.Fingerprint, time.Now()
			case time.Since(quietSince) >= quiet:
				break poll
			}
		} else {
			r.a.log.Debug("agent: replay re-observation failed", zap.Error(err))
		}
		t.Reset(replayPoll)
	}
	ok() // leaves the last failure in place
	return nil
}

// check tests steps[idx]'s precondition from action from on st and, when
// it holds, returns the calls to run (indexes rewritten; a choice by
// position carries its approval note), their matches and their positions
// in the step. Actions of the current step that ran already are left out,
// except the one to retry.
func (r *replayer) check(st *events.BrowserState, idx, from int) ([]ActionCall, []*match.Result, []int, *ReplayError) {
	s := r.steps[idx]
	if !s.free && from == 0 && !sameRoute(s.url, st.URL) {
		e := r.errAt(idx, -1, st, fmt.Errorf("%w: the page is %s, the recorded step ran on %s", ErrReplayPrecondition, r.a.secrets.scrub(st.URL), s.url))
		return nil, nil, nil, e
	}
	var (
		calls []ActionCall
		ms    []*match.Result
		pos   []int
	)
	for _, ra := range s.actions[from:] {
		if ra.skip != "" || (idx == r.cur && ra.pos != r.retry && r.ran[[2]int{idx, ra.pos}]) {
			continue
		}
		c := ra.call
		var m *match.Result
		if ra.rec.Name == "extract" && r.a.extractModel == nil {
			return nil, nil, nil, r.errAt(idx, ra.pos, st, fmt.Errorf("%w: extract asks a model a question about the page", ErrReplayNeedsModel))
		}
		if ra.rec.Name == "switch_tab" || ra.rec.Name == "close_tab" {
			var p TabParams
			_ = json.Unmarshal(c.Params, &p)
			id, ok := mapTab(p.TabID, s.tabs, st.Tabs)
			if !ok {
				return nil, nil, nil, r.errAt(idx, ra.pos, st, fmt.Errorf("%w: no single open tab is on the page the recorded tab %s showed", ErrReplayPrecondition, p.TabID))
			}
			c.Params = setParam(c.Params, "tab_id", id)
		}
		if ra.rec.Name == "drag" && hasParam(c.Params, "to_index") {
			// Only the dragged element is recorded: the recorded drop
			// index would name whatever has that number now.
			return nil, nil, nil, r.errAt(idx, ra.pos, st, fmt.Errorf("%w: a drag onto an element is not replayed (its drop element is not recorded)", ErrReplayPrecondition))
		}
		spec, _ := r.a.spec(ra.rec.Name)
		switch e := ra.rec.Element; {
		case e != nil && paramIndex(c.Params) > 0:
			res := match.Find(*e, st.Elements)
			res.Candidates = r.scrubCandidates(res.Candidates)
			m = &res
			if !res.Found() {
				sent := ErrReplayNoMatch
				if len(res.Candidates) > 1 && res.Candidates[0].Score == res.Candidates[1].Score && res.Candidates[0].Score >= 0.5 {
					sent = ErrReplayAmbiguous
				}
				f := r.errAt(idx, ra.pos, st, fmt.Errorf("%w on the page", sent))
				f.Candidates = res.Candidates
				return nil, nil, nil, f
			}
			c.Params = setParam(c.Params, "index", res.Index)
			if res.Ambiguous {
				c.approval = &approvalNote{match: m, note: fmt.Sprintf("replay: %d elements look like the recorded %s; element %d is chosen by its position (%d of %d) — allow it?", e.Similar, describeElement(e), res.Index, e.Ordinal, e.Similar)}
			}
		case e == nil && spec.TargetsIndex && paramIndex(c.Params) > 0:
			// Recorded without its element (an older history): the
			// recorded index is all there is, a choice by position.
			i := paramIndex(c.Params)
			m = &match.Result{Index: i, Strategy: match.ByPosition, Ambiguous: true}
			c.approval = &approvalNote{match: m, note: fmt.Sprintf("replay: the recorded %s has no record of its element (an older history); element %d is its recorded index, a choice by position alone — allow it?", ra.rec.Name, i)}
		}
		calls = append(calls, c)
		ms = append(ms, m)
		pos = append(pos, ra.pos)
	}
	return calls, ms, pos, nil
}

// scrubCandidates returns cs with the secrets their names show (they come
// from the live page) scrubbed.
func (r *replayer) scrubCandidates(cs []match.Candidate) []match.Candidate {
	if len(cs) == 0 {
		return cs
	}
	out := slices.Clone(cs)
	for i := range out {
		out[i].Name = r.a.secrets.scrub(out[i].Name)
	}
	return out
}

// errAt is a ReplayError for steps[idx]'s action at pos (-1: the step).
func (r *replayer) errAt(idx, pos int, st *events.BrowserState, err error) *ReplayError {
	s := r.steps[idx]
	e := &ReplayError{Step: s.step, Action: pos, Err: err}
	if st != nil {
		e.URL = r.a.secrets.scrub(st.URL)
	}
	if pos >= 0 {
		ra := s.actions[pos]
		e.Name = ra.rec.Name
		e.Element = describeElement(ra.rec.Element)
	}
	return e
}

func (r *replayer) stepped(ctx context.Context, st *events.BrowserState, out *AgentOutput, item *HistoryItem) error {
	if item.Source == SourceHeal {
		r.healStepped(item) // next decides what the heal achieved
		return nil
	}
	if r.pending == nil {
		return nil
	}
	pos, ms := r.pending, r.matches
	r.pending, r.matches = nil, nil
	s := r.steps[r.cur]
	var (
		first     *ReplayError
		firstPos  int
		firstKind failKind
		stop      bool // the failure is not for a heal
		ran       int
	)
	// Every action that ran is accounted (a batch goes on after an
	// outcome that differs); the first failure is the step's.
	for i, rec := range item.Actions {
		if i >= len(pos) {
			break
		}
		ra := s.actions[pos[i]]
		if rec.Name != ra.rec.Name {
			break
		}
		ran = i + 1
		item.Actions[i].Match = ms[i]
		x := &r.acts[r.cur][ra.pos]
		x.RunStep, x.Match, x.Got, x.Error = item.Step, ms[i], rec.Verdict, rec.Error
		r.ran[[2]int{r.cur, ra.pos}] = true
		x.Healed = r.healed[r.cur]
		x.Replayed = rec.Name == "done" && rec.Result.Done
		var f error
		kind := failOutcome
		switch {
		case rec.Denied && ms[i] != nil && ms[i].Ambiguous:
			f = fmt.Errorf("%w: %w: the approval policy refused the choice by position (%s)", ErrReplayAmbiguous, ErrDenied, deniedReason(rec.Error))
			kind = failFind // a heal may name the element
		case rec.Denied:
			f = fmt.Errorf("%w: %w: %s", ErrReplayOutcome, ErrDenied, deniedReason(rec.Error))
		case rec.Error != "":
			f = fmt.Errorf("%w: the action failed: %s", ErrReplayOutcome, rec.Error)
		case rec.Name == "done" && !rec.Result.Done:
			f = fmt.Errorf("%w: the replayed done was held back: %s", ErrReplayOutcome, clipLine(rec.Result.Text, 200))
		case !compatibleVerdict(ra.rec.Name, ra.rec.Verdict, rec.Verdict):
			f = fmt.Errorf("%w: expected %s, got %s", ErrReplayOutcome, ra.rec.Verdict, rec.Verdict)
		}
		if f == nil || first != nil {
			continue
		}
		first, firstPos, firstKind = r.errAt(r.cur, ra.pos, st, f), ra.pos, kind
		if ms[i] != nil {
			first.Candidates = ms[i].Candidates
		}
		// A denial is the policy's word, not the page's: no heal.
		stop = rec.Denied && kind == failOutcome
		if rec.Name == "done" && !rec.Result.Done && r.cur == len(r.steps)-1 {
			r.finalDone = true
		}
	}
	if first != nil {
		if item.Error == "" {
			item.Error = r.a.secrets.scrub(first.Error())
		}
		if r.opt.Model == nil || stop {
			return first
		}
		r.fail, r.kind = first, firstKind
		// A retry runs the failed action again, and only the actions
		// after it that did not run.
		r.from, r.retry = firstPos, firstPos
		return nil
	}
	if ran < len(pos) {
		// A fence cut the batch: the rest runs on the next observation.
		r.from = pos[ran]
		return nil
	}
	r.cur, r.from, r.retry = r.cur+1, 0, -1
	if r.cur >= len(r.steps) && !doneAccepted(item.Actions) {
		return errReplayComplete
	}
	return nil
}

// healStepped takes note of what a heal's step did: an accepted done
// healing the last recorded step's held-back done ends the replay; a
// failed model call is kept for next to report.
func (r *replayer) healStepped(item *HistoryItem) {
	if r.finalDone && doneAccepted(item.Actions) {
		for _, ra := range r.steps[r.cur].actions {
			if ra.rec.Name != "done" || ra.skip != "" {
				continue
			}
			x := &r.acts[r.cur][ra.pos]
			x.Healed, x.Replayed, x.Error, x.Why = true, false, "", "held back on replay: the heal's own done ended the run"
			x.RunStep = item.Step
			r.ran[[2]int{r.cur, ra.pos}] = true
		}
		r.healed[r.cur] = true
		r.cur, r.from, r.retry = len(r.steps), 0, -1
		r.fail, r.kind, r.healing, r.finalDone = nil, failNone, false, false
		return
	}
	if item.Error != "" && len(item.Actions) == 0 {
		r.healErr = item.Error
	}
}

// deniedReason is a denied record's reason, without act's prefix.
func deniedReason(recErr string) string {
	return strings.TrimPrefix(recErr, "denied by approval policy: ")
}

// compatibleVerdict reports whether a replayed action's verdict agrees
// with the recorded one: the same verdict; anything but failed when the
// recording saw no change or recorded no verdict; navigated for a recorded
// changed (the site now reloads); and no_change for a recorded changed of
// an action that sets a field's value (the field need not re-render); and
// any verdict but failed for navigate, which succeeds only once the tab
// is at its URL (a browser already there reloads it: no URL change).
func compatibleVerdict(action string, want, got events.Verdict) bool {
	switch {
	case got == events.VerdictFailed:
		return false
	case want == got, want == "", want == events.VerdictNoChange, action == "navigate":
		return true
	case want == events.VerdictChanged && got == events.VerdictNavigated:
		return true
	case want == events.VerdictChanged && got == events.VerdictNoChange:
		_, value := varParam[action]
		return value
	}
	return false
}
