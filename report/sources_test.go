package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// sourcesTrace writes a replayed run: two replayed steps (one found by its
// stable hash, one ambiguous with a hostile candidate name), a heal with
// its model call, a cache hit and a model step, and the run's cache counts.
func sourcesTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hostile := `Delete <img src=x onerror="window.pwned=1">`
	apply := &match.Element{Tag: "button", Role: "button", Name: "Apply for this job", XPath: "/html/body/main[1]/button[1]", Ordinal: 1, Similar: 1}
	del := &match.Element{Tag: "button", Role: "button", Name: hostile, Ordinal: 2, Similar: 2}
	recs := []struct {
		typ  string
		data any
	}{
		// A replayed step 0 (the initial navigation) saves no model call.
		{trace.TypeStep, trace.Step{Step: 0, Source: agent.SourceReplay, Actions: []trace.Action{{Name: "navigate", Params: json.RawMessage(`{"url":"http://127.0.0.1/"}`), Verdict: "navigated"}}}},
		{trace.TypeStep, trace.Step{Step: 1, Source: agent.SourceReplay, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":12}`), Verdict: "navigated",
			Element: apply, Match: &match.Result{Index: 12, Strategy: match.ByStableHash, Score: 0.93, Unique: true,
				Candidates: []match.Candidate{{Index: 12, Tag: "button", Role: "button", Name: "Apply for this job", Score: 0.93}}}}}}},
		{trace.TypeStep, trace.Step{Step: 2, Source: agent.SourceReplay, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":7}`), Verdict: "changed",
			Element: del, Match: &match.Result{Index: 7, Strategy: match.ByPosition, Score: 0.6, Ambiguous: true,
				Candidates: []match.Candidate{
					{Index: 7, Tag: "button", Role: "button", Name: hostile, Score: 0.6},
					{Index: 5, Tag: "button", Role: "button", Name: hostile, Score: 0.6},
					{Index: 9, Tag: "button", Role: "button", Name: "Delete", Score: 0.4, Conflict: "data-testid"}}}}}}},
		{trace.TypeModel, trace.Model{Step: 3, Purpose: "step", Model: "m"}},
		{trace.TypeStep, trace.Step{Step: 3, Source: agent.SourceHeal, NextGoal: "open the More menu", Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":3}`), Verdict: "changed"}}}},
		{trace.TypeStep, trace.Step{Step: 4, Source: agent.SourceCache, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":4}`), Verdict: "changed",
			Match: &match.Result{Strategy: "", Candidates: []match.Candidate{{Index: 2, Tag: "a", Name: "More", Score: 0.2}}}}}}},
		{trace.TypeModel, trace.Model{Step: 5, Purpose: "step", Model: "m"}},
		{trace.TypeModel, trace.Model{Step: 5, Purpose: "extract", Model: "m"}},
		{trace.TypeStep, trace.Step{Step: 5, Actions: []trace.Action{{Name: "done", Params: json.RawMessage(`{"text":"sent"}`)}}}},
		{trace.TypeRun, trace.Run{Task: "apply", Done: true, Success: true, Steps: 5, Cache: &agent.CacheStats{Hits: 1, Misses: 2, Invalidated: 1}}},
	}
	for _, r := range recs {
		if err := w.Write(r.typ, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportShowsSourcesAndMatches(t *testing.T) {
	path := sourcesTrace(t)
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Sources{Model: 1, Replayed: 3, Healed: 1, Cached: 1, Saved: 3, Cache: d.Sources.Cache}
	if d.Sources != want || d.Sources.Cache == nil || *d.Sources.Cache != *d.Run.Cache {
		t.Fatalf("sources %+v (cache %+v), want %+v (cache %+v)", d.Sources, d.Sources.Cache, want, d.Run.Cache)
	}
	out := filepath.Join(filepath.Dir(path), "report.html")
	if err := WriteFile(path, out); err != nil {
		t.Fatal(err)
	}
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "file://"+out)
	var f struct {
		Summary string
		Badges  map[string]string
		Matches []struct{ Step, Class, Text, Strategy string }
		Cands   map[string][]string
		Open    map[string]bool
		Chosen  []string
		Ruled   []string
		Element []string
		Imgs    int
		Pwned   bool
	}
	pg.Eval(t, `(() => {
		const steps = [...document.querySelectorAll('section.step')];
		const badges = {}, cands = {}, open = {};
		for (const s of steps) {
			const b = s.querySelector('.badge.source');
			badges[s.dataset.step] = b ? b.textContent + '|' + (s.dataset.source || '') : '';
			const d = s.querySelector('details.candidates');
			if (d) { cands[s.dataset.step] = [...d.querySelectorAll('li')].map(l => l.textContent); open[s.dataset.step] = d.open; }
		}
		return {
			Summary: (document.getElementById('sources') || {}).textContent || '',
			Badges: badges,
			Matches: [...document.querySelectorAll('.match')].map(m => ({Step: m.closest('section').dataset.step, Class: m.className, Text: m.textContent, Strategy: m.dataset.strategy})),
			Cands: cands, Open: open,
			Chosen: [...document.querySelectorAll('li.candidate.chosen')].map(l => l.closest('section').dataset.step + ':' + l.dataset.index),
			Ruled: [...document.querySelectorAll('li.candidate.ruled-out')].map(l => l.dataset.index),
			Element: [...document.querySelectorAll('.element')].map(e => e.textContent),
			Imgs: document.querySelectorAll('main img').length,
			Pwned: !!window.pwned,
		};
	})()`, &f)
	if f.Summary != "3 steps replayed · 1 healed by the model · 1 from the cache · cache: 1 hit, 2 misses (1 invalidated) · 3 model calls saved" {
		t.Errorf("summary %q", f.Summary)
	}
	for step, b := range map[string]string{"0": "replayed|replay", "1": "replayed|replay", "2": "replayed|replay", "3": "healed by the model|heal", "4": "from the cache|cache", "5": ""} {
		if f.Badges[step] != b {
			t.Errorf("step %s badge %q, want %q", step, f.Badges[step], b)
		}
	}
	if len(f.Matches) != 3 {
		t.Fatalf("match lines %+v", f.Matches)
	}
	if m := f.Matches[0]; m.Step != "1" || m.Class != "match match-unique" || m.Text != "found by stable_hash, score 0.93" || m.Strategy != "stable_hash" {
		t.Errorf("step 1 match %+v", m)
	}
	if m := f.Matches[1]; m.Step != "2" || m.Class != "match match-ambiguous" || !strings.HasPrefix(m.Text, "ambiguous: several elements match; chosen by position, score 0.60") {
		t.Errorf("step 2 match %+v", m)
	}
	if m := f.Matches[2]; m.Step != "4" || m.Class != "match match-missing" || m.Text != "not found" {
		t.Errorf("step 4 match %+v", m)
	}
	if c := f.Cands["2"]; len(c) != 3 || !strings.Contains(c[0], `<img src=x onerror=`) || !strings.Contains(c[2], "ruled out: its data-testid differs") || !f.Open["2"] || f.Open["1"] || !f.Open["4"] {
		t.Errorf("candidates %q open %v", f.Cands, f.Open)
	}
	if strings.Join(f.Chosen, ",") != "1:12,2:7" || strings.Join(f.Ruled, ",") != "9" {
		t.Errorf("chosen %v ruled out %v", f.Chosen, f.Ruled)
	}
	if len(f.Element) != 2 || f.Element[0] != `<button> "Apply for this job"` || !strings.HasSuffix(f.Element[1], "(2 of 2 alike)") {
		t.Errorf("elements %q", f.Element)
	}
	// Names from the page stay text: no image element, no script ran.
	if f.Imgs != 0 || f.Pwned {
		t.Fatalf("hostile candidate text was rendered as markup: %d img, pwned %v", f.Imgs, f.Pwned)
	}
}

// A plain model run shows no source badges and no sources summary.
func TestReportWithoutSourcesShowsNone(t *testing.T) {
	d, err := Load(sampleTrace(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if d.Sources.Shown() || d.Sources.Model != 2 || d.Sources.Saved != 0 {
		t.Fatalf("sources %+v", d.Sources)
	}
	var b strings.Builder
	if err := Render(&b, d); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); strings.Contains(html, `id="sources"`) || strings.Contains(html, "badge source") || strings.Contains(html, `class="match`) {
		t.Fatal("a model run's report shows sources or matches")
	}
}

// A driven session's trace holds a run record per task: the cache counts
// are summed over them, as the steps are.
func TestReportSumsCacheOverRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		typ  string
		data any
	}{
		{trace.TypeStep, trace.Step{Step: 1, Source: agent.SourceCache, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":1}`)}}}},
		{trace.TypeRun, trace.Run{Task: "first", Done: true, Steps: 1, Cache: &agent.CacheStats{Hits: 1, Misses: 2, Stored: 2}}},
		{trace.TypeStep, trace.Step{Step: 1, Source: agent.SourceCache, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":1}`)}}}},
		{trace.TypeRun, trace.Run{Task: "second", Done: true, Steps: 1}},
		{trace.TypeStep, trace.Step{Step: 1, Source: agent.SourceCache, Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":1}`)}}}},
		{trace.TypeRun, trace.Run{Task: "third", Done: true, Steps: 1, Cache: &agent.CacheStats{Hits: 2, Misses: 1, Invalidated: 1}}},
	} {
		if err := w.Write(r.typ, r.data); err != nil {
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
	if c := d.Sources.Cache; d.Sources.Cached != 3 || c == nil || *c != (agent.CacheStats{Hits: 3, Misses: 3, Invalidated: 1, Stored: 2}) {
		t.Fatalf("sources %+v cache %+v, want 3 cached, cache summed over the runs", d.Sources, c)
	}
}

// The match line says which kind of ambiguity it is, and a unique match
// on few signals is not shown as a sure one.
func TestMatchTextAndClass(t *testing.T) {
	for _, c := range []struct {
		r           match.Result
		text, class string
	}{
		{match.Result{Index: 3, Strategy: match.ByHash, Score: 1, Unique: true}, "found by hash, score 1.00", "match-unique"},
		{match.Result{Index: 3, Strategy: match.ByAttributes, Score: 0.64, Unique: true}, "found by attributes, weak: score 0.64", "match-weak"},
		{match.Result{Index: 3, Strategy: match.ByPosition, Score: 0.6, Ambiguous: true}, "ambiguous: several elements match; chosen by position, score 0.60", "match-ambiguous"},
		{match.Result{Index: 3, Strategy: match.ByAttributes, Score: 0.5, Ambiguous: true}, "ambiguous: found by attributes but agrees with little of the recording, score 0.50", "match-ambiguous"},
		{match.Result{Ambiguous: true, Outscored: true, Candidates: []match.Candidate{{Index: 8, Score: 0.9}, {Index: 2, Score: 0.7}}},
			"ambiguous: signals disagree: element 8 agrees with more of the recording; none chosen", "match-ambiguous"},
		{match.Result{Ambiguous: true, Candidates: []match.Candidate{{Index: 8, Score: 0.6}}}, "ambiguous: several elements match and none could be chosen", "match-ambiguous"},
		{match.Result{}, "not found", "match-missing"},
	} {
		if got := matchText(&c.r); got != c.text {
			t.Errorf("%+v: text %q, want %q", c.r, got, c.text)
		}
		if got := matchClass(&c.r); got != c.class {
			t.Errorf("%+v: class %q, want %q", c.r, got, c.class)
		}
	}
}
