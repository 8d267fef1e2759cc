package agent

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/internal/imgsize"
)

// Estimates used by the budget check before a model call (see
// Settings.MaxCost).
const (
	// DefaultCharsPerToken converts a prompt's characters to tokens until a
	// call of the same model has reported its prompt tokens; from then on
	// that call's ratio is used (learned from calls without images when
	// there are some, else with the images' estimate taken off), kept
	// between MinCharsPerToken and MaxCharsPerToken.
	DefaultCharsPerToken = 4.0
	MinCharsPerToken     = 1.5
	MaxCharsPerToken     = 6.0
	// DefaultImageTokens is the estimate of one image's input tokens when
	// its size or its model's image billing is unknown (an image by URL, a
	// model of ImageOther): Anthropic's maximum, above OpenAI's 765 and
	// Gemini's 516 for a 1280×800 screenshot at the sizes the agent sends
	// (ScreenshotBounds). An image of a known family is estimated by
	// ImageTokens from the size in its header.
	DefaultImageTokens = 1600
	// DefaultOutputTokens is the expected completion of a call before the
	// run has any to average: about a full-mode step reply.
	// ReasoningOutputTokens is that of a model that thinks before it
	// answers (OpenAI's gpt-5 and o-series, Gemini 2.5 and 3 except
	// flash-lite, names with "thinking", "reasoning", "-r1", "qwq"):
	// its reasoning tokens are billed as output. Afterwards the run's
	// average completion of calls with the same purpose is used (of any
	// purpose while none has that one).
	DefaultOutputTokens   = 500
	ReasoningOutputTokens = 2000
	// CacheIdle is how long a provider keeps a prompt cache without use:
	// Anthropic's 5-minute cache; OpenAI's lasts 5 to 10 minutes.
	CacheIdle = 5 * time.Minute
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

// Tokens words a token count briefly: 950, 3.1k, 2.0k, 12k, 1.2M (rounded
// to the unit it is shown in: 9,999 is 10k, 999,999 is 1.0M).
func Tokens(n int) string {
	f := float64(n)
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case f < 9950:
		return fmt.Sprintf("%.1fk", f/1e3)
	case f < 999500:
		return fmt.Sprintf("%.0fk", f/1e3)
	case f < 9.95e6:
		return fmt.Sprintf("%.1fM", f/1e6)
	default:
		return fmt.Sprintf("%.0fM", f/1e6)
	}
}

// meter prices every call of the agent's models, sums the run's and the
// step's usage and cost, and keeps the budget: before a call it estimates
// the call and refuses it when the run would go over MaxCost or MaxTokens.
// Once it refused a call it refuses every later one of the run (the run
// is stopping). Tokens and cost come from it alone: HistoryItem.Usage and
// Cost, Result.Usage and Cost, BudgetError's totals.
type meter struct {
	mu        sync.Mutex
	prices    *pricing.Table
	maxCost   float64
	maxTokens int
	now       func() time.Time
	// active: a Run is in progress (the budget applies to Runs only).
	active  bool
	stopped *BudgetError

	runUsage  llm.Usage
	runCost   pricing.Cost
	stepUsage llm.Usage
	stepCost  pricing.Cost

	// ratio is each model's chars-per-token; textRatio marks the models
	// whose ratio came from a call without images.
	ratio     map[string]float64
	textRatio map[string]bool
	// cache is the last call of each model and purpose, for its cache
	// reads; a history summary clears it (the prefix is rewritten).
	cache map[string]cacheState
	// outSum and outCalls average the completion by purpose ("" = all).
	outSum, outCalls map[string]int
}

// cacheState is what the next call of a model and purpose may read from
// the prompt cache: the previous call's cache reads, if its CacheKey is the
// same and the cache has not gone idle.
type cacheState struct {
	key    string
	cached int
	at     time.Time
}

func newMeter(set Settings) *meter {
	m := &meter{prices: set.Prices, maxCost: set.MaxCost, maxTokens: set.MaxTokens, now: set.Now}
	if m.now == nil {
		m.now = time.Now
	}
	m.reset()
	return m
}

func (m *meter) reset() {
	m.stopped = nil
	m.runUsage, m.runCost = llm.Usage{}, pricing.Cost{}
	m.ratio, m.textRatio, m.cache = map[string]float64{}, map[string]bool{}, map[string]cacheState{}
	m.outSum, m.outCalls = map[string]int{}, map[string]int{}
}

// startRun resets the run's totals and turns the budget on.
func (m *meter) startRun() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reset()
	m.active = true
}

// carry adds what a resumed run's recorded steps used to the run's totals,
// so that MaxCost and MaxTokens bound the task, not the part since the
// resume (Resume).
func (m *meter) carry(u llm.Usage, c pricing.Cost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	addUsage(&m.runUsage, u)
	m.runCost.Add(c)
}

