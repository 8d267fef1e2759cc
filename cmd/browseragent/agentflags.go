package main

import (
	"flag"
	"strings"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/agent/llm/providers"
)

// agentFlags are the flags that shape how the agent talks to its model,
// shared by run and mcp (run_task).
type agentFlags struct {
	vision      string
	replyMode   string
	noPlanning  bool
	coordinates string
	compaction  string
	shots       screenshotFlags // --screenshot-format, -quality, -detail
	// actionSchema is --action-schema: where the model reads the actions.
	actionSchema string
	// Budgets and prices (issue 14): see budgetFlags.
	budget budgetFlags
}

// budgetFlags are --max-cost, --max-tokens and --prices.
type budgetFlags struct {
	maxCost   float64
	maxTokens int
	prices    string
}

func (f *budgetFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&f.maxCost, "max-cost", 0, "stop before a model call that would bring the run's cost over this many US dollars (0: no limit); exit code 4")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "stop before a model call that would bring the run's input+output tokens over this (0: no limit); exit code 4")
	fs.StringVar(&f.prices, "prices", "", "JSON file of model prices (US$ per million tokens) replacing or adding to the built-in table, e.g. {\"openai:my-model\": {\"input\": 0.4, \"cached_input\": 0.1, \"output\": 1.6}}")
}

// apply checks the flags and puts them into set. models are the specs the
// run will call (its model, the compaction model): with --max-cost each
// must have a price.
func (f *budgetFlags) apply(set *agent.Settings, models ...string) error {
	if f.maxCost < 0 || f.maxTokens < 0 {
		return usagef("--max-cost and --max-tokens must not be negative")
	}
	set.MaxCost, set.MaxTokens = f.maxCost, f.maxTokens
	set.Prices = pricing.Default()
	if f.prices != "" {
		t, err := pricing.LoadFile(f.prices)
		if err != nil {
			return usagef("--prices: %v", err)
		}
		set.Prices = t
	}
	if f.maxCost > 0 {
		if err := agent.CheckPrices(set.Prices, models...); err != nil {
			return usagef("--max-cost needs the model's price: %v", err)
		}
	}
	return nil
}

// register adds the flags; visionHelp words --vision for the command.
func (f *agentFlags) register(fs *flag.FlagSet, visionHelp string) {
	fs.StringVar(&f.vision, "vision", "on", visionHelp)
	fs.StringVar(&f.replyMode, "reply-mode", "full", "what each reply holds: full (thinking, evaluation, memory, next goal, plan), no_thinking, or flash (memory and actions only: about a third of the output tokens)")
	fs.BoolVar(&f.noPlanning, "no-planning", false, "do not ask the model to keep a plan (flash never does)")
	fs.StringVar(&f.coordinates, "coordinate-clicks", "auto", "let click take a point of the screenshot: auto (models that point well, with vision), on or off")
	fs.StringVar(&f.compaction, "compaction-model", "", "model that summarises long histories, as provider:name (default: the run's model)")
	f.shots.register(fs)
	f.budget.register(fs)
	fs.StringVar(&f.actionSchema, "action-schema", "compact", "how the model is told the actions: compact (listed once in the system prompt, about half the fixed tokens of a step; parameters checked by the agent) or full (each action's schema in the reply schema, constrained decoding where the provider has it)")
}

// apply checks the flags and puts them into set. model and baseURL are the
// run's model and --base-url: a compaction model of the same provider goes
// to the same base URL, one of another provider to that provider's own.
func (f *agentFlags) apply(set *agent.Settings, model, baseURL string) error {
	set.Vision = agent.Vision(f.vision)
	if set.Vision != agent.VisionOn && set.Vision != agent.VisionAuto && set.Vision != agent.VisionOff {
		return usagef("--vision must be on, auto or off")
	}
	if err := f.shots.apply(set); err != nil {
		return err
	}
	switch set.ActionSchema = agent.ActionSchema(f.actionSchema); set.ActionSchema {
	case agent.ActionSchemaCompact, agent.ActionSchemaFull:
	default:
		return usagef("--action-schema must be compact or full")
	}
	set.ReplyMode = agent.ReplyMode(f.replyMode)
	switch set.ReplyMode {
	case agent.ReplyFull, agent.ReplyNoThinking, agent.ReplyFlash:
	default:
		return usagef("--reply-mode must be full, no_thinking or flash")
	}
	if err := f.budget.apply(set, model, f.compaction); err != nil {
		return err
	}
	set.DisablePlanning = f.noPlanning
	switch f.coordinates {
	case "auto":
	case "on", "off":
		on := f.coordinates == "on"
		set.CoordinateClicks = &on
	default:
		return usagef("--coordinate-clicks must be auto, on or off")
	}
	if f.compaction != "" {
		if provider(f.compaction) != provider(model) {
			baseURL = ""
		}
		m, err := providers.New(f.compaction, providers.Options{BaseURL: baseURL})
		if err != nil {
			return err
		}
		set.CompactionModel = m
	}
	return nil
}

// provider is the provider part of a provider:name model flag.
func provider(model string) string {
	p, _, _ := strings.Cut(model, ":")
	return p
}
