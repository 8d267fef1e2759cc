package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// Errors of the Driver.
var (
	// ErrStaleIndex: an element action named an index of a page state that
	// no longer applies (see StaleIndexError).
	ErrStaleIndex = errors.New("agent: stale element index")
	// ErrDenied: the Approver refused the action; it did not run.
	ErrDenied = errors.New("agent: action denied by the approval policy")
	// ErrClosed: the Driver was closed.
	ErrClosed = errors.New("agent: driver closed")
)

// StaleIndexError is an element index the caller took from a page state
// that no longer describes the page: none was taken yet, the tab changed,
// the page navigated, or the index is not in the last state.
type StaleIndexError struct {
	Index  int
	Reason string
}

func (e *StaleIndexError) Error() string {
	return fmt.Sprintf("element index %d is stale: %s; take a new state and use its indexes", e.Index, e.Reason)
}

// Unwrap makes errors.Is(err, ErrStaleIndex) hold.
func (e *StaleIndexError) Unwrap() error { return ErrStaleIndex }

// DeniedError is an action the Approver refused.
type DeniedError struct {
	Action, Reason string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("%s denied by the approval policy: %s", e.Action, e.Reason)
}

// Unwrap makes errors.Is(err, ErrDenied) hold.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// PageTextAction names Driver.PageText's steps in the history and trace
// (it is not an action a model is offered).
const PageTextAction = "page_text"

// DriverTask is the task name a Driver's history and trace carry until the
// first RunTask names one.
const DriverTask = "interactive session: actions chosen by the caller"

// Observation is one page state as a Driver returns it.
type Observation struct {
	// State is the full observation (the selector map included).
	State *events.BrowserState
	// Text is the page as a model reads it (the <browser_state> body:
	// tabs, page facts and the indexed elements), secrets scrubbed.
	Text string
	// Step is the history step that recorded it.
	Step int
	// ScreenshotPath is where the screenshot was saved, when one was taken.
	ScreenshotPath string
}

// StateOptions tune Driver.State.
type StateOptions struct {
	// Screenshot also takes a screenshot (State.Screenshot, PNG).
	Screenshot bool
}

// TaskOptions tune Driver.RunTask.
type TaskOptions struct {
	// MaxSteps overrides Settings.MaxSteps for this task.
	MaxSteps int
	// Observers are added to Settings.Observers for this task only (a
	// progress display, for example).
	Observers []Observer
	// NoHuman runs the task as if Settings.Human were nil: request_human
	// is not offered, and a hand-off policy that fires tells the model no
	// person is available. For a caller that knows nobody can answer now
	// (an MCP client without elicitation).
	NoHuman bool
}

// Driver runs actions one at a time for a caller that chooses them itself:
// another agent over MCP, a person or a script at a shell. Each action goes
// through what an Agent's actions go through — the same registry, the
// Approver, secrets (resolved on input, scrubbed from every text), the
// history, the observers (so a trace records it) and the file area — plus a
// check that an element index still belongs to the last state taken.
//
// Calls are serialized: one runs at a time and the others wait for their
// turn, each giving up when its context ends. Each call is one history step
// (the observers get StepStarted and StepEnded). The observers see the
// Driver's life as a run: RunStarted at the first call, RunEnded at Close;
// RunTask runs a task as a run of its own in between, after which the
// Driver's run is announced again with its original start time.
//
// The caller starts and stops the browser; Close ends the Driver only.
type Driver struct {
	a    *Agent
	turn chan struct{} // holds a token while a call runs

	// Owned by the call holding the turn.
	last    *events.BrowserState // the last state taken, nil when none applies
	begun   bool
	started time.Time
	tasked  bool
	closed  bool
	// taskExclude are the actions withheld from a task's model (the
	// caller's own calls also go without done and screenshot).
	taskExclude map[string]bool
}

// NewDriver returns a Driver acting on b with set (Settings.Tools,
// Approver, SensitiveData, ExtractModel, Observers, RunDir, Logger and the
// timeouts apply; the loop's settings apply to RunTask). "done" is not
// offered: a Driver has no run to finish.
func NewDriver(b Browser, set Settings) (*Driver, error) {
	a, err := newAgent(DriverTask, nil, b, set)
	if err != nil {
		return nil, err
	}
	d := &Driver{a: a, turn: make(chan struct{}, 1), taskExclude: maps.Clone(a.exclude)}
	a.exclude["done"] = true
	a.exclude["screenshot"] = true // State takes screenshots
	return d, nil
}

