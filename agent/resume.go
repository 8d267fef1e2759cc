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
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
)

// Errors of Step, EndRun and Resume.
var (
	// ErrRunEnded: Step was called after the run it belongs to ended
	// (Step returned a Result, or EndRun) and no follow-up task was added.
	ErrRunEnded = errors.New("agent: the run has ended")
	// ErrEndedEarly is EndRun's cause when it is given none.
	ErrEndedEarly = errors.New("agent: the run was ended before it finished")
	// ErrResume: a recorded run cannot be resumed (nothing to resume, the
	// history ends with done, the restore failed). A restore that failed on
	// a step is a *ResumeError.
	ErrResume = errors.New("agent: resume")
)

// ResumeOptions configure Resume.
type ResumeOptions struct {
	// FromStart replays every recorded action (Replay's semantics: clicks
	// and submits included) instead of re-navigating to the last page and
	// re-applying only the input actions done on it. For sites whose state
	// lives in the browser (a login) and is lost with it.
	FromStart bool
	// Vars override recorded values by variable name: the names
	// ReplayVariables(h) lists. A variable whose action the restore does
	// not re-apply (typed on an earlier page) is ignored; a name h does not
	// have is an error (ErrReplayVars).
	Vars map[string]string
	// Rebase maps a recorded origin to the origin to use instead
	// (ReplayOptions.Rebase).
	Rebase map[string]string
	// SettleTimeout bounds the wait for each restored step's precondition;
	// 0: DefaultSettleTimeout.
	SettleTimeout time.Duration
	// ContinueOnFailure: a restore that fails is the restore step's error
	// (the model reads it) and the model goes on from the page as it is,
	// instead of ending the resumed run with a *ResumeError.
	ContinueOnFailure bool
}

// ResumeError says which recorded step the restore could not re-apply.
type ResumeError struct {
	// Step is the recorded step, Action the action's position in it (-1
	// for the step as a whole), Name the action's name.
	Step   int
	Action int
	Name   string
	// Err is why (wraps a replay sentinel when the replay machinery failed).
	Err error
}

