package main

import (
	"flag"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/events"
)

// screenshotFlags are --screenshot-format, --screenshot-quality and
// --screenshot-detail: how the screenshots the model gets are encoded
// (their size follows the model's provider; see agent.ScreenshotBounds).
type screenshotFlags struct {
	format  string
	quality int
	detail  string
}

func (f *screenshotFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "screenshot-format", string(agent.DefaultScreenshotFormat), "encoding of the screenshots sent to the model: jpeg, webp (about half of jpeg's bytes; not every local model reads it) or png (lossless, 2 to 6 times jpeg's bytes)")
	fs.IntVar(&f.quality, "screenshot-quality", agent.DefaultScreenshotQuality, "jpeg/webp quality of the screenshots, 1-100")
	fs.StringVar(&f.detail, "screenshot-detail", "", "OpenAI image detail: low (85 tokens, 512 px), high or auto (default: not sent, the provider's auto); other providers ignore it")
}

// apply checks the flags and puts them into set.
func (f *screenshotFlags) apply(set *agent.Settings) error {
	switch events.ImageFormat(f.format) {
	case events.ImageJPEG, events.ImageWebP, events.ImagePNG:
	default:
		return usagef("--screenshot-format must be jpeg, webp or png")
	}
	if f.quality < 1 || f.quality > 100 {
		return usagef("--screenshot-quality must be 1 to 100")
	}
	switch f.detail {
	case "", agent.DetailLow, agent.DetailHigh, agent.DetailAuto:
	default:
		return usagef("--screenshot-detail must be low, high or auto")
	}
	set.ScreenshotFormat, set.ScreenshotQuality, set.ScreenshotDetail = events.ImageFormat(f.format), f.quality, f.detail
	return nil
}
