package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/bus"

	"github.com/browseragent/browseragent/events"
)

// multiAct runs a batch of actions in order under the fences:
//
//   - an action's error (or an approval denial) stops the batch;
//   - done stops it (ParseOutput already insists that done is alone);
//   - a terminating action (navigate, search, go_back, switch_tab,
//     evaluate, ...) stops it;
//   - a URL change, a new tab or a focus change stops it;
//   - before each element action after the first, the page fingerprint is
//     compared with the observation's: a page that re-rendered in place
//     (same URL) stops the batch, because the indexes the model chose may now
//     name other elements (upstream runs them anyway).
//
// Every stop that leaves actions unrun adds a note, shown to the model on
// the next step, naming what ran and what was dropped and why.
func (a *Agent) multiAct(ctx context.Context, st *events.BrowserState, calls []ActionCall, item *HistoryItem, step int) {
	wait := a.set.WaitBetweenActions
	for i, c := range calls {
		if ctx.Err() != nil {
			return
		}
		spec, ok := a.spec(c.Name)
		if !ok { // cannot happen after ParseOutput; kept for InitialActions
			item.Actions = append(item.Actions, ActionRecord{Name: c.Name, Params: c.Params, Error: "unknown action"})
			a.dropNote(item, calls, i+1, "action "+c.Name+" is unknown")
			return
		}
		if i > 0 {
			// Pause first, then fence: a navigation or re-render the previous
			// action started gets the pause to show in the fingerprint.
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			if reason := a.fence(ctx, st, spec, c, i, item.Actions[len(item.Actions)-1]); reason != "" {
				a.dropNote(item, calls, i, reason)
				return
			}
		}
		rec, err := a.act(ctx, spec, c, st, step)
		item.Actions = append(item.Actions, rec)
		if rec.Denied {
			a.dropNote(item, calls, i+1, fmt.Sprintf("action %d (%s) was denied", i+1, c.Name))
			return
		}
		res := rec.Result
		if res.ReadOnce != "" {
			a.readState = append(a.readState, fmt.Sprintf("%s:\n%s", c.Name, res.ReadOnce))
		}
		if res.WantScreenshot {
			a.wantShot = true
		}
		last := i == len(calls)-1
		switch {
		case err != nil:
			if !last {
				a.dropNote(item, calls, i+1, fmt.Sprintf("action %d (%s) failed", i+1, c.Name))
			}
			return
		case res.Done:
			return
		}
		if a.followNewTab(ctx, &item.Actions[len(item.Actions)-1]) {
			if !last {
				a.dropNote(item, calls, i+1, fmt.Sprintf("action %d (%s) opened a new tab", i+1, c.Name))
			}
			return
		}
		if last {
			return
		}
		if spec.Terminates {
			a.dropNote(item, calls, i+1, fmt.Sprintf("action %d (%s) changes the page, so it always ends the batch", i+1, c.Name))
			return
		}
		if res.Outcome != nil && res.Outcome.Verdict == events.VerdictNavigated {
			a.dropNote(item, calls, i+1, fmt.Sprintf("action %d (%s) navigated to %s", i+1, c.Name, res.Outcome.After.URL))
			return
		}
		if ft := a.browser.FocusedTab(); st.FocusedTarget != "" && ft != st.FocusedTarget {
			a.dropNote(item, calls, i+1, fmt.Sprintf("the focused tab changed after action %d (%s)", i+1, c.Name))
			return
		}
	}
}

