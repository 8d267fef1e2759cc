package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// hostile is text a page or a model could put in a URL, a reason or a note:
// it must reach the report as text, never run.
const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// evidenceTrace writes a hand-written history through the agent's trace
// observer path (trace.StepRecord): one step whose actions caused requests
// (one failed with a status, one with a network error, one pending, one
// hostile URL), with two hand-offs to a person, and a step whose marks
// cannot be placed (no viewport recorded).
func evidenceTrace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "step_1.png")
	writePNG(t, shot, 64, 40)
	box := &[4]float64{10, 20, 30, 40}
	items := []agent.HistoryItem{{
		Step: 1, StartedAt: time.Unix(0, 0), EndedAt: time.Unix(2, 0),
		// The actions' time holds the model's 90 s hand-off (an action).
		ObserveTime: 300 * time.Millisecond, ModelTime: 1200 * time.Millisecond, ActionsTime: 90*time.Second + 400*time.Millisecond,
		Notes: []string{"Batch stopped: " + hostile},
		Usage: llm.Usage{PromptTokens: 1500, CompletionTokens: 80},
		State: agent.StateRecord{URL: "http://127.0.0.1/apply", Title: "Apply " + hostile, ScreenshotPath: shot, Viewport: &agent.Viewport{Width: 640, Height: 400}},
		Actions: []agent.ActionRecord{
			{Name: "click", Params: json.RawMessage(`{"index":4}`), Verdict: events.VerdictFailed, Error: "POST http://127.0.0.1/submit answered 500 " + hostile,
				Result:          agent.ActionResult{Text: "Clicked " + hostile},
				RequestsOmitted: 23,
				Mark:            &agent.ActionMark{Box: box, Point: &[2]float64{25, 40}},
				Requests: []events.Request{
					{Method: "POST", URL: "http://127.0.0.1/submit", Type: "Document", Status: 500},
					{Method: "GET", URL: "http://127.0.0.1/style.css", Type: "Stylesheet", Status: 200},
					{Method: "GET", URL: "http://tracker.test/px?q=" + hostile, Type: "Image", Error: "blocked by policy", Blocked: true},
					{Method: "POST", URL: "http://127.0.0.1/autosave", Type: "XHR", Pending: true},
					{Method: "POST", URL: "http://127.0.0.1/draft", Type: "Fetch", Canceled: true, Error: "net::ERR_ABORTED"},
					{Method: "GET", URL: "http://127.0.0.1/favicon.ico", Type: "Other", Status: 404},
					{Method: "GET", URL: "javascript:window.__pwned=3", Type: "Other", Status: 200},
				}},
			{Name: "scroll", Params: json.RawMessage(`{"index":7}`), Verdict: events.VerdictChanged, Mark: &agent.ActionMark{Box: &[4]float64{10, 900, 100, 20}}},
		},
		Handoffs: []agent.Handoff{
			{By: "model", Reason: "solve the CAPTCHA " + hostile, Via: "live view " + hostile, Note: "logged in as ada " + hostile, Duration: 90 * time.Second,
				URLBefore: "http://127.0.0.1/login?" + hostile, URLAfter: "javascript:window.__pwned=4", Changed: true},
			{By: "policy:login", Reason: "again", Error: "no person answered " + hostile, Duration: time.Second,
				URLBefore: "http://127.0.0.1/home", URLAfter: "http://127.0.0.1/home"},
			{By: "policy:captcha", Reason: "a reCAPTCHA frame", Declined: true, Duration: 4 * time.Second, URLBefore: "http://127.0.0.1/home", URLAfter: "http://127.0.0.1/home"},
		},
	}, {
		Step: 2, StartedAt: time.Unix(2, 0), EndedAt: time.Unix(3, 0),
		State:   agent.StateRecord{URL: "http://127.0.0.1/home", ScreenshotPath: shot},
		Actions: []agent.ActionRecord{{Name: "hover", Params: json.RawMessage(`{"index":9}`), Verdict: events.VerdictChanged, Mark: &agent.ActionMark{Box: box}}},
	}}
	path := filepath.Join(dir, "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := w.Write(trace.TypeStep, trace.StepRecord(dir, it)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each action's requests are listed under it, failed and pending ones
// marked in words and colour; each hand-off says who asked, why, via what,
// for how long, where the page was before and after, and what the person
// noted. Hostile text in a URL, a reason or a note stays text.
func TestReportShowsRequestsAndHandoffs(t *testing.T) {
	path := evidenceTrace(t)
	out := filepath.Join(filepath.Dir(path), "report.html")
	if err := WriteFile(path, out); err != nil {
		t.Fatal(err)
	}
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "file://"+out)
	var f struct {
		Pwned    any
		Scripts  int
		Requests []struct {
			Class, Status, URL string
		}
		Handoffs     []string
		Marks        []string
		MarksProblem string
		AfterMissing []string
		Outside      []string
		Timeline     string
		Links        []string
		Text         string
		Notes        []string
		Omitted      string
	}
	pg.Eval(t, `(() => ({
		Pwned: window.__pwned === undefined ? null : window.__pwned,
		Scripts: document.scripts.length,
		Requests: [...document.querySelectorAll('tr.request')].map(r => ({
			Class: r.className, Status: r.cells[3].textContent, URL: r.cells[1].textContent,
		})),
		Handoffs: [...document.querySelectorAll('tr.handoff')].map(r => r.textContent.replace(/\s+/g, ' ').trim()),
		Marks: [...document.querySelectorAll('.mark')].map(m => m.dataset.step + '/' + m.dataset.action + '/' + m.dataset.kind),
		AfterMissing: [...document.querySelectorAll('.after-missing')].map(p => p.closest('section.step').dataset.step + ': ' + p.textContent),
		Outside: [...document.querySelectorAll('.mark-outside')].map(p => p.textContent),
		MarksProblem: (document.querySelector('section.step[data-step="2"] .marks-problem') || {}).textContent || '',
		Timeline: document.querySelector('.timeline .timeline-text').textContent,
		Links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
		Text: document.body.textContent,
		Notes: [...document.querySelectorAll('section.step[data-step="1"] li.note')].map(n => n.textContent),
		Omitted: (document.querySelector('section.step[data-step="1"] .requests-omitted') || {}).textContent || '',
	}))()`, &f)
	if f.Pwned != nil || f.Scripts != 0 {
		t.Fatalf("hostile text ran: __pwned=%v, %d scripts in the page", f.Pwned, f.Scripts)
	}
	want := []struct{ class, status string }{
		{"request req-failed", "failed: 500"},
		{"request", "200"},
		{"request req-error", "blocked by policy"}, // a tracker's pixel: muted
		{"request req-pending", "pending (no answer yet)"},
		{"request req-pending", "canceled before an answer (unconfirmed)"},
		{"request req-error", "failed: 404"}, // a favicon: not what failed the action
		{"request", "200"},
	}
	if len(f.Requests) != len(want) {
		t.Fatalf("requests %+v", f.Requests)
	}
	for i, w := range want {
		if f.Requests[i].Class != w.class || f.Requests[i].Status != w.status {
			t.Errorf("request %d: class %q status %q; want %q %q", i, f.Requests[i].Class, f.Requests[i].Status, w.class, w.status)
		}
	}
	if f.Requests[2].URL != "http://tracker.test/px?q="+hostile {
		t.Errorf("hostile URL shown as %q", f.Requests[2].URL)
	}
	if f.Requests[6].URL != "javascript:window.__pwned=3" {
		t.Errorf("javascript: URL shown as %q", f.Requests[6].URL)
	}
	for _, l := range f.Links {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "javascript:") {
			t.Errorf("a link runs script: %q", l)
		}
	}
	for _, w := range []string{"Apply " + hostile, "Clicked " + hostile, "answered 500 " + hostile} {
		if !strings.Contains(f.Text, w) {
			t.Errorf("the page lacks %q as text", w)
		}
	}
	if strings.Join(f.Notes, "|") != "Batch stopped: "+hostile {
		t.Errorf("notes %q", f.Notes)
	}
	// The notes are in the hash chain like the rest of the step.
	if d, err := Load(path); err != nil || !d.Verify.OK || !d.Verify.Closed || len(d.Steps) == 0 || len(d.Steps[0].Notes) != 1 {
		t.Errorf("trace with notes: %v %+v", err, d.Verify)
	}
	if f.Omitted != "7 of 30 requests shown" {
		t.Errorf("omitted requests told as %q", f.Omitted)
	}
	if len(f.Handoffs) != 3 {
		t.Fatalf("hand-offs %q", f.Handoffs)
	}
	for _, w := range []string{"asked by model: solve the CAPTCHA " + hostile, "via live view " + hostile, "1m30s",
		"http://127.0.0.1/login?" + hostile + " → javascript:window.__pwned=4", "done; the page changed", "note: logged in as ada " + hostile} {
		if !strings.Contains(f.Handoffs[0], w) {
			t.Errorf("hand-off %q lacks %q", f.Handoffs[0], w)
		}
	}
	if h := f.Handoffs[1]; !strings.Contains(h, "no person answered "+hostile) {
		t.Errorf("failed hand-off %q", h)
	}
	if h := f.Handoffs[2]; !strings.Contains(h, "asked by policy:captcha: a reCAPTCHA frame") || !strings.Contains(h, "declined") || strings.Contains(h, "→") {
		t.Errorf("declined hand-off %q", h)
	}
	// Step 1: the click's box and point; step 2 recorded no viewport, so
	// its hover is not drawn, and the report says why.
	if strings.Join(f.Marks, " ") != "1/1/box 1/1/point 1/2/box" || !strings.Contains(f.MarksProblem, "viewport") {
		t.Errorf("marks %v, problem %q", f.Marks, f.MarksProblem)
	}
	// Step 1 changed the page (its scroll) and step 2's picture shows it;
	// nothing shows what step 2's hover did, and the report says so.
	if strings.Join(f.AfterMissing, "|") != "2: after the actions: no screenshot shows the page after these actions (vision off, or none taken)" {
		t.Errorf("after missing %q", f.AfterMissing)
	}
	if strings.Join(f.Outside, "|") != "Action 2's element was wholly outside the screenshot." {
		t.Errorf("off-screen notes %q", f.Outside)
	}
	for _, w := range []string{"observe 300 ms", "model 1.2 s", "actions 400 ms", "person 95.0 s", "tokens"} {
		if !strings.Contains(f.Timeline, w) {
			t.Errorf("timeline %q lacks %q", f.Timeline, w)
		}
	}
}

