package agent_test

// The action cache over agenttest's fake browser: what a second run takes
// from the cache, and every reason it must ask the model instead.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
)

const (
	cacheFormURL = "https://jobs.test/apply"
	cachePlanURL = "https://jobs.test/plan"
	cacheDoneURL = "https://jobs.test/thanks"
	cacheTask    = "Open " + cacheFormURL + " and apply as Ada Lovelace (ada@example.com) on the Pro plan."
)

// cacheSite is a two-page application: a form whose Next loads the plan
// page, whose Finish loads the thanks page. banner adds an element to the
// form (another fingerprint); renamed renames the name field (same
// fingerprint, the recorded field cannot be found).
func cacheSite(banner, renamed bool) []agenttest.Page {
	name := map[string]string{"type": "text", "name": "fullname", "placeholder": "Full name"}
	if renamed {
		name = map[string]string{"type": "text", "name": "given", "placeholder": "Given name"}
	}
	form := agenttest.Page{
		URL:   cacheFormURL,
		Title: "Apply",
		Text:  "Apply (1 of 2)",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: name},
			{Index: 2, Tag: "input", Attrs: map[string]string{"type": "text", "name": "email", "placeholder": "Email address"}},
			{Index: 3, Attrs: map[string]string{"type": "submit"}, Text: "Next", Href: cachePlanURL},
		},
	}
	if banner {
		form.Elements = append([]agenttest.Element{{Index: 9, Tag: "a", Text: "We are hiring!"}}, form.Elements...)
	}
	return []agenttest.Page{form, {
		URL:   cachePlanURL,
		Title: "Plan",
		Text:  "Apply (2 of 2)",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "select", Attrs: map[string]string{"name": "plan"}, Options: []string{"Basic", "Pro"}},
			{Index: 2, Attrs: map[string]string{"type": "submit"}, Text: "Finish", Href: cacheDoneURL},
		},
	}, {URL: cacheDoneURL, Title: "Thanks", Text: "Thank you"}}
}

