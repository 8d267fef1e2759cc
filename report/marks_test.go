package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

// The fixture pages' elements, where their CSS puts them (x, y, w, h).
var fixtureBoxes = map[string][4]float64{
	"name":   {40, 60, 240, 32},
	"greet":  {320, 60, 120, 40},
	"next":   {40, 160, 160, 30},
	"finish": {500, 300, 140, 48},
}

// reportFacts is what testdata/readmarks.js reads from a rendered report.
type reportFacts struct {
	Marks []struct {
		Step, Action, Section int
		Kind                  string
		X, Y, W, H            float64
		Left, Top             float64 // rendered, from the image's corner
		Width, Height         float64
		ImgWidth, ImgHeight   float64
		Natural               [2]int
	}
	Phases []struct {
		Step       int
		Name, Text string
		MS         float64
	}
	Afters []struct {
		Step    int
		Caption string
		Loaded  bool
	}
	Colours []struct {
		Step, Action  int
		Before, After []int
	}
}

// A real run types, clicks a button, follows a link and clicks again; the
// run is stopped while its last step acts. The report, opened in
// Chromium, marks each action's element and click point on its step's
// screenshot where the element is, at the report's size and at another;
// shows the page after the steps that changed it (the next step's
// screenshot, and for the stopped last step the one taken after its
// actions); and gives every step with a model call its three phases.
//
// It runs twice: at device scale 1 with the screenshot shrunk for the
// model (1280x800 CSS px as 1024x640), and at device scale 2 unbounded
// (1000x700 CSS px as 2000x1400).
func TestReportMarksWhereActionsLanded(t *testing.T) {
	t.Run("shrunk", func(t *testing.T) {
		testMarks(t, session.Profile{}, 0)
	})
	t.Run("dpr2", func(t *testing.T) {
		testMarks(t, session.Profile{ViewportWidth: 1000, ViewportHeight: 700, DeviceScaleFactor: 2}, 2)
	})
}