// acquire waits for the Driver's turn.
func (d *Driver) acquire(ctx context.Context) error {
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if d.closed {
		<-d.turn
		return ErrClosed
	}
	if d.a.browser.Bus() == nil {
		<-d.turn
		return ErrNotStarted
	}
	return nil
}

func (d *Driver) release() { <-d.turn }

// begin announces the Driver's run to the observers once.
func (d *Driver) begin(ctx context.Context) {
	if d.begun {
		return
	}
	d.begun, d.started = true, d.a.set.Now()
	d.announce(ctx)
}

func (d *Driver) announce(ctx context.Context) {
	for _, o := range d.a.set.Observers {
		o.RunStarted(ctx, RunInfo{Task: DriverTask, Started: d.started})
	}
}

// step opens the history step of a call, bounded by Settings.StepTimeout.
func (d *Driver) step(ctx context.Context) (HistoryItem, context.Context, context.CancelFunc) {
	a := d.a
	d.begin(ctx)
	n := a.nextStep
	a.nextStep++
	a.stepStarted(ctx, n)
	sctx, cancel := context.WithTimeout(ctx, a.set.StepTimeout)
	return HistoryItem{Step: n, StartedAt: a.set.Now()}, sctx, cancel
}

// RunDir returns the directory of the Driver's files and screenshots.
func (d *Driver) RunDir() string { return d.a.runDir }

// FileSystem returns the Driver's file area (extracts, written files).
func (d *Driver) FileSystem() *FileSystem { return d.a.fs }

// History returns a copy of the steps so far.
func (d *Driver) History() *History { return d.a.History() }

// Actions returns the actions a caller may run on the current page (domain
// filters applied), sorted by name.
func (d *Driver) Actions() []ActionSpec {
	return d.a.offered(d.currentURL(), false)
}

// Tabs returns the open tabs and the id of the focused one. Their URLs and
// titles are the browser's, not scrubbed (see Scrub).
func (d *Driver) Tabs() ([]events.TabInfo, string) {
	return d.a.browser.Tabs(), d.a.browser.FocusedTab()
}

// Scrub replaces the secrets' values in s with their placeholders, as the
// Driver does in every text it returns: for callers that word texts of
// their own (a tab list, a question to the user).
func (d *Driver) Scrub(s string) string { return d.a.secrets.scrub(s) }

func (d *Driver) currentURL() string {
	ac := ActionContext{Browser: d.a.browser, BrowserState: d.last}
	return ac.currentURL()
}

// State observes the focused page, records it as a step, and makes its
// indexes the ones element actions may use.
func (d *Driver) State(ctx context.Context, opt StateOptions) (*Observation, error) {
	if err := d.acquire(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	a := d.a
	item, sctx, cancel := d.step(ctx)
	defer cancel()
	n := item.Step
	st, err := bus.Call(sctx, a.browser.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: opt.Screenshot})
	if err != nil {
		d.last = nil
		item.Error = a.secrets.scrub(fmt.Sprintf("could not observe the page: %v", err))
		a.finish(ctx, &item)
		return nil, fmt.Errorf("agent: could not observe the page: %w", err)
	}
	item.State = StateRecord{URL: st.URL, Title: st.Title, Tabs: st.Tabs, Fingerprint: st.Fingerprint, DOMError: st.Error, Blocked: st.Blocked}
	obs := &Observation{State: &st, Step: n, Text: a.secrets.scrub(BrowserStateText(&st, a.set.MaxElementsChars))}
	if len(st.Screenshot) > 0 {
		dir := filepath.Join(a.runDir, "screenshots")
		p := filepath.Join(dir, fmt.Sprintf("step_%d%s", n, screenshotExt(&st)))
		if os.MkdirAll(dir, 0o755) == nil && os.WriteFile(p, st.Screenshot, 0o644) == nil {
			item.State.ScreenshotPath, obs.ScreenshotPath = p, p
		}
	}
	d.last = &st
	if st.Error != "" {
		// Without a selector map no index applies.
		d.last = nil
	}
	a.finish(ctx, &item)
	return obs, nil
}

