package agent

import (
	"fmt"
	"strings"
)

// PlanStatus is where a plan item stands.
type PlanStatus string

// Plan item statuses: the items before the current one are done.
const (
	PlanDone    PlanStatus = "done"
	PlanCurrent PlanStatus = "current"
	PlanPending PlanStatus = "pending"
)

// PlanItem is one item of the model's plan.
type PlanItem struct {
	Text   string     `json:"text"`
	Status PlanStatus `json:"status"`
}

// applyPlan applies a reply's plan fields to plan and returns the new plan
// (nil when empty): plan_update replaces it with the current item at 0,
// then current_plan_item, clamped into range, moves the current item. The
// items before the current one are done, the ones after pending.
func applyPlan(plan []PlanItem, out *AgentOutput) []PlanItem {
	if out == nil || (out.PlanUpdate == nil && out.CurrentPlanItem == nil) {
		return plan
	}
	cur := 0
	for i, it := range plan {
		if it.Status == PlanCurrent {
			cur = i
		}
	}
	if out.PlanUpdate != nil {
		plan, cur = nil, 0
		for _, t := range out.PlanUpdate {
			if t = strings.TrimSpace(t); t != "" {
				plan = append(plan, PlanItem{Text: t})
			}
		}
	} else {
		plan = append([]PlanItem(nil), plan...)
	}
	if len(plan) == 0 {
		return nil
	}
	if p := out.CurrentPlanItem; p != nil {
		cur = min(max(*p, 0), len(plan)-1)
	}
	for i := range plan {
		switch {
		case i < cur:
			plan[i].Status = PlanDone
		case i == cur:
			plan[i].Status = PlanCurrent
		default:
			plan[i].Status = PlanPending
		}
	}
	return plan
}

// planText renders the plan for <agent_state>, one line per item with its
// index: "[x] 0. …" done, "[>] 1. …" current, "[ ] 2. …" pending.
func planText(plan []PlanItem) string {
	var b strings.Builder
	for i, it := range plan {
		mark := "[ ]"
		switch it.Status {
		case PlanDone:
			mark = "[x]"
		case PlanCurrent:
			mark = "[>]"
		}
		fmt.Fprintf(&b, "%s %d. %s\n", mark, i, it.Text)
	}
	return b.String()
}

// planNudges are the planning nudges of a step (i counts the Run's model
// steps from 0): replan after ReplanAfter failures in a row while a plan
// exists; write a plan or finish from step PlanNudgeStep on without one.
func (a *Agent) planNudges(i int) []string {
	if !a.set.planning() {
		return nil
	}
	switch {
	case len(a.plan) > 0 && a.set.ReplanAfter > 0 && a.failures >= a.set.ReplanAfter:
		return []string{fmt.Sprintf("REPLAN: your last %d steps failed. The plan is not working: send plan_update with a different approach.", a.failures)}
	case len(a.plan) == 0 && a.set.PlanNudgeStep > 0 && i+1 >= a.set.PlanNudgeStep:
		return []string{"You have no plan yet. If the task needs more steps, write a short one with plan_update; if it is done or cannot be done, call done."}
	}
	return nil
}
