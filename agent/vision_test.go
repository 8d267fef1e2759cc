package agent_test

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// images are the images of a request's user message.
func images(req llm.Request) []*llm.Image {
	var out []*llm.Image
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Image != nil {
				out = append(out, p.Image)
			}
		}
	}
	return out
}

var doneOK = scripted.Step{Action: "done", Params: map[string]any{"text": "ok", "success": true}}

// In VisionAuto, a page the text shows (text, links, pictures) sends no
// image; a page drawn on a canvas with nothing to index sends one,
// encoded and sized as the settings say, without the model asking.
func TestVisionAutoSendsAScreenshotOnlyForCanvasPages(t *testing.T) {
	env, s := newSession(t)
	for _, c := range []struct {
		page string
		want int
	}{{"/vision-shop.html", 0}, {"/vision-canvas.html", 1}} {
		model := scripted.New([]scripted.Step{doneOK}, scripted.WithName("openai:gpt-4.1"))
		set := settings(t)
		set.Vision = agent.VisionAuto
		set.ScreenshotDetail = agent.DetailHigh
		run(t, newAgent(t, "Look at "+env.URL(c.page), model, s, set), model)
		reqs := model.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", c.page, len(reqs))
		}
		imgs := images(reqs[0])
		if len(imgs) != c.want {
			t.Fatalf("%s: %d images sent, want %d\n%s", c.page, len(imgs), c.want, userText(reqs[0]))
		}
		if c.want == 0 {
			continue
		}
		im := imgs[0]
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(im.Data))
		if err != nil || im.MediaType != "image/jpeg" || im.Detail != agent.DetailHigh {
			t.Fatalf("%s: image %s detail %q: %v", c.page, im.MediaType, im.Detail, err)
		}
		// OpenAI's tiles: 1280×800 fits 1024×1024 as 1024×640.
		if cfg.Width != 1024 || cfg.Height != 640 {
			t.Fatalf("%s: image %dx%d, want 1024x640", c.page, cfg.Width, cfg.Height)
		}
	}
}

// A coordinate click is given in the pixels of the screenshot the model
// saw, which is smaller than the viewport: the agent scales it back to CSS
// pixels, and the click lands on the point of the page the model pointed
// at. The prompt states the image's size.
func TestCoordinateClickOnAResizedScreenshot(t *testing.T) {
	env, s := newSession(t)
	// The "Start" button is drawn at CSS (40..200, 100..160); its centre
	// (120, 130) is (96, 104) in a 1024-px-wide image of the 1280-px
	// viewport.
	model := scripted.New([]scripted.Step{
		{Action: "click", Params: map[string]any{"coordinate_x": 96, "coordinate_y": 104}},
		doneOK,
	}, scripted.WithName("anthropic:claude-sonnet-4-5"))
	set := settings(t)
	set.Vision = agent.VisionOn
	on := true
	set.CoordinateClicks = &on
	a := newAgent(t, "Press Start on "+env.URL("/vision-canvas.html"), model, s, set)
	run(t, a, model)
	var hits [][]float64
	evalPage(t, s, "window.hits", &hits)
	if len(hits) != 1 || hits[0][0] < 119 || hits[0][0] > 121 || hits[0][1] < 129 || hits[0][1] > 131 {
		t.Fatalf("canvas hits %v, want one at (120, 130)", hits)
	}
	req := model.Requests()[0]
	imgs := images(req)
	if len(imgs) != 1 {
		t.Fatalf("%d images", len(imgs))
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(imgs[0].Data))
	if err != nil || cfg.Width != 1024 || cfg.Height != 640 {
		t.Fatalf("screenshot %+v %v, want a 1024x640 JPEG (Anthropic's XGA box)", cfg, err)
	}
	if txt := userText(req); !strings.Contains(txt, "Current screenshot (1024×640 pixels; click coordinates are in these pixels)") {
		t.Fatalf("the prompt does not state the image size:\n%s", txt[max(0, len(txt)-400):])
	}
}

