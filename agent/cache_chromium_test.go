package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
)

// slowModel answers like its scripted model after a delay, as a model
// behind a network does.
type slowModel struct {
	*scripted.Model
	delay time.Duration
}

func (m slowModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	t := time.NewTimer(m.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return m.Model.Generate(ctx, req)
}

// The demo's application on the real careers site in Chromium, twice with
// one cache: the second run takes the four page steps from the cache and
// asks the model only for done (never cached), and the site receives both
// applications. The model takes 1 s a call; the wall times are logged
// (docs/replay.md quotes them), not asserted.
func TestCacheDemoSiteChromium(t *testing.T) {
	site, err := demosite.Start(demosite.Original)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	cv := filepath.Join(t.TempDir(), demosite.CVName)
	if err := os.WriteFile(cv, []byte(demosite.CVText), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := newDirCache(t, t.TempDir())
	task := demosite.Task + " The site is at " + site.URL() + "/"
	script := demosite.Script(cv)
	var walls [2]time.Duration
	for round, steps := range [][]scripted.Step{script, script[len(script)-1:]} {
		_, s := newSession(t)
		model := scripted.New(steps, scripted.WithName("scripted-demo"))
		set := settings(t)
		set.Cache = cache
		set.MaxSteps = 15
		set.AvailableFilePaths = []string{cv}
		a, err := agent.New(task, slowModel{model, time.Second}, s, set)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := runAgent(t, a)
		walls[round] = time.Since(start)
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("round %d: the script failed: %v", round, errs)
		}
		if !res.Done || !res.Success || res.Cache == nil {
			t.Fatalf("round %d: result %+v", round, res)
		}
		// A page still loading when observed gets a wait from the model
		// (never cached): those calls are the machine's, not the cache's.
		calls, waits := len(model.Requests()), 0
		for _, it := range a.History().Items {
			if it.Source == agent.SourceModel && len(it.Actions) > 0 && it.Actions[0].Name == "wait" {
				waits++
			}
		}
		t.Logf("round %d: %d model calls (%d waits), cache %+v, wall %s", round, calls, waits, *res.Cache, walls[round].Round(time.Millisecond))
		switch round {
		case 0:
			if res.Cache.Hits != 0 || res.Cache.Stored != 4 {
				t.Fatalf("first run: cache %+v, want 4 steps stored", *res.Cache)
			}
		case 1:
			if res.Cache.Hits != 4 || calls-waits != 1 {
				t.Fatalf("second run: cache %+v and %d model calls (%d waits), want 4 hits and 1 call (done)", *res.Cache, calls, waits)
			}
			cached := 0
			for _, it := range a.History().Items {
				if it.Source == agent.SourceCache {
					cached++
				}
			}
			if cached != 4 {
				t.Fatalf("%d steps from the cache, want 4", cached)
			}
		}
		if n := len(site.Applications()); n != round+1 {
			t.Fatalf("round %d: the site has %d applications", round, n)
		}
	}
	app := site.Applications()[1]
	if app.Name != "Ada Lovelace" || app.Email != "ada@example.com" || app.CVName != demosite.CVName || !app.Consent {
		t.Fatalf("the cached run's application: %+v", app)
	}
	t.Logf("cached run / uncached run wall time: %.2f", walls[1].Seconds()/walls[0].Seconds())
}