// The timeline's bar gives each phase its share of the step; the marks'
// styles are numbers only, whatever the trace holds.
func TestEvidenceGeometry(t *testing.T) {
	ps := phases(trace.Step{DurationMS: 2000, ObserveMS: 500, ModelMS: 1000, ActionsMS: 250})
	if len(ps) != 3 || ps[0].Style != "width:25.000%" || ps[1].Style != "width:50.000%" || ps[2].Style != "width:12.500%" {
		t.Fatalf("phases %+v", ps)
	}
	if ps := phases(trace.Step{DurationMS: 100, ObserveMS: 150, ModelMS: 50}); ps[0].Style != "width:75.000%" {
		t.Fatalf("phases longer than the step: %+v", ps)
	}
	if ps := phases(trace.Step{DurationMS: 100}); ps != nil {
		t.Fatalf("no timeline recorded: %+v", ps)
	}
	s := &Step{Step: trace.Step{Step: 4, Viewport: &agent.Viewport{Width: 800, Height: 400}, Actions: []trace.Action{
		{Name: "navigate"},
		{Name: "click", Mark: &agent.ActionMark{Box: &[4]float64{80, 100, 160, 40}, Point: &[2]float64{160, 120}}},
		{Name: "click", Mark: &agent.ActionMark{Point: &[2]float64{400, 200}}},
		{Name: "input", Mark: &agent.ActionMark{Box: &[4]float64{10, 900, 100, 20}}},
	}}, Image: "data:image/png;base64,AA=="}
	ms, problem := marks(s)
	if problem != "" || len(ms) != 4 {
		t.Fatalf("marks %+v %q", ms, problem)
	}
	if ms[0].Outside != "" || ms[3].Action != 4 || ms[3].Outside != "wholly" || outside(&[4]float64{790, 10, 20, 20}, 800, 400) != "partly" {
		t.Fatalf("off-screen box not told: %+v", ms)
	}
	if ms[0].Action != 2 || ms[0].Style != "left:10.0000%;top:25.0000%;width:20.0000%;height:10.0000%" ||
		ms[1].Kind != "point" || ms[1].Style != "left:20.0000%;top:30.0000%" || ms[2].Action != 3 || ms[2].Style != "left:50.0000%;top:50.0000%" {
		t.Fatalf("marks %+v", ms)
	}
	s.Image = ""
	if ms, _ := marks(s); ms != nil {
		t.Fatalf("marks without a screenshot: %+v", ms)
	}
}