// endRun turns the budget off and returns the run's usage and cost.
func (m *meter) endRun() (llm.Usage, pricing.Cost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active = false
	return m.runUsage, m.runCost
}

// startStep clears the step's usage and cost.
func (m *meter) startStep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stepUsage, m.stepCost = llm.Usage{}, pricing.Cost{}
}

// takeStep returns the step's usage and cost.
func (m *meter) takeStep() (llm.Usage, pricing.Cost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stepUsage, m.stepCost
}

// stepUsed is the step's usage so far: the mark addReported takes.
func (m *meter) stepUsed() llm.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stepUsage
}

// addReported adds the usage an action reported (ActionResult.Usage) that
// the meter did not see since mark: tokens of models the action called
// itself. The extract action reports its ExtractModel call, which the meter
// priced already, so only the excess counts. It counts toward MaxTokens
// and the usage totals; it is not priced (its model is not known).
func (m *meter) addReported(mark, reported llm.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := subUsage(m.stepUsage, mark)
	extra := subUsage(reported, seen)
	for _, v := range []*int{&extra.PromptTokens, &extra.CompletionTokens, &extra.TotalTokens, &extra.CachedTokens, &extra.CacheWriteTokens, &extra.ReasoningTokens} {
		*v = max(*v, 0)
	}
	addUsage(&m.stepUsage, extra)
	addUsage(&m.runUsage, extra)
}

// stop returns the refusal that stops the run, if any.
func (m *meter) stop() *BudgetError {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
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
// included) and its images.
func promptSize(req llm.Request) (chars int, images []*llm.Image) {
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			chars += len(p.Text)
			if p.Image != nil {
				images = append(images, p.Image)
			}
		}
	}
	if req.Schema != nil {
		chars += len(req.Schema.JSON) + len(req.Schema.Description)
	}
	return chars, images
}

// imageTokens estimates the images' input tokens for a model spec: by
// ImageTokens from each image's header size, DefaultImageTokens for an
// image whose size or family is unknown. known is false when any was.
func imageTokens(spec string, images []*llm.Image) (n int, known bool) {
	f := ImageFamilyOf(spec)
	if strings.Contains(spec, "|") {
		f = ImageOther // a fallback whose answering model is not known
	}
	known = true
	for _, im := range images {
		t := 0
		if _, data, ok, err := im.Inline(); ok && err == nil && f != ImageOther {
			if w, h, err := imgsize.Of(data); err == nil {
				t = ImageTokens(f, w, h, im.Detail)
			}
		}
		if t <= 0 {
			t, known = DefaultImageTokens, false
		}
		n += t
	}
	return n, known
}

// reasoningModel reports whether a model spec names a model that thinks
// before it answers by default (see ReasoningOutputTokens).
func reasoningModel(spec string) bool {
	_, name, _ := strings.Cut(strings.ToLower(spec), ":")
	if _, after, ok := strings.Cut(name, "/"); ok {
		name = after // openrouter:vendor/model
	}
	name = strings.TrimPrefix(name, "models/")
	switch {
	case strings.HasPrefix(name, "gpt-5") && !strings.Contains(name, "chat"),
		strings.HasPrefix(name, "o1"), strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4"),
		strings.HasPrefix(name, "gemini-2.5") && !strings.Contains(name, "lite"),
		strings.HasPrefix(name, "gemini-3"),
		strings.Contains(name, "thinking"), strings.Contains(name, "reasoning"),
		strings.Contains(name, "-r1"), strings.Contains(name, "qwq"):
		return true
	}
	return false
}