func (e *ResumeError) Error() string {
	s := fmt.Sprintf("agent: resume: recorded step %d", e.Step)
	if e.Action >= 0 {
		s += fmt.Sprintf(" action %d (%s)", e.Action, e.Name)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns ErrResume and Err.
func (e *ResumeError) Unwrap() []error { return []error{ErrResume, e.Err} }

// restoreInputs are the actions a restore re-applies on the page it
// navigated back to: they set what the page shows (a field's value, a
// selection, a chosen file, the scroll position) and commit nothing.
// Clicks, key presses (Enter submits), drags, hovers, evaluate and the
// rest are not repeated: they may have sent something the site already
// has.
var restoreInputs = map[string]bool{"input": true, "select_dropdown": true, "upload_file": true, "scroll": true}

// restorePlan is what a resumed agent's first step replays: a synthetic
// recording (a navigation, then the input actions by recorded step) and,
// per synthetic step, where its actions come from in h.
type restorePlan struct {
	rec    *History
	origin []restoreOrigin
	opt    ResumeOptions
	set    Settings // the caller's, for the inner replay
}

// restoreOrigin maps a synthetic step's actions to the recorded step and
// positions they were copied from.
type restoreOrigin struct {
	step int
	pos  []int
}

// Resume returns an agent that continues the run recorded in h (the items
// of the steps done so far, e.g. collected from Step's returned items) on b,
// a started browser that has lost the page (a new worker). model and set
// are as for New; task "" is h's task. Settings.InitialActions and the
// task's URL are not run again.
//
// Its first Step is the restore, recorded as a HistoryItem whose Source is
// SourceResume, with no model call:
//   - It navigates to the page the last navigating step of h reached (a
//     navigate, search, go_back or switch_tab that ran, an action whose
//     recorded verdict is navigated or new_tab, a close_tab, a previous
//     restore included): the URL the next recorded step observed, else
//     the action's recorded outcome URL, navigate's URL or the tab
//     switch_tab chose, or the URL a tab a click opened had when the agent
//     switched to it (ActionRecord.TabURL). A page change in h's last step
//     whose URL h does not record (a closed tab, a new tab with no page
//     yet) is passed over: the page before it is restored and nothing done
//     after it. With no navigation recorded, the first step's page (when
//     it is an http(s) URL). The URL is opened with a GET: a page that was
//     the answer to a POST shows what a GET of its URL shows (the form
//     again, an error); nothing is re-posted.
//   - It re-applies the input actions done on that page since (input,
//     select_dropdown, upload_file, scroll), each element found again with
//     Replay's matching cascade and preconditions, secrets resolved from
//     Settings.SensitiveData, values overridden by opt.Vars.
//   - It does not repeat clicks, key presses, drags or any other action:
//     they may have committed something (a submitted form, a sent
//     message), and a resumed run must not repeat a side effect. The model
//     sees the history and the restored page and decides. A state the page
//     got from such an action on the same URL (an opened panel) is not
//     restored; nor are other tabs than the one navigated.
//   - opt.FromStart replays every recorded action instead, with Replay's
//     semantics (clicks and submits included), for sites whose state lives
//     in the browser (a login) and is lost with it.
//
// Then the model continues. The agent's History starts with h's items, so
// step numbers and the model's memory carry on (a history summary h
// recorded stays in force, and the history is compacted as in any run once
// Settings.CompactEverySteps is due); the recorded steps of the run it
// continues (those after h's last accepted done, when a follow-up task
// began another run) count against MaxSteps, their usage and cost
// (HistoryItem.Usage, Cost) against MaxTokens and MaxCost and in the
// Result's Usage and Cost, and consecutive failures at h's end against
// MaxFailures until a step succeeds (a restore that succeeds is one). The
// step in progress when the recorded run stopped is not in h and is lost.
//
// A restore that cannot find an element, whose precondition does not hold,
// or whose action gets another outcome (a navigation the URL policy now
// refuses included) ends the resumed run at its first Step: the Result's
// Err and Step's error are a *ResumeError naming the recorded step
// (errors.Is ErrResume and the ErrReplay sentinel). With
// opt.ContinueOnFailure the failure is the restore step's error instead
// and the model continues from the page as it is (observed afresh).
//
// Errors before anything runs: ErrNoModel, ErrNoBrowser; an h whose last
// step is an accepted done (ErrResume: nothing to resume); opt.Vars or
// opt.Rebase Replay refuses (ErrResume and ErrReplay). An h with no step is
// no resume: the agent is New's.
func Resume(task string, model llm.Model, b Browser, set Settings, h *History, opt ResumeOptions) (*Agent, error) {
	if model == nil {
		return nil, ErrNoModel
	}
	if strings.TrimSpace(task) == "" && h != nil {
		task = h.Task
	}
	if h == nil || len(h.Items) == 0 {
		return New(task, model, b, set)
	}
	last := h.Items[len(h.Items)-1]
	if doneAccepted(last.Actions) {
		return nil, fmt.Errorf("%w: the recorded run ended with done at step %d: nothing to resume", ErrResume, last.Step)
	}
	plan, err := planRestore(h, opt)
	if err != nil {
		return nil, err
	}
	plan.set = set
	a, err := New(task, model, b, set)
	if err != nil {
		return nil, err
	}
	a.history.Items = append([]HistoryItem(nil), h.Items...)
	a.history.Tasks = append([]string(nil), h.Tasks...)
	a.tasks = append(a.tasks, h.Tasks...)
	for _, it := range h.Items {
		a.nextStep = max(a.nextStep, it.Step+1) // numbers carry on, whatever the order
	}
	a.started = true // the recorded run's initial actions ran
	cur := currentRun(h.Items)
	a.carried = recordedLoopSteps(cur)
	for _, it := range cur {
		addUsage(&a.carriedUsage, it.Usage)
		a.carriedCost.Add(it.Cost)
	}
	for i := len(h.Items) - 1; i >= 0 && h.Items[i].Failed; i-- {
		a.failures++
	}
	if a.set.planning() {
		a.plan = append([]PlanItem(nil), last.Plan...)
	}
	a.compact = recordedCompaction(h.Items)
	a.restore = plan
	return a, nil
}

// recordedCompaction is the history summary in force at the end of items
// (the last one a step recorded), so that the resumed prompt folds the same
// steps without a new summary call.
func recordedCompaction(items []HistoryItem) compactState {
	for i := len(items) - 1; i >= 0; i-- {
		c := items[i].Compaction
		if c == nil || c.Summary == "" {
			continue
		}
		for j := range items[:i] {
			if items[j].Step == c.ToStep {
				return compactState{summary: c.Summary, upTo: j + 1, lastStep: items[i].Step, fromStep: c.FromStep, toStep: c.ToStep}
			}
		}
		break
	}
	return compactState{}
}

// currentRun is the recorded steps of the run a resume continues: those
// after the last accepted done (an earlier run, ended before a follow-up
// task's).
func currentRun(items []HistoryItem) []HistoryItem {
	for i := len(items) - 1; i >= 0; i-- {
		if doneAccepted(items[i].Actions) {
			return items[i+1:]
		}
	}
	return items
}

// recordedLoopSteps counts the recorded steps that used the step budget:
// all but an initial step 0 (actions, no model output) and restores.
func recordedLoopSteps(items []HistoryItem) int {
	n := 0
	for i, it := range items {
		if it.Source == SourceResume || (i == 0 && it.Step == 0 && it.Source == SourceModel && it.Output == nil && len(it.Actions) > 0) {
			continue
		}
		n++
	}
	return n
}

// ran reports whether a recorded action ran (not refused, not failed, not
// a held-back done).
func ran(r ActionRecord) bool {
	return !r.Denied && r.Error == "" && !(r.Name == "done" && !r.Result.Done)
}

// navigated reports whether a recorded action that ran left the page.
func navigated(r ActionRecord) bool {
	return ran(r) && (pageFree[r.Name] || r.Verdict == events.VerdictNavigated)
}

// leftPage reports whether a recorded action that ran changed the page
// the agent works on: a navigation, a tab it opened (the agent follows
// it), a tab closed.
func leftPage(r ActionRecord) bool {
	return navigated(r) || (ran(r) && (r.Verdict == events.VerdictNewTab || r.Name == "close_tab"))
}

// pageAfter is the URL the agent was on after h.Items[i].Actions[j]: the
// next step's observed URL; for the last step, the action's own record
// (a navigation's outcome or URL, the tab switch_tab chose among those
// the step observed, the tab an action opened); "" when the history does
// not say.
func pageAfter(h *History, i, j int) string {
	if i+1 < len(h.Items) {
		return h.Items[i+1].State.URL
	}
	r := h.Items[i].Actions[j]
	switch {
	case r.Verdict == events.VerdictNewTab:
		return r.TabURL // "" when not recorded
	case r.Name == "close_tab":
		return "" // the page left in front is not recorded
	case r.Name == "switch_tab":
		var tp TabParams
		if json.Unmarshal(r.Params, &tp) != nil || tp.TabID == "" {
			return ""
		}
		var found string
		for _, t := range h.Items[i].State.Tabs {
			if strings.HasSuffix(strings.ToLower(t.TargetID), strings.ToLower(tp.TabID)) {
				if found != "" {
					return "" // ambiguous
				}
				found = t.URL
			}
		}
		return found
	}
	if o := r.Result.Outcome; o != nil && o.After.URL != "" {
		return o.After.URL
	}
	if r.Name == "navigate" {
		var np NavigateParams
		if json.Unmarshal(r.Params, &np) == nil {
			return np.URL
		}
	}
	return ""
}

// planRestore builds the restore's synthetic recording from h.
func planRestore(h *History, opt ResumeOptions) (*restorePlan, error) {
	p := &restorePlan{rec: &History{Task: h.Task}, opt: opt}
	add := func(step int, state StateRecord, recs []ActionRecord, pos []int) {
		p.rec.Items = append(p.rec.Items, HistoryItem{Step: len(p.rec.Items) + 1, State: state, Actions: recs})
		p.origin = append(p.origin, restoreOrigin{step: step, pos: pos})
	}
	if opt.FromStart {
		for _, it := range h.Items {
			if it.Source == SourceResume || len(it.Actions) == 0 {
				continue // a restore re-did what earlier steps did
			}
			pos := make([]int, len(it.Actions))
			for j := range pos {
				pos[j] = j
			}
			add(it.Step, it.State, it.Actions, pos)
		}
	} else {
		// k, at: the last step and action that left the page for a page
		// the history names (url). A page change whose page it does not
		// name (a closed tab, a new tab with no URL recorded, in the last
		// step) is passed over: the restore opens the page before it, and
		// re-applies nothing done after it (stopI, stopJ).
		k, at, url := -1, -1, ""
		stopI, stopJ := len(h.Items), 0
	search:
		for i := len(h.Items) - 1; i >= 0; i-- {
			acts := h.Items[i].Actions
			for j := len(acts) - 1; j >= 0; j-- {
				if !leftPage(acts[j]) {
					continue
				}
				if u := pageAfter(h, i, j); u != "" {
					k, at, url = i, j, u
					break search
				}
				stopI, stopJ = i, j
			}
		}
		if k < 0 && len(h.Items) > 0 {
			if u := h.Items[0].State.URL; webURL(u) {
				url = u
			}
		}
		if url != "" {
			params, _ := json.Marshal(NavigateParams{URL: url})
			step := 0
			if k >= 0 {
				step = h.Items[k].Step
			}
			add(step, StateRecord{}, []ActionRecord{{Name: "navigate", Params: params}}, []int{max(at, 0)})
		}
		from := k
		if k < 0 {
			from = 0
		}
		for i := from; i < len(h.Items); i++ {
			it := h.Items[i]
			var recs []ActionRecord
			var pos []int
			for j, r := range it.Actions {
				if i == k && j <= at {
					continue // before the navigation: another page
				}
				if i > stopI || (i == stopI && j >= stopJ) {
					break // after a page change to a page not restored
				}
				if ran(r) && restoreInputs[r.Name] {
					recs = append(recs, r)
					pos = append(pos, j)
				}
			}
			if len(recs) == 0 {
				continue
			}
			state := it.State
			if i == k {
				// Done after the navigation in the same batch: on the page
				// it reached, which the step did not observe.
				state = StateRecord{URL: url}
			}
			add(it.Step, state, recs, pos)
		}
	}
	vars, err := restoreVars(h, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResume, err)
	}
	p.opt.Vars = vars
	if len(p.rec.Items) > 0 {
		// Replay's own checks (variables, rebase), before anything runs.
		if _, _, err := compile(p.rec, p.replayOptions(Settings{})); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrResume, err)
		}
	}
	return p, nil
}

