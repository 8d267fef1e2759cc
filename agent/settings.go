package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/urlmatch"
)

// Vision says when the model gets a screenshot of the page.
type Vision string

// Vision modes.
const (
	// VisionOn attaches a screenshot to every step (upstream default).
	VisionOn Vision = "on"
	// VisionAuto attaches one on the step after the model called the
	// "screenshot" action (the action exists only in this mode), and when
	// the page is one its text cannot show: a canvas, video, embed or
	// object over most of the viewport and (nearly) no elements
	// (VisionAutoMediaCoverage).
	VisionAuto Vision = "auto"
	// VisionOff never attaches one.
	VisionOff Vision = "off"
)

// Defaults of Settings (browser-use 0.x's where it has one).
const (
	DefaultMaxActionsPerStep  = 5
	DefaultMaxFailures        = 5
	DefaultStepTimeout        = 180 * time.Second
	DefaultLLMTimeout         = 90 * time.Second
	DefaultMaxSteps           = 500
	DefaultBudgetWarning      = 0.75
	DefaultLoopWindow         = 20
	DefaultMaxElementsChars   = 40000
	DefaultMaxReadStateChars  = 60000
	DefaultSearchEngine       = "duckduckgo"
	DefaultExtractChunkChars  = 100000
	DefaultStagnationSteps    = 5
	DefaultEvaluateResultCap  = 20000
	DefaultWaitActionMaxWait  = 30 * time.Second
	DefaultHistoryErrorMaxLen = 400
	DefaultWaitBetweenActions = 100 * time.Millisecond
	DefaultReconnectWait      = 30 * time.Second
	DefaultReplanAfter        = 3
	DefaultPlanNudgeStep      = 5
	DefaultCompactEverySteps  = 25
	DefaultCompactTrigger     = 40000
	DefaultCompactKeepLast    = 6
	DefaultCompactSummaryMax  = 6000
)

// ReplyMode says which fields the model writes before its actions.
type ReplyMode string

// Reply modes.
const (
	// ReplyFull: thinking, evaluation_previous_goal, memory, next_goal,
	// the plan fields (unless DisablePlanning) and action. Upstream's
	// default.
	ReplyFull ReplyMode = "full"
	// ReplyNoThinking: ReplyFull without thinking (upstream's
	// use_thinking=False).
	ReplyNoThinking ReplyMode = "no_thinking"
	// ReplyFlash: memory and action only, and no planning: the fewest
	// output tokens (upstream's flash_mode).
	ReplyFlash ReplyMode = "flash"
)

// ActionSchema says where the model reads the actions it may call and
// their parameters.
type ActionSchema string

// Action schema forms.
const (
	// ActionSchemaCompact (default): the actions are listed once, one line
	// each, at the end of the system prompt (a stable, cacheable prefix);
	// the reply schema constrains the reply's fields and an "action" list
	// of objects, and is sent Loose: each action's parameters are checked
	// by the agent against the action's schema, and a reply that does not
	// fit is an error the model reads, quoting the action's signature.
	// Actions restricted to domains are listed in the user message on the
	// pages where they are offered.
	ActionSchemaCompact ActionSchema = "compact"
	// ActionSchemaFull: every offered action's parameter schema, with its
	// description, is inside the reply schema (strict where the provider
	// can constrain decoding), and there is no text list of actions.
	ActionSchemaFull ActionSchema = "full"
)

// DefaultLoopNudges are the repetition counts (of one action in the loop
// window) at which the model is told it may be looping.
var DefaultLoopNudges = []int{5, 8, 12}

