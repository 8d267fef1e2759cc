package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm"
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
