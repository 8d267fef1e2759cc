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
	fs.IntVar(&f.quality, "screenshot-quality", agent.DefaultScreenshotQuality, "jpeg/webp quality of the screenshots, 1-100 (0: the default)")
	fs.StringVar(&f.detail, "screenshot-detail", "", "OpenAI image detail: low (85 tokens, 512 px), high or auto (default: not sent, the provider's auto); other providers ignore it")
}

// apply checks the flags as agent.New checks the settings
// (Settings.CheckScreenshots) and puts them into set.
func (f *screenshotFlags) apply(set *agent.Settings) error {
	// One setting at a time, so that the error names its flag.
	for _, c := range []struct {
		flag string
		set  agent.Settings
	}{
		{"--screenshot-format", agent.Settings{ScreenshotFormat: events.ImageFormat(f.format)}},
		{"--screenshot-quality", agent.Settings{ScreenshotQuality: f.quality}},
		{"--screenshot-detail", agent.Settings{ScreenshotDetail: f.detail}},
	} {
		if err := c.set.CheckScreenshots(); err != nil {
			return usagef("%s: %v", c.flag, err)
		}
	}
	shots := agent.Settings{ScreenshotFormat: events.ImageFormat(f.format), ScreenshotQuality: f.quality, ScreenshotDetail: f.detail}
	set.ScreenshotFormat, set.ScreenshotQuality, set.ScreenshotDetail = shots.ScreenshotFormat, shots.ScreenshotQuality, shots.ScreenshotDetail
	return nil
}