// Do runs the named action with params (JSON, as a model writes them;
// empty means none). The record carries the verdict, the result text and
// the error as a model reads them, secrets scrubbed; it is also returned,
// filled as far as the action got, when err is not nil. err wraps
// ErrUnknownAction, ErrBadParams, ErrStaleIndex (*StaleIndexError),
// ErrDenied (*DeniedError) or the action's own error. An action that opened
// a tab switches to it, as in a run. After a hand-off to a person
// (request_human) the last state no longer applies, whatever the page
// looks like: the next element action fails with *StaleIndexError until
// State is called.
func (d *Driver) Do(ctx context.Context, name string, params json.RawMessage) (ActionRecord, error) {
	rec := ActionRecord{Name: name, Params: params}
	if err := d.acquire(ctx); err != nil {
		return rec, err
	}
	defer d.release()
	a := d.a
	spec, ok := a.spec(name)
	if !ok || a.exclude[name] {
		return rec, fmt.Errorf("%w: %q (available: %s)", ErrUnknownAction, name, strings.Join(specNames(d.a.offered(d.currentURL(), false)), ", "))
	}
	params = orEmpty(params)
	rec.Params, rec.Risk = params, spec.Risk
	if err := ValidateJSON(spec.Params, params); err != nil {
		return rec, fmt.Errorf("%w: %s: %v", ErrBadParams, name, err)
	}
	item, sctx, cancel := d.step(ctx)
	defer cancel()
	n := item.Step
	// A hand-off (request_human) is bounded by the caller's ctx and
	// HumanTimeout, not by the step.
	a.runCtx = ctx
	defer func() { a.runCtx = nil }()

	st := d.last
	if st == nil {
		st = &events.BrowserState{FocusedTarget: a.browser.FocusedTab(), URL: d.currentURL()}
	}
	item.State = StateRecord{URL: st.URL, Title: st.Title, Fingerprint: st.Fingerprint}
	var err error
	if idx := paramIndex(params); spec.TargetsIndex && idx > 0 {
		err = d.checkIndex(sctx, idx)
	}
	if err != nil {
		rec.Error, rec.Verdict = a.secrets.scrub(err.Error()), events.VerdictFailed
	} else {
		nh := len(a.handoffs)
		rec, err = a.act(sctx, spec, ActionCall{Name: name, Params: params}, st, n)
		if len(a.handoffs) > nh {
			d.last = nil // a person had the page: its indexes are not vouched for
		}
		switch {
		case rec.Denied:
			err = &DeniedError{Action: name, Reason: strings.TrimPrefix(rec.Error, "denied by approval policy: ")}
		case err == nil:
			a.followNewTab(sctx, &rec)
		}
		if err == nil && sctx.Err() != nil && a.handoffFrom.IsZero() {
			err = sctx.Err() // unless it passed while a person had the browser
		}
	}
	item.Actions = []ActionRecord{rec}
	a.finish(ctx, &item)
	return rec, err
}

// checkIndex refuses an index that the last state does not vouch for.
func (d *Driver) checkIndex(ctx context.Context, idx int) error {
	st := d.last
	if st == nil {
		return &StaleIndexError{Index: idx, Reason: "no page state applies (none was taken yet, the last one failed, a task ran since, or a person had the page)"}
	}
	if ft := d.a.browser.FocusedTab(); st.FocusedTarget != "" && ft != st.FocusedTarget {
		return &StaleIndexError{Index: idx, Reason: fmt.Sprintf("the focused tab changed to %s since the last state", TabRef(ft))}
	}
	if st.Fingerprint != "" {
		// A page too busy to answer is left to the action, which fails in
		// its own words.
		if fp, err := d.a.browser.Fingerprint(ctx, ""); err == nil && fp.URL != "" && !strings.HasPrefix(st.Fingerprint, fp.URL+"#") {
			return &StaleIndexError{Index: idx, Reason: fmt.Sprintf("the page navigated to %s since the last state", fp.URL)}
		}
	}
	if _, ok := st.Elements[idx]; !ok {
		return &StaleIndexError{Index: idx, Reason: fmt.Sprintf("it is not in the last state (%d indexed elements)", len(st.Elements))}
	}
	return nil
}