// Script steps of the application.
var (
	cacheFill = scripted.Step{Actions: []scripted.Action{
		{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
		{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
		{Name: "click", Label: "Next"},
	}}
	cachePlan = scripted.Step{Actions: []scripted.Action{
		{Name: "select_dropdown", Label: "plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Name: "click", Label: "Finish"},
	}}
	cacheDone = scripted.Step{Action: "done", Params: map[string]any{"text": "Applied", "success": true}}
)

func newDirCache(t *testing.T, dir string) *agent.DirCache {
	t.Helper()
	c, err := agent.NewDirCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cacheRun runs the application once over a new fake browser and returns
// the result, the model, the browser and the agent.
func cacheRun(t *testing.T, cache agent.ActionCache, pages []agenttest.Page, modelName string, steps ...scripted.Step) (*agent.Result, *scripted.Model, *agenttest.Browser, *agent.Agent) {
	t.Helper()
	b := agenttest.New(t, pages...)
	model := scripted.New(steps, scripted.WithName(modelName))
	set := settings(t)
	set.Cache = cache
	a := newAgent(t, cacheTask, model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if res.Cache == nil {
		t.Fatal("Result.Cache is nil with a cache set")
	}
	return res, model, b, a
}

// effects lists what the actions did to the page, by element label.
func effects(b *agenttest.Browser) []string {
	var out []string
	for _, e := range b.Events(events.NavigateToURL.Name, events.ClickElement.Name, events.TypeText.Name, events.SelectDropdownOption.Name) {
		out = append(out, fmt.Sprintf("%s %+v", e.Kind, e.Payload))
	}
	return out
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The second identical run takes both form steps from the cache: one model
// call (the done, which is never cached), the same actions on the page,
// the steps marked as the cache's with how each element was found.
func TestCacheSecondRunSkipsTheModel(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	res1, m1, b1, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	if got, want := *res1.Cache, (agent.CacheStats{Misses: 3, Stored: 2}); got != want {
		t.Fatalf("first run: cache %+v, want %+v", got, want)
	}
	if n := len(m1.Requests()); n != 3 {
		t.Fatalf("first run: %d model calls, want 3", n)
	}
	if n := len(entries(t, dir)); n != 2 {
		t.Fatalf("%d entries stored, want 2", n)
	}

	res2, m2, b2, a2 := cacheRun(t, cache, cacheSite(false, false), "scripted", cacheDone)
	if got, want := *res2.Cache, (agent.CacheStats{Hits: 2, Misses: 1}); got != want {
		t.Fatalf("second run: cache %+v, want %+v", got, want)
	}
	if n := len(m2.Requests()); n != 1 {
		t.Fatalf("second run: %d model calls, want 1 (done)", n)
	}
	if e1, e2 := effects(b1), effects(b2); !slices.Equal(e1, e2) {
		t.Fatalf("the runs acted differently:\n%s\n--\n%s", strings.Join(e1, "\n"), strings.Join(e2, "\n"))
	}
	h := a2.History()
	if len(h.Items) != 4 {
		t.Fatalf("%d steps, want 4", len(h.Items))
	}
	for _, it := range h.Items[1:3] {
		if it.Source != agent.SourceCache || it.Output == nil || it.Output.NextGoal == "" {
			t.Fatalf("step %d: source %q output %+v", it.Step, it.Source, it.Output)
		}
		for _, r := range it.Actions {
			if r.Error != "" || r.Match == nil || !r.Match.Unique || r.Match.Index <= 0 || r.Element == nil {
				t.Fatalf("step %d %s: error %q match %+v element %+v", it.Step, r.Name, r.Error, r.Match, r.Element)
			}
		}
	}
	if h.Items[3].Source != agent.SourceModel || h.Items[3].Actions[0].Name != "done" {
		t.Fatalf("the done step: %+v", h.Items[3])
	}
}

// An entry from another model is not used: counted invalidated, the model
// is asked, and its steps overwrite the entries (no new files); the next
// run of that model hits.
func TestCacheOtherModelInvalidates(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	cacheRun(t, cache, cacheSite(false, false), "model-a", cacheFill, cachePlan, cacheDone)
	before := entries(t, dir)
	res, m, _, _ := cacheRun(t, cache, cacheSite(false, false), "model-b", cacheFill, cachePlan, cacheDone)
	if got, want := *res.Cache, (agent.CacheStats{Misses: 3, Invalidated: 2, Stored: 2}); got != want {
		t.Fatalf("other model: cache %+v, want %+v", got, want)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("other model: %d model calls, want 3", n)
	}
	if after := entries(t, dir); !slices.Equal(before, after) {
		t.Fatalf("entries not overwritten in place: %v then %v", before, after)
	}
	res, _, _, _ = cacheRun(t, cache, cacheSite(false, false), "model-b", cacheDone)
	if res.Cache.Hits != 2 || res.Cache.Invalidated != 0 {
		t.Fatalf("model-b again: cache %+v", *res.Cache)
	}
	// And model-a's entries are gone.
	res, _, _, _ = cacheRun(t, cache, cacheSite(false, false), "model-a", cacheFill, cachePlan, cacheDone)
	if res.Cache.Hits != 0 || res.Cache.Invalidated != 2 {
		t.Fatalf("model-a after model-b: cache %+v", *res.Cache)
	}
}

// Another prompt (here ExtendSystemPrompt) is another prompt version: the
// entries are invalidated like another model's.
func TestCacheOtherPromptInvalidates(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	b := agenttest.New(t, cacheSite(false, false)...)
	model := scripted.New([]scripted.Step{cacheFill, cachePlan, cacheDone})
	set := settings(t)
	set.Cache = cache
	set.ExtendSystemPrompt = "Never apply on weekends."
	res := run(t, newAgent(t, cacheTask, model, b, set), model)
	if got, want := *res.Cache, (agent.CacheStats{Misses: 3, Invalidated: 2, Stored: 2}); got != want {
		t.Fatalf("cache %+v, want %+v", got, want)
	}
}

// The last step of the budget offers only done: the cache keeps out of it
// (no lookup, no miss) and the model answers it.
func TestCacheSkipsTheDoneOnlyStep(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	b := agenttest.New(t, cacheSite(false, false)...)
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "out of steps", "success": false}}})
	set := settings(t)
	set.Cache = cache
	set.MaxSteps = 2
	a := newAgent(t, cacheTask, model, b, set)
	res := run(t, a, model)
	if got, want := *res.Cache, (agent.CacheStats{Hits: 1}); got != want {
		t.Fatalf("cache %+v, want %+v", got, want)
	}
	if n := len(model.Requests()); n != 1 || !res.Done {
		t.Fatalf("%d model calls, result %+v", n, res)
	}
	if h := a.History(); h.Items[2].Source != agent.SourceModel || h.Items[2].Actions[0].Name != "done" {
		t.Fatalf("the last step: %+v", h.Items[2])
	}
}

// A changed page (a banner: another fingerprint) misses and the model is
// asked; the next page, reached by the same actions, still hits.
func TestCachePageChangedMisses(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	res, m, _, a := cacheRun(t, cache, cacheSite(true, false), "scripted", cacheFill, cacheDone)
	if res.Cache.Hits != 1 || res.Cache.Misses != 2 {
		t.Fatalf("cache %+v, want 1 hit (the plan page) and 2 misses", *res.Cache)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	h := a.History()
	if h.Items[1].Source != agent.SourceModel || h.Items[2].Source != agent.SourceCache {
		t.Fatalf("sources %q %q", h.Items[1].Source, h.Items[2].Source)
	}
}

// The same fingerprint, but the recorded field is gone (renamed): the entry
// cannot be used, the model is asked, and its step replaces the entry.
func TestCacheElementNotFoundAsksTheModel(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	renamedFill := scripted.Step{Actions: []scripted.Action{
		{Name: "input", Label: "Given name", Params: map[string]any{"text": "Ada Lovelace"}},
		{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
		{Name: "click", Label: "Next"},
	}}
	res, m, b, a := cacheRun(t, cache, cacheSite(false, true), "scripted", renamedFill, cacheDone)
	if res.Cache.Hits != 1 || res.Cache.Misses != 2 || res.Cache.Stored != 1 {
		t.Fatalf("cache %+v, want the form missed (and re-stored), the plan hit", *res.Cache)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	if h := a.History(); h.Items[1].Source != agent.SourceModel {
		t.Fatalf("the form step's source %q, want the model", h.Items[1].Source)
	}
	if n := len(b.Events(events.TypeText.Name)); n != 2 {
		t.Fatalf("%d fields typed, want 2", n)
	}
	// The model's step replaced the entry: the renamed site now hits.
	res, _, _, _ = cacheRun(t, cache, cacheSite(false, true), "scripted", cacheDone)
	if res.Cache.Hits != 2 {
		t.Fatalf("renamed site again: cache %+v", *res.Cache)
	}
}

// A cached action that fails (the site's Next now errs) empties its entry:
// the next run asks the model for that step and stores its answer, and the
// steps after it still hit.
func TestCacheFailingEntryIsDropped(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)

	broken := cacheSite(false, false)
	broken[0].Elements[2].Href, broken[0].Elements[2].Fail = "", errors.New("server error")
	b := agenttest.New(t, broken...)
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "the site is broken", "success": false}}})
	set := settings(t)
	set.Cache = cache
	a := newAgent(t, cacheTask, model, b, set)
	res := run(t, a, model)
	if res.Cache.Hits != 1 || len(model.Requests()) != 1 {
		t.Fatalf("broken site: cache %+v, %d model calls", *res.Cache, len(model.Requests()))
	}
	if it := a.History().Items[1]; it.Source != agent.SourceCache || it.Actions[2].Error == "" {
		t.Fatalf("the cached step should have failed on its click: %+v", it.Actions)
	}

	res, m, _, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cacheDone)
	if got, want := *res.Cache, (agent.CacheStats{Hits: 1, Misses: 2, Stored: 1}); got != want || len(m.Requests()) != 2 {
		t.Fatalf("after the drop: cache %+v (want %+v), %d model calls", got, want, len(m.Requests()))
	}
}

