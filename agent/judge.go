package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/browseragent/browseragent/agent/llm"
)

// ModelJudge is a Judge that asks a model (often a stronger or cheaper one
// than the agent's) to grade the run, with the prompt in prompts/judge.md:
// the task, the trajectory (the same step text the agent saw), the final
// answer, and up to 10 last screenshots. It costs one extra model call per
// finished run.
type ModelJudge struct {
	Model llm.Model
	// MaxChars caps each of the task, trajectory and final answer. Default
	// 40,000.
	MaxChars int
}

var judgeSchema = &llm.Schema{Name: "judgement", JSON: json.RawMessage(`{"type":"object","properties":{"reasoning":{"type":"string"},"verdict":{"type":"boolean"},"failure_reason":{"type":"string"},"impossible_task":{"type":"boolean"}},"required":["reasoning","verdict","failure_reason","impossible_task"],"additionalProperties":false}`)}

// Judge implements Judge.
func (j ModelJudge) Judge(ctx context.Context, in JudgeInput) (Judgement, error) {
	if j.Model == nil {
		return Judgement{}, fmt.Errorf("agent: judge: %w", ErrNoModel)
	}
	limit := j.MaxChars
	if limit <= 0 {
		limit = 40000
	}
	sys, err := promptFS.ReadFile("prompts/judge.md")
	if err != nil {
		return Judgement{}, err
	}
	var traj strings.Builder
	if in.History != nil {
		for _, it := range in.History.Items {
			traj.WriteString(stepText(it))
		}
	}
	text := fmt.Sprintf("<task>\n%s\n</task>\n<agent_trajectory>\n%s</agent_trajectory>\n<final_result>\nsuccess claimed: %v\n%s\n</final_result>",
		shorten(in.Task, limit), shorten(traj.String(), limit), in.Success, shorten(in.FinalText, limit))
	parts := []llm.Part{llm.Text(text)}
	shots := in.Screenshots
	if len(shots) > 10 {
		shots = shots[len(shots)-10:]
	}
	for _, s := range shots {
		parts = append(parts, llm.ImagePart(imageMediaType(s, ""), s))
	}
	resp, err := j.Model.Generate(ctx, llm.Request{Messages: []llm.Message{llm.SystemMessage(string(sys)), llm.UserMessage(parts...)}, Schema: judgeSchema})
	if err != nil {
		return Judgement{}, fmt.Errorf("agent: judge: %w", err)
	}
	var out Judgement
	if err := llm.DecodeJSON(resp, &out); err != nil {
		return Judgement{}, fmt.Errorf("agent: judge: %w", err)
	}
	return out, nil
}