// Settings configure an Agent. The zero value is usable: each zero field
// means the default documented on it. Settings are copied at New.
type Settings struct {
	// Vision: VisionOn (default), VisionAuto or VisionOff.
	Vision Vision
	// MaxActionsPerStep caps the actions of one reply; extra actions are
	// dropped and the model is told which. Default 5.
	MaxActionsPerStep int
	// MaxFailures is the number of consecutive failed steps after which the
	// model gets one step offering only "done" to give a final answer; if
	// that step fails too, the run stops. Default 5.
	MaxFailures int
	// StepTimeout bounds a whole step (observation, model call, actions).
	// A step that runs over fails, and the next message names the actions
	// that already ran. Default 180 s.
	StepTimeout time.Duration
	// LLMTimeout bounds one attempt of a model call. Default 90 s (upstream
	// varies it by model between 30 and 90 s). A model wrapped in
	// llm.WithRetry gets a fresh LLMTimeout per attempt, so a stalled first
	// attempt leaves time for a retry; StepTimeout bounds the whole call.
	// A model that does not bound its attempts (llm.BoundsAttempts false: a
	// custom Model) gets LLMTimeout as a deadline on the whole call.
	LLMTimeout time.Duration
	// MaxSteps is the step budget of a Run. Default 500. From
	// BudgetWarning × MaxSteps on, the model is told to wrap up; the last step
	// offers only "done".
	MaxSteps int
	// BudgetWarning is the fraction of MaxSteps after which the budget
	// warning is shown. Default 0.75; negative disables it.
	BudgetWarning float64
	// LoopWindow is the number of recent actions the loop detector looks at.
	// Default 20; negative disables loop detection.
	LoopWindow int
	// LoopNudges are the repetition counts at which a nudge is added to the
	// prompt. Default DefaultLoopNudges (5, 8, 12). The detector never
	// blocks an action.
	LoopNudges []int
	// MaxHistoryItems, when > 0, compacts the <agent_history> section: the
	// first step, a "[... N previous steps omitted ...]" line and the last
	// MaxHistoryItems-1 steps. Must be 0 or > 5 (upstream's rule). Default 0:
	// every step is shown.
	MaxHistoryItems int
	// ReplyMode: ReplyFull (default), ReplyNoThinking or ReplyFlash. The
	// reply schema, the system prompt and the parser follow it. Upstream
	// forces flash for its own hosted model; no provider here has an
	// equivalent, so nothing is forced.
	ReplyMode ReplyMode
	// ActionSchema: ActionSchemaCompact (default: the fewest tokens per
	// step) or ActionSchemaFull (constrained decoding of each action's
	// parameters, at about twice the fixed prompt).
	ActionSchema ActionSchema
	// DisablePlanning removes plan_update and current_plan_item from the
	// reply, the plan from <agent_state> and the plan nudges. Planning is
	// on by default, and always off in ReplyFlash.
	DisablePlanning bool
	// ReplanAfter: while a plan exists, the model is told to replan once
	// this many steps in a row failed. Default 3; negative disables.
	ReplanAfter int
	// PlanNudgeStep: from this step of a Run on (1 = the first model
	// step), a model without a plan is told to write one or call done.
	// Default 5; negative disables.
	PlanNudgeStep int
	// CompactionModel writes the summary that replaces old history (see
	// CompactEverySteps). Default: ExtractModel as given, else the agent's
	// model.
	CompactionModel llm.Model
	// CompactEverySteps: the first summary is made when at least this many
	// steps passed and the <agent_history> text exceeds CompactTriggerChars;
	// later ones whenever the text exceeds it again, at least CompactKeepLast+1
	// steps after the previous summary (upstream waits this many steps
	// again, letting the history grow past the threshold). The model then sees
	// the first step, the summary (marked unverified) and the steps from the
	// last CompactKeepLast on. A failed summary call is retried on the next
	// step; it never fails the step. The history record keeps every step.
	// Default 25; negative disables compaction.
	CompactEverySteps int
	// CompactTriggerChars: see CompactEverySteps. Default 40,000.
	CompactTriggerChars int
	// CompactKeepLast: the most recent steps kept verbatim. Default 6.
	CompactKeepLast int
	// CompactSummaryMaxChars caps the summary (longer ones are cut, and
	// the model is asked to stay under it). Default 6,000.
	CompactSummaryMaxChars int
	// MaxElementsChars caps the interactive-elements text shown each step;
	// the cut is announced. Default 40,000.
	MaxElementsChars int
	// InitialActions run before the first model call, as step 0 (no model
	// call). They replace DirectlyOpenURL.
	InitialActions []ActionCall
	// DirectlyOpenURL: when the task names exactly one URL (not negated, not
	// a file name), navigate there as step 0. Default true (nil).
	DirectlyOpenURL *bool
	// SensitiveData maps placeholder names to secret values usable on every
	// domain. The model sees only <secret>name</secret>; see docs/agent.md.
	SensitiveData map[string]string
	// SensitiveDataByDomain maps a domain pattern (DomainMatcher) to secrets
	// usable only on pages matching it.
	SensitiveDataByDomain map[string]map[string]string
	// Cache, when set, is the action cache: before each model call the
	// step's key (the tasks, the page's fingerprint and the actions the
	// run ran so far; see docs/replay.md) is looked up, and a hit's actions
	// run instead of calling the model, their elements found again on the
	// page (agent/match); a miss asks the model and stores its step when
	// every action ran. Entries record the model and prompt version and are
	// not used under another. Only actions that act on the page are cached
	// (never done, extract, request_human or other reads). A failing cache
	// is a miss, logged; it never fails the run. Result.Cache counts hits
	// and misses. Default nil: no cache. NewDirCache is a directory cache.
	Cache ActionCache
	// CacheURL normalises every URL in the action cache's key (in the
	// tasks, the page and the actions so far), so that URLs that differ
	// only in what does not matter to the task give one key. Default nil:
	// NormalizeCacheURL (a loopback host's port, session ids and
	// cache-busting query parameters dropped).
	CacheURL func(string) string
	// Approver is asked before each action runs. Default: allow everything.
	Approver Approver
	// Human, when set, is the person the browser can be handed to: the
	// model is offered request_human, and HandoffPolicies may hand pages
	// over on their own (see docs/agent.md, "Handing the browser to a
	// person"). Default nil: request_human is not offered, and a hand-off
	// asked for anyway (a policy, an InitialAction) fails with ErrNoHuman,
	// which the model is told.
	Human HumanHandler
	// HumanTimeout bounds one hand-off: after it the agent stops waiting
	// and the model reads an error wrapping ErrHumanTimeout. The hand-off's
	// time does not count against StepTimeout: after a policy's hand-off
	// the step gets the time it had left, at least StepTimeout/2. Default
	// 10 min (DefaultHumanTimeout).
	HumanTimeout time.Duration
	// HandoffPolicies look at each step's observation before the model call
	// and may hand the page to a person (once per policy and page). Default:
	// []HandoffPolicy{CaptchaPolicy{}} when Human is set, none otherwise.
	// Set your own list to replace it, or an empty non-nil slice
	// ([]HandoffPolicy{}) to disable the default.
	HandoffPolicies []HandoffPolicy
	// Judge, when set, grades the run after a done (an extra model call when
	// it is a ModelJudge). Default nil: no judge. The verdict is attached to
	// the Result; it never changes Success.
	Judge Judge
	// OutputSchema, when set, is the JSON schema (object root) of the run's
	// structured answer: "done" then takes {success, data} with data
	// following it, and Result.StructuredOutput carries data. Every object
	// in it must list its properties: a free-form object (additionalProperties
	// other than false, no properties) or a value without a type is
	// rejected by New with its JSON path, as a strict provider mode could
	// not constrain it (the check Registry.Add makes); so are $ref, oneOf
	// and allOf, which the answer's validation does not follow (use anyOf).
	OutputSchema json.RawMessage
	// ExtractModel answers "extract" queries. Default: the agent's model.
	ExtractModel llm.Model
	// CoordinateClicks offers coordinate_x/coordinate_y on the built-in
	// click: a point of the page's screenshot, for models that are good at
	// pointing. nil (default) offers it when Vision is not off and the
	// model's name matches CoordinateClickModels (upstream's rule); true or
	// false decides for any model. A registry whose click is not the
	// built-in one is left alone.
	CoordinateClicks *bool
	// ScreenshotFormat is how the model's screenshots are encoded:
	// events.ImageJPEG (default), events.ImageWebP or events.ImagePNG. The
	// run's screenshots/ files keep this format.
	ScreenshotFormat events.ImageFormat
	// ScreenshotQuality is the JPEG/WebP quality, 1..100. Default 75.
	ScreenshotQuality int
	// ScreenshotDetail is OpenAI's image detail: DetailLow (85 tokens, a
	// 512×512 image), DetailHigh or DetailAuto. Default "": none sent (the
	// provider's own default, auto). Other providers ignore it.
	ScreenshotDetail string
	// ScreenshotMaxWidth and ScreenshotMaxHeight bound the screenshots, in
	// image pixels; Chrome scales the capture down to fit, and coordinate
	// clicks are scaled back. 0 (default): the bound for the model's
	// provider, ScreenshotBounds (1024×640 for a 1280×800 viewport on
	// OpenAI and Anthropic, 1229×768 on Gemini); negative: no bound on
	// that side.
	ScreenshotMaxWidth, ScreenshotMaxHeight int
	// Tools are the actions offered. Default: DefaultRegistry(). Pass your
	// own registry (usually DefaultRegistry plus Register calls).
	Tools *Registry
	// ExcludeActions removes actions by name from what is offered.
	ExcludeActions []string
	// AvailableFilePaths are local files the model may upload or read
	// besides the agent's own files.
	AvailableFilePaths []string
	// RunDir receives the agent's files (files/), screenshots
	// (screenshots/step_N.png) and is where History.Save is usually pointed.
	// Default: a new temporary directory, kept after the run (it holds the
	// run's artifacts); Agent.RunDir reports it.
	RunDir string
	// SearchEngine for the "search" action: duckduckgo (default), google,
	// bing.
	SearchEngine string
	// DomainMatcher reports whether a URL matches a domain pattern; used for
	// action domain filters and per-domain secrets. Default urlmatch.Match,
	// the same definition of a pattern as the security watchdog's URL
	// policy.
	DomainMatcher func(pattern, rawURL string) bool
	// ExtendSystemPrompt is appended to the system prompt;
	// OverrideSystemPrompt replaces it. In ActionSchemaCompact the action
	// list follows either: the model must still learn its actions.
	ExtendSystemPrompt, OverrideSystemPrompt string
	// WaitBetweenActions is the pause between two actions of one step,
	// before the fence checks the page: a navigation or re-render the
	// previous action started gets time to show. Default 100 ms; negative:
	// no pause.
	WaitBetweenActions time.Duration
	// ReconnectWait bounds how long the agent waits before a step for a
	// lost connection to be restored (Browser.Ready); a browser still not
	// back then ends the run with an error wrapping events.ErrBrowserGone.
	// Default 30 s.
	ReconnectWait time.Duration
	// Observers are told about the run as it happens (steps, model calls,
	// the result): trace.NewAgentObserver writes the audit trace,
	// telemetry.Run exports spans. Called on the Run goroutine, in order,
	// never under a lock; a slow observer slows the run.
	Observers []Observer
	// OnStepStart is called before each step with its number; OnStepEnd after
	// it with its history item (a copy): the short form of an Observer,
	// called after the Observers.
	OnStepStart func(ctx context.Context, step int)
	OnStepEnd   func(ctx context.Context, item HistoryItem)
	// MaxCost, when positive, is each Run's budget in US dollars. Before
	// every model call of the run (the step's, a history summary, extract,
	// a ModelJudge's) the call is estimated: prompt tokens from its text
	// (characters over the model's chars-per-token, learned from its calls
	// without images, DefaultCharsPerToken before one) and its images
	// (ImageTokens by the model's family and each image's size), cache
	// reads only as many as the previous call of the model and purpose had
	// when it had the same CacheKey, less than CacheIdle ago and before no
	// history summary, the rest at the dearer of the input and cache-write
	// prices, and the output tokens the run's average completion
	// (DefaultOutputTokens, ReasoningOutputTokens for a thinking model,
	// before any); when the run's cost so far plus the estimate would
	// exceed MaxCost, the call is not made and the run
	// stops: Run returns a *BudgetError (errors.Is ErrBudgetExceeded), also
	// in Result.Err, and Result.Errors ends with its words. A refused
	// judge call leaves the run's result alone and sets Result.JudgeError.
	// Every model must have a price in Prices (New checks the models it is
	// given). Default 0: no budget.
	MaxCost float64
	// MaxTokens, when positive, is each Run's budget of input plus output
	// tokens, kept like MaxCost; the tokens actions report of their own
	// models (ActionResult.Usage) count too. Default 0: no budget. Calls
	// that time out or fail without a reply report no usage and are not
	// counted, though a provider may bill them (docs/agent.md).
	MaxTokens int
	// Prices prices the model calls (HistoryItem.Cost, Result.Cost, the
	// observers' ModelCall.Cost) by their model's "provider:model" name.
	// Default pricing.Default(): list prices as of pricing.AsOf; use
	// pricing.LoadFile for a table with your own entries.
	Prices *pricing.Table
	// Logger; default zap.NewNop(). Secrets are never logged.
	Logger *zap.Logger
	// Now returns the current time (the date shown to the model). Default
	// time.Now.
	Now func() time.Time
}

