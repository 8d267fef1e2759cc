package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
)

// The demo's application, recorded once on the original careers site with
// the scripted model, replays in real Chromium on every other version of
// the site: with no model call where ids were renamed, a banner inserted
// or rows reordered; with exactly one heal call where the Apply link moved
// into a "More" menu; and it fails naming the recorded step where the
// posting is closed. The site counts applications: each replay submits
// once.
func TestReplayDemoSiteVersions(t *testing.T) {
	_, s := newSession(t)
	cv := filepath.Join(t.TempDir(), demosite.CVName)
	if err := os.WriteFile(cv, []byte(demosite.CVText), 0o644); err != nil {
		t.Fatal(err)
	}
	orig, err := demosite.Start(demosite.Original)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orig.Close() })
	model := scripted.New(demosite.Script(cv))
	set := settings(t)
	set.AvailableFilePaths = []string{cv}
	set.MaxSteps = 15
	a := newAgent(t, demosite.Task+" The site is at "+orig.URL()+"/", model, s, set)
	start := time.Now()
	res := run(t, a, model)
	recorded := time.Since(start)
	if !res.Success || len(orig.Applications()) != 1 {
		t.Fatalf("recording: %+v, %d applications", res, len(orig.Applications()))
	}
	rec := a.History()
	t.Logf("recorded: %d steps in %s", len(rec.Items), recorded.Round(time.Millisecond))
	logSteps(t, rec)
	var names []string
	for _, v := range agent.ReplayVariables(rec) {
		names = append(names, v.Name+"="+v.Value)
	}
	t.Logf("variables: %v", names)

	for _, tc := range []struct {
		v     demosite.Version
		heal  bool
		calls int
		fail  int // the recorded step that must fail (0: none)
		email string
	}{
		{v: demosite.Renamed, email: "grace@example.com"},
		{v: demosite.Banner},
		{v: demosite.Reordered},
		{v: demosite.Menu, heal: true, calls: 1},
		{v: demosite.Closed, fail: 2},
	} {
		t.Run(string(tc.v), func(t *testing.T) {
			site, err := demosite.Start(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			defer site.Close()
			opt := agent.ReplayOptions{
				Settings: agent.Settings{RunDir: t.TempDir(), AvailableFilePaths: []string{cv}},
				Rebase:   map[string]string{orig.URL(): site.URL()},
			} // the default SettleTimeout: a busy machine loads pages slowly
			if tc.email != "" {
				opt.Vars = map[string]string{"email": tc.email}
			}
			var healer *scripted.Model
			if tc.heal {
				healer = scripted.New(demosite.HealScript())
				opt.Model = healer
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			start := time.Now()
			rr, err := agent.Replay(ctx, s, rec, opt)
			took := time.Since(start)
			if rr != nil {
				logSteps(t, rr.History)
			}
			t.Logf("%s: replay took %s (recording %s)", tc.v, took.Round(time.Millisecond), recorded.Round(time.Millisecond))
			if tc.fail > 0 {
				var re *agent.ReplayError
				if !errors.As(err, &re) || re.Step != tc.fail {
					t.Fatalf("err %v, want a ReplayError at step %d", err, tc.fail)
				}
				if n := len(site.Applications()); n != 0 {
					t.Fatalf("%d applications on the closed posting", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if rr.ModelCalls != tc.calls {
				t.Fatalf("model calls %d, want %d", rr.ModelCalls, tc.calls)
			}
			if healer != nil && len(healer.Errors()) > 0 {
				t.Fatalf("heal script: %v", healer.Errors())
			}
			if !rr.Result.Success {
				t.Fatalf("result %+v", rr.Result)
			}
			dones := 0
			for _, x := range rr.Actions {
				if x.Skipped || x.RunStep == 0 && x.Step > 0 {
					t.Errorf("recorded step %d %s not replayed: %+v", x.Step, x.Name, x)
				}
				if x.Match != nil && (x.Match.Ambiguous || !x.Match.Unique) {
					t.Errorf("recorded step %d %s: its element was not singled out: %+v", x.Step, x.Name, *x.Match)
				}
				if x.Name == "done" {
					dones++
					if !x.Replayed {
						t.Errorf("done %+v not marked replayed", x)
					}
				}
			}
			if dones != 1 {
				t.Errorf("%d done actions, want 1", dones)
			}
			if n := len(site.Applications()); n != 1 {
				t.Fatalf("%d applications, want 1", n)
			}
			email := "ada@example.com"
			if tc.email != "" {
				email = tc.email
			}
			if app := site.Applications()[0]; app.Name != "Ada Lovelace" || app.Email != email || app.CVName != demosite.CVName {
				t.Fatalf("application %+v", app)
			}
		})
	}
}

// logSteps logs each step's time and where it went (the replay's
// measurement in docs/performance.md).
func logSteps(t *testing.T, h *agent.History) {
	t.Helper()
	for _, it := range h.Items {
		var acts []string
		for _, a := range it.Actions {
			acts = append(acts, a.Name+" "+a.Duration.Round(time.Millisecond).String())
		}
		t.Logf("step %d %-6s %6s observe %s model %s actions %s %v %s", it.Step, it.Source, it.EndedAt.Sub(it.StartedAt).Round(time.Millisecond), it.ObserveTime.Round(time.Millisecond), it.ModelTime.Round(time.Millisecond), it.ActionsTime.Round(time.Millisecond), acts, it.Error)
	}
}

// A recorded final done that the done check holds back on replay (the
// save it reports now fails) is not replayed again: the heal model is
// asked to finish, and its accepted done ends the replay, marked healed
// and not replayed.
func TestReplayHeldBackFinalDoneHealed(t *testing.T) {
	var fail atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/save", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>Profile</title></head><body><h1>Profile</h1>`+
			`<button id="save" onclick="fetch('/api/profile', {method: 'POST', body: 'name=Ada'}).catch(() => {})">Save</button></body></html>`)
	})
	mux.HandleFunc("/api/profile", func(w http.ResponseWriter, _ *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved the profile", "success": true}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, settings(t))
	if res := runAgent(t, a); !res.Done || !res.Success {
		t.Fatalf("recording: %+v", res)
	}
	rec := a.History()

	// The replay's own origin: the browser is still on the recorded page.
	srv2 := httptest.NewServer(mux)
	t.Cleanup(srv2.Close)
	fail.Store(true)
	healer := scripted.New([]scripted.Step{
		{Action: "scroll", Params: map[string]any{"down": true}},
		{Action: "done", Params: map[string]any{"text": "The save failed (422)", "success": false}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rr, err := agent.Replay(ctx, s, rec, agent.ReplayOptions{Settings: agent.Settings{RunDir: t.TempDir()}, Model: healer, Rebase: map[string]string{srv.URL: srv2.URL}})
	if rr != nil {
		logSteps(t, rr.History)
	}
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !rr.Result.Done || rr.Result.Success || rr.Result.FinalText != "The save failed (422)" {
		t.Fatalf("result %+v, want the heal's done", rr.Result)
	}
	if rr.ModelCalls != 2 || len(healer.Errors()) > 0 {
		t.Fatalf("model calls %d (errors %v), want 2", rr.ModelCalls, healer.Errors())
	}
	var done *agent.ReplayedAction
	for i := range rr.Actions {
		if rr.Actions[i].Name == "done" {
			done = &rr.Actions[i]
		}
	}
	if done == nil || !done.Healed || done.Replayed || done.RunStep == 0 {
		t.Fatalf("done %+v, want healed by the heal's own done", done)
	}
}

// A step's element that appears only once a slow image loaded is awaited
// while the image is pending, though the page does not change meanwhile
// (longer than the quiet rule would wait on a page with nothing loading).
func TestReplaySettleWaitsForPendingRequests(t *testing.T) {
	const delay = 6 * time.Second // above the quiet rule: max(1 s, 20 s/5)
	var slow atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		body := `<a id="send" href="/thanks">Send</a>`
		if slow.Load() {
			// The image starts loading after the load event, so the
			// navigation does not wait for it.
			body = `<script>function add() { document.body.insertAdjacentHTML('beforeend', '<a id="send" href="/thanks">Send</a>'); }` +
				`window.addEventListener('load', () => { const i = document.createElement('img'); i.alt = ''; i.onload = i.onerror = add; i.src = '/slow.png'; document.body.appendChild(i); });</script>`
		}
		fmt.Fprint(w, `<!doctype html><html><head><title>Form</title></head><body><h1>Form</h1>`+body+`</body></html>`)
	})
	mux.HandleFunc("/slow.png", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(delay):
		}
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("/thanks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>Thanks</title></head><body><h1>Thanks</h1></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Send", Action: "click", Label: "Send"},
		{Action: "done", Params: map[string]any{"text": "sent", "success": true}},
	})
	a := newAgent(t, "Open "+srv.URL+"/form and send it.", model, s, settings(t))
	if res := runAgent(t, a); !res.Done || !res.Success {
		t.Fatalf("recording: %+v", res)
	}
	rec := a.History()

	srv2 := httptest.NewServer(mux)
	t.Cleanup(srv2.Close)
	slow.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rr, err := agent.Replay(ctx, s, rec, agent.ReplayOptions{
		Settings:      agent.Settings{RunDir: t.TempDir()},
		Rebase:        map[string]string{srv.URL: srv2.URL},
		SettleTimeout: 20 * time.Second,
	})
	if rr != nil {
		logSteps(t, rr.History)
	}
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !rr.Result.Done || !rr.Result.Success {
		t.Fatalf("result %+v", rr.Result)
	}
}
