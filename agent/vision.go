package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/imgsize"
)

// Defaults of the screenshot settings.
const (
	// DefaultScreenshotFormat: at the default size and quality a JPEG is
	// 0.16 of the full-size PNG's bytes on a page with pictures, 0.59 on a
	// sparse page of text (docs/performance.md), and every provider and
	// local vision model takes it (WebP is about half a JPEG, but not every
	// local model decodes it).
	DefaultScreenshotFormat = events.ImageJPEG
	// DefaultScreenshotQuality keeps 10 px text legible in a JPEG.
	DefaultScreenshotQuality = 75
)

// OpenAI's image detail (llm.Image.Detail; Settings.ScreenshotDetail).
const (
	DetailLow  = "low"
	DetailHigh = "high"
	DetailAuto = "auto"
)

// The rule of VisionAuto for pages the text cannot show: a screenshot is
// attached when a canvas, video, embed or object covers at least
// VisionAutoMediaCoverage of the viewport where it shows
// (events.DOMStats.MediaCoverage: clipped to the viewport, its iframes and
// ancestors that hide their overflow) and the page has at most
// VisionAutoMaxElements indexed elements: a full-window game, WebGL scene
// or drawing with (nearly) nothing to click, or an embed. The elements
// counted are all the page's indexed ones, so a map or a drawing app with
// a toolbar of more than 5 controls does not qualify (nor does a video
// page with its controls and links, which reads well as text): there the
// model asks with the screenshot action.
const (
	VisionAutoMediaCoverage = 0.5
	VisionAutoMaxElements   = 5
)

// ImageFamily is how a model provider bills an image.
type ImageFamily string

// Image families.
const (
	// ImageOpenAI: GPT-4o/4.1-style tiles. High (and auto) detail fits the
	// image in 2048×2048, then scales its short side down to 768 px, and
	// bills 85 tokens plus 170 per 512×512 tile; low detail bills 85 tokens
	// for a 512×512 image (platform.openai.com/docs/guides/images-vision,
	// "Calculating costs"). Not every OpenAI model bills so: the mini and
	// nano models and o4-mini count 32×32 patches (capped, times a
	// per-model multiplier) and other models use other per-tile prices;
	// for them ImageTokens is the tile rule's figure, an estimate of the
	// order of magnitude, not their bill.
	ImageOpenAI ImageFamily = "openai"
	// ImageAnthropic: about width×height/750 tokens, the long edge scaled
	// down to 1568 px first (about 1,600 tokens at most); Anthropic's
	// computer-use guide recommends XGA (1024×768) screenshots
	// (docs.anthropic.com, "Vision" and "Computer use").
	ImageAnthropic ImageFamily = "anthropic"
	// ImageGemini: 258 tokens for an image of at most 384×384, else 258 per
	// 768×768 tile (ai.google.dev, "Image understanding", Gemini 2.x). Gemini
	// 3 bills by media_resolution instead (a fixed budget per image), so a
	// smaller image saves bytes there, not tokens.
	ImageGemini ImageFamily = "gemini"
	// ImageOther: a provider whose image billing is not known here (Ollama,
	// OpenRouter models of other families, scripted models).
	ImageOther ImageFamily = "other"
)

// ImageFamilyOf is the image family of a model named "provider:model" (what
// llm.Model.Name returns): by provider, else by the model's name
// (OpenRouter's "openai/gpt-4.1", "anthropic/claude-…").
func ImageFamilyOf(modelName string) ImageFamily {
	name := strings.ToLower(modelName)
	provider, model, ok := strings.Cut(name, ":")
	if !ok {
		model = name
	}
	switch provider {
	case "openai":
		return ImageOpenAI
	case "anthropic", "claude":
		return ImageAnthropic
	case "gemini", "google":
		return ImageGemini
	}
	switch {
	case strings.Contains(model, "claude"):
		return ImageAnthropic
	case strings.Contains(model, "gemini"):
		return ImageGemini
	case strings.Contains(model, "gpt-"), strings.HasPrefix(model, "openai/"):
		return ImageOpenAI
	}
	return ImageOther
}

