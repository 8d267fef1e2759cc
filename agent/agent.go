// Package agent is the step loop of a browser agent: observe the page through
// the session's bus, ask the model for up to MaxActionsPerStep actions, run
// them under the batch fences, record the step, repeat until the model calls
// done, the step budget runs out, or failures pile up.
//
// The agent never speaks CDP: it drives a Browser (a *session.Session, or
// anything with a bus) by dispatching catalog events (events.ClickElement,
// events.TypeText, events.Evaluate, events.PageText, ...) and reading the
// typed results, whose ActionOutcome verdict reaches the model — also when
// the action failed, since a failed handler's result travels with its error.
//
// See docs/agent.md for the loop, the prompt layout, the actions, the fences
// and how to add an action.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// Errors of Run.
var (
	// ErrRunning: Run, Step or AddTask was called while a Run or Step is
	// in progress (AddTask: while a stepped run is open).
	ErrRunning = errors.New("agent: already running")
	// ErrNoModel / ErrNoBrowser: New was given nil.
	ErrNoModel   = errors.New("agent: no model")
	ErrNoBrowser = errors.New("agent: no browser")
	// ErrNotStarted: Run was called on a browser that has no bus (a session
	// not started, or stopped).
	ErrNotStarted = errors.New("agent: the browser is not started")
	// ErrMaxSteps is recorded in Result.Errors when the budget ran out.
	ErrMaxSteps = errors.New("agent: failed to complete the task in the maximum number of steps")
	// ErrTooManyFailures is recorded when the run stopped after
	// MaxFailures consecutive failures and the forced final answer failed too.
	ErrTooManyFailures = errors.New("agent: stopped after too many consecutive failures")
)

// Result is the outcome of a Run.
type Result struct {
	// Done reports whether the model called done (or the loop ended the run
	// with a failed done after an empty reply).
	Done bool
	// FinalText is done's text (or the structured data's JSON text).
	FinalText string
	// Success is the agent's own claim in done (false without a done).
	Success bool
	// StructuredOutput is done's data when Settings.OutputSchema is set and
	// the model answered with valid data; nil otherwise.
	StructuredOutput json.RawMessage
	// Errors are the step-level errors of the run, in order, and the reason
	// the run stopped when it stopped without done.
	Errors []string
	// Steps is the number of steps this Run took (step 0 included).
	Steps int
	// Usage sums the token usage of this Run's model calls (the judge's
	// and failed calls' that got a reply included) and the tokens actions
	// reported of their own models (ActionResult.Usage): the meter's count,
	// the same the budget and Cost use. A resumed agent's first Run
	// includes what the recorded steps of the run it continues used
	// (Resume): the task's total, which the budget bounds.
	Usage llm.Usage
	// Cost is what this Run's model calls cost, by kind of token, priced
	// by Settings.Prices (Cost.Unpriced names the models whose price is
	// unknown: the cost is then partial); a resumed run's includes the
	// recorded steps', as Usage does.
	Cost pricing.Cost
	// Cache counts the action cache's hits and misses when Settings.Cache
	// is set; nil otherwise.
	Cache *CacheStats `json:",omitempty"`
	// Judgement is the judge's verdict when Settings.Judge is set.
	Judgement *Judgement
	// JudgeError is the judge's failure, if any.
	JudgeError string
	// Err is why the run ended early when EndRun ended it (its cause),
	// when the browser could not go on
	// (errors.Is(Err, events.ErrBrowserGone): the process exited or the
	// connection was lost and not restored) or the budget would have been
	// exceeded (a *BudgetError, errors.Is(Err, ErrBudgetExceeded)); nil
	// otherwise. Run returns it too. Not serialised: Errors holds its text.
	Err error `json:"-"`
}

// Agent runs tasks in one browser session. Create it with New; Run it; add a
// follow-up task with AddTask and Run again (the history carries over). An
// Agent is not safe for concurrent Runs (Run returns ErrRunning).
type Agent struct {
	set     Settings
	model   llm.Model
	browser Browser
	tools   *Registry
	secrets *secrets
	fs      *FileSystem
	runDir  string
	exclude map[string]bool
	// alts replace built-in actions for this agent: "done" when
	// OutputSchema is set, "click" when coordinate clicks are offered.
	alts   map[string]ActionSpec
	outSch json.RawMessage
	log    *zap.Logger
	// extractModel is Settings.ExtractModel as given (nil: the step model).
	extractModel llm.Model
	// compactor writes history summaries: CompactionModel, else
	// extractModel, else the step model.
	compactor llm.Model
	// meter prices the model calls and keeps the budget.
	meter *meter

	mu      sync.Mutex
	running bool
	tasks   []string
	history History
	// run is the open run (nil between runs); ended marks a run that
	// ended with no task added since (Step then refuses to go on).
	// Written under mu by the stepping goroutine, which alone reads run
	// otherwise.
	run   *runState
	ended bool
	// restore is a resumed agent's first step (Resume), nil once run;
	// carried is the recorded steps the first run's MaxSteps counts, and
	// carriedUsage and carriedCost what they used (the budget counts it).
	restore      *restorePlan
	carried      int
	carriedUsage llm.Usage
	carriedCost  pricing.Cost

	// Owned by the Run goroutine.
	curStep   int // the step in progress (for model-call reports)
	nextStep  int
	failures  int
	readState []string
	wantShot  bool
	loop      *loopDetector
	started   bool
	plan      []PlanItem
	compact   compactState
	// runCtx is the Run's context: a hand-off to a person is bounded by
	// it and HumanTimeout, not by the step's deadline.
	runCtx context.Context
	// handoffs are the step's hand-offs so far; handoffFrom is when its
	// request_human began (the step's deadline passing after it is not the
	// step's fault); asked maps a policy and page to its hand-off in this
	// Run; inInitial marks InitialActions running (their hand-off's By).
	handoffs    []Handoff
	handoffFrom time.Time
	asked       map[string]askedState
	inInitial   bool
	writes      writeCheck // the done check (writecheck.go)
	// sources answer steps before the model (replay, action cache); halt
	// is a source's reason to end the Run after the current step.
	sources []stepSource
	halt    error
	// cache is the action cache's source (Settings.Cache), nil when off;
	// stepDoneOnly marks a step that may only call done (the cache then
	// keeps out of it).
	cache        *cacheSource
	stepDoneOnly bool
}

