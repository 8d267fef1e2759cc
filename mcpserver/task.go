package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
)

// runTask runs a whole task with Config.Model on the browser, telling the
// client each step as a progress notification when it sent a progress
// token. The result names the answer, whether the agent claims success,
// the steps taken, the tokens and cost, and the trace. A run stopped by a
// budget (agent.ErrBudgetExceeded) is a tool error that says why, not a
// protocol error.
func (s *Server) runTask(in taskIn) handler {
	return func(ctx context.Context, b *Browser) (*mcp.CallToolResult, error) {
		max := s.cfg.MaxSteps
		if in.MaxSteps > 0 && in.MaxSteps < max {
			max = in.MaxSteps
		}
		opt := agent.TaskOptions{MaxSteps: max}
		// A client that cannot be asked during this call (no elicitation,
		// or the 2026-07-28 protocol) has nobody to hand the browser to:
		// the model is not offered request_human.
		c := callFrom(ctx)
		opt.NoHuman = c == nil || !c.canHandOff()
		if c != nil && c.req.Params != nil {
			req := c.req
			if tok := req.Params.GetProgressToken(); tok != nil {
				opt.Observers = append(opt.Observers, &progress{ss: req.Session, token: tok, total: max, log: s.log})
			}
		}
		res, err := b.Driver.RunTask(ctx, s.cfg.Model, in.Task, opt)
		if err != nil && res == nil {
			return nil, err
		}
		if errors.Is(err, agent.ErrBudgetExceeded) {
			err = nil // res.Errors ends with the reason; !res.Done makes it a tool error
		}
		var sb strings.Builder
		switch {
		case res.Done && res.Success:
			sb.WriteString("Done (success).\n")
		case res.Done:
			sb.WriteString("Done, without success.\n")
		default:
			fmt.Fprintf(&sb, "Not finished: %s\n", strings.Join(res.Errors, "; "))
		}
		fmt.Fprintf(&sb, "Steps: %d\n", res.Steps)
		if res.Usage != (llm.Usage{}) {
			fmt.Fprintf(&sb, "Tokens: %s · %s\n", agent.FormatUsage(res.Usage), res.Cost.String())
		}
		if b.Trace != "" {
			fmt.Fprintf(&sb, "Trace: %s\n", b.Trace)
		}
		if res.FinalText != "" {
			sb.WriteString("\n" + res.FinalText)
		}
		if err != nil {
			// The run ended early (the browser went away): say what it did.
			return nil, fmt.Errorf("%w\n%s", err, sb.String())
		}
		r := text(sb.String())
		r.IsError = !res.Done
		sc := map[string]any{"done": res.Done, "success": res.Success, "final_text": res.FinalText, "steps": res.Steps, "trace": b.Trace,
			"input_tokens": res.Usage.PromptTokens, "cached_input_tokens": res.Usage.CachedTokens, "output_tokens": res.Usage.CompletionTokens}
		if res.Cost.Known() {
			sc["cost_usd"] = res.Cost.Total
		}
		r.StructuredContent = sc
		return r, nil
	}
}

// progress sends one progress notification per finished step.
type progress struct {
	agent.BaseObserver
	ss    *mcp.ServerSession
	token any
	total int
	log   *zap.Logger
	done  int
}

// StepEnded implements agent.Observer. It runs on the task's goroutine,
// with the call's context (which routes the notification to the call's
// stream over HTTP).
func (p *progress) StepEnded(ctx context.Context, it agent.HistoryItem) {
	p.done++
	err := p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token,
		Progress:      float64(p.done),
		Total:         float64(p.total),
		Message:       stepLine(it),
	})
	if err != nil {
		p.log.Debug("progress notification", zap.Error(err))
	}
}

// stepLine words a step in one line: its goal and its actions.
func stepLine(it agent.HistoryItem) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "step %d", it.Step)
	if it.Output != nil && it.Output.NextGoal != "" {
		sb.WriteString(": " + oneLine(it.Output.NextGoal, 160))
	}
	for i, a := range it.Actions {
		if i == 0 {
			sb.WriteString(" —")
		}
		sb.WriteString(" " + a.Name)
		if a.Error != "" {
			sb.WriteString(" (failed)")
		}
	}
	if it.Error != "" {
		sb.WriteString(" — error: " + oneLine(it.Error, 160))
	}
	return sb.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return strings.ToValidUTF8(s[:max-1], "") + "…"
	}
	return s
}
