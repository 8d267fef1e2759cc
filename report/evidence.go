package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/trace"
)

// Mark is one action's mark on its step's screenshot: the element's box or
// the point the mouse used, in CSS pixels of the step's viewport.
type Mark struct {
	Step int
	// Action is the action's number in the step's list (from 1).
	Action int
	Kind   string // "box" or "point"
	X, Y   float64
	W, H   float64 // 0 for a point
	// Outside says how much of a box lies outside the viewport ("partly",
	// "wholly"; "" when it is in view): the element was off-screen when
	// the screenshot was taken.
	Outside string
	// Style places the mark in percent of the viewport, so that it sits
	// right on the image at any size: a screenshot scaled by the device
	// pixel ratio, shrunk for the model, or shown smaller in the report.
	Style template.CSS
}

// Phase is one part of a step's timeline.
type Phase struct {
	Name string // "observe", "model", "actions" or "person" (hand-offs)
	MS   float64
	// Style is the phase's share of the step's bar.
	Style template.CSS
}

// addEvidence fills what the report shows beside each step's record: the
// timeline, the actions' marks and the picture after the actions. Steps'
// images must be embedded already: a step's "after" is the next one's,
// when the next record is that step's successor in the same run (a
// multi-task trace starts each task's steps again).
func addEvidence(dir string, steps []Step) {
	for i := range steps {
		s := &steps[i]
		s.Phases = phases(s.Step)
		s.Marks, s.MarksProblem = marks(s)
		if s.AfterScreenshot != "" {
			s.After, s.AfterProblem = embedFile(dir, s.AfterScreenshot, s.AfterScreenshotSHA256)
			s.AfterCaption = "after the actions"
			continue
		}
		if !changedPage(s.Actions) {
			continue
		}
		if i+1 < len(steps) {
			if next := &steps[i+1]; next.RunIndex == s.RunIndex && next.Step.Step == s.Step.Step+1 && next.Image != "" {
				s.After = next.Image
				s.AfterCaption = fmt.Sprintf("after: step %d's screenshot", next.Step.Step)
				if policyHandoff(next.Handoffs) {
					// A policy's hand-off runs before the step observes:
					// its screenshot shows the person's work too.
					s.AfterCaption += ", taken after a person's hand-off (it shows what they did too)"
				}
				continue
			}
		}
		s.AfterMissing = "no screenshot shows the page after these actions (vision off, or none taken)"
	}
}

// policyHandoff reports whether a step handed the browser to a person
// because a policy asked (not request_human: that is an action, after the
// screenshot).
func policyHandoff(hs []agent.Handoff) bool {
	for _, h := range hs {
		if !actionHandoff(h) {
			return true
		}
	}
	return false
}

// actionHandoff reports whether h was a request_human action (the
// model's, or one of the initial actions): its time is in the step's
// actions' time.
func actionHandoff(h agent.Handoff) bool { return h.By == "model" || h.By == "initial" }

// changedPage reports whether an action changed the page: its verdict
// says so, or it failed yet its evidence shows another URL or page
// fingerprint after it (a form whose POST answered 500 with an error
// page).
func changedPage(acts []trace.Action) bool {
	for _, a := range acts {
		switch a.Verdict {
		case "changed", "navigated", "new_tab":
			return true
		case "failed":
			if evidenceDiffers(a.Before, a.After) {
				return true
			}
		}
	}
	return false
}

// evidenceDiffers reports whether an action's recorded evidence shows the
// page's URL or fingerprint changed; false when either side is missing.
func evidenceDiffers(before, after json.RawMessage) bool {
	var b, a events.Evidence
	if json.Unmarshal(before, &b) != nil || json.Unmarshal(after, &a) != nil {
		return false
	}
	if b.URL == "" && b.Fingerprint == "" || a.URL == "" && a.Fingerprint == "" {
		return false
	}
	return b.URL != a.URL || b.Fingerprint != a.Fingerprint
}

// phases is a step's timeline; nil when the trace recorded none (older
// traces). Each phase's share is of the step's duration, or of the
// phases' sum when that is longer (clocks read apart).
func phases(st trace.Step) []Phase {
	ps := []Phase{{Name: "observe", MS: st.ObserveMS}, {Name: "model", MS: st.ModelMS}, {Name: "actions", MS: st.ActionsMS}}
	// A person's time (hand-offs) is its own phase: it is not the agent's.
	// A request_human action's hand-off (the model's, an initial
	// action's): its time is in the actions' and counted once, as the
	// person's.
	person, asked := 0.0, 0.0
	for _, h := range st.Handoffs {
		d := float64(h.Duration) / float64(time.Millisecond)
		person += d
		if actionHandoff(h) {
			asked += d
		}
	}
	if finite(asked) && asked > 0 {
		ps[2].MS = max(0, ps[2].MS-asked)
	}
	if person > 0 {
		ps = append(ps, Phase{Name: "person", MS: person})
	}
	sum := 0.0
	for i := range ps {
		if !finite(ps[i].MS) || ps[i].MS < 0 {
			ps[i].MS = 0
		}
		sum += ps[i].MS
	}
	if sum == 0 {
		return nil
	}
	total := max(sum, st.DurationMS)
	for i := range ps {
		ps[i].Style = template.CSS(fmt.Sprintf("width:%.3f%%", ps[i].MS/total*100))
	}
	return ps
}

// marks are the step's actions' marks, placed in percent of the viewport;
// problem says why there are marks to draw but none is drawn.
func marks(s *Step) (out []Mark, problem string) {
	has := false
	for _, a := range s.Actions {
		has = has || a.Mark != nil
	}
	switch {
	case !has || s.Image == "":
		return nil, ""
	case s.Viewport == nil || !(s.Viewport.Width > 0) || !(s.Viewport.Height > 0) || !finite(s.Viewport.Width) || !finite(s.Viewport.Height):
		return nil, "where the actions landed is not drawn: the trace does not record the viewport's size"
	}
	vw, vh := s.Viewport.Width, s.Viewport.Height
	for i, a := range s.Actions {
		m := a.Mark
		if m == nil {
			continue
		}
		if b := m.Box; b != nil && finite(b[0]) && finite(b[1]) && finite(b[2]) && finite(b[3]) && b[2] >= 0 && b[3] >= 0 {
			out = append(out, Mark{Step: s.Step.Step, Action: i + 1, Kind: "box", X: b[0], Y: b[1], W: b[2], H: b[3],
				Outside: outside(b, vw, vh),
				Style:   template.CSS(fmt.Sprintf("left:%.4f%%;top:%.4f%%;width:%.4f%%;height:%.4f%%", b[0]/vw*100, b[1]/vh*100, b[2]/vw*100, b[3]/vh*100))})
		}
		if p := m.Point; p != nil && finite(p[0]) && finite(p[1]) {
			out = append(out, Mark{Step: s.Step.Step, Action: i + 1, Kind: "point", X: p[0], Y: p[1],
				Style: template.CSS(fmt.Sprintf("left:%.4f%%;top:%.4f%%", p[0]/vw*100, p[1]/vh*100))})
		}
	}
	return out, ""
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// outside says how much of box b lies outside a vw×vh viewport.
func outside(b *[4]float64, vw, vh float64) string {
	switch {
	case b[0] >= vw || b[1] >= vh || b[0]+b[2] <= 0 || b[1]+b[3] <= 0:
		return "wholly"
	case b[0] < 0 || b[1] < 0 || b[0]+b[2] > vw || b[1]+b[3] > vh:
		return "partly"
	}
	return ""
}