// ScreenshotBounds is the largest screenshot, in image pixels, worth
// sending to a model of the family (the default of
// Settings.ScreenshotMaxWidth/MaxHeight). A 1280×800 viewport becomes:
//   - OpenAI: 1024×640 in a 1024×1024 box, 4 tiles = 765 tokens at high
//     detail instead of 6 tiles = 1,105 (its short side 800 > 768 is
//     scaled, giving 3×2 tiles); with DetailLow, a 512×512 box (what
//     OpenAI resizes to anyway), 85 tokens.
//   - Anthropic: 1024×640 in an XGA (1024×768) box, ≈874 tokens instead
//     of ≈1,365.
//   - Gemini: 1229×768 in a 1536×768 box, two 768-px tiles (516 tokens)
//     instead of four (1,032).
//   - Others: the XGA box (1024×640).
//
// The default boxes shrink a 1280-px-wide page by at most 0.8: 13 px body
// text stays above 10 px, which models read (Anthropic's guide runs
// computer use at this size). DetailLow's 512-px box shrinks it by 0.4
// (13 px text becomes about 5 px): the price of 85 tokens is small text.
func ScreenshotBounds(f ImageFamily, detail string) (w, h int) {
	switch f {
	case ImageOpenAI:
		if detail == DetailLow {
			return 512, 512
		}
		return 1024, 1024
	case ImageGemini:
		return 1536, 768
	}
	return 1024, 768
}

// ImageTokens estimates the input tokens a w×h image costs a model of the
// family, by the rules documented on the ImageFamily constants (0 for
// ImageOther or an empty image). detail matters for OpenAI only. It is
// the family's main rule: an OpenAI model that bills by patches (see
// ImageOpenAI) pays differently.
func ImageTokens(f ImageFamily, w, h int, detail string) int {
	if w <= 0 || h <= 0 {
		return 0
	}
	fw, fh := float64(w), float64(h)
	switch f {
	case ImageOpenAI:
		if detail == DetailLow {
			return 85
		}
		if s := 2048 / math.Max(fw, fh); s < 1 {
			fw, fh = fw*s, fh*s
		}
		if s := 768 / math.Min(fw, fh); s < 1 {
			fw, fh = fw*s, fh*s
		}
		return 85 + 170*int(math.Ceil(fw/512)*math.Ceil(fh/512))
	case ImageAnthropic:
		if s := 1568 / math.Max(fw, fh); s < 1 {
			fw, fh = fw*s, fh*s
		}
		return min(int(math.Ceil(fw*fh/750)), 1600)
	case ImageGemini:
		if w <= 384 && h <= 384 {
			return 258
		}
		return 258 * int(math.Ceil(fw/768)*math.Ceil(fh/768))
	}
	return 0
}

// CheckScreenshots checks the screenshot settings (ScreenshotFormat,
// ScreenshotQuality, ScreenshotDetail) as New does, without changing s: an
// empty format and a zero quality mean the defaults. Flag parsers call it
// so that they accept exactly what New accepts.
func (s Settings) CheckScreenshots() error { return s.visionDefaults() }

// visionDefaults checks and completes the screenshot settings.
func (s *Settings) visionDefaults() error {
	switch s.ScreenshotFormat {
	case "":
		s.ScreenshotFormat = DefaultScreenshotFormat
	case events.ImagePNG, events.ImageJPEG, events.ImageWebP:
	default:
		return fmt.Errorf("%w: ScreenshotFormat %q (want jpeg, webp or png)", ErrSettings, s.ScreenshotFormat)
	}
	switch {
	case s.ScreenshotQuality == 0:
		s.ScreenshotQuality = DefaultScreenshotQuality
	case s.ScreenshotQuality < 1 || s.ScreenshotQuality > 100:
		return fmt.Errorf("%w: ScreenshotQuality %d (want 1..100)", ErrSettings, s.ScreenshotQuality)
	}
	switch s.ScreenshotDetail {
	case "", DetailLow, DetailHigh, DetailAuto:
	default:
		return fmt.Errorf("%w: ScreenshotDetail %q (want low, high or auto)", ErrSettings, s.ScreenshotDetail)
	}
	return nil
}

// screenshotOptions is how the step model's screenshots are taken: the
// settings' format and quality, bounded by the settings' size or else by
// the model's family (ScreenshotBounds).
func (a *Agent) screenshotOptions() events.ImageOptions {
	name := ""
	if a.model != nil {
		name = a.model.Name()
	}
	bw, bh := ScreenshotBounds(ImageFamilyOf(name), a.set.ScreenshotDetail)
	side := func(set, def int) int {
		switch {
		case set > 0:
			return set
		case set < 0:
			return 0
		}
		return def
	}
	return events.ImageOptions{
		Format:    a.set.ScreenshotFormat,
		Quality:   a.set.ScreenshotQuality,
		MaxWidth:  side(a.set.ScreenshotMaxWidth, bw),
		MaxHeight: side(a.set.ScreenshotMaxHeight, bh),
	}
}

// textIsNotEnough is VisionAuto's rule for a page (see
// VisionAutoMediaCoverage).
func textIsNotEnough(st *events.BrowserState) bool {
	return st.Error == "" && st.Stats.MediaCoverage >= VisionAutoMediaCoverage && len(st.Elements) <= VisionAutoMaxElements
}

// noScreenshotHint opens the hint of an observation whose screenshot
// failed (the DOM watchdog's words too).
const noScreenshotHint = "No screenshot this step: "