// ErrSettings is wrapped by New's errors for invalid settings.
var ErrSettings = errors.New("agent: invalid settings")

func (s Settings) withDefaults() (Settings, error) {
	switch s.Vision {
	case "":
		s.Vision = VisionOn
	case VisionOn, VisionAuto, VisionOff:
	default:
		return s, fmt.Errorf("%w: Vision %q (want on, auto or off)", ErrSettings, s.Vision)
	}
	if err := s.visionDefaults(); err != nil {
		return s, err
	}
	if s.MaxActionsPerStep <= 0 {
		s.MaxActionsPerStep = DefaultMaxActionsPerStep
	}
	if s.MaxFailures <= 0 {
		s.MaxFailures = DefaultMaxFailures
	}
	if s.StepTimeout <= 0 {
		s.StepTimeout = DefaultStepTimeout
	}
	if s.LLMTimeout <= 0 {
		s.LLMTimeout = DefaultLLMTimeout
	}
	if s.MaxSteps <= 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	if s.BudgetWarning == 0 {
		s.BudgetWarning = DefaultBudgetWarning
	}
	if s.LoopWindow == 0 {
		s.LoopWindow = DefaultLoopWindow
	}
	if s.LoopNudges == nil {
		s.LoopNudges = DefaultLoopNudges
	}
	if s.MaxHistoryItems < 0 || (s.MaxHistoryItems > 0 && s.MaxHistoryItems <= 5) {
		return s, fmt.Errorf("%w: MaxHistoryItems must be 0 (all) or more than 5, got %d", ErrSettings, s.MaxHistoryItems)
	}
	if s.MaxElementsChars <= 0 {
		s.MaxElementsChars = DefaultMaxElementsChars
	}
	switch s.ReplyMode {
	case "":
		s.ReplyMode = ReplyFull
	case ReplyFull, ReplyNoThinking, ReplyFlash:
	default:
		return s, fmt.Errorf("%w: ReplyMode %q (want full, no_thinking or flash)", ErrSettings, s.ReplyMode)
	}
	switch s.ActionSchema {
	case "":
		s.ActionSchema = ActionSchemaCompact
	case ActionSchemaCompact, ActionSchemaFull:
	default:
		return s, fmt.Errorf("%w: ActionSchema %q (want compact or full)", ErrSettings, s.ActionSchema)
	}
	if s.ReplanAfter == 0 {
		s.ReplanAfter = DefaultReplanAfter
	}
	if s.PlanNudgeStep == 0 {
		s.PlanNudgeStep = DefaultPlanNudgeStep
	}
	if s.CompactEverySteps == 0 {
		s.CompactEverySteps = DefaultCompactEverySteps
	}
	if s.CompactTriggerChars <= 0 {
		s.CompactTriggerChars = DefaultCompactTrigger
	}
	if s.CompactKeepLast <= 0 {
		s.CompactKeepLast = DefaultCompactKeepLast
	}
	if s.CompactSummaryMaxChars <= 0 {
		s.CompactSummaryMaxChars = DefaultCompactSummaryMax
	}
	if s.SearchEngine == "" {
		s.SearchEngine = DefaultSearchEngine
	}
	if _, err := searchURL(s.SearchEngine, "x"); err != nil {
		return s, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if s.DomainMatcher == nil {
		s.DomainMatcher = urlmatch.Match
	}
	if s.ReconnectWait <= 0 {
		s.ReconnectWait = DefaultReconnectWait
	}
	if s.WaitBetweenActions == 0 {
		s.WaitBetweenActions = DefaultWaitBetweenActions
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	if s.MaxCost < 0 || s.MaxTokens < 0 {
		return s, fmt.Errorf("%w: MaxCost and MaxTokens must not be negative (0: no budget)", ErrSettings)
	}
	if s.Prices == nil {
		s.Prices = pricing.Default()
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Approver == nil {
		s.Approver = AllowAll{}
	}
	if s.HumanTimeout < 0 {
		return s, fmt.Errorf("%w: HumanTimeout must not be negative (0: %s)", ErrSettings, DefaultHumanTimeout)
	}
	if s.HumanTimeout == 0 {
		s.HumanTimeout = DefaultHumanTimeout
	}
	if s.HandoffPolicies == nil && s.Human != nil {
		s.HandoffPolicies = []HandoffPolicy{CaptchaPolicy{}}
	}
	for i, p := range s.HandoffPolicies {
		if p == nil {
			return s, fmt.Errorf("%w: HandoffPolicies[%d] is nil", ErrSettings, i)
		}
	}
	if len(s.OutputSchema) > 0 {
		o, err := parseSchema(s.OutputSchema)
		if err != nil {
			return s, fmt.Errorf("%w: OutputSchema is not a JSON object: %v", ErrSettings, err)
		}
		if t, _ := o.Get("type"); t != "object" {
			return s, fmt.Errorf("%w: OutputSchema must have \"type\": \"object\" at its root", ErrSettings)
		}
		// Checked as done's "data" is sent: below the root, so an object
		// without properties is free-form there too.
		if err := checkStrict(o); err != nil {
			return s, fmt.Errorf("%w: OutputSchema: %w", ErrSettings, err)
		}
	}
	for k, v := range s.SensitiveData {
		if k == "" || v == "" {
			return s, fmt.Errorf("%w: SensitiveData has an empty name or value", ErrSettings)
		}
	}
	for d, m := range s.SensitiveDataByDomain {
		for k, v := range m {
			if d == "" || k == "" || v == "" {
				return s, fmt.Errorf("%w: SensitiveDataByDomain has an empty domain, name or value", ErrSettings)
			}
		}
	}
	return s, nil
}

func (s Settings) directOpen() bool { return s.DirectlyOpenURL == nil || *s.DirectlyOpenURL }

// planning reports whether the reply carries the plan fields.
func (s Settings) planning() bool { return !s.DisablePlanning && s.ReplyMode != ReplyFlash }
