package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// What the action cache must not take from an earlier run, in Chromium on
// loopback pages: text the model read off the page, and a step chosen
// after the page it first saw had finished loading.

// otpSite shows a one-time code that changes from run to run, and records
// the codes submitted.
type otpSite struct {
	*httptest.Server
	code atomic.Value // string
	mu   sync.Mutex
	got  []string
}

func newOTPSite(t *testing.T) *otpSite {
	s := &otpSite{}
	s.code.Store("1111")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Verify</title><p>Your one-time code is %s</p>
<form action="/verify"><input name="code" placeholder="Code"><button>Verify</button></form>`, s.code.Load())
	})
	mux.HandleFunc("/verify", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.URL.Query().Get("code"))
		s.mu.Unlock()
		fmt.Fprint(w, `<!doctype html><title>Verified</title><p>Code received</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *otpSite) codes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// Run 1 types the code the page shows (1111); run 2's page shows 2222: the
// cache must not type 1111 again without the model reading the page.
func TestCacheOneTimeCodeChromium(t *testing.T) {
	site := newOTPSite(t)
	cache := newDirCache(t, t.TempDir())
	task := "Open " + site.URL + "/ and verify with the one-time code the page shows."
	for round, code := range []string{"1111", "2222"} {
		site.code.Store(code)
		_, s := newSession(t)
		model := scripted.New([]scripted.Step{
			{Actions: []scripted.Action{
				{Name: "input", Label: "Code", Params: map[string]any{"text": code}},
				{Name: "click", Label: "Verify", Tag: "button"},
			}},
			{WaitFor: "Code received", Action: "done", Params: map[string]any{"text": "verified", "success": true}},
		})
		set := settings(t)
		set.Cache = cache
		a, err := agent.New(task, model, s, set)
		if err != nil {
			t.Fatal(err)
		}
		res := runAgent(t, a)
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("round %d: the script failed: %v", round, errs)
		}
		if !res.Done || res.Cache == nil || res.Cache.Hits != 0 || res.Cache.Stored != 0 {
			t.Fatalf("round %d: result %+v cache %+v, want no hit and nothing stored", round, res, res.Cache)
		}
		for _, it := range a.History().Items {
			if it.Source == agent.SourceCache {
				t.Fatalf("round %d: step %d came from the cache", round, it.Step)
			}
		}
	}
	if got := site.codes(); !slices.Equal(got, []string{"1111", "2222"}) {
		t.Fatalf("codes submitted %v, want [1111 2222]", got)
	}
}

// loadingSite's page says "Status: amber" until ready is set, then
// "Status: green"
// (a script polls /status); the page's elements are the same either way.
type loadingSite struct {
	*httptest.Server
	ready atomic.Bool
	next  atomic.Int32 // requests of /next
}

func newLoadingSite(t *testing.T) *loadingSite {
	s := &loadingSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Job</title><p id="status">Status: amber</p><a href="/next">Next</a>
<script>setInterval(async () => { document.getElementById("status").textContent = await (await fetch("/status")).text() }, 100)</script>`)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		if s.ready.Load() {
			fmt.Fprint(w, "Status: green")
			return
		}
		fmt.Fprint(w, "Status: amber")
	})
	mux.HandleFunc("/next", func(w http.ResponseWriter, r *http.Request) {
		s.next.Add(1)
		fmt.Fprint(w, `<!doctype html><title>Next</title><p>Finished</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// readyModel sets the site ready once the model has answered its first
// call (a wait: the page said amber).
type readyModel struct {
	*scripted.Model
	site *loadingSite
}

func (m readyModel) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r, err := m.Model.Generate(ctx, req)
	m.site.ready.Store(true)
	return r, err
}

// Run 1 waits on "amber" and clicks Next once the same page (same key)
// says "green": that click is not stored, since the key was seen
// before it with only a wait between. Run 2's first look at the page, still
// amber, must therefore ask the model, which waits again.
func TestCacheStepAfterAWaitIsNotStoredChromium(t *testing.T) {
	site := newLoadingSite(t)
	cache := newDirCache(t, t.TempDir())
	task := "Open " + site.URL + "/ and press Next once the status is green."
	for round := range 2 {
		site.ready.Store(false)
		_, s := newSession(t)
		model := scripted.New([]scripted.Step{
			{WaitFor: "Status: green", MaxWaits: 30, Action: "click", Label: "Next", Tag: "a"},
			{WaitFor: "Finished", Action: "done", Params: map[string]any{"text": "pressed Next", "success": true}},
		})
		set := settings(t)
		set.Cache = cache
		a, err := agent.New(task, readyModel{model, site}, s, set)
		if err != nil {
			t.Fatal(err)
		}
		res := runAgent(t, a)
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("round %d: the script failed: %v", round, errs)
		}
		if !res.Done || !res.Success || res.Cache == nil {
			t.Fatalf("round %d: result %+v", round, res)
		}
		h := a.History()
		if it := h.Items[1]; it.Source != agent.SourceModel || len(it.Actions) == 0 || it.Actions[0].Name != "wait" {
			t.Fatalf("round %d: the first look at the processing page: source %q actions %+v, want the model's wait", round, it.Source, it.Actions)
		}
		if res.Cache.Hits != 0 || res.Cache.Stored != 0 {
			t.Fatalf("round %d: cache %+v, want no hit and nothing stored", round, *res.Cache)
		}
	}
	if n := site.next.Load(); n != 2 {
		t.Fatalf("Next pressed %d times, want once a run", n)
	}
}

// The same site on two loopback ports (a test server's random port): the
// key drops a loopback port, so the second run hits, and its page steps
// act on its own server.
func TestCacheLoopbackPortChromium(t *testing.T) {
	cache := newDirCache(t, t.TempDir())
	for round := range 2 {
		site := newOTPSite(t)
		site.code.Store("4711")
		task := "Open " + site.URL + "/ and verify with the code 4711."
		_, s := newSession(t)
		steps := []scripted.Step{
			{Actions: []scripted.Action{
				{Name: "input", Label: "Code", Params: map[string]any{"text": "4711"}},
				{Name: "click", Label: "Verify", Tag: "button"},
			}},
			{WaitFor: "Code received", Action: "done", Params: map[string]any{"text": "verified", "success": true}},
		}
		model := scripted.New(steps[round:])
		set := settings(t)
		set.Cache = cache
		a, err := agent.New(task, model, s, set)
		if err != nil {
			t.Fatal(err)
		}
		res := runAgent(t, a)
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("round %d: the script failed: %v", round, errs)
		}
		if !res.Done || res.Cache == nil || res.Cache.Hits != round {
			t.Fatalf("round %d: result %+v cache %+v, want %d hits", round, res, res.Cache, round)
		}
		if got := site.codes(); !slices.Equal(got, []string{"4711"}) {
			t.Fatalf("round %d: this run's server received %v", round, got)
		}
	}
}