// New returns an agent for task, driving model over b (a *session.Session,
// which the caller starts and stops). It creates the run directory and the
// file system.
func New(task string, model llm.Model, b Browser, set Settings) (*Agent, error) {
	if model == nil {
		return nil, ErrNoModel
	}
	if strings.TrimSpace(task) == "" {
		return nil, fmt.Errorf("%w: empty task", ErrSettings)
	}
	return newAgent(task, model, b, set)
}

// newAgent is New without the model check: a Driver's agent has a model
// only while it runs a task.
func newAgent(task string, model llm.Model, b Browser, set Settings) (*Agent, error) {
	if b == nil {
		return nil, ErrNoBrowser
	}
	set, err := set.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Agent{set: set, browser: b, log: set.Logger, exclude: map[string]bool{}, extractModel: set.ExtractModel}
	a.meter = newMeter(set)
	if err := a.pricedForBudget(model); err != nil {
		return nil, err
	}
	a.tools = set.Tools
	if a.tools == nil {
		a.tools = DefaultRegistry()
	}
	for _, n := range set.ExcludeActions {
		a.exclude[n] = true
	}
	if set.Vision != VisionAuto {
		a.exclude["screenshot"] = true
	}
	if set.Human == nil {
		a.exclude["request_human"] = true // nobody to hand the browser to
	}
	a.setModel(model)
	if len(set.OutputSchema) > 0 {
		spec, sch, err := structuredDone(set.OutputSchema)
		if err != nil {
			return nil, err
		}
		a.alt("done", *spec)
		a.outSch = sch
	}
	a.secrets = newSecrets(set.SensitiveData, set.SensitiveDataByDomain, set.DomainMatcher)
	if len(set.SensitiveData) > 0 {
		// Upstream's warning (seed A8): a secret without a domain can be
		// typed into any page the model reaches.
		a.log.Warn("agent: SensitiveData is usable on every domain; prefer SensitiveDataByDomain", zap.Int("secrets", len(set.SensitiveData)))
	}
	a.runDir = set.RunDir
	if a.runDir == "" {
		d, err := os.MkdirTemp("", "browseragent-run-")
		if err != nil {
			return nil, fmt.Errorf("agent: run dir: %w", err)
		}
		a.runDir = d
	}
	if a.fs, err = NewFileSystem(filepath.Join(a.runDir, "files")); err != nil {
		return nil, err
	}
	a.tasks = []string{task}
	a.history.Task = task
	a.loop = newLoopDetector(set.LoopWindow, set.LoopNudges)
	if set.Cache != nil {
		// After any replay source: a replayed step is the recording's.
		a.cache = newCacheSource(a, set.Cache)
		a.sources = append(a.sources, a.cache)
	}
	return a, nil
}

// setModel makes model the step model, and the extraction model unless
// Settings.ExtractModel names one; both are wrapped to report their calls
// to the observers. A nil model leaves extraction to Settings.ExtractModel.
func (a *Agent) setModel(model llm.Model) {
	a.model = model
	a.offerCoordinateClicks(model)
	a.set.ExtractModel = a.extractModel
	if a.set.ExtractModel == nil {
		a.set.ExtractModel = model
	}
	a.compactor = a.set.CompactionModel
	if a.compactor == nil {
		a.compactor = a.set.ExtractModel
	}
	if model != nil {
		a.model = &observedModel{inner: model, a: a, purpose: "step"}
	}
	if a.set.ExtractModel != nil {
		a.set.ExtractModel = &observedModel{inner: a.set.ExtractModel, a: a, purpose: "extract"}
	}
	if a.compactor != nil {
		a.compactor = &observedModel{inner: a.compactor, a: a, purpose: "compact"}
	}
}

// RunDir returns the directory holding the run's files and screenshots.
func (a *Agent) RunDir() string { return a.runDir }

// FileSystem returns the agent's file area.
func (a *Agent) FileSystem() *FileSystem { return a.fs }

// History returns a copy of the run's history so far.
func (a *Agent) History() *History {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := History{Task: a.history.Task, Tasks: append([]string(nil), a.history.Tasks...), Items: append([]HistoryItem(nil), a.history.Items...)}
	return &h
}