// testMarks runs the scripted run in a session with prof's viewport; a
// non-zero scale also lifts the screenshot's size bound and checks the
// image is that many pixels per CSS pixel.
func testMarks(t *testing.T, prof session.Profile, scale float64) {
	env := testbrowser.Start(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("testdata", "marks"))))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.jsonl")
	tw, err := trace.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	prof.CDPURL, prof.ConnectTab = env.Browser.WebSocketURL(), session.ConnectTabNew
	s := session.New(prof,
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{}), screenshot.New(screenshot.Config{})),
		session.WithBusHook(tw.ObserveBus))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})

	model := scripted.New([]scripted.Step{
		{NextGoal: "Greet Ada.", Actions: []scripted.Action{
			{Name: "input", Label: "Your name", Params: map[string]any{"text": "Ada"}},
			{Name: "click", Label: "Greet"},
		}},
		{WaitFor: "Hello, Ada", NextGoal: "Go on.", Action: "click", Label: "Next page"},
		{WaitForLabel: "Finish", NextGoal: "Finish.", Actions: []scripted.Action{
			{Name: "click", Label: "Finish"},
			{Name: "wait", Params: map[string]any{"seconds": 1}},
		}},
	}, scripted.WithName("openai:gpt-4.1"))
	// The person running the agent stops it while its third step acts:
	// after the click on Finish (the wait after it on the second page).
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	clickedOnSecond := false
	approve := agent.ApproverFunc(func(_ context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasSuffix(r.URL, "/next.html") {
			return agent.Decision{Allow: true}, nil
		}
		if r.Action == "click" {
			clickedOnSecond = true
		}
		if r.Action == "wait" && clickedOnSecond {
			stop()
			return agent.Decision{Reason: "the run was stopped"}, nil
		}
		return agent.Decision{Allow: true}, nil
	})
	set := agent.Settings{
		RunDir: dir, Vision: agent.VisionOn, MaxSteps: 8, Approver: approve,
		Observers: []agent.Observer{trace.NewAgentObserver(tw, dir)},
	}
	if scale > 0 {
		set.ScreenshotMaxWidth, set.ScreenshotMaxHeight = -1, -1
	}
	a, err := agent.New("Open "+srv.URL+"/form.html, greet Ada, then finish on the next page.", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(runCtx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v %+v; model errors %v", err, res, model.Errors())
	}
	// The live page's viewport: the marks are checked against it and the
	// fixture's CSS, not against what the trace says.
	var vp struct{ W, H float64 }
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.Eval(cs, `({W: innerWidth, H: innerHeight})`, &vp); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	// History: where each action landed, and the last step's after picture.
	// The actions are found by their order, not their step numbers: the
	// scripted model may wait a step for a page to settle.
	h := a.History()
	order := []string{"name", "greet", "next", "finish"}
	at := map[string][2]int{} // element → step, action number
	for _, it := range h.Items {
		for i, ac := range it.Actions {
			name := ""
			if it.Step > 0 && ac.Name != "wait" && len(at) < len(order) {
				name = order[len(at)]
				at[name] = [2]int{it.Step, i + 1}
			}
			if name == "" {
				if ac.Mark != nil {
					t.Errorf("step %d action %d (%s) has a mark %+v", it.Step, i+1, ac.Name, ac.Mark)
				}
				continue
			}
			if ac.Mark == nil || ac.Mark.Box == nil {
				t.Fatalf("step %d action %d (%s): mark %+v", it.Step, i+1, ac.Name, ac.Mark)
			}
			if !near4(*ac.Mark.Box, fixtureBoxes[name], 1) {
				t.Errorf("step %d %s: box %v, the page puts it at %v", it.Step, name, *ac.Mark.Box, fixtureBoxes[name])
			}
			if ac.Name == "click" && (ac.Mark.Point == nil || !inside(*ac.Mark.Point, fixtureBoxes[name])) {
				t.Errorf("step %d %s: click point %v not in its box", it.Step, name, ac.Mark.Point)
			}
			if ac.Name == "input" && ac.Mark.Point != nil {
				t.Errorf("typing has no mouse point: %v", ac.Mark.Point)
			}
		}
		if it.Step > 0 && (it.State.Viewport == nil || it.State.Viewport.Width != vp.W || it.State.Viewport.Height != vp.H) {
			t.Errorf("step %d viewport %+v, the page's is %+v", it.Step, it.State.Viewport, vp)
		}
	}
	if len(at) != len(order) {
		t.Fatalf("actions found %v, want %v", at, order)
	}
	fin := at["finish"][0]
	last := h.Items[len(h.Items)-1]
	if last.Step != fin || !strings.HasPrefix(last.State.AfterScreenshotPath, filepath.Join(dir, "screenshots", "step_"+strconv.Itoa(fin)+"_after.")) {
		for _, ac := range last.Actions {
			t.Logf("last step's %s: %s %s", ac.Name, ac.Verdict, ac.Error)
		}
		t.Fatalf("last step %d, after screenshot %q", last.Step, last.State.AfterScreenshotPath)
	}
	for _, it := range h.Items[:len(h.Items)-1] {
		if it.State.AfterScreenshotPath != "" {
			t.Errorf("step %d took an after screenshot; the next step's shows its page", it.Step)
		}
	}

	out := filepath.Join(dir, "report.html")
	if err := WriteFile(tracePath, out); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join("testdata", "readmarks.js"))
	if err != nil {
		t.Fatal(err)
	}
	pg := env.NewPage(t, "file://"+out)
	for _, width := range []int{0, 1000} {
		var f reportFacts
		pg.Eval(t, "("+string(js)+")("+strconv.Itoa(width)+")", &f)
		checkMarks(t, width, f, vp.W, vp.H, at)
		if width != 0 {
			continue
		}
		nat := f.Marks[0].Natural
		t.Logf("screenshot %dx%d px for a %gx%g viewport, shown %gx%g", nat[0], nat[1], vp.W, vp.H, f.Marks[0].ImgWidth, f.Marks[0].ImgHeight)
		if scale > 0 && (float64(nat[0]) != vp.W*scale || float64(nat[1]) != vp.H*scale) {
			t.Errorf("screenshot %dx%d px, want %g px per CSS px of %gx%g", nat[0], nat[1], scale, vp.W, vp.H)
		}
		checkAfters(t, f, at)
		checkPhases(t, f, at)
		// The link's click lists the navigation it caused.
		var reqs []string
		pg.Eval(t, `[...document.querySelectorAll('section.step[data-step="`+strconv.Itoa(at["next"][0])+`"] tr.request')].map(r => [...r.cells].map(c => c.textContent).join(' '))`, &reqs)
		if !slices.Contains(reqs, "GET "+srv.URL+"/next.html Document 200") {
			t.Errorf("step %d's requests %q", at["next"][0], reqs)
		}
	}
}

