package agent

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
)

// Estimates used by the budget check before a model call (see
// Settings.MaxCost).
const (
	// DefaultCharsPerToken converts a prompt's characters to tokens until a
	// call of the same model has reported its prompt tokens; from then on
	// that call's ratio is used.
	DefaultCharsPerToken = 4.0
	// DefaultImageTokens is the estimate of one image's input tokens (a
	// 1280×800 screenshot is about 1,100 at OpenAI's high detail, 1,400
	// at Anthropic's, 1,300 at Gemini's 2.5 tiling).
	DefaultImageTokens = 1400
	// DefaultOutputTokens is the expected completion of a call before the
	// run has any to average: about a full-mode step reply. Afterwards the
	// run's average completion of calls with the same purpose is used
	// (of any purpose while none has that one).
	DefaultOutputTokens = 500
)

// ErrBudgetExceeded is what a run stopped by Settings.MaxCost or
// Settings.MaxTokens returns (errors.Is); the error is a *BudgetError.
var ErrBudgetExceeded = errors.New("agent: the run's budget would be exceeded")

// BudgetError says which budget stopped a run, before which model call and
// with which numbers. Its message is plain words for people ("stopped
// before the model call of step 4: it would bring the cost to ~$0.0123 of
// the $0.01 budget ..."); Unwrap gives ErrBudgetExceeded.
type BudgetError struct {
	// Budget is "cost" (MaxCost) or "tokens" (MaxTokens).
	Budget string `json:"budget"`
	// Step is the step in which the call would have been made; Purpose
	// the call's ("step", "compact", "extract", "judge"); Model its model.
	Step    int    `json:"step"`
	Purpose string `json:"purpose"`
	Model   string `json:"model"`
	// SpentUSD and SpentTokens are the run's totals before the call;
	// EstimateUSD and EstimateTokens the call's estimate (input+output);
	// MaxCost and MaxTokens the budgets (0: none).
	SpentUSD       float64 `json:"spent_usd"`
	EstimateUSD    float64 `json:"estimate_usd"`
	MaxCost        float64 `json:"max_cost_usd,omitempty"`
	SpentTokens    int     `json:"spent_tokens"`
	EstimateTokens int     `json:"estimate_tokens"`
	MaxTokens      int     `json:"max_tokens,omitempty"`
	// UnknownPrice: the call's model has no price in Settings.Prices, so a
	// cost budget cannot be kept; the call is not made.
	UnknownPrice bool `json:"unknown_price,omitempty"`
}

func (e *BudgetError) Error() string {
	where := fmt.Sprintf("the model call of step %d", e.Step)
	switch e.Purpose {
	case "compact":
		where = fmt.Sprintf("the history summary of step %d", e.Step)
	case "extract":
		where = fmt.Sprintf("the extract action's model call in step %d", e.Step)
	case "judge":
		where = "the judge's model call"
	}
	switch {
	case e.UnknownPrice:
		return fmt.Sprintf("stopped before %s: the price of %s is unknown, so the %s budget cannot be kept (add the model to the prices)", where, e.Model, pricing.FormatUSD(e.MaxCost))
	case e.Budget == "tokens":
		return fmt.Sprintf("stopped before %s: it would bring the tokens to ~%s of the %s budget (%s spent, ~%s estimated for the call)",
			where, Tokens(e.SpentTokens+e.EstimateTokens), Tokens(e.MaxTokens), Tokens(e.SpentTokens), Tokens(e.EstimateTokens))
	default:
		return fmt.Sprintf("stopped before %s: it would bring the cost to ~%s of the %s budget (%s spent, ~%s estimated for the call)",
			where, pricing.FormatUSD(e.SpentUSD+e.EstimateUSD), pricing.FormatUSD(e.MaxCost), pricing.FormatUSD(e.SpentUSD), pricing.FormatUSD(e.EstimateUSD))
	}
}

// Unwrap makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// Tokens words a token count briefly: 950, 3.1k, 2.0k, 12k, 1.2M.
func Tokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1000000:
		return fmt.Sprintf("%.0fk", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// meter prices every call of the agent's models, sums the run's and the
// step's usage and cost, and keeps the budget: before a call it estimates
// the call and refuses it when the run would go over MaxCost or MaxTokens.
// Once it refused a call it refuses every later one of the run (the run
// is stopping).
type meter struct {
	mu        sync.Mutex
	prices    *pricing.Table
	maxCost   float64
	maxTokens int
	// active: a Run is in progress (the budget applies to Runs only).
	active  bool
	stopped *BudgetError

	runUsage  llm.Usage
	runCost   pricing.Cost
	stepCost  pricing.Cost
	stepCalls int

	// ratio is the last chars-per-token of each model's prompts.
	ratio map[string]float64
	// cached is the last cache-read count of each model and purpose.
	cached map[string]int
	// outSum and outCalls average the completion by purpose ("" = all).
	outSum, outCalls map[string]int
}

func newMeter(set Settings) *meter {
	m := &meter{prices: set.Prices, maxCost: set.MaxCost, maxTokens: set.MaxTokens}
	m.reset()
	return m
}

func (m *meter) reset() {
	m.stopped = nil
	m.runUsage, m.runCost = llm.Usage{}, pricing.Cost{}
	m.ratio, m.cached = map[string]float64{}, map[string]int{}
	m.outSum, m.outCalls = map[string]int{}, map[string]int{}
}

// startRun resets the run's totals and turns the budget on.
func (m *meter) startRun() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reset()
	m.active = true
}