// check estimates a call and refuses it (a *BudgetError) when the run's
// totals plus the estimate would exceed a budget. The estimate errs high:
// a fallback ("a|b") is estimated at its dearest model; input not read
// from the cache is priced at the dearer of the input and cache-write
// prices (Anthropic bills an uncached prefix as a cache write); cache
// reads are assumed only as many as the previous call of the model and
// purpose had, with the same CacheKey, within CacheIdle, and no history
// summary since.
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
	text := int(math.Ceil(float64(chars) / ratio))
	cached := 0
	if c, ok := m.cache[model+"|"+purpose]; ok && req.CacheKey != "" && c.key == req.CacheKey && m.now().Sub(c.at) < CacheIdle {
		cached = c.cached
	}
	e := &BudgetError{Step: step, Purpose: purpose, Model: model,
		SpentTokens: m.runUsage.PromptTokens + m.runUsage.CompletionTokens, MaxTokens: m.maxTokens,
		SpentUSD: m.runCost.Total, MaxCost: m.maxCost}
	var unknown string
	for _, spec := range strings.Split(model, "|") {
		imgs, _ := imageTokens(spec, images)
		in := text + imgs
		out := m.output(purpose, spec)
		if req.MaxTokens > 0 && out > req.MaxTokens {
			out = req.MaxTokens
		}
		e.EstimateTokens = max(e.EstimateTokens, in+out)
		if m.maxCost <= 0 {
			continue
		}
		p, err := m.prices.Lookup(spec)
		if err != nil {
			if unknown == "" {
				unknown = spec
			}
			continue
		}
		p.Input = max(p.Input, p.CacheWrite)
		est := llm.Usage{PromptTokens: in, CompletionTokens: out, CachedTokens: min(cached, in)}
		e.EstimateUSD = max(e.EstimateUSD, p.Cost(est).Total)
	}
	switch {
	case m.maxTokens > 0 && e.SpentTokens+e.EstimateTokens > m.maxTokens:
		e.Budget = "tokens"
	case unknown != "":
		e.Budget, e.UnknownPrice, e.Model = "cost", true, unknown
	case m.maxCost > 0 && e.SpentUSD+e.EstimateUSD > m.maxCost:
		e.Budget = "cost"
	default:
		return nil
	}
	m.stopped = e
	return e
}

// output is the expected completion of a call: the run's average of the
// purpose (of any purpose while none has it), else the model's first guess.
func (m *meter) output(purpose, spec string) int {
	for _, p := range []string{purpose, ""} {
		if n := m.outCalls[p]; n > 0 {
			return (m.outSum[p] + n - 1) / n
		}
	}
	if reasoningModel(spec) {
		return ReasoningOutputTokens
	}
	return DefaultOutputTokens
}

// record adds a call's usage and cost, and learns from it for the next
// estimates.
func (m *meter) record(purpose, model string, req llm.Request, resp *llm.Response) pricing.Cost {
	var u llm.Usage
	answered := ""
	if resp != nil {
		u, answered = resp.Usage, resp.Model
	}
	spec := pricedSpec(model, answered)
	c, _ := m.prices.Cost(spec, u)
	chars, images := promptSize(req)
	imgs, known := imageTokens(spec, images)
	m.mu.Lock()
	defer m.mu.Unlock()
	addUsage(&m.runUsage, u)
	addUsage(&m.stepUsage, u)
	m.runCost.Add(c)
	m.stepCost.Add(c)
	if purpose == "compact" {
		m.cache = map[string]cacheState{}
	}
	if u.PromptTokens > 0 {
		// A ratio from a call without images is exact; one with images
		// depends on their estimate, so it is used only until there is one
		// without, and only when every image's estimate is its family's.
		if text := u.PromptTokens - imgs; chars > 0 && text > 0 && (len(images) == 0 || (known && !m.textRatio[model])) {
			m.ratio[model] = min(max(float64(chars)/float64(text), MinCharsPerToken), MaxCharsPerToken)
			m.textRatio[model] = m.textRatio[model] || len(images) == 0
		}
		m.cache[model+"|"+purpose] = cacheState{key: req.CacheKey, cached: u.CachedTokens, at: m.now()}
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

// modelJudge returns a copy of j when it is a ModelJudge (or a non-nil
// *ModelJudge).
func modelJudge(j Judge) (ModelJudge, bool) {
	switch j := j.(type) {
	case ModelJudge:
		return j, true
	case *ModelJudge:
		if j != nil {
			return *j, true
		}
	}
	return ModelJudge{}, false
}

// pricedForBudget refuses, when MaxCost is set, a model (the step model,
// the extraction, compaction and judge models) whose price is unknown: the
// budget could not be kept.
func (a *Agent) pricedForBudget(model llm.Model) error {
	if a.set.MaxCost <= 0 {
		return nil
	}
	var names []string
	ms := []llm.Model{model, a.set.ExtractModel, a.set.CompactionModel}
	if j, ok := modelJudge(a.set.Judge); ok {
		ms = append(ms, j.Model)
	}
	for _, m := range ms {
		if m != nil {
			names = append(names, m.Name())
		}
	}
	if err := CheckPrices(a.set.Prices, names...); err != nil {
		return fmt.Errorf("%w: MaxCost is set but %v", ErrSettings, err)
	}
	return nil
}

// CheckPrices returns the pricing error of the first model name (a
// "provider:model" spec, or a fallback's "a|b": each of its specs) that
// prices has no price for, nil when all have one: what a cost budget
// needs.
func CheckPrices(prices *pricing.Table, names ...string) error {
	for _, n := range names {
		if n == "" {
			continue
		}
		for _, spec := range strings.Split(n, "|") {
			if _, err := prices.Lookup(spec); err != nil {
				return err
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