// restoreVars renames p.opt.Vars, given by the names ReplayVariables(h)
// lists, to the names the restore's recording gives the same actions (a
// value typed twice on different pages is email_2 in h, email in the
// restore). A variable of h whose action the restore does not re-apply is
// dropped; a name h does not have is an ErrReplayVars; a secret's name is
// kept (Replay refuses it).
func restoreVars(h *History, p *restorePlan) (map[string]string, error) {
	if len(p.opt.Vars) == 0 {
		return p.opt.Vars, nil
	}
	type at struct{ step, action int }
	planned := map[at]string{}
	for _, v := range replayVariables(p.rec) {
		if v.Step < 1 || v.Step > len(p.origin) {
			continue
		}
		o := p.origin[v.Step-1]
		if v.Action < len(o.pos) {
			planned[at{o.step, o.pos[v.Action]}] = v.Name
		}
	}
	recorded := replayVariables(h)
	out := map[string]string{}
	for name, val := range p.opt.Vars {
		i := slices.IndexFunc(recorded, func(v Variable) bool { return v.Name == name })
		switch {
		case i < 0:
			names := make([]string, len(recorded))
			for j, v := range recorded {
				names[j] = v.Name
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("%w: unknown variable %q: the recorded run has no variables", ErrReplayVars, name)
			}
			return nil, fmt.Errorf("%w: unknown variable %q (known: %s)", ErrReplayVars, name, strings.Join(names, ", "))
		case recorded[i].Secret:
			out[name] = val
		default:
			if pn, ok := planned[at{recorded[i].Step, recorded[i].Action}]; ok {
				out[pn] = val
			}
		}
	}
	return out, nil
}

