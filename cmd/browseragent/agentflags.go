package main

import (
	"flag"
	"strings"

	"github.com/browseragent/browseragent/agent"
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
}

// register adds the flags; visionHelp words --vision for the command.
func (f *agentFlags) register(fs *flag.FlagSet, visionHelp string) {
	fs.StringVar(&f.vision, "vision", "on", visionHelp)
	fs.StringVar(&f.replyMode, "reply-mode", "full", "what each reply holds: full (thinking, evaluation, memory, next goal, plan), no_thinking, or flash (memory and actions only: about a third of the output tokens)")
	fs.BoolVar(&f.noPlanning, "no-planning", false, "do not ask the model to keep a plan (flash never does)")
	fs.StringVar(&f.coordinates, "coordinate-clicks", "auto", "let click take a point of the screenshot: auto (models that point well, with vision), on or off")
	fs.StringVar(&f.compaction, "compaction-model", "", "model that summarises long histories, as provider:name (default: the run's model)")
}

// apply checks the flags and puts them into set. model and baseURL are the
// run's model and --base-url: a compaction model of the same provider goes
// to the same base URL, one of another provider to that provider's own.
func (f *agentFlags) apply(set *agent.Settings, model, baseURL string) error {
	set.Vision = agent.Vision(f.vision)
	if set.Vision != agent.VisionOn && set.Vision != agent.VisionAuto && set.Vision != agent.VisionOff {
		return usagef("--vision must be on, auto or off")
	}
	set.ReplyMode = agent.ReplyMode(f.replyMode)
	switch set.ReplyMode {
	case agent.ReplyFull, agent.ReplyNoThinking, agent.ReplyFlash:
	default:
		return usagef("--reply-mode must be full, no_thinking or flash")
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