// A step's "after" picture is the next step's screenshot only within one
// run (a driven session's next task starts at step 1 again, and a step
// numbered N+1 of another task is not N's successor); when the next step
// handed the browser to a person by a policy before observing, the
// caption says its screenshot shows the person's work too. A failed
// action whose evidence shows another URL (a POST answering 500 with an
// error page) changed the page; a failed one that left it alone did not.
func TestAfterPictureAdjacency(t *testing.T) {
	changed := []trace.Action{{Name: "click", Verdict: "changed"}}
	failedTo := func(before, after string) []trace.Action {
		return []trace.Action{{Name: "click", Verdict: "failed",
			Before: json.RawMessage(`{"URL":"http://h/` + before + `","Fingerprint":"` + before + `"}`),
			After:  json.RawMessage(`{"URL":"http://h/` + after + `","Fingerprint":"` + after + `"}`)}}
	}
	steps := []Step{
		{Step: trace.Step{Step: 1, Actions: changed}, Image: "data:a", RunIndex: 0},
		{Step: trace.Step{Step: 2, Actions: changed}, Image: "data:b", RunIndex: 1},
		{Step: trace.Step{Step: 3, Actions: failedTo("form", "error")}, Image: "data:c", RunIndex: 1},
		{Step: trace.Step{Step: 4, Actions: failedTo("error", "error"), Handoffs: []agent.Handoff{{By: "policy:captcha", Duration: time.Second}}}, Image: "data:d", RunIndex: 1},
		{Step: trace.Step{Step: 5}, Image: "data:e", RunIndex: 1},
	}
	addEvidence(t.TempDir(), steps)
	if steps[0].After != "" || steps[0].AfterMissing == "" {
		t.Errorf("task 1's last step took task 2's picture: %q %q", steps[0].After, steps[0].AfterCaption)
	}
	if steps[1].After != "data:c" || steps[1].AfterCaption != "after: step 3's screenshot" {
		t.Errorf("step 2: %q %q", steps[1].After, steps[1].AfterCaption)
	}
	if steps[2].After != "data:d" || !strings.Contains(steps[2].AfterCaption, "after a person's hand-off") {
		t.Errorf("a failed action that led to an error page: %q %q %q", steps[2].After, steps[2].AfterCaption, steps[2].AfterMissing)
	}
	if steps[3].After != "" || steps[3].AfterMissing != "" {
		t.Errorf("a failed action that changed nothing: %q %q", steps[3].After, steps[3].AfterMissing)
	}
	// The model's hand-off is an action: its time is not counted twice.
	ps := phases(trace.Step{DurationMS: 10000, ObserveMS: 100, ModelMS: 200, ActionsMS: 9000,
		Handoffs: []agent.Handoff{{By: "model", Duration: 8000 * time.Millisecond}, {By: "initial", Duration: 800 * time.Millisecond}, {By: "policy:login", Duration: 500 * time.Millisecond}}})
	sum := 0.0
	for _, p := range ps {
		sum += p.MS
	}
	if len(ps) != 4 || ps[2].MS != 200 || ps[3].MS != 9300 || sum > 10000 {
		t.Errorf("phases %+v (sum %g of 10000 ms)", ps, sum)
	}
}