// A corrupt entry is a miss, the run goes on with the model, and the
// model's step replaces it.
func TestCacheCorruptEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	files := entries(t, dir)
	if len(files) != 2 {
		t.Fatalf("%d entries", len(files))
	}
	for i, f := range files {
		junk := []byte("{not json")
		if i == 1 {
			junk = []byte(`{"format":1,"key":"someone else's","model":"scripted","actions":[]}`)
		}
		if err := os.WriteFile(f, junk, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, m, _, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	if got, want := *res.Cache, (agent.CacheStats{Misses: 3, Stored: 2}); got != want {
		t.Fatalf("cache %+v, want %+v", got, want)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	res, _, _, _ = cacheRun(t, cache, cacheSite(false, false), "scripted", cacheDone)
	if res.Cache.Hits != 2 {
		t.Fatalf("after the replacement: cache %+v", *res.Cache)
	}
}

// A step holding extract is never stored (its answer comes from the page's
// text, which the key does not cover), nor is done.
func TestCacheNeverStoresDoneOrExtract(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	steps := []scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace"}},
			{Name: "extract", Params: map[string]any{"query": "which step of the form is this?"}},
		}},
		cacheDone,
	}
	for round := range 2 {
		b := agenttest.New(t, cacheSite(false, false)...)
		model := scripted.New(steps)
		set := settings(t)
		set.Cache = cache
		set.ExtractModel = scripted.New([]scripted.Step{{Text: "step 1 of 2"}})
		a := newAgent(t, cacheTask, model, b, set)
		res := run(t, a, model)
		if !res.Done || res.Cache == nil {
			t.Fatalf("round %d: result %+v", round, res)
		}
		if got, want := *res.Cache, (agent.CacheStats{Misses: 2}); got != want {
			t.Fatalf("round %d: cache %+v, want %+v", round, got, want)
		}
		if n := len(model.Requests()); n != 2 {
			t.Fatalf("round %d: %d model calls, want 2", round, n)
		}
		if h := a.History(); h.Items[1].Actions[1].Name != "extract" || h.Items[1].Actions[1].Error != "" {
			t.Fatalf("round %d: the extract did not run: %+v", round, h.Items[1].Actions)
		}
	}
	if n := len(entries(t, dir)); n != 0 {
		t.Fatalf("%d entries stored, want none", n)
	}
}

