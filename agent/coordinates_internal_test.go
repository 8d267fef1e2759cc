package agent

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
)

type namedModel string

func (m namedModel) Generate(context.Context, llm.Request) (*llm.Response, error) { return nil, nil }
func (m namedModel) Name() string                                                 { return string(m) }

// Coordinate clicks are offered per model: upstream's families by default
// (with vision), any model when the setting says so, none without vision;
// a deployment's own click is never replaced.
func TestCoordinateClicksPerModel(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		model  string
		vision Vision
		set    *bool
		want   bool
	}{
		{"anthropic:claude-sonnet-4-5", VisionOn, nil, true},
		{"gemini:gemini-3-pro-preview", VisionAuto, nil, true},
		{"anthropic:claude-sonnet-4-5", VisionOff, nil, false},
		{"openai:gpt-4.1", VisionOn, nil, false},
		{"openai:gpt-4.1", VisionOff, &on, true},
		{"anthropic:claude-opus-4-1", VisionOn, &off, false},
	} {
		a := &Agent{set: Settings{Vision: c.vision, CoordinateClicks: c.set}, tools: DefaultRegistry()}
		if got := a.coordinateClicks(namedModel(c.model)); got != c.want {
			t.Errorf("%s, vision %s, setting %v: coordinate clicks %v, want %v", c.model, c.vision, c.set, got, c.want)
		}
	}

	// The schema of the offered click: coordinates only when on.
	a := &Agent{set: Settings{Vision: VisionOn}, tools: DefaultRegistry(), exclude: map[string]bool{}}
	a.alt("click", coordinateClickSpec)
	click := func(specs []ActionSpec) string {
		for _, s := range specs {
			if s.Name == "click" {
				return string(s.Params)
			}
		}
		return ""
	}
	if p := click(a.offered("https://example.com/", false)); !strings.Contains(p, "coordinate_x") || !strings.Contains(p, `"required":[]`) {
		t.Errorf("coordinate click schema: %s", p)
	}
	if p := click(offeredDefault()); strings.Contains(p, "coordinate_x") {
		t.Errorf("the default click offers coordinates: %s", p)
	}

	// A deployment's own click stays.
	r := DefaultRegistry()
	r.Remove("click")
	if err := Register(r, "click", "Our click.", func(context.Context, *ActionContext, IndexParams) (ActionResult, error) { return ActionResult{}, nil }); err != nil {
		t.Fatal(err)
	}
	if c, _ := r.Get("click"); c.builtin {
		t.Error("a registered click counts as the built-in")
	}
}

// A scale a replacement screenshot watchdog reports as +Inf, NaN or 0 is
// not used: the click maps by the viewport's width over the image's, not
// to (0, 0).
func TestCoordinateScaleNotFinite(t *testing.T) {
	// A 1024×640 image header is enough: the size is read from it.
	shot := pngOf(t, 1024, 640)
	for _, sc := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0, -2} {
		st := &events.BrowserState{Screenshot: shot, ScreenshotScale: sc, Page: events.PageInfo{ViewportWidth: 1280}}
		if got := screenshotScale(st); got != 1.25 {
			t.Errorf("reported scale %v: CSS pixels per image pixel %v, want 1.25", sc, got)
		}
	}
	st := &events.BrowserState{Screenshot: shot, ScreenshotScale: 0.8}
	if got := screenshotScale(st); got != 1.25 {
		t.Errorf("reported scale 0.8: %v, want 1.25", got)
	}
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