// PageText returns the focused page's text (markdown) from character from
// on, at most max characters (0: DefaultExtractChunkChars), secrets
// scrubbed, with the page's URL and the text's total length: extract
// without a model, for callers that read the page themselves. It is a
// history step like the others (action PageTextAction), so the trace
// records what was read.
func (d *Driver) PageText(ctx context.Context, from, max int) (text, url string, total int, err error) {
	if err := d.acquire(ctx); err != nil {
		return "", "", 0, err
	}
	defer d.release()
	if max <= 0 {
		max = DefaultExtractChunkChars
	}
	a := d.a
	item, sctx, cancel := d.step(ctx)
	defer cancel()
	params, _ := json.Marshal(map[string]int{"start_from_char": from})
	rec := ActionRecord{Name: PageTextAction, Params: params, Risk: RiskRead}
	defer func() {
		if err != nil {
			rec.Error, rec.Verdict = a.secrets.scrub(errText(err)), events.VerdictFailed
		}
		item.State.URL = url
		item.Actions = []ActionRecord{rec}
		a.finish(ctx, &item)
	}()
	start := time.Now()
	pt, err := bus.Call(sctx, a.browser.Bus(), events.PageText, events.PageTextEvent{})
	rec.Duration = time.Since(start)
	if err != nil {
		return "", "", 0, err
	}
	total = len(pt.Text)
	if from < 0 || (from > 0 && from >= total) {
		return "", pt.URL, total, fmt.Errorf("%w: start %d is past the end of the page text (%d characters)", ErrBadParams, from, total)
	}
	text = pt.Text[from:]
	if len(text) > max {
		text = strings.ToValidUTF8(text[:max], "")
	}
	rec.Result.Text = a.secrets.scrub(fmt.Sprintf("Read %d of the %d characters of %s's text, from character %d.", len(text), total, pt.URL, from))
	return a.secrets.scrub(text), pt.URL, total, nil
}

// RunTask runs a whole task with model on the Driver's browser, as
// Agent.Run does: the history so far (the caller's own steps included) is
// the model's context, step numbers continue, and the first task's URL is
// opened directly. The indexes of the last state no longer apply after it.
// With Settings.MaxCost set, a model without a price in Settings.Prices is
// refused up front (ErrSettings), as New refuses one.
func (d *Driver) RunTask(ctx context.Context, model llm.Model, task string, opt TaskOptions) (*Result, error) {
	if model == nil {
		return nil, ErrNoModel
	}
	if strings.TrimSpace(task) == "" {
		return nil, fmt.Errorf("%w: empty task", ErrSettings)
	}
	if err := d.acquire(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	a := d.a
	// As New does: a cost budget needs every model's price.
	if err := a.pricedForBudget(model); err != nil {
		return nil, err
	}
	if d.tasked {
		if err := a.AddTask(task); err != nil {
			return nil, err
		}
	} else {
		d.tasked = true
		a.mu.Lock()
		a.tasks, a.history.Task = []string{task}, task
		a.mu.Unlock()
		a.failures = 0
	}
	saved, savedExclude := a.set, a.exclude
	a.exclude = d.taskExclude
	if opt.MaxSteps > 0 {
		a.set.MaxSteps = opt.MaxSteps
	}
	a.set.Observers = append(slices.Clone(saved.Observers), opt.Observers...)
	if opt.NoHuman {
		a.set.Human = nil
		a.exclude = maps.Clone(d.taskExclude)
		a.exclude["request_human"] = true
	}
	a.setModel(model)
	defer func() {
		a.set, a.exclude = saved, savedExclude
		a.setModel(nil)
		d.last = nil
		if d.begun {
			d.announce(ctx)
		}
	}()
	return a.Run(ctx)
}

// Close ends the Driver: later calls return ErrClosed. It waits for the
// call in progress (bounded by ctx), tells the observers the Driver's run
// ended and saves the history to RunDir/history.json. It does not stop the
// browser.
func (d *Driver) Close(ctx context.Context) error {
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer d.release()
	if d.closed {
		return nil
	}
	d.closed = true
	h := d.a.History()
	if d.begun {
		res := &Result{Steps: len(h.Items)}
		for _, it := range h.Items {
			if it.Error != "" {
				res.Errors = append(res.Errors, fmt.Sprintf("step %d: %s", it.Step, it.Error))
			}
		}
		for _, o := range d.a.set.Observers {
			o.RunEnded(ctx, res, nil)
		}
	}
	return h.Save(filepath.Join(d.a.runDir, "history.json"))
}
