package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

func writePNG(t *testing.T, path string, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, h/2, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

// sampleTrace writes a two-step trace; the second step's screenshot hash is
// wrong when badShot is set.
func sampleTrace(t *testing.T, badShot bool) string {
	t.Helper()
	dir := t.TempDir()
	sum1 := writePNG(t, filepath.Join(dir, "step_1.png"), 64, 40)
	sum2 := writePNG(t, filepath.Join(dir, "step_2.png"), 64, 40)
	if badShot {
		sum2 = strings.Repeat("0", 64)
	}
	path := filepath.Join(dir, "trace.jsonl")
	w, err := trace.Create(path, trace.WithMetadata(map[string]any{"task": "Apply for the job <script>alert(1)</script>"}))
	if err != nil {
		t.Fatal(err)
	}
	steps := []trace.Step{
		{Step: 1, URL: "http://127.0.0.1/jobs", NextGoal: "open the form", DurationMS: 812, Screenshot: "step_1.png", ScreenshotSHA256: sum1,
			Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":12}`), Verdict: "navigated", Before: json.RawMessage(`{"URL":"a"}`), After: json.RawMessage(`{"URL":"b"}`)}}},
		{Step: 2, URL: "http://127.0.0.1/apply", NextGoal: "submit", DurationMS: 640, Screenshot: "step_2.png", ScreenshotSHA256: sum2,
			Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":40}`), Verdict: "failed", Error: "element index 40 is not in the current page state"}}},
	}
	for _, s := range steps {
		if err := w.Write(trace.TypeModel, trace.Model{Step: s.Step, Model: "scripted", PromptChars: 5000, LatencyMS: 3}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(trace.TypeStep, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(trace.TypeRun, trace.Run{Task: "apply", Success: true, Done: true, FinalText: "Application sent", Steps: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// renderInBrowser writes the report and loads it in real Chromium, returning
// facts the page shows.
func renderInBrowser(t *testing.T, tracePath string) (facts struct {
	Steps, Images, Loaded int
	Frames                int
	Chain, Final, Title   string
	Problems              []string
}) {
	t.Helper()
	out := filepath.Join(filepath.Dir(tracePath), "report.html")
	if err := WriteFile(tracePath, out); err != nil {
		t.Fatal(err)
	}
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "file://"+out)
	pg.Eval(t, `(async () => {
		const imgs = [...document.querySelectorAll('img.shot')];
		await Promise.all(imgs.map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
		return {
			Steps: document.querySelectorAll('section.step').length,
			Frames: [...document.querySelectorAll('img.frame')].filter(i => i.naturalWidth > 0).length,
			Images: imgs.length,
			Loaded: imgs.filter(i => i.naturalWidth === 64).length,
			Chain: document.getElementById('chain').textContent,
			Final: (document.getElementById('final') || {}).textContent || '',
			Title: document.getElementById('title').textContent,
			Problems: [...document.querySelectorAll('.step .verdict-failed')].map(e => e.textContent),
		};
	})()`, &facts)
	return facts
}

func TestReportRendersStepsAndImages(t *testing.T) {
	f := renderInBrowser(t, sampleTrace(t, false))
	if f.Steps != 2 || f.Images != 2 || f.Loaded != 2 {
		t.Fatalf("steps %d, images %d, loaded %d; want 2/2/2", f.Steps, f.Images, f.Loaded)
	}
	if f.Chain != "trace intact" || f.Final != "Application sent" {
		t.Fatalf("chain %q final %q", f.Chain, f.Final)
	}
	if !strings.Contains(f.Title, "<script>") {
		t.Fatalf("title %q: the task text must be shown escaped, not run", f.Title)
	}
}

func TestReportFlagsTamperingAndSwappedImages(t *testing.T) {
	path := sampleTrace(t, true)
	raw, _ := os.ReadFile(path)
	// Edit the model's goal in step 1 after the fact.
	tampered := bytes.Replace(raw, []byte("open the form"), []byte("open the FORM"), 1)
	if err := os.WriteFile(path, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	f := renderInBrowser(t, path)
	if !strings.HasPrefix(f.Chain, "trace tampered") {
		t.Fatalf("chain %q, want tampered", f.Chain)
	}
	if f.Images != 1 || len(f.Problems) < 1 || !strings.Contains(strings.Join(f.Problems, "|"), "does not match the hash") {
		t.Fatalf("images %d problems %q: the swapped screenshot must not be shown", f.Images, f.Problems)
	}
}

func TestReportShowsRecordedFrames(t *testing.T) {
	path := sampleTrace(t, false)
	dir := filepath.Join(filepath.Dir(path), FramesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := ""
	// Written out of order: the report sorts by time. A line naming a path
	// outside the folder is ignored.
	for i, ts := range []string{"2026-11-30T10:00:02Z", "2026-11-30T10:00:01Z", "2026-11-30T10:00:03Z"} {
		name := fmt.Sprintf("frame-%06d.png", i+1)
		writePNG(t, filepath.Join(dir, name), 32, 20)
		manifest += fmt.Sprintf(`{"seq":%d,"file":%q,"time":%q}`+"\n", i+1, name, ts)
	}
	manifest += `{"seq":4,"file":"../step_1.png","time":"2026-11-30T10:00:04Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "frames.jsonl"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.FramesTotal != 3 || len(d.Frames) != 3 || d.Frames[0].Time != "2026-11-30T10:00:01Z" {
		t.Fatalf("frames %d/%d, first at %q", len(d.Frames), d.FramesTotal, d.Frames[0].Time)
	}
	if f := renderInBrowser(t, path); f.Frames != 3 {
		t.Fatalf("%d frames rendered, want 3", f.Frames)
	}
}

// A driven session's trace holds the runs of its tasks before the
// session's own run record: the report keeps and shows every one.
func TestReportListsTheTasksOfADrivenSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []trace.Run{
		{Task: "find the price", Done: true, Success: true, FinalText: "12 EUR", Steps: 3},
		{Task: "book it", Errors: []string{"step 9: timed out"}, Steps: 5},
		{Task: "interactive session", Steps: 11},
	} {
		if err := w.Write(trace.TypeRun, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Run == nil || d.Run.Task != "interactive session" || len(d.Tasks) != 2 || d.Tasks[0].FinalText != "12 EUR" {
		t.Fatalf("run %+v, tasks %+v", d.Run, d.Tasks)
	}
	var b strings.Builder
	if err := Render(&b, d); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Count(html, `<tr class="task">`) != 2 || !strings.Contains(html, "step 9: timed out") || !strings.Contains(html, "12 EUR") {
		t.Fatalf("tasks not shown:\n%s", html)
	}
}

// The model's plan and a history summary are shown with their step, and
// each model call says what it was for.
func TestReportShowsPlanAndSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct {
		typ  string
		data any
	}{
		{trace.TypeModel, trace.Model{Step: 26, Purpose: "compact", Model: "summariser", PromptChars: 41000}},
		{trace.TypeModel, trace.Model{Step: 26, Purpose: "step", Model: "main", PromptChars: 9000}},
		{trace.TypeStep, trace.Step{Step: 26, URL: "http://127.0.0.1/list",
			Plan:       []trace.PlanItem{{Text: "open the list", Status: "done"}, {Text: "read page 3", Status: "current"}, {Text: "report", Status: "pending"}},
			Compaction: &trace.Compaction{FromStep: 2, ToStep: 20, Summary: "Pages 1-2 read; 14 items noted.", CharsBefore: 41000, CharsAfter: 7200}}},
		{trace.TypeStep, trace.Step{Step: 27, Compaction: &trace.Compaction{FromStep: 2, ToStep: 21, Error: "agent: history summary failed: 503"}}},
	} {
		if err := w.Write(rec.typ, rec.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, d); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<li class="plan-done">✓ open the list</li>`, `<li class="plan-current">▶ read page 3</li>`, `<li class="plan-pending">report</li>`,
		"History of steps 2–20 summarised by a model (41000 → 7200 characters)", "Pages 1-2 read; 14 items noted.",
		"History summary failed", "503",
		"<td>26</td><td>compact</td><td>summariser</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