// The same page at two points of a run (a field typed into: the
// fingerprint does not change) gets two keys: the second run types once
// and then clicks, as the first did, rather than typing twice.
func TestCacheSamePageTwoPoints(t *testing.T) {
	const url = "https://jobs.test/profile"
	pages := []agenttest.Page{{
		URL:   url,
		Title: "Profile",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "name": "fullname", "placeholder": "Full name"}},
			{Index: 2, Text: "Save"},
		},
	}}
	steps := []scripted.Step{
		{Action: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
		{Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "saved", "success": true}},
	}
	cache := newDirCache(t, t.TempDir())
	task := "Open " + url + " and save the name Ada."
	var fps []string
	for round := range 2 {
		b := agenttest.New(t, pages...)
		if round == 1 {
			steps = steps[2:]
		}
		model := scripted.New(steps)
		set := settings(t)
		set.Cache = cache
		a := newAgent(t, task, model, b, set)
		res := run(t, a, model)
		if !res.Done {
			t.Fatalf("round %d: %+v", round, res)
		}
		h := a.History()
		if round == 0 {
			fps = []string{h.Items[1].State.Fingerprint, h.Items[2].State.Fingerprint}
			if fps[0] != fps[1] {
				t.Fatalf("the test needs one fingerprint at both points: %v", fps)
			}
			continue
		}
		if res.Cache.Hits != 2 {
			t.Fatalf("round 2: cache %+v", *res.Cache)
		}
		if n, m := len(b.Events(events.TypeText.Name)), len(b.Events(events.ClickElement.Name)); n != 1 || m != 1 {
			t.Fatalf("round 2 typed %d times and clicked %d times, want once each", n, m)
		}
		if h.Items[1].Actions[0].Name != "input" || h.Items[2].Actions[0].Name != "click" {
			t.Fatalf("round 2 ran %s then %s", h.Items[1].Actions[0].Name, h.Items[2].Actions[0].Name)
		}
	}
}