// act asks the Approver, then runs one action and records it with every
// text scrubbed of secrets. A denial is a failed record with Denied set and
// no error returned; err is the action's own error (also in rec.Error, as
// the model reads it).
func (a *Agent) act(ctx context.Context, spec ActionSpec, c ActionCall, st *events.BrowserState, step int) (ActionRecord, error) {
	rec := ActionRecord{Name: c.Name, Params: c.Params, Risk: spec.Risk}
	rec.Element = a.recordElement(spec, c, st)
	url := ""
	if st != nil {
		url = st.URL
	}
	req := ApprovalRequest{Action: c.Name, Params: c.Params, Risk: spec.Risk, URL: a.secrets.scrub(url), Step: step}
	if n := c.approval; n != nil {
		req.Match, req.Note = n.match, n.note
	}
	dec, err := a.set.Approver.Approve(ctx, req)
	if err != nil || !dec.Allow {
		reason := dec.Reason
		if err != nil {
			reason = err.Error()
		}
		if reason == "" {
			reason = "no reason given"
		}
		rec.Error = a.secrets.scrub("denied by approval policy: " + reason)
		rec.Verdict = events.VerdictFailed
		rec.Denied = true
		return rec, nil
	}
	ac := &ActionContext{Browser: a.browser, FileSystem: a.fs, ExtractModel: a.set.ExtractModel, BrowserState: st, Logger: a.log, RunDir: a.runDir, agent: a}
	start := time.Now()
	mark := a.meter.stepUsed()
	res, err := a.runAction(ctx, spec, ac, c.Params)
	if err == nil && res.Outcome != nil {
		// A write request the action caused failed: the action failed,
		// even when its watchdog returned the outcome without the error.
		if e := res.Outcome.RequestErr(nil); e != nil {
			err = &events.ActionError{Action: c.Name, Outcome: *res.Outcome, Err: e}
		}
	}
	a.meter.addReported(mark, res.Usage)
	rec.Duration = time.Since(start)
	res.Text = a.secrets.scrub(res.Text)
	res.ReadOnce = a.secrets.scrub(res.ReadOnce)
	if res.Outcome != nil {
		rec.Verdict = res.Outcome.Verdict
		res.Outcome.Detail = a.secrets.scrub(res.Outcome.Detail)
		// The record keeps the requests once, scrubbed (a URL may carry
		// a typed secret in its query).
		for _, r := range res.Outcome.Requests {
			r.URL = a.secrets.scrub(r.URL)
			r.Error = a.secrets.scrub(r.Error)
			rec.Requests = append(rec.Requests, r)
		}
		res.Outcome.Requests = nil
		rec.RequestsOmitted = res.Outcome.RequestsOmitted
	}
	rec.Mark, res.Mark = res.Mark, nil
	rec.Result = res
	if err != nil {
		rec.Error = a.secrets.scrub(errText(err))
		rec.Verdict = events.VerdictFailed
	}
	a.log.Debug("agent: action", zap.Int("step", step), zap.String("action", c.Name), zap.String("verdict", string(rec.Verdict)), zap.Bool("error", err != nil))
	return rec, err
}

// followNewTab switches to the first tab an action opened, as upstream
// does, and says so in the record's text. It reports whether the action
// opened a tab.
func (a *Agent) followNewTab(ctx context.Context, rec *ActionRecord) bool {
	o := rec.Result.Outcome
	if rec.Error != "" || o == nil || len(o.NewTabs) == 0 {
		return false
	}
	if sw, err := a.switchTab(ctx, o.NewTabs[0]); err == nil {
		if webURL(sw.URL) && a.secrets.scrub(sw.URL) == sw.URL {
			rec.TabURL = sw.URL
		}
		rec.Result.Text += fmt.Sprintf(" Switched to the new tab %s (%s).", TabRef(sw.TargetID), sw.URL)
	} else {
		// The model must not believe it is on the new tab.
		rec.Result.Text += a.secrets.scrub(fmt.Sprintf(" Could not switch to the new tab %s: %v; still on the previous tab.", TabRef(o.NewTabs[0]), errText(err)))
	}
	return true
}

// fence decides, before action c (not the first), whether the batch must
// stop because the page is no longer the one observed. It returns the
// reason, or "".
func (a *Agent) fence(ctx context.Context, st *events.BrowserState, spec ActionSpec, c ActionCall, prevN int, prev ActionRecord) string {
	if ft := a.browser.FocusedTab(); st.FocusedTarget != "" && ft != st.FocusedTarget {
		return "the focused tab changed"
	}
	if !spec.TargetsIndex || (paramIndex(c.Params) <= 0 && !hasCoordinates(c.Params)) || st.Fingerprint == "" {
		return ""
	}
	fp, err := a.browser.Fingerprint(ctx, "")
	if err != nil {
		return fmt.Sprintf("the page could not be checked before %s (%v)", c.Name, err)
	}
	if now := fp.String(); now != st.Fingerprint {
		if fp.URL != "" && !strings.HasPrefix(st.Fingerprint, fp.URL+"#") {
			return fmt.Sprintf("the page navigated to %s", fp.URL)
		}
		cause := "it re-rendered on its own"
		if o := prev.Result.Outcome; o != nil && o.After.Fingerprint != "" && o.After.Fingerprint != st.Fingerprint {
			cause = fmt.Sprintf("action %d (%s) re-rendered it", prevN, prev.Name)
		}
		return fmt.Sprintf("the page changed since it was observed (%s: %s -> %s), so element indexes may now point to different elements", cause, st.Fingerprint, now)
	}
	return ""
}