// AddTask sets a follow-up task for the next Run (or Step after a run
// ended). It returns ErrRunning while a run is open (a stepped run not
// ended included). The model sees the first
// task as <initial_user_request> and the follow-ups after it; history, files
// and step numbers carry over, and no URL is opened for it.
func (a *Agent) AddTask(task string) error {
	if strings.TrimSpace(task) == "" {
		return fmt.Errorf("%w: empty task", ErrSettings)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running || a.run != nil {
		return ErrRunning
	}
	a.ended = false
	a.tasks = append(a.tasks, task)
	a.history.Tasks = append(a.history.Tasks, task)
	a.failures = 0
	return nil
}

// Run works on the task until done, MaxSteps steps, or MaxFailures
// consecutive failures plus the forced final answer. When it returns, the
// history so far is in RunDir/history.json. It returns the Result;
// the error is non-nil only when the run could not proceed (ctx cancelled,
// session not started, browser gone, or Settings.MaxCost/MaxTokens would
// have been exceeded by the next model call: a *BudgetError): the Result
// then holds what happened so far. Run is Step until the Result is non-nil;
// it continues a run that Step opened, and opens a new one after a run
// ended (with the same tasks, or the follow-up AddTask added).
func (a *Agent) Run(ctx context.Context) (*Result, error) {
	if err := a.enter(); err != nil {
		return nil, err
	}
	defer a.leave()
	for {
		_, res, err := a.stepRun(ctx)
		if res != nil {
			return res, err
		}
	}
}

// Step runs one step of the run and returns its item. The first Step of a
// run opens it (observers see RunStarted) and runs the initial actions
// (Settings.InitialActions, or the task's URL opened directly) as step 0
// when there are any; each later Step runs one step. When the run ends
// (done, MaxSteps, MaxFailures, the budget, a source's halt, the browser
// gone, ctx cancelled) Step returns the Result (non-nil) with the step
// that ended it (a zero item when the run ended before a step began, e.g.
// the browser gone or ctx cancelled before it), history.json saved and
// RunEnded told once; the error is then what Run would return. While the
// run goes on the Result and the error are nil. Run is Step until the
// Result is non-nil.
//
// A Step after the run ended returns ErrRunEnded, unless AddTask added a
// follow-up task since: then it opens the next run, as Run does. Step must
// not be called concurrently with itself, Run or EndRun (ErrRunning).
// Cancelling ctx mid-step ends the step as it ends Run's, and the run
// with it (the Result holds ctx's error).
func (a *Agent) Step(ctx context.Context) (HistoryItem, *Result, error) {
	if err := a.enter(); err != nil {
		return HistoryItem{}, nil, err
	}
	defer a.leave()
	a.mu.Lock()
	ended := a.ended && a.run == nil
	a.mu.Unlock()
	if ended {
		return HistoryItem{}, nil, ErrRunEnded
	}
	return a.stepRun(ctx)
}

// EndRun ends a stepped run early (cancellation, a worker shutting down):
// cause (ErrEndedEarly when nil) goes to the Result's Errors and Err,
// history.json is saved and observers see RunEnded with the Result and
// cause. It returns that Result; nil when no run is open (never stepped,
// or already ended: EndRun is idempotent) or when a Step or Run is in
// progress (cancel its ctx, let it return, then call EndRun). A Step after
// it returns ErrRunEnded.
func (a *Agent) EndRun(ctx context.Context, cause error) *Result {
	a.mu.Lock()
	if a.running || a.run == nil {
		a.mu.Unlock()
		return nil
	}
	a.running = true
	a.mu.Unlock()
	defer a.leave()
	if cause == nil {
		cause = ErrEndedEarly
	}
	res := a.run.res
	res.Err = cause
	res.Errors = append(res.Errors, "the run ended: "+a.secrets.scrub(cause.Error()))
	_, res, _ = a.closeRun(ctx, HistoryItem{}, cause)
	return res
}

// runState is the open run's progress between Steps.
type runState struct {
	res     *Result
	initial bool // step 0 (the initial actions) is behind
	i       int  // the loop's steps taken (MaxSteps bounds it)
}

// enter marks the agent busy for a Run, Step or EndRun.
func (a *Agent) enter() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return ErrRunning
	}
	if a.model == nil {
		return ErrNoModel
	}
	a.running = true
	return nil
}

func (a *Agent) leave() {
	a.mu.Lock()
	a.running = false
	a.mu.Unlock()
}

// openRun starts a run: its Result, the meter's and the cache's counts,
// RunStarted.
func (a *Agent) openRun(ctx context.Context) {
	res := &Result{}
	if a.cache != nil {
		res.Cache = a.cache.startRun()
	}
	a.meter.startRun()
	a.meter.carry(a.carriedUsage, a.carriedCost)
	a.carriedUsage, a.carriedCost = llm.Usage{}, pricing.Cost{}
	a.asked = nil // a policy asks once per page and Run (a follow-up task asks again)
	a.mu.Lock()
	a.run = &runState{res: res, i: a.carried}
	a.carried = 0
	a.ended = false
	a.mu.Unlock()
	for _, o := range a.set.Observers {
		o.RunStarted(ctx, RunInfo{Task: a.tasks[0], Tasks: append([]string(nil), a.tasks...), Model: a.model.Name(), Started: a.set.Now()})
	}
}