func checkMarks(t *testing.T, width int, f reportFacts, vw, vh float64, at map[string][2]int) {
	t.Helper()
	// input + click (box and point), click (box, point), click (box, point).
	type mk struct {
		step, action int
		kind, el     string
	}
	m := func(kind, el string) mk { return mk{at[el][0], at[el][1], kind, el} }
	want := []mk{
		m("box", "name"), m("box", "greet"), m("point", "greet"),
		m("box", "next"), m("point", "next"),
		m("box", "finish"), m("point", "finish"),
	}
	if len(f.Marks) != len(want) {
		t.Fatalf("width %d: %d marks, want %d: %+v", width, len(f.Marks), len(want), f.Marks)
	}
	worst := 0.0 // the largest distance of a box's edge from the element's, in shown pixels
	defer func() { t.Logf("shown %g px wide: boxes within %.2f px of the elements", f.Marks[0].ImgWidth, worst) }()
	for i, w := range want {
		m := f.Marks[i]
		if m.Step != w.step || m.Section != w.step || m.Action != w.action || m.Kind != w.kind {
			t.Errorf("mark %d: step %d (in section %d) action %d %s; want step %d action %d %s", i, m.Step, m.Section, m.Action, m.Kind, w.step, w.action, w.kind)
			continue
		}
		if width > 0 && math.Abs(m.ImgWidth-float64(width)) > 1 {
			t.Errorf("width %d: the image is shown %g wide", width, m.ImgWidth)
		}
		// Where the element is on the image as shown: its CSS box scaled
		// by the image's shown size over the viewport.
		sx, sy := m.ImgWidth/vw, m.ImgHeight/vh
		b := fixtureBoxes[w.el]
		const tol = 2.5 // rendered pixels
		switch w.kind {
		case "box":
			worst = max(worst, math.Abs(m.Left-b[0]*sx), math.Abs(m.Top-b[1]*sy), math.Abs(m.Width-b[2]*sx), math.Abs(m.Height-b[3]*sy))
			if math.Abs(m.Left-b[0]*sx) > tol || math.Abs(m.Top-b[1]*sy) > tol || math.Abs(m.Width-b[2]*sx) > tol || math.Abs(m.Height-b[3]*sy) > tol {
				t.Errorf("width %d: %s's box drawn at (%.1f, %.1f) %.1fx%.1f; the element is at (%.1f, %.1f) %.1fx%.1f",
					width, w.el, m.Left, m.Top, m.Width, m.Height, b[0]*sx, b[1]*sy, b[2]*sx, b[3]*sy)
			}
		case "point":
			if m.Left < b[0]*sx-tol || m.Left > (b[0]+b[2])*sx+tol || m.Top < b[1]*sy-tol || m.Top > (b[1]+b[3])*sy+tol ||
				math.Abs(m.Left-m.X*sx) > tol || math.Abs(m.Top-m.Y*sy) > tol {
				t.Errorf("width %d: %s's point drawn at (%.1f, %.1f), recorded (%g, %g)", width, w.el, m.Left, m.Top, m.X, m.Y)
			}
		}
	}
}

func checkAfters(t *testing.T, f reportFacts, at map[string][2]int) {
	t.Helper()
	// Step 0 navigated (after: step 1's picture), greeting changed the
	// page, Next navigated, Finish's step (stopped) changed it: its own
	// after picture.
	after := func(s int) string { return fmt.Sprintf("after: step %d's screenshot", s+1) }
	want := map[int]string{0: after(0), at["greet"][0]: after(at["greet"][0]), at["next"][0]: after(at["next"][0]), at["finish"][0]: "after the actions"}
	got := map[int]string{}
	for _, a := range f.Afters {
		if !a.Loaded {
			t.Errorf("step %d's after picture does not load", a.Step)
		}
		got[a.Step] = a.Caption
	}
	for s, c := range want {
		if got[s] != c {
			t.Errorf("step %d after %q, want %q (all: %v)", s, got[s], c, got)
		}
	}
	// The pictures show the page: the buttons are blue before, and Finish
	// is orange after its click.
	for _, c := range f.Colours {
		if c.Step == at["finish"][0] && c.Action == at["finish"][1] {
			if !colour(c.Before, 0, 0, 255) || c.After == nil || !colour(c.After, 255, 128, 0) {
				t.Errorf("Finish: before %v after %v; want blue then orange", c.Before, c.After)
			}
		}
		if c.Step == at["greet"][0] && c.Action == at["greet"][1] && !colour(c.Before, 0, 0, 255) {
			t.Errorf("Greet's box centre is %v on the screenshot, not the blue button", c.Before)
		}
	}
}

func checkPhases(t *testing.T, f reportFacts, at map[string][2]int) {
	t.Helper()
	byStep := map[int][]string{}
	for _, p := range f.Phases {
		byStep[p.Step] = append(byStep[p.Step], p.Name)
		if !strings.HasPrefix(p.Text, p.Name+" ") || !strings.HasSuffix(p.Text, " ms") && !strings.HasSuffix(p.Text, " s") {
			t.Errorf("step %d phase text %q", p.Step, p.Text)
		}
		if p.Name == "observe" && p.MS <= 0 && p.Step > 0 {
			t.Errorf("step %d observed in %g ms", p.Step, p.MS)
		}
	}
	for _, el := range []string{"greet", "next", "finish"} {
		if s := at[el][0]; strings.Join(byStep[s], ",") != "observe,model,actions" {
			t.Errorf("step %d timeline %v", s, byStep[s])
		}
	}
}

func near4(a, b [4]float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

func inside(p [2]float64, b [4]float64) bool {
	return p[0] >= b[0] && p[0] <= b[0]+b[2] && p[1] >= b[1] && p[1] <= b[1]+b[3]
}

// colour reports whether c is near (r, g, b) (a JPEG or a scaled image
// blends a little).
func colour(c []int, r, g, b int) bool {
	return len(c) == 3 && abs(c[0]-r) < 40 && abs(c[1]-g) < 40 && abs(c[2]-b) < 40
}

func abs(v int) int { return max(v, -v) }
