package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/trace"
)

const (
	runFormURL = "https://jobs.test/apply"
	runDoneURL = "https://jobs.test/thanks"
)

// An agent run whose step comes from the action cache reaches the report
// through the trace as it happened: the step's badge, how each element was
// found, and the cache's counts and the model call saved in the summary.
func TestReportOfACachedRun(t *testing.T) {
	pages := []agenttest.Page{{
		URL: runFormURL, Title: "Apply", Text: "Apply",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "name": "fullname", "placeholder": "Full name"}},
			{Index: 2, Attrs: map[string]string{"type": "submit"}, Text: "Send", Href: runDoneURL},
		},
	}, {URL: runDoneURL, Title: "Thanks", Text: "Thank you"}}
	fill := scripted.Step{Actions: []scripted.Action{
		{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
		{Name: "click", Label: "Send"},
	}}
	done := scripted.Step{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Applied", "success": true}}
	cache, err := agent.NewDirCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	task := "Open " + runFormURL + " and apply as Ada."
	// The second run's model is asked only for the done: the form's step
	// comes from the cache.
	runOnce := func(steps ...scripted.Step) string {
		dir := t.TempDir()
		path := filepath.Join(dir, "trace.jsonl")
		tw, err := trace.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		model := scripted.New(steps)
		a, err := agent.New(task, model, agenttest.New(t, pages...), agent.Settings{RunDir: dir, Vision: agent.VisionOff, Cache: cache,
			Observers: []agent.Observer{trace.NewAgentObserver(tw, dir)}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if res, err := a.Run(ctx); err != nil || !res.Success {
			t.Fatalf("run: %v %+v", err, res)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("the script failed: %v", errs)
		}
		return path
	}
	runOnce(fill, done)
	path := runOnce(done)

	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Verify.OK {
		t.Fatalf("trace does not verify: %s", d.Verify.Error)
	}
	if s := d.Sources; s.Cached != 1 || s.Saved != 1 || s.Cache == nil || s.Cache.Hits != 1 || s.Replayed+s.Healed != 0 {
		t.Fatalf("sources %+v (cache %+v)", s, s.Cache)
	}
	var cached *Step
	for i := range d.Steps {
		if d.Steps[i].Source == agent.SourceCache {
			cached = &d.Steps[i]
		}
	}
	if cached == nil || len(cached.Actions) != 2 {
		t.Fatalf("no cached step with its two actions: %+v", d.Steps)
	}
	for _, a := range cached.Actions {
		if a.Element == nil || a.Match == nil || !a.Match.Unique || a.Match.Score <= 0 {
			t.Fatalf("cached action %s: element %+v match %+v", a.Name, a.Element, a.Match)
		}
	}
	var b strings.Builder
	if err := Render(&b, d); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<span class="badge source source-cache">from the cache</span>`,
		`found by ` + string(cached.Actions[0].Match.Strategy) + `, score`,
		`cache: 1 hit, `,
		`1 model call saved`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