// closeRun ends the open run: usage and cost, history.json, RunEnded. It
// returns item, the Result and runErr for Step.
func (a *Agent) closeRun(ctx context.Context, item HistoryItem, runErr error) (HistoryItem, *Result, error) {
	res := a.run.res
	res.Usage, res.Cost = a.meter.endRun()
	if err := a.History().Save(filepath.Join(a.runDir, "history.json")); err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	a.mu.Lock()
	a.run = nil
	a.ended = true
	a.mu.Unlock()
	for _, o := range a.set.Observers {
		o.RunEnded(ctx, res, runErr)
	}
	return item, res, runErr
}

// stepRun is Step's work, the agent marked busy: it opens a run when none
// is open, then runs step 0 or the loop's next step.
func (a *Agent) stepRun(ctx context.Context) (HistoryItem, *Result, error) {
	a.runCtx = ctx
	defer func() { a.runCtx = nil }()
	if a.run == nil {
		a.openRun(ctx)
		if a.browser.Bus() == nil {
			return a.closeRun(ctx, HistoryItem{}, ErrNotStarted)
		}
	}
	r := a.run
	res := r.res
	if !r.initial {
		r.initial = true
		if !a.started {
			a.started = true
			calls := a.set.InitialActions
			if len(calls) == 0 && a.set.directOpen() {
				if u := startURL(a.tasks[0]); u != "" {
					p, _ := json.Marshal(map[string]string{"url": u})
					calls = []ActionCall{{Name: "navigate", Params: p}}
				}
			}
			if len(calls) > 0 {
				if err := a.ready(ctx, res); err != nil {
					return a.closeRun(ctx, HistoryItem{}, err)
				}
				item := a.initialStep(ctx, calls)
				res.Steps++
				a.account(res, &item)
				if be := a.meter.stop(); be != nil {
					return a.closeRun(ctx, item, a.budgetStop(res, &item, be))
				}
				if err := ctx.Err(); err != nil {
					return a.closeRun(ctx, item, err)
				}
				return a.endIfFailing(ctx, item)
			}
		}
	}
	if p := a.restore; p != nil {
		a.restore = nil
		if err := a.ready(ctx, res); err != nil {
			return a.closeRun(ctx, HistoryItem{}, err)
		}
		item, err := a.restoreStep(ctx, p)
		res.Steps++
		a.account(res, &item)
		if err := ctx.Err(); err != nil {
			return a.closeRun(ctx, item, err)
		}
		if err != nil && !p.opt.ContinueOnFailure {
			res.Err = err
			return a.closeRun(ctx, item, err)
		}
		return a.endIfFailing(ctx, item)
	}
	if r.i >= a.set.MaxSteps {
		return a.closeRun(ctx, HistoryItem{}, a.outOfSteps(res))
	}
	if err := ctx.Err(); err != nil {
		return a.closeRun(ctx, HistoryItem{}, err)
	}
	if err := a.ready(ctx, res); err != nil {
		return a.closeRun(ctx, HistoryItem{}, err)
	}
	if a.failures > a.set.MaxFailures {
		res.Errors = append(res.Errors, fmt.Sprintf("%v (%d in a row)", ErrTooManyFailures, a.failures))
		return a.closeRun(ctx, HistoryItem{}, nil)
	}
	i := r.i
	r.i++
	lastStep := i == a.set.MaxSteps-1
	item, fin := a.step(ctx, i, lastStep)
	res.Steps++
	a.account(res, &item)
	if be := a.meter.stop(); be != nil && fin == nil {
		return a.closeRun(ctx, item, a.budgetStop(res, &item, be))
	}
	if fin != nil {
		res.Done = true
		res.Success = fin.Success
		res.FinalText = fin.Text
		if len(fin.Data) > 0 {
			res.StructuredOutput = fin.Data
		}
		if a.set.Judge != nil {
			a.judge(ctx, res)
		}
		return a.closeRun(ctx, item, nil)
	}
	if err := a.halt; err != nil {
		a.halt = nil
		res.Err = err
		res.Errors = append(res.Errors, "the run ended: "+a.secrets.scrub(err.Error()))
		return a.closeRun(ctx, item, err)
	}
	if err := ctx.Err(); err != nil {
		return a.closeRun(ctx, item, err)
	}
	if r.i >= a.set.MaxSteps {
		return a.closeRun(ctx, item, a.outOfSteps(res))
	}
	return a.endIfFailing(ctx, item)
}

// endIfFailing runs the next step's prologue at once when failures already
// end the run there, so that the step that made them too many carries the
// Result (the prologue is the same: the context, the browser, the count).
func (a *Agent) endIfFailing(ctx context.Context, item HistoryItem) (HistoryItem, *Result, error) {
	if a.failures <= a.set.MaxFailures || a.run.i >= a.set.MaxSteps {
		return item, nil, nil
	}
	res := a.run.res
	if err := ctx.Err(); err != nil {
		return a.closeRun(ctx, item, err)
	}
	if err := a.ready(ctx, res); err != nil {
		return a.closeRun(ctx, item, err)
	}
	res.Errors = append(res.Errors, fmt.Sprintf("%v (%d in a row)", ErrTooManyFailures, a.failures))
	return a.closeRun(ctx, item, nil)
}

