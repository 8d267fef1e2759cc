package agent_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// marksPage serves testdata/evidence/marks.html on loopback.
func marksPage(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("testdata", "evidence"))))
	t.Cleanup(srv.Close)
	return srv.URL + "/marks.html"
}

func nearBox(got *[4]float64, want [4]float64) bool {
	if got == nil {
		return false
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1 {
			return false
		}
	}
	return true
}

// select_dropdown marks its element's box, hover the box and the point
// the mouse went to, a coordinate click the point in CSS px (the model
// named it in the pixels of a screenshot shrunk to 1024 of 1280), a click
// on an element below the fold its box only, and done nothing. A run ending with done takes no after screenshot.
func TestActionsRecordWhereTheyLanded(t *testing.T) {
	_, s := newSession(t)
	page := marksPage(t)
	yes := true
	model := scripted.New([]scripted.Step{
		{Action: "select_dropdown", Label: "Plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Action: "hover", Label: "Menu"},
		// Go's centre (90, 220) in CSS px is (72, 176) on the 0.8 screenshot.
		{Action: "click", Params: map[string]any{"coordinate_x": 72, "coordinate_y": 176}},
		// Below the fold: the page scrolls before the click, so the point
		// would not match the step's screenshot and is left out.
		{WaitFor: "went", Action: "click", Label: "Far away"},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	}, scripted.WithName("openai:gpt-4.1"))
	set := settings(t)
	set.Vision, set.CoordinateClicks = agent.VisionOn, &yes
	a, err := agent.New("Open "+page+" and try the controls.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Success {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	h := a.History()
	if len(h.Items) != 6 {
		t.Fatalf("%d steps", len(h.Items))
	}
	sel, hov, clk := h.Items[1].Actions[0], h.Items[2].Actions[0], h.Items[3].Actions[0]
	if sel.Name != "select_dropdown" || sel.Mark == nil || !nearBox(sel.Mark.Box, [4]float64{40, 40, 200, 30}) || sel.Mark.Point != nil {
		t.Errorf("select: %s %+v", sel.Name, sel.Mark)
	}
	if hov.Name != "hover" || hov.Mark == nil || !nearBox(hov.Mark.Box, [4]float64{300, 40, 120, 40}) || hov.Mark.Point == nil ||
		hov.Mark.Point[0] < 300 || hov.Mark.Point[0] > 420 || hov.Mark.Point[1] < 40 || hov.Mark.Point[1] > 80 {
		t.Errorf("hover: %s %+v", hov.Name, hov.Mark)
	}
	if clk.Name != "click" || clk.Mark == nil || clk.Mark.Box != nil || clk.Mark.Point == nil ||
		math.Abs(clk.Mark.Point[0]-90) > 1.5 || math.Abs(clk.Mark.Point[1]-220) > 1.5 {
		t.Errorf("coordinate click: %s %+v (verdict %s)", clk.Name, clk.Mark, clk.Verdict)
	}
	if far := h.Items[4].Actions[0]; far.Mark == nil || !nearBox(far.Mark.Box, [4]float64{40, 1000, 100, 40}) || far.Mark.Point != nil {
		t.Errorf("off-screen click: %s %+v", far.Name, far.Mark)
	}
	// Step 0 (the start URL opened before the first model call) has its
	// actions' time, for the report's timeline.
	if it := h.Items[0]; it.Step != 0 || it.ActionsTime <= 0 {
		t.Errorf("step %d actions took %s", it.Step, it.ActionsTime)
	}
	if m := h.Items[5].Actions[0].Mark; m != nil {
		t.Errorf("done has a mark %+v", m)
	}
	for _, it := range h.Items {
		if it.State.AfterScreenshotPath != "" {
			t.Errorf("step %d has an after screenshot; the run ended with done", it.Step)
		}
		if it.Step > 0 && (it.State.Viewport == nil || it.State.Viewport.Width != 1280 || it.State.Viewport.Height != 800) {
			t.Errorf("step %d viewport %+v", it.Step, it.State.Viewport)
		}
	}
}

// A run stopped while its last step acts takes a screenshot after the
// actions that changed the page, unless vision is off.
func TestStoppedRunAfterScreenshot(t *testing.T) {
	for _, vision := range []agent.Vision{agent.VisionOff, agent.VisionAuto} {
		t.Run(string(vision), func(t *testing.T) {
			_, s := newSession(t)
			page := marksPage(t)
			model := scripted.New([]scripted.Step{{Actions: []scripted.Action{
				{Name: "click", Label: "Go"},
				{Name: "wait", Params: map[string]any{"seconds": 1}},
			}}})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			set := settings(t)
			set.Vision = vision
			set.Approver = agent.ApproverFunc(func(_ context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
				if r.Action == "wait" {
					stop() // the person stops the run after the click
					return agent.Decision{Reason: "stopped"}, nil
				}
				return agent.Decision{Allow: true}, nil
			})
			a, err := agent.New("Open "+page+" and press Go.", model, s, set)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(runCtx); !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v; model errors %v", err, model.Errors())
			}
			h := a.History()
			last := h.Items[len(h.Items)-1]
			if last.Actions[0].Verdict != "changed" {
				t.Fatalf("the click's verdict %s: the test needs a page change", last.Actions[0].Verdict)
			}
			p := last.State.AfterScreenshotPath
			switch vision {
			case agent.VisionOff:
				if p != "" {
					t.Fatalf("vision off took %s", p)
				}
				if _, err := os.Stat(filepath.Join(a.RunDir(), "screenshots")); !os.IsNotExist(err) {
					t.Fatalf("vision off wrote screenshots: %v", err)
				}
			default:
				want := filepath.Join(a.RunDir(), "screenshots", "step_1_after.jpg")
				if b, err := os.ReadFile(p); p != want || err != nil || len(b) == 0 {
					t.Fatalf("after screenshot %q (want %q): %v", p, want, err)
				}
			}
		})
	}
}

// A click on a button inside a cross-site iframe marks the button's box
// where the observation saw it on the page; the watchdog's click point is
// local to the iframe's target and is not drawn (it would sit where the
// mouse never was).
func TestIframeClickMarksTheBoxOnly(t *testing.T) {
	env, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Frame button", Action: "click", Label: "Frame button"},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	}, scripted.WithName("openai:gpt-4.1"))
	set := settings(t)
	set.Vision = agent.VisionOn
	a, err := agent.New("Open "+env.URL("/actions-iframe.html")+" and press the frame's button.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	if res := runAgent(t, a); !res.Success {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	// Where the button really is on the page: the iframe's content box
	// plus the button's place in it (20, 40, 120x30).
	var fr struct{ X, Y float64 }
	evalPage(t, s, `(() => { const r = document.getElementById('cross').getBoundingClientRect(); return {X: r.x + 5, Y: r.y + 5}; })()`, &fr)
	want := [4]float64{fr.X + 20, fr.Y + 40, 120, 30}
	var clk *agent.ActionRecord
	for _, it := range a.History().Items {
		for i := range it.Actions {
			if it.Actions[i].Name == "click" {
				clk = &it.Actions[i]
			}
		}
	}
	if clk == nil || clk.Mark == nil {
		t.Fatalf("click %+v", clk)
	}
	if !nearBox(clk.Mark.Box, want) {
		t.Errorf("box %v, the button is at %v", clk.Mark.Box, want)
	}
	if clk.Mark.Point != nil {
		t.Errorf("point %v drawn for a click local to the iframe (button at %v)", *clk.Mark.Point, want)
	}
}

// A click after a scroll in the same batch marks the element's box as the
// step's screenshot shows it, and no point: the mouse went to where the
// element was after the scroll.
func TestClickAfterScrollInBatchMarksTheBoxOnly(t *testing.T) {
	_, s := newSession(t)
	page := marksPage(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Middle", Actions: []scripted.Action{
			{Name: "scroll", Params: map[string]any{"pages": 0.375}}, // 300 of 800 px
			{Name: "click", Label: "Middle"},
		}},
		{WaitFor: "Middle done", Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	}, scripted.WithName("openai:gpt-4.1"))
	set := settings(t)
	set.Vision = agent.VisionOn
	a, err := agent.New("Open "+page+" and press Middle.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	if res := runAgent(t, a); !res.Success {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	var scrolled float64
	evalPage(t, s, `scrollY`, &scrolled)
	if scrolled < 250 {
		t.Fatalf("the page scrolled %g px; the test needs the batch's scroll", scrolled)
	}
	var clk *agent.ActionRecord
	for _, it := range a.History().Items {
		for i := range it.Actions {
			if it.Actions[i].Name == "click" {
				clk = &it.Actions[i]
			}
		}
	}
	if clk == nil || clk.Mark == nil || !nearBox(clk.Mark.Box, [4]float64{300, 500, 100, 40}) {
		t.Fatalf("click %+v", clk)
	}
	if clk.Mark.Point != nil {
		t.Errorf("point %v drawn after the page scrolled under it", *clk.Mark.Point)
	}
}