// A typed secret is stored as its placeholder and typed again from the
// run's secrets on a hit.
func TestCacheKeepsSecretPlaceholders(t *testing.T) {
	const secret = "sk-very-secret-123"
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	pages := []agenttest.Page{{
		URL: loginURL, Title: "Login",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "id": "key", "placeholder": "API key"}},
			{Index: 2, Text: "Connect", Href: doneURL},
		},
	}, {URL: doneURL, Title: "Connected", Text: "Key accepted"}}
	steps := []scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "API key", Params: map[string]any{"text": "<secret>api_key</secret>"}},
			{Name: "click", Label: "Connect"},
		}},
		{Action: "done", Params: map[string]any{"text": "connected", "success": true}},
	}
	for round := range 2 {
		b := agenttest.New(t, pages...)
		model := scripted.New(steps[round:])
		set := settings(t)
		set.Cache = cache
		set.SensitiveDataByDomain = map[string]map[string]string{"api.test": {"api_key": secret}}
		a := newAgent(t, "Open "+loginURL+" and connect with the API key.", model, b, set)
		res := run(t, a, model)
		if !res.Done || res.Cache.Hits != round {
			t.Fatalf("round %d: %+v cache %+v", round, res, *res.Cache)
		}
		typed := b.Events(events.TypeText.Name)
		if len(typed) != 1 || typed[0].Payload.(events.TypeTextEvent).Text != secret {
			t.Fatalf("round %d: typed %+v", round, typed)
		}
	}
	files := entries(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d entries", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) || !strings.Contains(string(data), "<secret>api_key</secret>") {
		t.Fatalf("the entry holds the secret or lost its placeholder:\n%s", data)
	}
}

// pageModel answers the application by what the page shows, so that an
// agent whose earlier steps came from another agent's entries still gets
// the right reply. It counts its calls.
type pageModel struct {
	mu    sync.Mutex
	calls int
}

func (m *pageModel) Name() string { return "page-model" }

func (m *pageModel) Generate(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	txt := userText(req)
	reply := `{"memory":"applying","action":[{"done":{"text":"Applied","success":true}}]}`
	switch {
	case strings.Contains(txt, "Apply (1 of 2)"):
		reply = `{"memory":"form","action":[{"input":{"index":1,"text":"Ada Lovelace"}},{"input":{"index":2,"text":"ada@example.com"}},{"click":{"index":3}}]}`
	case strings.Contains(txt, "Apply (2 of 2)"):
		reply = `{"memory":"plan","action":[{"select_dropdown":{"index":1,"text":"Pro"}},{"click":{"index":2}}]}`
	}
	return &llm.Response{Content: reply}, nil
}