// outOfSteps records why a run that used its MaxSteps ended.
func (a *Agent) outOfSteps(res *Result) error {
	if a.failures > a.set.MaxFailures {
		res.Errors = append(res.Errors, fmt.Sprintf("%v (%d in a row)", ErrTooManyFailures, a.failures))
	} else {
		res.Errors = append(res.Errors, ErrMaxSteps.Error())
	}
	return nil
}

// ready waits, at most Settings.ReconnectWait, until the browser can take
// events (a dropped connection being restored), so that the next step
// observes afresh. A browser that will not come back ends the run: its
// error goes to res.Err and res.Errors and is returned.
func (a *Agent) ready(ctx context.Context, res *Result) error {
	rctx, cancel := context.WithTimeout(ctx, a.set.ReconnectWait)
	defer cancel()
	err := a.browser.Ready(rctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%w: not back within %s", events.ErrBrowserGone, a.set.ReconnectWait)
	}
	res.Err = err
	res.Errors = append(res.Errors, "the run ended: "+a.secrets.scrub(err.Error()))
	return err
}

// connected reports, without waiting, whether the browser can take events
// (Ready on a context already done answers at once).
func (a *Agent) connected(ctx context.Context) bool {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	return a.browser.Ready(cctx) == nil
}

// account adds a finished item's error to the result (its usage and cost
// are the meter's, taken at the end of the Run).
func (a *Agent) account(res *Result, item *HistoryItem) {
	if item.Error != "" {
		res.Errors = append(res.Errors, fmt.Sprintf("step %d: %s", item.Step, item.Error))
	}
}

func (a *Agent) judge(ctx context.Context, res *Result) {
	// A ModelJudge's model is wrapped like the agent's own: its call is
	// priced, budgeted and reported (purpose "judge").
	judge := a.set.Judge
	if j, ok := modelJudge(judge); ok && j.Model != nil {
		j.Model = &observedModel{inner: j.Model, a: a, purpose: "judge"}
		judge = j
	}
	h := a.History()
	var shots [][]byte
	for i := len(h.Items) - 1; i >= 0 && len(shots) < 10; i-- {
		if p := h.Items[i].State.ScreenshotPath; p != "" {
			if b, err := os.ReadFile(p); err == nil {
				shots = append([][]byte{b}, shots...)
			}
		}
	}
	j, err := judge.Judge(ctx, JudgeInput{Task: strings.Join(a.tasks, "\n\n"), FinalText: res.FinalText, Success: res.Success, History: h, Screenshots: shots})
	if err != nil {
		res.JudgeError = err.Error()
		return
	}
	res.Judgement = &j
}

// initialStep runs InitialActions (or the direct URL open) as step 0.
func (a *Agent) initialStep(ctx context.Context, calls []ActionCall) HistoryItem {
	n := a.nextStep
	a.nextStep++
	a.stepStarted(ctx, n)
	item := HistoryItem{Step: n, StartedAt: a.set.Now()}
	sctx, cancel := context.WithTimeout(ctx, a.set.StepTimeout)
	defer cancel()
	a.inInitial = true
	defer func() { a.inInitial = false }()
	st := events.BrowserState{FocusedTarget: a.browser.FocusedTab()}
	for _, t := range a.browser.Tabs() {
		if t.TargetID == st.FocusedTarget {
			st.URL = t.URL
		}
	}
	var valid []ActionCall
	for _, c := range calls {
		spec, ok := a.spec(c.Name)
		if !ok {
			item.Error = fmt.Sprintf("initial action %q is not registered", c.Name)
			break
		}
		if err := ValidateJSON(spec.Params, orEmpty(c.Params)); err != nil {
			item.Error = fmt.Sprintf("initial action %s: %v", c.Name, err)
			break
		}
		valid = append(valid, c)
	}
	actStart := time.Now()
	a.multiAct(sctx, &st, valid, &item, n)
	item.ActionsTime = time.Since(actStart)
	a.writes.observe(item.Actions)
	// The next step's observation shows the page unless the run ends here.
	a.afterShot(ctx, &item, ctx.Err() != nil || a.meter.stop() != nil || a.set.MaxSteps <= 0)
	a.finishTimeout(ctx, sctx, &item, valid)
	a.finish(ctx, &item)
	return item
}

func orEmpty(p json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(p))) == 0 {
		return json.RawMessage("{}")
	}
	return p
}

// spec returns the spec of a named action, the structured done included.
func (a *Agent) spec(name string) (ActionSpec, bool) {
	if s, ok := a.alts[name]; ok {
		return s, true
	}
	return a.tools.Get(name)
}

// offered returns this step's actions.
func (a *Agent) offered(url string, doneOnly bool) []ActionSpec {
	specs := a.tools.offered(url, a.set.DomainMatcher, a.exclude, doneOnly)
	for i := range specs {
		if alt, ok := a.alts[specs[i].Name]; ok {
			specs[i] = alt
		}
	}
	return specs
}