// autoScreenshot completes an observation taken without a screenshot in
// VisionAuto when the page is one the text cannot show (textIsNotEnough):
// it asks for the screenshot of the observed tab, as the state request
// would have. A failed capture leaves the state without one, with one
// hint: the state's own (when its capture failed too) or this one's; a
// capture that succeeds after the state's failed takes the state's hint
// away.
func (a *Agent) autoScreenshot(ctx context.Context, st *events.BrowserState) {
	addAutoScreenshot(ctx, a.browser.Bus(), a.set.Vision, a.screenshotOptions(), st, a.log)
}

// addAutoScreenshot is autoScreenshot's work, shared with AutoScreenshot.
func addAutoScreenshot(ctx context.Context, b *bus.Bus, vision Vision, opts events.ImageOptions, st *events.BrowserState, log *zap.Logger) {
	if vision != VisionAuto || len(st.Screenshot) > 0 || !textIsNotEnough(st) {
		return
	}
	prior := -1
	for i, h := range st.Hints {
		if strings.HasPrefix(h, noScreenshotHint) {
			prior = i
		}
	}
	res, err := bus.Call(ctx, b, events.Screenshot, events.ScreenshotEvent{TargetID: st.FocusedTarget, ImageOptions: opts})
	if err != nil || len(res.Data) == 0 {
		log.Debug("agent: screenshot of a canvas page", zap.Error(err))
		if prior < 0 {
			if err == nil {
				err = errors.New("the browser returned no image")
			}
			st.Hints = append(st.Hints, noScreenshotHint+err.Error())
		}
		return
	}
	if prior >= 0 {
		st.Hints = append(st.Hints[:prior:prior], st.Hints[prior+1:]...)
	}
	st.Screenshot, st.ScreenshotType, st.ScreenshotScale = res.Data, res.MediaType, res.Scale
	st.ScreenshotWidth, st.ScreenshotHeight = res.Width, res.Height
}

// screenshotCaption is the text before the observation's screenshot in
// the prompt; ok is false when there is no screenshot to send (no image,
// or vision off). With coordinate clicks offered, it gives the image's
// size: the model's coordinates are in its pixels.
func (a *Agent) screenshotCaption(st *events.BrowserState) (caption string, ok bool) {
	if len(st.Screenshot) == 0 || a.set.Vision == VisionOff {
		return "", false
	}
	if a.offersCoordinates() {
		if w, h := screenshotSize(st); w > 0 {
			return fmt.Sprintf("Current screenshot (%d×%d pixels; click coordinates are in these pixels):", w, h), true
		}
	}
	return "Current screenshot:", true
}

// screenshotImage is the image part of a screenshot: its media type read
// from its bytes (whoever answered Screenshot may have sent a PNG whatever
// was asked) and Settings.ScreenshotDetail.
func (a *Agent) screenshotImage(b []byte) llm.Part {
	return llm.Part{Image: &llm.Image{MediaType: imageMediaType(b, ""), Data: b, Detail: a.set.ScreenshotDetail}}
}

// imageMediaType is the media type of an encoded image: read from its
// bytes, else declared (what its producer said), else image/png.
func imageMediaType(b []byte, declared string) string {
	if mt := imgsize.MediaType(b); mt != "" {
		return mt
	}
	if declared != "" {
		return declared
	}
	return "image/png"
}

// ScreenshotMediaType is the media type of the observation's screenshot:
// read from its bytes (whoever answered Screenshot may have sent a PNG
// whatever was asked), else the state's ScreenshotType, else image/png.
func ScreenshotMediaType(st *events.BrowserState) string {
	return imageMediaType(st.Screenshot, st.ScreenshotType)
}

// offersCoordinates reports whether this agent's click takes coordinates.
func (a *Agent) offersCoordinates() bool {
	c, ok := a.alts["click"]
	return ok && strings.Contains(string(c.Params), "coordinate_x")
}

// screenshotSize is the observation's image size in pixels (0, 0 when
// unknown).
func screenshotSize(st *events.BrowserState) (w, h int) {
	if st.ScreenshotWidth > 0 && st.ScreenshotHeight > 0 {
		return st.ScreenshotWidth, st.ScreenshotHeight
	}
	w, h, err := imgsize.Of(st.Screenshot)
	if err != nil {
		return 0, 0
	}
	return w, h
}

// screenshotExt is the file extension of the observation's image.
func screenshotExt(st *events.BrowserState) string {
	f := events.ImagePNG
	switch ScreenshotMediaType(st) {
	case events.ImageJPEG.MediaType():
		f = events.ImageJPEG
	case events.ImageWebP.MediaType():
		f = events.ImageWebP
	}
	return f.Ext()
}