// The settings override the per-provider size and the format; a negative
// bound is full size; a PNG is labelled a PNG; the run's screenshot files
// carry their format's extension.
func TestScreenshotSettingsOverride(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{doneOK}, scripted.WithName("openai:gpt-4.1"))
	set := settings(t)
	set.Vision = agent.VisionOn
	set.ScreenshotFormat = events.ImagePNG
	set.ScreenshotMaxWidth, set.ScreenshotMaxHeight = -1, -1
	a := newAgent(t, "Look at "+env.URL("/vision-shop.html"), model, s, set)
	run(t, a, model)
	imgs := images(model.Requests()[0])
	if len(imgs) != 1 || imgs[0].MediaType != "image/png" || imgs[0].Detail != "" {
		t.Fatalf("images %d", len(imgs))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(imgs[0].Data))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("full-size PNG %+v %v", cfg, err)
	}
	h := a.History()
	if p := h.Items[len(h.Items)-1].State.ScreenshotPath; !strings.HasSuffix(p, ".png") {
		t.Fatalf("screenshot file %q", p)
	}

	model = scripted.New([]scripted.Step{doneOK}, scripted.WithName("gemini:gemini-2.5-flash"))
	set = settings(t)
	set.Vision = agent.VisionOn
	set.ScreenshotFormat = events.ImageWebP
	set.ScreenshotMaxWidth = 640
	a = newAgent(t, "Look at "+env.URL("/vision-shop.html"), model, s, set)
	run(t, a, model)
	imgs = images(model.Requests()[0])
	if len(imgs) != 1 || imgs[0].MediaType != "image/webp" {
		t.Fatalf("webp images %+v", imgs)
	}
	h = a.History()
	if p := h.Items[len(h.Items)-1].State.ScreenshotPath; !strings.HasSuffix(p, ".webp") {
		t.Fatalf("screenshot file %q", p)
	}

	for _, bad := range []agent.Settings{{ScreenshotFormat: "gif"}, {ScreenshotQuality: 101}, {ScreenshotDetail: "medium"}} {
		if _, err := agent.New("x", model, s, bad); !errors.Is(err, agent.ErrSettings) {
			t.Errorf("settings %+v: %v, want ErrSettings", bad, err)
		}
	}
}

// The image token rules of the providers, on the sizes that matter here
// (the numbers of their vision guides), and the bounds that pick them.
func TestImageTokensAndBounds(t *testing.T) {
	for _, c := range []struct {
		f      agent.ImageFamily
		w, h   int
		detail string
		want   int
	}{
		{agent.ImageOpenAI, 1280, 800, "", 1105},
		{agent.ImageOpenAI, 1024, 640, "", 765},
		{agent.ImageOpenAI, 2048, 4096, "high", 1105}, // OpenAI's own example
		{agent.ImageOpenAI, 1280, 800, agent.DetailLow, 85},
		{agent.ImageAnthropic, 1280, 800, "", 1366},
		{agent.ImageAnthropic, 1024, 640, "", 874},
		{agent.ImageGemini, 1280, 800, "", 1032},
		{agent.ImageGemini, 1229, 768, "", 516},
		{agent.ImageGemini, 384, 300, "", 258},
		{agent.ImageOther, 1280, 800, "", 0},
	} {
		if got := agent.ImageTokens(c.f, c.w, c.h, c.detail); got != c.want {
			t.Errorf("%s %dx%d %q: %d tokens, want %d", c.f, c.w, c.h, c.detail, got, c.want)
		}
	}
	for name, want := range map[string]agent.ImageFamily{
		"openai:gpt-4.1": agent.ImageOpenAI, "anthropic:claude-sonnet-4-5": agent.ImageAnthropic,
		"gemini:gemini-2.5-flash": agent.ImageGemini, "openrouter:anthropic/claude-opus-4": agent.ImageAnthropic,
		"openrouter:openai/gpt-4o": agent.ImageOpenAI, "ollama:llava": agent.ImageOther, "scripted": agent.ImageOther,
	} {
		if got := agent.ImageFamilyOf(name); got != want {
			t.Errorf("%s: family %s, want %s", name, got, want)
		}
	}
	if w, h := agent.ScreenshotBounds(agent.ImageOpenAI, agent.DetailLow); w != 512 || h != 512 {
		t.Errorf("openai low detail bounds %dx%d", w, h)
	}
}