// endRun turns the budget off and returns the run's usage and cost.
func (m *meter) endRun() (llm.Usage, pricing.Cost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active = false
	return m.runUsage, m.runCost
}

// totals returns the usage and cost so far.
func (m *meter) totals() (llm.Usage, pricing.Cost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runUsage, m.runCost
}

// startStep clears the step's cost.
func (m *meter) startStep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stepCost, m.stepCalls = pricing.Cost{}, 0
}

// takeStep returns the step's cost; zero when no call was made.
func (m *meter) takeStep() pricing.Cost {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stepCalls == 0 {
		return pricing.Cost{}
	}
	return m.stepCost
}

// stop returns the refusal that stops the run, if any.
func (m *meter) stop() *BudgetError {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}

// price returns the cost of one call of model (a spec, or a fallback's
// "a|b" name, priced by the model that answered).
func (m *meter) price(model, answered string, u llm.Usage) pricing.Cost {
	c, _ := m.prices.Cost(pricedSpec(model, answered), u)
	return c
}

// pricedSpec picks the spec to price a call by: the model's own name, or
// for a fallback ("a|b") the one whose name the model that answered
// starts with (the longest such: gpt-4.1-mini before gpt-4.1). A fallback
// whose answering model is not known is left unpriced.
func pricedSpec(model, answered string) string {
	specs := strings.Split(model, "|")
	if len(specs) == 1 {
		return specs[0]
	}
	best, bestLen := model, 0
	answered = strings.ToLower(answered)
	for _, s := range specs {
		_, name, _ := strings.Cut(s, ":")
		if name != "" && len(name) > bestLen && strings.HasPrefix(answered, strings.ToLower(name)) {
			best, bestLen = s, len(name)
		}
	}
	return best
}

// promptSize measures a request: its text characters (the schema's
// included) and images.
func promptSize(req llm.Request) (chars, images int) {
	chars, images = promptChars(req)
	if req.Schema != nil {
		chars += len(req.Schema.JSON) + len(req.Schema.Description)
	}
	return chars, images
}

// check estimates a call and refuses it (a *BudgetError) when the run's
// totals plus the estimate would exceed a budget.
func (m *meter) check(step int, purpose, model string, req llm.Request) *BudgetError {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.active || (m.maxCost <= 0 && m.maxTokens <= 0) {
		return nil
	}
	if m.stopped != nil {
		return m.stopped
	}
	chars, images := promptSize(req)
	ratio := m.ratio[model]
	if ratio <= 0 {
		ratio = DefaultCharsPerToken
	}
	in := int(math.Ceil(float64(chars)/ratio)) + images*DefaultImageTokens
	out := DefaultOutputTokens
	if n := m.outCalls[purpose]; n > 0 {
		out = (m.outSum[purpose] + n - 1) / n
	} else if n := m.outCalls[""]; n > 0 {
		out = (m.outSum[""] + n - 1) / n
	}
	if req.MaxTokens > 0 && out > req.MaxTokens {
		out = req.MaxTokens
	}
	est := llm.Usage{PromptTokens: in, CompletionTokens: out, CachedTokens: min(m.cached[model+"|"+purpose], in)}
	e := &BudgetError{Step: step, Purpose: purpose, Model: model,
		SpentTokens: m.runUsage.PromptTokens + m.runUsage.CompletionTokens, EstimateTokens: in + out, MaxTokens: m.maxTokens,
		SpentUSD: m.runCost.Total, MaxCost: m.maxCost}
	if m.maxTokens > 0 && e.SpentTokens+e.EstimateTokens > m.maxTokens {
		e.Budget = "tokens"
		m.stopped = e
		return e
	}
	if m.maxCost > 0 {
		// A fallback ("a|b") is estimated at its dearest model.
		for _, spec := range strings.Split(model, "|") {
			p, err := m.prices.Lookup(spec)
			if err != nil {
				e.Budget, e.UnknownPrice, e.Model = "cost", true, spec
				m.stopped = e
				return e
			}
			e.EstimateUSD = max(e.EstimateUSD, p.Cost(est).Total)
		}
		if e.SpentUSD+e.EstimateUSD > m.maxCost {
			e.Budget = "cost"
			m.stopped = e
			return e
		}
	}
	return nil
}