// dropNote records which actions of the batch ran and which were dropped.
// ran is the number of actions that ran (or were attempted).
func (a *Agent) dropNote(item *HistoryItem, calls []ActionCall, ran int, reason string) {
	if ran >= len(calls) {
		return
	}
	var did, dropped []string
	for i, c := range calls {
		if i < ran {
			did = append(did, fmt.Sprintf("%d %s", i+1, c.Name))
		} else {
			dropped = append(dropped, fmt.Sprintf("%d %s %s", i+1, c.Name, shorten(displayJSON(c.Params), 120)))
		}
	}
	ranText := "no action ran"
	if len(did) > 0 {
		ranText = "ran: " + strings.Join(did, ", ")
	}
	item.Notes = append(item.Notes, a.secrets.scrub(fmt.Sprintf("Batch stopped: %s. %s; NOT run: %s. Check the new page state and redo them if still needed.", reason, upperFirst(ranText), strings.Join(dropped, "; "))))
}

// runAction runs one action, converting a panic into an error.
func (a *Agent) runAction(ctx context.Context, spec ActionSpec, ac *ActionContext, params json.RawMessage) (res ActionResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("action %s panicked: %v", spec.Name, r)
		}
	}()
	return spec.Run(ctx, ac, orEmpty(params))
}

func paramIndex(p json.RawMessage) int {
	var v struct {
		Index *int `json:"index"`
	}
	if json.Unmarshal(p, &v) != nil || v.Index == nil {
		return 0
	}
	return *v.Index
}

// errText words an action error for the model: the bus's handler prefix
// ("bus: ClickElement#45 handler \"actions\": ") is noise to it.
func errText(err error) string {
	var he *bus.HandlerError
	if errors.As(err, &he) && he.Err != nil {
		err = he.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, bus.ErrTimeout) {
		return "timed out: " + err.Error()
	}
	return err.Error()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TabRef is the short tab id the model reads and writes (the id's last 4
// characters); Browser.ResolveTab accepts it. Callers that show tabs to a
// model or a person use it so that every surface names a tab alike.
func TabRef(id string) string {
	if len(id) <= 4 {
		return id
	}
	return id[len(id)-4:]
}

// observedAttrCut is the length the DOM watchdog cuts attribute values
// at: a value that long may end with part of a secret.
const observedAttrCut = 200

// recordElement describes the element an element action targets, as the
// step observed it, for replay and the action cache; nil for other actions.
func (a *Agent) recordElement(spec ActionSpec, c ActionCall, st *events.BrowserState) *match.Element {
	idx := paramIndex(c.Params)
	if !spec.TargetsIndex || idx <= 0 || st == nil {
		return nil
	}
	e, ok := match.Record(idx, st.Elements)
	if !ok {
		return nil
	}
	scrubbed := false
	if n := a.secrets.scrubSpaced(e.Name); n != e.Name {
		e.Name, scrubbed = n, true
	}
	if f := a.secrets.scrub(e.Frame); f != e.Frame {
		e.Frame, scrubbed = f, true
	}
	raw := st.Elements[idx].Attributes
	for k, v := range e.Attrs {
		w := a.secrets.scrub(v)
		if len(raw[k]) >= observedAttrCut {
			w = a.secrets.scrubCut(v)
		}
		if w != v {
			e.Attrs[k], scrubbed = w, true
		}
	}
	if scrubbed {
		// The hashes digest the secret's value: a short or guessable
		// secret could be recovered from them.
		e.Hash, e.StableHash = "", ""
	}
	return &e
}
