package report

import (
	"fmt"
	"strings"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/trace"
)

// Sources sums up where a run's steps came from: the model, a replayed
// recording, the model healing a replayed step, the action cache.
type Sources struct {
	Model, Replayed, Healed, Cached int
	// Saved is how many steps ran without a model call because a replay
	// or the action cache answered: each saved one (step 0, the initial
	// actions, never asks a model and is not counted).
	Saved int
	// Cache is the action cache counts (trace.Run.Cache) summed over the
	// trace's runs (a driven session records one per task); nil when the
	// cache was off in all of them.
	Cache *agent.CacheStats
}

// Shown reports whether the summary says anything a plain model run does
// not: a step from elsewhere than the model, or the cache on.
func (s Sources) Shown() bool { return s.Replayed+s.Healed+s.Cached > 0 || s.Cache != nil }

// sumCache sums the runs' action cache counts; nil when none has any.
func sumCache(runs ...trace.Run) *agent.CacheStats {
	var sum *agent.CacheStats
	for _, r := range runs {
		if r.Cache == nil {
			continue
		}
		if sum == nil {
			sum = &agent.CacheStats{}
		}
		sum.Hits += r.Cache.Hits
		sum.Misses += r.Cache.Misses
		sum.Invalidated += r.Cache.Invalidated
		sum.Stored += r.Cache.Stored
	}
	return sum
}

// stepKey names a step in a trace that may hold several tasks' runs.
type stepKey struct{ run, step int }

// sumSources counts the steps' sources; calls are the model calls made
// for each step (its own, purpose "step"), by step.
func sumSources(steps []Step, calls map[stepKey]int, cache *agent.CacheStats) Sources {
	s := Sources{Cache: cache}
	for _, st := range steps {
		switch st.Source {
		case agent.SourceReplay:
			s.Replayed++
		case agent.SourceHeal:
			s.Healed++
		case agent.SourceCache:
			s.Cached++
		default:
			s.Model++
		}
		// Step 0 (the initial actions) never asks a model: replaying it
		// saves nothing.
		if (st.Source == agent.SourceReplay || st.Source == agent.SourceCache) && st.Step.Step > 0 && calls[stepKey{st.RunIndex, st.Step.Step}] == 0 {
			s.Saved++
		}
	}
	return s
}

// sourceLabel is a step's source badge; "" for the model's own steps.
func sourceLabel(src agent.StepSource) string {
	switch src {
	case agent.SourceModel:
		return ""
	case agent.SourceReplay:
		return "replayed"
	case agent.SourceHeal:
		return "healed by the model"
	case agent.SourceCache:
		return "from the cache"
	}
	return "from " + string(src)
}

// matchText words how a replayed or cached action's element was found:
// "found by stable_hash, score 0.93", "ambiguous: several elements match;
// chosen by position, score 0.60", "not found", ...
func matchText(r *match.Result) string {
	if r == nil {
		return ""
	}
	switch {
	case r.Found() && r.Ambiguous && (r.Strategy == match.ByPosition || r.Strategy == match.ByXPath):
		return fmt.Sprintf("ambiguous: several elements match; chosen by %s, score %.2f", r.Strategy, r.Score)
	case r.Found() && r.Ambiguous:
		return fmt.Sprintf("ambiguous: found by %s but agrees with little of the recording, score %.2f", r.Strategy, r.Score)
	case r.Found() && r.Score < match.WeakScore:
		return fmt.Sprintf("found by %s, weak: score %.2f", r.Strategy, r.Score)
	case r.Found():
		return fmt.Sprintf("found by %s, score %.2f", r.Strategy, r.Score)
	case r.Ambiguous && r.Outscored && len(r.Candidates) > 0:
		return fmt.Sprintf("ambiguous: signals disagree: element %d agrees with more of the recording; none chosen", r.Candidates[0].Index)
	case r.Ambiguous:
		return "ambiguous: several elements match and none could be chosen"
	}
	return "not found"
}

// matchClass is the match line's class: match-ambiguous, match-missing,
// match-weak (found, a score under match.WeakScore) or match-unique.
func matchClass(r *match.Result) string {
	switch {
	case r == nil:
		return ""
	case r.Ambiguous:
		return "match-ambiguous"
	case !r.Found():
		return "match-missing"
	case r.Score < match.WeakScore:
		return "match-weak"
	}
	return "match-unique"
}

// elemText describes a recorded element: its tag, role and name.
func elemText(e *match.Element) string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("<" + e.Tag + ">")
	if e.Role != "" && e.Role != e.Tag {
		b.WriteString(" " + e.Role)
	}
	if e.Name != "" {
		fmt.Fprintf(&b, " %q", e.Name)
	}
	if e.Similar > 1 {
		fmt.Fprintf(&b, " (%d of %d alike)", e.Ordinal, e.Similar)
	}
	return b.String()
}

// candText describes one candidate the matcher considered.
func candText(c match.Candidate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] <%s>", c.Index, c.Tag)
	if c.Role != "" && c.Role != c.Tag {
		b.WriteString(" " + c.Role)
	}
	if c.Name != "" {
		fmt.Fprintf(&b, " %q", c.Name)
	}
	fmt.Fprintf(&b, ", score %.2f", c.Score)
	if c.Conflict != "" {
		b.WriteString(", ruled out: its " + c.Conflict + " differs")
	}
	return b.String()
}