// step runs one step. fin is the done result when the run is finished.
func (a *Agent) step(ctx context.Context, i int, lastStep bool) (HistoryItem, *ActionResult) {
	n := a.nextStep
	a.nextStep++
	a.stepStarted(ctx, n)
	item := HistoryItem{Step: n, StartedAt: a.set.Now()}
	stepStart := time.Now()
	sctx, cancel := context.WithTimeout(ctx, a.set.StepTimeout)
	defer cancel()

	forceDone := lastStep || a.failures >= a.set.MaxFailures
	a.stepDoneOnly = forceDone
	var (
		st          events.BrowserState
		handoffNote string
		handedKey   string // the policy hand-off this observation follows
	)
	for observed := 0; ; observed++ {
		shot := a.set.Vision == VisionOn || (a.set.Vision == VisionAuto && a.wantShot)
		a.wantShot = false
		observeStart := time.Now()
		var err error
		st, err = bus.Call(sctx, a.browser.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: shot, Screenshot: a.screenshotOptions()})
		item.ObserveTime += time.Since(observeStart)
		if err != nil {
			item.Error = a.secrets.scrub(fmt.Sprintf("could not observe the page: %v", err))
			a.finishTimeout(ctx, sctx, &item, nil)
			a.finish(ctx, &item)
			return item, nil
		}
		item.State = StateRecord{URL: st.URL, Title: st.Title, Tabs: st.Tabs, Fingerprint: st.Fingerprint, DOMError: st.Error, Blocked: st.Blocked}
		item.State.Viewport = viewportOf(&st) // places the report's marks
		if st.Error != "" && !a.connected(ctx) {
			// The observation failed because the browser went away under it:
			// no model call on a page nobody can see; the next step waits for
			// the browser (or ends the run).
			item.Error = a.secrets.scrub("the connection to the browser was lost during the observation: " + st.Error)
			a.finish(ctx, &item)
			return item, nil
		}
		a.autoScreenshot(sctx, &st)
		if len(st.Screenshot) > 0 {
			dir := filepath.Join(a.runDir, "screenshots")
			p := filepath.Join(dir, fmt.Sprintf("step_%d%s", n, screenshotExt(&st)))
			if os.MkdirAll(dir, 0o755) == nil && os.WriteFile(p, st.Screenshot, 0o644) == nil {
				item.State.ScreenshotPath = p
			}
		}
		// A hand-off policy may give the page to a person first; the model
		// then sees the page as they left it, and a note.
		// No person is handed a page on a step that can only end the run.
		used := time.Since(stepStart)
		nh := len(a.handoffs)
		note, key, handed := a.policyHandoff(sctx, &st, handedKey, forceDone)
		if note != "" {
			// Recorded at once: a step that ends early keeps it.
			handoffNote = strings.TrimSpace(handoffNote + " " + note)
			item.Notes = append(item.Notes, note)
		}
		if len(a.handoffs) > nh && item.State.ScreenshotPath != "" {
			// The page as it was handed over; the re-observation writes
			// step_N's screenshot anew.
			p := strings.TrimSuffix(item.State.ScreenshotPath, filepath.Ext(item.State.ScreenshotPath)) + "_handoff" + filepath.Ext(item.State.ScreenshotPath)
			if os.Rename(item.State.ScreenshotPath, p) == nil {
				a.handoffs[len(a.handoffs)-1].ScreenshotPath = p
				item.State.ScreenshotPath = ""
			}
		}
		if !handed {
			break
		}
		handedKey = key
		if ctx.Err() != nil {
			a.finish(ctx, &item)
			return item, nil
		}
		// The person's time is not the step's: its clock resumes where
		// the hand-off stopped it, with at least half a step left (the
		// first observation may have been slow).
		cancel()
		rctx, rcancel := context.WithTimeout(ctx, max(a.set.StepTimeout-used, a.set.StepTimeout/2))
		defer rcancel() // at most one hand-off per step observation
		sctx = rctx
	}
	a.loop.recordPage(st.URL, st.Fingerprint, st.DOMText)

	// A replay or the action cache may answer before the model.
	var (
		srcOut    *AgentOutput
		srcNudges []string
	)
	for _, s := range a.sources {
		o, src, ns, ok, halt := s.next(sctx, &st, &item)
		srcNudges = append(srcNudges, ns...)
		if src != "" {
			item.Source = src
		}
		if halt != nil {
			a.halt = halt
			item.Error = a.secrets.scrub(halt.Error())
			a.afterShot(ctx, &item, true)
			a.finish(ctx, &item)
			return item, nil
		}
		if ok {
			srcOut = o
			break
		}
	}
	if srcOut != nil {
		item.Output = srcOut
		if item.Source == SourceCache && a.set.planning() {
			a.plan = applyPlan(a.plan, srcOut) // the cached step's plan changes, as the model made them
		}
		a.loop.record(srcOut.Action)
		actStart := time.Now()
		a.multiAct(sctx, &st, srcOut.Action, &item, n)
		item.ActionsTime = time.Since(actStart)
		a.checkDone(&item, forceDone)
		return a.endStep(ctx, sctx, &st, &item, srcOut, nil, srcOut.Action, lastStep, forceDone)
	}

	offered := pdfActions(a.offered(st.URL, forceDone), &st)
	var nudges []string
	switch {
	case a.failures >= a.set.MaxFailures:
		nudges = append(nudges, fmt.Sprintf("You failed %d times in a row. This is your last step: only done is available. Report what you found so far in done's text, and set success to false unless the task is fully complete.", a.failures))
	case lastStep:
		nudges = append(nudges, "This is the last step of the budget: only done is available. Give your final answer; set success to false unless the task is fully complete.")
	case a.set.BudgetWarning > 0 && float64(i+1) >= a.set.BudgetWarning*float64(a.set.MaxSteps):
		nudges = append(nudges, fmt.Sprintf("BUDGET WARNING: you have used %d of %d steps. Consolidate what you have and call done soon.", i+1, a.set.MaxSteps))
	}
	if !forceDone {
		nudges = append(nudges, a.planNudges(i)...)
	}
	if m := a.loop.nudge(); m != "" {
		nudges = append(nudges, m)
	}
	if handoffNote != "" {
		nudges = append(nudges, handoffNote) // item.Notes has it already
	}
	nudges = append(nudges, srcNudges...)
	a.compactHistory(sctx, &item)
	prompt := a.stepPrompt(&st, n, i, offered, nudges)
	a.readState = nil

	out, fin, err := a.ask(sctx, prompt.Request(), offered, &item)
	switch {
	case err != nil:
		item.Error = a.secrets.scrub(err.Error())
	case fin != nil:
		item.Actions = append(item.Actions, ActionRecord{Name: "done", Result: *fin, Error: "", Verdict: ""})
	default:
		item.Output = out
		if a.set.planning() {
			a.plan = applyPlan(a.plan, out)
		}
		if len(out.Dropped) > 0 {
			item.Notes = append(item.Notes, fmt.Sprintf("You sent more than %d actions; these were dropped without running: %s.", a.set.MaxActionsPerStep, strings.Join(out.Dropped, ", ")))
		}
		a.loop.record(out.Action)
		actStart := time.Now()
		a.multiAct(sctx, &st, out.Action, &item, n)
		item.ActionsTime = time.Since(actStart)
		a.checkDone(&item, forceDone) // writecheck.go: a done the network contradicts
	}
	var calls []ActionCall
	if out != nil {
		calls = out.Action
	}
	return a.endStep(ctx, sctx, &st, &item, out, fin, calls, lastStep, forceDone)
}