func (m *pageModel) n() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Agents sharing one DirCache at once (run under -race): in the first
// round they fill it while writing the same keys (and may take each
// other's entries), in the second every agent hits.
func TestCacheSharedByConcurrentAgents(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	const n = 4
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := agenttest.New(t, cacheSite(false, false)...)
				model := &pageModel{}
				set := agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff, ReplyMode: agent.ReplyFlash, Cache: cache}
				a, err := agent.New(cacheTask, model, b, set)
				if err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := a.Run(ctx)
				switch {
				case err != nil:
					errs <- fmt.Errorf("agent %d: %w", i, err)
				case !res.Done || !res.Success || res.FinalText != "Applied":
					errs <- fmt.Errorf("agent %d: %+v", i, res)
				case res.Cache.Hits+model.n() != 3:
					errs <- fmt.Errorf("agent %d, round %d: cache %+v and %d model calls for 3 steps", i, round+1, *res.Cache, model.n())
				case round == 1 && (res.Cache.Hits != 2 || model.n() != 1):
					errs <- fmt.Errorf("agent %d, round 2: cache %+v, %d model calls", i, *res.Cache, model.n())
				}
				if got := len(b.Events(events.SelectDropdownOption.Name)); got != 1 {
					errs <- fmt.Errorf("agent %d: %d plans selected", i, got)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
	}
	if m := entries(t, dir); len(m) != 2 {
		t.Fatalf("%d entries, want 2", len(m))
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".entry-*")); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// DirCache's own contract: misses, size bounds, bad directories.
func TestDirCache(t *testing.T) {
	ctx := context.Background()
	if _, err := agent.NewDirCache(""); !errors.Is(err, agent.ErrSettings) {
		t.Fatalf("empty dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewDirCache(file); err == nil {
		t.Fatal("a file as the cache directory was accepted")
	}
	dir := filepath.Join(t.TempDir(), "sub", "cache")
	c := newDirCache(t, dir)
	if _, err := c.Get(ctx, "k"); !errors.Is(err, agent.ErrCacheMiss) {
		t.Fatalf("empty cache: %v", err)
	}
	e := &agent.CacheEntry{Model: "m", PromptVersion: "v", Actions: []agent.CachedAction{{Name: "wait"}}}
	if err := c.Put(ctx, "k", e); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k")
	if err != nil || got.Model != "m" || got.Key != "k" || got.Format != agent.CacheFormat || len(got.Actions) != 1 {
		t.Fatalf("get: %+v, %v", got, err)
	}
	fi, err := os.Stat(entries(t, dir)[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("entry file mode %v, %v", fi.Mode(), err)
	}
	c.MaxEntryBytes = 100
	big := &agent.CacheEntry{Model: strings.Repeat("m", 200)}
	if err := c.Put(ctx, "big", big); !errors.Is(err, agent.ErrCacheEntryTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, agent.ErrCacheCorrupt) {
		t.Fatalf("an entry over the bound read back: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Put(cctx, "k", e); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
}

// A step that is never cached (write_file here) goes back to the model on
// every run, which words it anew: its wording is left out of the later
// keys, so the form and plan steps still hit.
func TestCacheRewordedUncachedStepStillHits(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	note := func(text string) scripted.Step {
		return scripted.Step{Action: "write_file", Params: map[string]any{"file_name": "plan.md", "content": text}}
	}
	res1, _, _, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", note("plan: fill the form"), cacheFill, cachePlan, cacheDone)
	if res1.Cache.Stored != 2 {
		t.Fatalf("first run: cache %+v, want 2 stored", *res1.Cache)
	}
	res2, m2, _, a2 := cacheRun(t, cache, cacheSite(false, false), "scripted", note("Plan - fill the form"), cacheDone)
	if got, want := *res2.Cache, (agent.CacheStats{Hits: 2, Misses: 2}); got != want {
		t.Fatalf("second run: cache %+v, want %+v", got, want)
	}
	if n := len(m2.Requests()); n != 2 {
		t.Fatalf("second run: %d model calls, want 2 (write_file, done)", n)
	}
	h := a2.History()
	if h.Items[2].Source != agent.SourceCache || h.Items[3].Source != agent.SourceCache {
		t.Fatalf("sources %q %q, want the cache's", h.Items[2].Source, h.Items[3].Source)
	}
}

// A step that typed something the task does not hold (the model read it
// off the page) is not stored; a navigate to a URL neither in the task nor
// on the page is not either.
func TestCacheTypedTextNotFromTheTaskIsNotStored(t *testing.T) {
	dir := t.TempDir()
	cache := newDirCache(t, dir)
	otherName := scripted.Step{Actions: []scripted.Action{
		{Name: "input", Label: "Full name", Params: map[string]any{"text": "Grace Hopper"}},
		{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
		{Name: "click", Label: "Next"},
	}}
	res, _, _, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", otherName, cachePlan, cacheDone)
	if res.Cache.Stored != 1 {
		t.Fatalf("cache %+v, want only the plan step stored", *res.Cache)
	}
	away := scripted.Step{Action: "navigate", Params: map[string]any{"url": "https://elsewhere.test/"}}
	b := agenttest.New(t, append(cacheSite(false, false), agenttest.Page{URL: "https://elsewhere.test/", Title: "Elsewhere"})...)
	model := scripted.New([]scripted.Step{away, cacheDone})
	set := settings(t)
	set.Cache = newDirCache(t, t.TempDir())
	res = run(t, newAgent(t, cacheTask, model, b, set), model)
	if res.Cache.Stored != 0 {
		t.Fatalf("a navigate to a URL from nowhere was stored: %+v", *res.Cache)
	}
}

// With planning on, a cached step's plan changes apply as the model's did:
// the step after two hits shows the plan at its third item.
func TestCacheHitUpdatesThePlan(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	one, two := 1, 2
	fill, plan := cacheFill, cachePlan
	fill.PlanUpdate = []string{"fill the form", "choose the plan", "confirm"}
	fill.CurrentPlanItem = &one
	plan.CurrentPlanItem = &two
	for round, steps := range [][]scripted.Step{{fill, plan, cacheDone}, {cacheDone}} {
		b := agenttest.New(t, cacheSite(false, false)...)
		model := scripted.New(steps)
		set := settings(t)
		set.Cache = cache
		set.ReplyMode = agent.ReplyFull
		a := newAgent(t, cacheTask, model, b, set)
		res := run(t, a, model)
		if !res.Done || res.Cache.Hits != 2*round {
			t.Fatalf("round %d: %+v cache %+v", round, res, *res.Cache)
		}
		h := a.History()
		got := h.Items[2].Plan
		if len(got) != 3 || got[2].Text != "confirm" || got[2].Status != agent.PlanCurrent || got[1].Status != agent.PlanDone {
			t.Fatalf("round %d: the plan after the plan step: %+v", round, got)
		}
		if round == 1 && !strings.Contains(userText(model.Requests()[0]), "confirm") {
			t.Fatalf("the model's prompt after two hits lacks the plan:\n%s", userText(model.Requests()[0]))
		}
	}
}

// A secret the model typed literally (not as its placeholder) stays out of
// the key: a second run, whose history holds the placeholder (from the
// cache), reaches the same keys and hits both steps.
func TestCacheKeyScrubsLiteralSecrets(t *testing.T) {
	const secret = "sk-very-secret-123"
	pages := []agenttest.Page{{
		URL: loginURL, Title: "Login",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "id": "key", "placeholder": "API key"}},
			{Index: 2, Text: "Check"},
			{Index: 3, Text: "Connect", Href: doneURL},
		},
	}, {URL: doneURL, Title: "Connected", Text: "Key accepted"}}
	steps := []scripted.Step{
		{Action: "input", Label: "API key", Params: map[string]any{"text": secret}},
		{Actions: []scripted.Action{{Name: "click", Label: "Check"}, {Name: "click", Label: "Connect"}}},
		{Action: "done", Params: map[string]any{"text": "connected", "success": true}},
	}
	cache := newDirCache(t, t.TempDir())
	for round := range 2 {
		b := agenttest.New(t, pages...)
		model := scripted.New(steps[2*round:])
		set := settings(t)
		set.Cache = cache
		set.SensitiveData = map[string]string{"api_key": secret}
		a := newAgent(t, "Open "+loginURL+" and connect with the API key.", model, b, set)
		res := run(t, a, model)
		if !res.Done || res.Cache.Hits != 2*round || (round == 0 && res.Cache.Stored != 2) {
			t.Fatalf("round %d: %+v cache %+v", round, res, *res.Cache)
		}
	}
}

// Settings that change the prompt (the files offered, the secrets' names,
// the elements shown, the search engine) are another prompt version.
func TestCachePromptVersionCoversSettings(t *testing.T) {
	for name, change := range map[string]func(*agent.Settings){
		"files":    func(s *agent.Settings) { s.AvailableFilePaths = []string{filepath.Join(t.TempDir(), "cv.txt")} },
		"secrets":  func(s *agent.Settings) { s.SensitiveData = map[string]string{"pin": "4711"} },
		"elements": func(s *agent.Settings) { s.MaxElementsChars = 1000 },
		"search":   func(s *agent.Settings) { s.SearchEngine = "bing" },
	} {
		t.Run(name, func(t *testing.T) {
			cache := newDirCache(t, t.TempDir())
			cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
			b := agenttest.New(t, cacheSite(false, false)...)
			model := scripted.New([]scripted.Step{cacheFill, cachePlan, cacheDone})
			set := settings(t)
			set.Cache = cache
			change(&set)
			res := run(t, newAgent(t, cacheTask, model, b, set), model)
			if res.Cache.Hits != 0 || res.Cache.Invalidated != 2 {
				t.Fatalf("cache %+v, want both entries invalidated", *res.Cache)
			}
		})
	}
}

// The default URL normalisation of the key.
func TestNormalizeCacheURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:43127/apply":               "http://127.0.0.1/apply",
		"http://localhost:8080/":                     "http://localhost/",
		"http://[::1]:9000/x":                        "http://[::1]/x",
		"https://jobs.test:8443/apply":               "https://jobs.test:8443/apply",
		"https://jobs.test/cart;jsessionid=ABC123":   "https://jobs.test/cart",
		"https://jobs.test/a?q=go&sid=1&_=17&page=2": "https://jobs.test/a?page=2&q=go",
		"https://jobs.test/a?SessionId=x&token=y":    "https://jobs.test/a",
		"not a url": "not a url",
		"https://jobs.test/a?tokens=kept&session_id=no": "https://jobs.test/a?tokens=kept",
	} {
		if got := agent.NormalizeCacheURL(in); got != want {
			t.Errorf("NormalizeCacheURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// NewDirCache prunes: orphaned temporary files over an hour old, entries
// over MaxAge, and the oldest entries over MaxEntries.
func TestDirCachePrunes(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	write(".entry-old.tmp", 2*time.Hour)
	write(".entry-new.tmp", time.Minute)
	write("a.json", time.Minute)
	write("b.json", 2*time.Minute)
	write("c.json", 3*time.Minute)
	write("d.json", 4*time.Minute)
	write("ancient.json", 48*time.Hour)
	write("notes.txt", 48*time.Hour)
	if _, err := agent.NewDirCache(dir, agent.DirCacheOptions{MaxEntries: 2, MaxAge: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, de := range des {
		left = append(left, de.Name())
	}
	if want := []string{".entry-new.tmp", "a.json", "b.json", "notes.txt"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}

// A cached step that runs out of time (a busy machine: the click blocks
// until the step's deadline) keeps its entry: only an action the page
// refused empties it. The next run hits both steps again.
func TestCacheTimedOutHitKeepsItsEntry(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)

	b := agenttest.New(t, cacheSite(false, false)...)
	b.Block(events.ClickElement.Name)
	model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "too slow", "success": false}}})
	set := settings(t)
	set.Cache = cache
	set.StepTimeout = 3 * time.Second
	a := newAgent(t, cacheTask, model, b, set)
	res := run(t, a, model)
	if res.Cache.Hits != 1 {
		t.Fatalf("blocked run: cache %+v", *res.Cache)
	}
	if it := a.History().Items[1]; it.Source != agent.SourceCache || it.Actions[len(it.Actions)-1].Error == "" {
		t.Fatalf("the cached step should have timed out on its click: %+v", it.Actions)
	}
	res, m, _, _ := cacheRun(t, cache, cacheSite(false, false), "scripted", cacheDone)
	if res.Cache.Hits != 2 || len(m.Requests()) != 1 {
		t.Fatalf("after the timeout: cache %+v, %d model calls; the entry was dropped", *res.Cache, len(m.Requests()))
	}
}

// The Approver hears that a cached action is the cache's: a Note, and for
// an element action how its element was found.
func TestCacheTellsTheApprover(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	cacheRun(t, cache, cacheSite(false, false), "scripted", cacheFill, cachePlan, cacheDone)
	var mu sync.Mutex
	var reqs []agent.ApprovalRequest
	b := agenttest.New(t, cacheSite(false, false)...)
	model := scripted.New([]scripted.Step{cacheDone})
	set := settings(t)
	set.Cache = cache
	set.Approver = agent.ApproverFunc(func(_ context.Context, r agent.ApprovalRequest) (agent.Decision, error) {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return agent.Decision{Allow: true}, nil
	})
	res := run(t, newAgent(t, cacheTask, model, b, set), model)
	if res.Cache.Hits != 2 {
		t.Fatalf("cache %+v", *res.Cache)
	}
	mu.Lock()
	defer mu.Unlock()
	cached := 0
	for _, r := range reqs {
		if r.Step == 1 || r.Step == 2 {
			cached++
			if !strings.Contains(r.Note, "from the action cache") || r.Match == nil || !r.Match.Unique {
				t.Fatalf("step %d %s: note %q match %+v", r.Step, r.Action, r.Note, r.Match)
			}
		} else if r.Note != "" {
			t.Fatalf("step %d %s (not cached): note %q", r.Step, r.Action, r.Note)
		}
	}
	if cached != 5 {
		t.Fatalf("%d cached actions asked the Approver, want 5", cached)
	}
}
