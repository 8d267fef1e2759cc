package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/scriptserver"
)

// replayLine is printReplayOutcome's summary.
var replayLine = regexp.MustCompile(`replay: (\d+) of (\d+) actions replayed, (\d+) skipped, (\d+) healed steps, (\d+) model calls`)

func replayCounts(t *testing.T, stdout string) (replayed, total, healed, calls string) {
	t.Helper()
	m := replayLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no replay summary in stdout:\n%s", stdout)
	}
	return m[1], m[2], m[4], m[5]
}

// TestReplayDemo is the must-show: the demo recorded once, then
// replayed on every version of the site: with no model call where ids,
// classes, a banner or the rows' order changed; with exactly one call to
// the heal model where Apply moved into a menu; and a named failure where
// the posting is closed. One recording serves every subtest, and each
// replay is one child process (one Chromium).
func TestReplayDemo(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	r := cli(t, nil, "demo", "--out", rec)
	if r.code != 0 {
		t.Fatalf("recording the demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	history := filepath.Join(rec, "history.json")
	recOrigin := regexp.MustCompile(`demo site: (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(r.stderr)
	if recOrigin == nil {
		t.Fatalf("the demo did not say where its site was:\n%s", r.stderr)
	}

	t.Run("dry-run", func(t *testing.T) {
		r := cli(t, nil, "replay", "--dry-run", "--var", "email=grace@example.com", "--rebase", recOrigin[1]+"=https://careers.example.com", history)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{
			"Replay plan: 6 steps",
			`email = "grace@example.com"`,
			`name = "Ada Lovelace"`,
			"Step 2 on https://careers.example.com/jobs/go-engineer.html",
			`target <a href="/apply.html?job=go-engineer"> "Apply for this job"`,
			`match by role_name link "Apply for this job"`,
			`navigate {"url":"https://careers.example.com/"}`,
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, recOrigin[1]) {
			t.Errorf("the plan still names the recorded origin %s", recOrigin[1])
		}
		j := cli(t, nil, "replay", "--dry-run", "--json", history)
		var plan struct {
			Steps []struct {
				Actions []struct {
					Name    string
					Cascade []string
				}
			}
			Vars []struct{ Name, Value string }
		}
		if err := json.Unmarshal([]byte(j.stdout), &plan); err != nil || j.code != 0 {
			t.Fatalf("--dry-run --json: exit %d, %v\n%s", j.code, err, j.stdout)
		}
		if len(plan.Steps) != 6 || len(plan.Vars) != 4 || len(plan.Steps[2].Actions) != 1 || len(plan.Steps[2].Actions[0].Cascade) == 0 {
			t.Fatalf("JSON plan: %+v", plan)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		notJSON := filepath.Join(dir, "notes.json")
		os.WriteFile(notJSON, []byte("these are my notes, not a history"), 0o644)
		empty := filepath.Join(dir, "empty.json")
		os.WriteFile(empty, []byte(`{"task":"nothing","history":[]}`), 0o644)
		for _, c := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"no history", []string{"replay"}, 2, "want the history file"},
			{"missing file", []string{"replay", filepath.Join(dir, "nope.json")}, 1, "no history file"},
			{"not a history", []string{"replay", notJSON}, 1, "is not a history written by browseragent"},
			{"no actions", []string{"replay", "--dry-run", empty}, 1, "the history has no actions to replay"},
			{"unknown var", []string{"replay", "--dry-run", "--var", "phone=123", history}, 2, "phone"},
			{"bad var", []string{"replay", "--var", "novalue", history}, 2, "want name=value"},
			{"bad rebase", []string{"replay", "--rebase", "localhost=elsewhere", history}, 2, "is not an origin"},
			{"base-url without model", []string{"replay", "--base-url", "http://127.0.0.1:1/v1", history}, 2, "--base-url needs --model"},
			{"untrusted upload", []string{"replay", history}, 2, "step 3 uploads " + filepath.Join(rec, demosite.CVName) + ": a recorded upload path is used only when the command line names it; pass --var cv="},
			{"heal without replay", []string{"demo", "--heal"}, 2, "--heal needs --replay"},
			{"unknown site version", []string{"demo", "--site-version", "v2"}, 2, "unknown site version"},
		} {
			r := cli(t, nil, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, r.code, r.stderr, c.code, c.want)
			}
		}
		if r := cli(t, nil, "replay", "--dry-run", "--var", "phone=123", history); !strings.Contains(r.stderr, "email") {
			t.Errorf("an unknown --var does not list the known names: %s", r.stderr)
		}
	})

	for _, v := range []demosite.Version{demosite.Renamed, demosite.Banner} {
		t.Run(string(v), func(t *testing.T) {
			r := cli(t, nil, "demo", "--replay", history, "--site-version", string(v), "--out", filepath.Join(dir, string(v)))
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			replayed, total, healed, calls := replayCounts(t, r.stdout)
			if calls != "0" || healed != "0" || replayed != total {
				t.Errorf("%s: %s of %s replayed, %s healed, %s model calls; want all, 0, 0", v, replayed, total, healed, calls)
			}
			if !strings.Contains(r.stdout, "the site received: Ada Lovelace <ada@example.com>, 5-10 years, CV "+demosite.CVName) {
				t.Errorf("the site did not receive the application:\n%s", r.stdout)
			}
			if !strings.Contains(r.stderr, "[replay]") {
				t.Errorf("the progress does not mark replayed steps:\n%s", r.stderr)
			}
		})
	}

	// Reordered, as JSON (demo --replay fails unless the site received
	// exactly one application, so exit 0 says it did).
	t.Run("reordered", func(t *testing.T) {
		r := cli(t, nil, "demo", "--replay", history, "--site-version", "reordered", "--json", "--out", filepath.Join(dir, "reordered"))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		var got struct {
			Result struct{ Done, Success bool } `json:"result"`
			Replay *struct {
				Actions []struct {
					Skipped bool
					Match   *struct{ Strategy string }
				}
				ModelCalls int `json:"model_calls"`
				Healed     int
			} `json:"replay"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if !got.Result.Success || got.Replay == nil || got.Replay.ModelCalls != 0 || got.Replay.Healed != 0 || len(got.Replay.Actions) != 10 {
			t.Fatalf("JSON result %+v", got)
		}
		matched := 0
		for _, a := range got.Replay.Actions {
			if a.Skipped {
				t.Errorf("an action was skipped: %+v", a)
			}
			if a.Match != nil && a.Match.Strategy != "" {
				matched++
			}
		}
		if matched != 8 {
			t.Errorf("%d actions say how their element was found, want 8", matched)
		}
	})

	// The menu version through the plain replay command: the site and the
	// heal model (a 1-step script behind an OpenAI-compatible server) run
	// here, so the calls and the application are counted where they
	// happen.
	t.Run("menu heals with one model call", func(t *testing.T) {
		site, err := demosite.Start(demosite.Menu)
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		srv, err := scriptserver.Start(scripted.New(demosite.HealScript()), scriptserver.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		cv := filepath.Join(dir, "menu-cv", demosite.CVName)
		os.MkdirAll(filepath.Dir(cv), 0o755)
		os.WriteFile(cv, []byte("Grace Hopper\n"), 0o644)
		r := cli(t, nil, "replay", "--rebase", recOrigin[1]+"="+site.URL(), "--var", "cv="+cv, "--var", "name=Grace Hopper",
			"--model", "openai:heal", "--base-url", srv.URL(), "--allowed-domains", "127.0.0.1", "--out", filepath.Join(dir, "menu"), history)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if n := srv.Calls(); n != 1 {
			t.Errorf("the heal model was called %d times, want 1", n)
		}
		_, _, healed, calls := replayCounts(t, r.stdout)
		if healed != "1" || calls != "1" {
			t.Errorf("replay says %s healed steps, %s model calls; want 1 and 1", healed, calls)
		}
		apps := site.Applications()
		if len(apps) != 1 || apps[0].Name != "Grace Hopper" || apps[0].CVSize != int64(len("Grace Hopper\n")) {
			t.Fatalf("the site received %+v", apps)
		}
		h, err := agent.LoadHistory(filepath.Join(dir, "menu", "history.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sources []string
		for _, it := range h.Items {
			sources = append(sources, string(it.Source))
		}
		if got := strings.Join(sources, ","); got != "replay,replay,heal,replay,replay,replay,replay" {
			t.Errorf("the replay's history has step sources %s", got)
		}
	})

	// A recording whose "Senior Go Engineer" link had a look-alike: the
	// matcher can only choose it by position, which replay refuses unless
	// --allow-ambiguous.
	t.Run("ambiguous", func(t *testing.T) {
		var raw map[string]any
		b, _ := os.ReadFile(history)
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		elem := raw["history"].([]any)[1].(map[string]any)["actions"].([]any)[0].(map[string]any)["element"].(map[string]any)
		elem["similar"], elem["ordinal"] = 2, 1
		delete(elem, "distinct")
		b, _ = json.Marshal(raw)
		ambiguous := filepath.Join(dir, "ambiguous.json")
		os.WriteFile(ambiguous, b, 0o644)
		site, err := demosite.Start(demosite.Original)
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		args := []string{"replay", "--rebase", recOrigin[1] + "=" + site.URL(), "--allowed-domains", "127.0.0.1", "--file", filepath.Join(rec, demosite.CVName)}
		r := cli(t, nil, append(args, "--out", filepath.Join(dir, "amb1"), ambiguous)...)
		if r.code != exitReplay || !strings.Contains(r.stderr, "replay step 1 action 0 (click)") || !strings.Contains(r.stderr, "position") || len(site.Applications()) != 0 {
			t.Fatalf("an ambiguous match without --allow-ambiguous: exit %d, %d applications\n%s", r.code, len(site.Applications()), r.stderr)
		}
		r = cli(t, nil, append(args, "--allow-ambiguous", "--out", filepath.Join(dir, "amb2"), ambiguous)...)
		if r.code != 0 || len(site.Applications()) != 1 {
			t.Fatalf("--allow-ambiguous: exit %d, %d applications\n%s", r.code, len(site.Applications()), r.stderr)
		}
		if !strings.Contains(r.stdout, "1 chosen by position among look-alikes (allowed)") {
			t.Errorf("the summary does not say one element was found by position:\n%s", r.stdout)
		}
	})

	t.Run("closed fails naming the step", func(t *testing.T) {
		r := cli(t, nil, "demo", "--replay", history, "--site-version", "closed", "--out", filepath.Join(dir, "closed"))
		if r.code != exitReplay {
			t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitReplay, r.stdout, r.stderr)
		}
		for _, want := range []string{"replay step 2 action 0 (click)", `"Apply for this job"`, "element not found", "candidates:"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if strings.Contains(r.stdout, "the site received") {
			t.Error("a closed posting received an application")
		}
	})
}