// replayOptions are the inner replay's options over set.
func (p *restorePlan) replayOptions(set Settings) ReplayOptions {
	return ReplayOptions{Settings: set, Vars: p.opt.Vars, Rebase: p.opt.Rebase, SettleTimeout: p.opt.SettleTimeout}
}

// restoreStep runs the restore as step n of a: the synthetic recording
// replayed by Replay's engine on a's browser, without a model, its actions
// recorded in one item whose Source is SourceResume. The error is a
// *ResumeError when the restore failed, ctx's when it was cancelled.
func (a *Agent) restoreStep(ctx context.Context, p *restorePlan) (HistoryItem, error) {
	n := a.nextStep
	a.nextStep++
	a.stepStarted(ctx, n)
	item := HistoryItem{Step: n, Source: SourceResume, StartedAt: a.set.Now()}
	if len(p.rec.Items) == 0 {
		item.Notes = append(item.Notes, "The run was resumed in a new browser; the recorded run had opened no page, so nothing was restored.")
		a.finish(ctx, &item)
		return item, nil
	}
	// The inner replay is this step: it tells nobody of its own run, asks
	// no person, keeps its files apart.
	set := p.set
	set.Observers, set.OnStepStart, set.OnStepEnd = nil, nil, nil
	set.Judge, set.Cache, set.Human, set.HandoffPolicies = nil, nil, nil, nil
	set.RunDir = filepath.Join(a.runDir, fmt.Sprintf("resume_step_%d", n))
	if err := os.MkdirAll(set.RunDir, 0o755); err != nil {
		item.Error = fmt.Sprintf("resume: %v", err)
		a.finish(ctx, &item)
		return item, &ResumeError{Step: -1, Action: -1, Err: err}
	}
	start := time.Now()
	rr, err := replay(ctx, a.browser, p.rec, p.replayOptions(set))
	item.ActionsTime = time.Since(start)
	if rr != nil && rr.History != nil {
		for i, it := range rr.History.Items {
			if i == 0 {
				item.State = it.State
			}
			item.Actions = append(item.Actions, it.Actions...)
		}
	}
	var rerr error
	if err != nil {
		rerr = err
		var re *ReplayError
		if errors.As(err, &re) {
			re2 := &ResumeError{Step: -1, Action: -1, Name: re.Name, Err: err}
			if re.Step >= 1 && re.Step <= len(p.origin) {
				o := p.origin[re.Step-1]
				re2.Step = o.step
				if re.Action >= 0 && re.Action < len(o.pos) {
					re2.Action = o.pos[re.Action]
				}
			}
			rerr = re2
		} else if ctx.Err() == nil {
			rerr = &ResumeError{Step: -1, Action: -1, Err: err}
		}
		item.Error = a.secrets.scrub("the run was resumed in a new browser, but its page could not be restored: " + rerr.Error())
	} else {
		item.Notes = append(item.Notes, "The run was resumed in a new browser: the page was opened again and the values typed or selected on it re-entered; clicks and submissions were not repeated. Check the page before going on.")
	}
	a.finish(ctx, &item)
	return item, rerr
}

// webURL reports whether u is an http(s) URL, one a restore can open.
func webURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}
