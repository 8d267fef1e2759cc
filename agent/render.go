package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"go.uber.org/zap"
)

// RenderPrompt returns the prompt the model would get on the first model
// step of a run of task with set, on the observed page st, without calling
// a model: the loop's own code builds it (stepPrompt), so the text and the
// schema are what a Run sends. The history is empty (no step 0 opening a
// URL) and no model is known, so coordinate clicks are offered only when
// set.CoordinateClicks is true. With set.RunDir empty, a temporary
// directory holds the agent's (empty) files and is removed before
// RenderPrompt returns. Invalid settings are errors wrapping ErrSettings.
func RenderPrompt(set Settings, task string, st *events.BrowserState) (*Prompt, error) {
	if strings.TrimSpace(task) == "" {
		return nil, fmt.Errorf("%w: empty task", ErrSettings)
	}
	if st == nil {
		return nil, errors.New("agent: RenderPrompt needs an observation")
	}
	if set.RunDir == "" {
		dir, err := os.MkdirTemp("", "browseragent-prompt-")
		if err != nil {
			return nil, fmt.Errorf("agent: run dir: %w", err)
		}
		defer os.RemoveAll(dir)
		set.RunDir = dir
	}
	a, err := newAgent(task, nil, noBrowser{}, set)
	if err != nil {
		return nil, err
	}
	nudges := a.planNudges(0)
	return a.stepPrompt(st, a.nextStep, 0, pdfActions(a.offered(st.URL, false), st), nudges), nil
}

// noBrowser stands in for the browser while a prompt is only rendered:
// building a prompt reads the observation, never the browser.
type noBrowser struct{}

func (noBrowser) Bus() *bus.Bus          { return nil }
func (noBrowser) FocusedTab() string     { return "" }
func (noBrowser) Tabs() []events.TabInfo { return nil }
func (noBrowser) ResolveTab(string) (string, error) {
	return "", errors.New("agent: no browser while rendering a prompt")
}
func (noBrowser) Fingerprint(context.Context, string) (events.PageFingerprint, error) {
	return events.PageFingerprint{}, errors.New("agent: no browser while rendering a prompt")
}
func (noBrowser) Ready(context.Context) error { return nil }

// ScreenshotOptions returns the image options a run's loop asks the
// screenshots of its steps with, under set for the model named model
// ("provider:name" as llm.Model.Name gives it; "" when unknown): the
// format and quality of set, and the size bound of the model's image
// family (ScreenshotBounds) unless set's ScreenshotMaxWidth/MaxHeight say
// otherwise. Invalid settings are errors wrapping ErrSettings.
func ScreenshotOptions(set Settings, model string) (events.ImageOptions, error) {
	s, err := set.withDefaults()
	if err != nil {
		return events.ImageOptions{}, err
	}
	a := &Agent{set: s}
	if model != "" {
		a.model = nameOnly(model)
	}
	return a.screenshotOptions(), nil
}

// AutoScreenshot completes the observation st as the loop does under
// VisionAuto: on a page its text cannot show, with no screenshot yet, it
// takes one with opts (ScreenshotOptions) on b, or adds the hint the model
// reads when that fails. With any other Vision it does nothing.
func AutoScreenshot(ctx context.Context, b *bus.Bus, set Settings, opts events.ImageOptions, st *events.BrowserState) {
	addAutoScreenshot(ctx, b, set.Vision, opts, st, zap.NewNop())
}

// nameOnly is a model that only has a name: what the screenshot options
// of a model are derived from, without a model to call.
type nameOnly string

func (m nameOnly) Name() string { return string(m) }
func (m nameOnly) Generate(context.Context, llm.Request) (*llm.Response, error) {
	return nil, errors.New("agent: " + string(m) + " is only named here, not callable")
}