// Measured on 1280×800 pages, one of text and pictures and one of text:
// bytes and estimated image tokens of the full-size PNG (before) and of
// each provider's default screenshot (after). The numbers go to
// docs/performance.md; the test checks the doc's claims loosely: the
// sizes and token counts exactly (they follow from the 1280×800 viewport),
// the byte ratios within bounds around the measured ones.
func TestScreenshotCostMeasured(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shot := func(o events.ImageOptions) events.ScreenshotResult {
		t.Helper()
		r, err := bus.Call(ctx, s.Bus(), events.Screenshot, events.ScreenshotEvent{ImageOptions: o})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The doc's sizes and tokens: before (1280×800) and after, per family.
	want := map[agent.ImageFamily]struct{ w, h, before, after int }{
		agent.ImageOpenAI:    {1024, 640, 1105, 765},
		agent.ImageAnthropic: {1024, 640, 1366, 874},
		agent.ImageGemini:    {1229, 768, 1032, 516},
	}
	// The doc's byte ratios to the full PNG, loosely: at most these.
	maxJPEG := map[string]float64{"/vision-shop.html": 0.3, "/agent-queries.html": 0.8}
	maxFullJPEG := map[string]float64{"/vision-shop.html": 0.4, "/agent-queries.html": 0.95}
	ratio := func(a, b events.ScreenshotResult) float64 { return float64(len(a.Data)) / float64(len(b.Data)) }
	for _, page := range []string{"/vision-shop.html", "/agent-queries.html"} {
		if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL(page)}); err != nil {
			t.Fatal(err)
		}
		before := shot(events.ImageOptions{})
		t.Logf("%s before: PNG %dx%d %d bytes", page, before.Width, before.Height, len(before.Data))
		if before.Width != 1280 || before.Height != 800 {
			t.Fatalf("the full PNG is %dx%d; the doc's numbers are for 1280x800", before.Width, before.Height)
		}
		for _, f := range []agent.ImageFamily{agent.ImageOpenAI, agent.ImageAnthropic, agent.ImageGemini} {
			w, h := agent.ScreenshotBounds(f, "")
			var jpg events.ScreenshotResult
			for _, format := range []events.ImageFormat{events.ImageJPEG, events.ImageWebP} {
				after := shot(events.ImageOptions{Format: format, Quality: agent.DefaultScreenshotQuality, MaxWidth: w, MaxHeight: h})
				tb, ta := agent.ImageTokens(f, before.Width, before.Height, ""), agent.ImageTokens(f, after.Width, after.Height, "")
				t.Logf("%-9s %-4s q%d %4dx%-4d %7d bytes (%.3f of PNG), tokens %4d -> %4d (%.3f)", f, format, agent.DefaultScreenshotQuality,
					after.Width, after.Height, len(after.Data), ratio(after, before), tb, ta, float64(ta)/float64(tb))
				wf := want[f]
				// (Chrome rounds a scaled side either way: ±1 px.)
				if abs(after.Width-wf.w) > 1 || abs(after.Height-wf.h) > 1 || tb != wf.before || ta != wf.after {
					t.Errorf("%s %s: %dx%d, tokens %d -> %d; the doc says %dx%d, %d -> %d", f, format, after.Width, after.Height, tb, ta, wf.w, wf.h, wf.before, wf.after)
				}
				switch format {
				case events.ImageJPEG:
					jpg = after
					if r := ratio(after, before); r > maxJPEG[page] {
						t.Errorf("%s %s JPEG: %.3f of the PNG's bytes, want at most %.2f", page, f, r, maxJPEG[page])
					}
				case events.ImageWebP:
					// "About half a JPEG."
					if r := ratio(after, jpg); r > 0.75 {
						t.Errorf("%s %s WebP: %.3f of the JPEG's bytes, want at most 0.75", page, f, r)
					}
				}
			}
		}
		// OpenAI's low detail: 512×320, 85 tokens.
		lw, lh := agent.ScreenshotBounds(agent.ImageOpenAI, agent.DetailLow)
		low := shot(events.ImageOptions{Format: events.ImageJPEG, Quality: agent.DefaultScreenshotQuality, MaxWidth: lw, MaxHeight: lh})
		if low.Width != 512 || low.Height != 320 || agent.ImageTokens(agent.ImageOpenAI, low.Width, low.Height, agent.DetailLow) != 85 {
			t.Errorf("low detail: %dx%d, want 512x320 at 85 tokens", low.Width, low.Height)
		}
		// The same-size JPEG, for the share of the saving the encoding makes.
		full := shot(events.ImageOptions{Format: events.ImageJPEG, Quality: agent.DefaultScreenshotQuality})
		t.Logf("full-size JPEG q%d: %d bytes (%.3f of PNG)", agent.DefaultScreenshotQuality, len(full.Data), ratio(full, before))
		if r := ratio(full, before); r > maxFullJPEG[page] {
			t.Errorf("%s full-size JPEG: %.3f of the PNG's bytes, want at most %.2f", page, r, maxFullJPEG[page])
		}
	}
}

func abs(v int) int { return max(v, -v) }

// When every capture fails (a deployment's screenshot watchdog that
// refuses), a canvas page in VisionAuto says "No screenshot this step"
// once per step: on the step after the model asked (the state's own
// capture failed, and the agent's retry too) as on the others.
func TestVisionAutoFailedCaptureHintedOnce(t *testing.T) {
	env := testbrowser.Start(t)
	refuse := session.NewWatchdog("screenshot", func(s *session.Session) error {
		return session.Handle(s, events.Screenshot, "screenshot", func(context.Context, events.ScreenshotEvent) (events.ScreenshotResult, error) {
			return events.ScreenshotResult{}, errors.New("screenshots are disabled here")
		})
	})
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{}), refuse))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	model := scripted.New([]scripted.Step{{Action: "screenshot", Params: map[string]any{}}, doneOK}, scripted.WithName("openai:gpt-4.1"))
	set := settings(t)
	set.Vision = agent.VisionAuto
	run(t, newAgent(t, "Look at "+env.URL("/vision-canvas.html"), model, s, set), model)
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, req := range reqs {
		txt := userText(req)
		if n := strings.Count(txt, "No screenshot this step: "); n != 1 || len(images(req)) != 0 {
			t.Errorf("step %d: %d hints, %d images, want one hint and none:\n%s", i+1, n, len(images(req)), txt)
		}
	}
}