// endStep finishes a step whose actions ran (or that chose none): the
// sources hear what happened, the after screenshot, the timeout, the
// record. It returns the step's item and the done result when the run is
// finished.
func (a *Agent) endStep(ctx, sctx context.Context, st *events.BrowserState, item *HistoryItem, out *AgentOutput, fin *ActionResult, calls []ActionCall, lastStep, forceDone bool) (HistoryItem, *ActionResult) {
	for _, s := range a.sources {
		if h := s.stepped(sctx, st, out, item); h != nil && a.halt == nil {
			a.halt = h
		}
	}
	if len(a.plan) > 0 && a.set.planning() {
		item.Plan = append([]PlanItem(nil), a.plan...)
	}
	// The run's last step: no later observation shows what its actions
	// did. After checkDone: a held-back done does not end the run.
	a.afterShot(ctx, item, lastStep || forceDone || ctx.Err() != nil || fin != nil || doneAccepted(item.Actions) || a.meter.stop() != nil || a.halt != nil)
	a.finishTimeout(ctx, sctx, item, calls)
	a.finish(ctx, item)
	if fin != nil {
		return *item, fin
	}
	for _, r := range item.Actions {
		if r.Result.Done && r.Error == "" {
			res := r.Result
			return *item, &res
		}
	}
	return *item, nil
}

// finishTimeout turns a step timeout into the step's error, naming the
// actions that ran and those that did not.
func (a *Agent) finishTimeout(ctx, sctx context.Context, item *HistoryItem, calls []ActionCall) {
	if ctx.Err() != nil || !errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return
	}
	if dl, ok := sctx.Deadline(); ok && !a.handoffFrom.IsZero() && !dl.Before(a.handoffFrom) {
		return // it passed while a person had the browser (request_human ends the batch)
	}
	var ran, notRun []string
	for i, c := range calls {
		if i < len(item.Actions) {
			status := "ok"
			if item.Actions[i].Error != "" {
				status = "interrupted: " + shorten(item.Actions[i].Error, 120)
			}
			ran = append(ran, fmt.Sprintf("%d %s (%s)", i+1, c.Name, status))
		} else {
			notRun = append(notRun, fmt.Sprintf("%d %s", i+1, c.Name))
		}
	}
	msg := fmt.Sprintf("step %d timed out after %s", item.Step, a.set.StepTimeout)
	switch {
	case len(calls) == 0:
		msg += " before any action was chosen"
	default:
		if len(ran) > 0 {
			msg += "; actions that ran: " + strings.Join(ran, ", ")
		} else {
			msg += "; no action ran"
		}
		if len(notRun) > 0 {
			msg += "; not run: " + strings.Join(notRun, ", ")
		}
	}
	if item.Error != "" {
		msg += " (" + item.Error + ")"
	}
	item.Error = a.secrets.scrub(msg)
}

// finish records the item, updates the failure count and calls OnStepEnd.
func (a *Agent) finish(ctx context.Context, item *HistoryItem) {
	item.EndedAt = a.set.Now()
	item.Usage, item.Cost = a.meter.takeStep()
	item.Handoffs = append(item.Handoffs, a.handoffs...)
	a.handoffs = nil
	a.secrets.scrubItem(item)
	item.Failed = item.Error != "" || (len(item.Actions) > 0 && item.Actions[0].Error != "")
	if item.Failed {
		a.failures++
	} else {
		a.failures = 0
	}
	a.mu.Lock()
	a.history.Items = append(a.history.Items, *item)
	a.mu.Unlock()
	for _, o := range a.set.Observers {
		o.StepEnded(ctx, *item)
	}
	if f := a.set.OnStepEnd; f != nil {
		f(ctx, *item)
	}
}

