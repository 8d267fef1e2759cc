package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
)

// ErrCompaction is wrapped by the error of a failed history summary (it is
// recorded in HistoryItem.Compaction; the run goes on and the summary is
// asked for again on the next step).
var ErrCompaction = errors.New("agent: history summary failed")

// Compaction records a summary of older steps made before a step's model
// call (HistoryItem.Compaction).
type Compaction struct {
	// FromStep and ToStep are the steps the summary covers, an earlier
	// summary's included.
	FromStep int `json:"from_step"`
	ToStep   int `json:"to_step"`
	// Summary is the text the model sees from now on in <compacted_memory>.
	Summary string `json:"summary,omitempty"`
	// Error is why the summary call failed (wrapping ErrCompaction); the
	// history was shown uncompacted.
	Error string `json:"error,omitempty"`
	// CharsBefore and CharsAfter are the <agent_history> text's length
	// before and after the summary replaced the steps it covers.
	CharsBefore int `json:"chars_before"`
	CharsAfter  int `json:"chars_after,omitempty"`
}

// compactState is the summary in force.
type compactState struct {
	summary string
	// upTo: history items [1, upTo) are folded into summary.
	upTo int
	// lastStep is the step number of the last summary (0 before any).
	lastStep         int
	fromStep, toStep int
}

// compactedText is the summary as <agent_history> shows it.
func compactedText(c compactState) string {
	return fmt.Sprintf("<compacted_memory>\nSummary of steps %d to %d, written by a model from those steps: treat it as unverified context.\n%s\n</compacted_memory>\n", c.fromStep, c.toStep, c.summary)
}

// compactHistory asks the compaction model for a summary of the older steps
// when both gates are open, before the model call of the step item: enough
// steps since the last summary (CompactEverySteps for the first one, then
// CompactKeepLast+1, so that each summary folds at least one step the
// previous one kept: unlike upstream, which waits CompactEverySteps again
// while the history grows past the threshold, so that what the model is
// sent stays near CompactTriggerChars), and a history text over
// CompactTriggerChars. A failure is recorded in item.Compaction and
// retried on the next step, since the gates stay open; it never fails the
// step.
func (a *Agent) compactHistory(ctx context.Context, item *HistoryItem) {
	gap := a.set.CompactEverySteps
	if a.compact.summary != "" {
		gap = min(gap, max(a.set.CompactKeepLast, 0)+1)
	}
	if a.set.CompactEverySteps < 0 || a.compactor == nil || item.Step-a.compact.lastStep < gap {
		return
	}
	a.mu.Lock()
	items := append([]HistoryItem(nil), a.history.Items...)
	tasks := append([]string(nil), a.tasks...)
	a.mu.Unlock()
	from := max(a.compact.upTo, 1)
	cut := len(items) - a.set.CompactKeepLast
	if cut <= from {
		return
	}
	before := a.historyText(items)
	if len(before) <= a.set.CompactTriggerChars {
		return
	}
	rec := &Compaction{FromStep: items[from].Step, ToStep: items[cut-1].Step, CharsBefore: len(before)}
	if a.compact.summary != "" {
		rec.FromStep = a.compact.fromStep
	}
	var in strings.Builder
	fmt.Fprintf(&in, "<user_request>\n%s\n</user_request>\n", strings.Join(tasks, "\n\n"))
	if a.compact.summary != "" {
		fmt.Fprintf(&in, "<previous_summary>\n%s\n</previous_summary>\n", a.compact.summary)
	}
	in.WriteString("<steps>\n")
	for _, it := range items[from:cut] {
		in.WriteString(stepText(it))
	}
	in.WriteString("</steps>")
	req := llm.Request{Messages: []llm.Message{
		llm.SystemMessage(execPrompt("compact.md", struct{ MaxChars int }{a.set.CompactSummaryMaxChars})),
		llm.UserMessage(llm.Text(a.secrets.scrub(in.String()))),
	}}
	lctx, cancel := boundCall(ctx, a.compactor, a.set.LLMTimeout)
	start := time.Now()
	resp, err := a.compactor.Generate(lctx, req)
	cancel()
	item.ModelTime += time.Since(start)
	summary := ""
	if resp != nil {
		summary = strings.TrimSpace(resp.Content)
	}
	if err == nil && summary == "" {
		err = errors.New("the model returned an empty summary")
	}
	if err != nil {
		rec.Error = a.secrets.scrub(fmt.Errorf("%w: %w", ErrCompaction, err).Error())
		item.Compaction = rec
		a.log.Warn("agent: history summary failed; retrying on the next step", zap.Int("step", item.Step), zap.Error(err))
		return
	}
	if len(summary) > a.set.CompactSummaryMaxChars {
		summary = strings.ToValidUTF8(summary[:a.set.CompactSummaryMaxChars], "") + " [cut]"
	}
	summary = a.secrets.scrub(summary)
	a.compact = compactState{summary: summary, upTo: cut, lastStep: item.Step, fromStep: rec.FromStep, toStep: rec.ToStep}
	rec.Summary = summary
	rec.CharsAfter = len(a.historyText(items))
	item.Compaction = rec
}

// addUsage adds u to the total t.
func addUsage(t *llm.Usage, u llm.Usage) {
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.TotalTokens += u.TotalTokens
	t.CachedTokens += u.CachedTokens
	t.CacheWriteTokens += u.CacheWriteTokens
	t.ReasoningTokens += u.ReasoningTokens
}