// record adds a call's usage and cost, and learns from it for the next
// estimates.
func (m *meter) record(purpose, model string, req llm.Request, resp *llm.Response) pricing.Cost {
	var u llm.Usage
	answered := ""
	if resp != nil {
		u, answered = resp.Usage, resp.Model
	}
	c := m.price(model, answered, u)
	m.mu.Lock()
	defer m.mu.Unlock()
	addUsage(&m.runUsage, u)
	m.runCost.Add(c)
	m.stepCost.Add(c)
	m.stepCalls++
	if u.PromptTokens > 0 {
		chars, images := promptSize(req)
		if text := u.PromptTokens - images*DefaultImageTokens; text > 0 && chars > 0 {
			m.ratio[model] = float64(chars) / float64(text)
		}
		m.cached[model+"|"+purpose] = u.CachedTokens
	}
	if resp != nil && (u.CompletionTokens > 0 || u.PromptTokens > 0) {
		m.outSum[purpose] += u.CompletionTokens
		m.outCalls[purpose]++
		m.outSum[""] += u.CompletionTokens
		m.outCalls[""]++
	}
	return c
}

// budgetStop ends a Run the meter stopped: the refusal becomes res.Err and
// the run's last error, said once (a step whose own call was refused has
// the same words as its error).
func (a *Agent) budgetStop(res *Result, item *HistoryItem, be *BudgetError) error {
	res.Err = be
	msg := be.Error()
	if n := len(res.Errors); n > 0 && item.Error == msg && res.Errors[n-1] == fmt.Sprintf("step %d: %s", item.Step, msg) {
		res.Errors = res.Errors[:n-1]
	}
	res.Errors = append(res.Errors, msg)
	return be
}

// pricedForBudget refuses, when MaxCost is set, a model (the step model,
// the extraction, compaction and judge models) whose price is unknown: the
// budget could not be kept.
func (a *Agent) pricedForBudget(model llm.Model) error {
	if a.set.MaxCost <= 0 {
		return nil
	}
	ms := []llm.Model{model, a.set.ExtractModel, a.set.CompactionModel}
	switch j := a.set.Judge.(type) {
	case ModelJudge:
		ms = append(ms, j.Model)
	case *ModelJudge:
		if j != nil {
			ms = append(ms, j.Model)
		}
	}
	for _, m := range ms {
		if m == nil {
			continue
		}
		for _, spec := range strings.Split(m.Name(), "|") {
			if _, err := a.set.Prices.Lookup(spec); err != nil {
				return fmt.Errorf("%w: MaxCost is set but %v", ErrSettings, err)
			}
		}
	}
	return nil
}

// subUsage returns a - b.
func subUsage(a, b llm.Usage) llm.Usage {
	return llm.Usage{
		PromptTokens: a.PromptTokens - b.PromptTokens, CompletionTokens: a.CompletionTokens - b.CompletionTokens,
		TotalTokens: a.TotalTokens - b.TotalTokens, CachedTokens: a.CachedTokens - b.CachedTokens,
		CacheWriteTokens: a.CacheWriteTokens - b.CacheWriteTokens, ReasoningTokens: a.ReasoningTokens - b.ReasoningTokens,
	}
}

// FormatUsage words token usage in one short line for people:
// "3.1k in (2.0k cached, 512 written) / 150 out (96 reasoning)"; the
// parentheses appear only when those kinds were reported.
func FormatUsage(u llm.Usage) string {
	var b strings.Builder
	b.WriteString(Tokens(u.PromptTokens) + " in")
	var in []string
	if u.CachedTokens > 0 {
		in = append(in, Tokens(u.CachedTokens)+" cached")
	}
	if u.CacheWriteTokens > 0 {
		in = append(in, Tokens(u.CacheWriteTokens)+" written")
	}
	if len(in) > 0 {
		b.WriteString(" (" + strings.Join(in, ", ") + ")")
	}
	b.WriteString(" / " + Tokens(u.CompletionTokens) + " out")
	if u.ReasoningTokens > 0 {
		b.WriteString(" (" + Tokens(u.ReasoningTokens) + " reasoning)")
	}
	return b.String()
}

// FormatCost words a cost for a progress line: "$0.0021", or "cost
// unknown" when a model's price is unknown.
func FormatCost(c pricing.Cost) string {
	if !c.Known() {
		return "cost unknown"
	}
	return pricing.FormatUSD(c.Total)
}