// stepStarted tells the observers and OnStepStart that step n begins.
func (a *Agent) stepStarted(ctx context.Context, n int) {
	a.curStep = n
	a.handoffs, a.handoffFrom = nil, time.Time{}
	a.meter.startStep()
	for _, o := range a.set.Observers {
		o.StepStarted(ctx, n)
	}
	if f := a.set.OnStepStart; f != nil {
		f(ctx, n)
	}
}

// ask calls the model under LLMTimeout and parses the reply. An empty reply
// (no content, or no action) is asked once more; a second one ends the run
// with a failed done (fin). A malformed reply is an *OutputError.
func (a *Agent) ask(ctx context.Context, req llm.Request, offered []ActionSpec, item *HistoryItem) (*AgentOutput, *ActionResult, error) {
	mode, planning := a.set.ReplyMode, a.set.planning()
	for attempt := 0; attempt < 2; attempt++ {
		lctx, cancel := a.modelContext(ctx)
		start := time.Now()
		resp, err := a.model.Generate(lctx, req)
		cancel()
		item.ModelTime += time.Since(start)
		empty := errors.Is(err, llm.ErrEmptyReply) || (err == nil && (resp == nil || strings.TrimSpace(resp.Content) == ""))
		var out *AgentOutput
		if err == nil && !empty {
			out, err = ParseOutputAs(resp.Content, offered, a.set.MaxActionsPerStep, mode, planning)
			if errors.Is(err, ErrNoAction) {
				empty, err = true, nil
			}
		}
		if empty {
			a.log.Info("agent: model returned no action", zap.Int("step", item.Step), zap.Int("attempt", attempt+1))
			req.Messages = append(append([]llm.Message(nil), req.Messages...), llm.UserMessage(llm.Text("Your reply contained no action. Reply with the JSON object described above, with at least one action in \"action\" (use done if you are finished).")))
			continue
		}
		switch {
		case err == nil:
			return out, nil, nil
		case errors.Is(err, ErrBudgetExceeded):
			return nil, nil, err // not made: its words are the run's reason
		case ctx.Err() != nil:
			return nil, nil, fmt.Errorf("model call interrupted: %w", ctx.Err())
		case errors.Is(err, ErrInvalidOutput):
			return nil, nil, fmt.Errorf("your previous reply could not be used: %s", strings.TrimPrefix(err.Error(), "invalid model output: "))
		case errors.Is(err, llm.ErrMalformedOutput):
			return nil, nil, fmt.Errorf("your previous reply could not be used: it was not valid JSON (%s)", shorten(err.Error(), 300))
		case errors.Is(err, context.DeadlineExceeded):
			return nil, nil, fmt.Errorf("the model call timed out after %s", a.set.LLMTimeout)
		default:
			return nil, nil, fmt.Errorf("model call failed: %w", err)
		}
	}
	return nil, &ActionResult{Done: true, Success: false, Text: "The model returned no action twice in a row; the run ended without an answer."}, nil
}

// modelContext bounds one step-model call by LLMTimeout (boundCall).
func (a *Agent) modelContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return boundCall(ctx, a.model, a.set.LLMTimeout)
}

// boundCall bounds one call of m by d: per attempt for a model that bounds
// its attempts itself (llm.BoundsAttempts: WithRetry, the provider models),
// so that a stalled attempt leaves time for a retry; as a deadline on the
// whole call for any other (a custom Model, the scripted one), which would
// otherwise get no bound but the step's.
func boundCall(ctx context.Context, m llm.Model, d time.Duration) (context.Context, context.CancelFunc) {
	if llm.BoundsAttempts(m) {
		return llm.WithAttemptTimeout(ctx, d)
	}
	return context.WithTimeout(ctx, d)
}

// structuredDone builds the done action whose data follows the caller's
// output schema, kept in the caller's key order.
func structuredDone(schema json.RawMessage) (*ActionSpec, json.RawMessage, error) {
	data, err := normalizeSchema(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: OutputSchema: %v", ErrSettings, err)
	}
	params, err := normalizeSchema(json.RawMessage(`{"type":"object","properties":{` +
		`"success":{"type":"boolean"},` +
		`"data":` + string(data) + `},"required":["success","data"],"additionalProperties":false}`))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: OutputSchema: %v", ErrSettings, err)
	}
	spec := &ActionSpec{
		Name:        "done",
		Description: "Finish with the answer in data, as <expected_output> says.",
		Params:      params,
		Risk:        RiskRead,
		Run: func(_ context.Context, _ *ActionContext, raw json.RawMessage) (ActionResult, error) {
			var p struct {
				Success bool            `json:"success"`
				Data    json.RawMessage `json:"data"`
			}
			if err := decodeParams(raw, &p); err != nil {
				return ActionResult{}, err
			}
			if err := ValidateJSON(data, p.Data); err != nil {
				return ActionResult{}, fmt.Errorf("done: data does not follow the output schema: %w", err)
			}
			return ActionResult{Done: true, Success: p.Success, Data: p.Data, Text: string(p.Data)}, nil
		},
	}
	return spec, data, nil
}
