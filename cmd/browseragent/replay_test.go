package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/scriptserver"
	"github.com/browseragent/browseragent/trace"
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

// TestReplayDemo is the must-show: the demo recorded once (and
// the recording's trace, report and verify checked), then replayed on
// every version of the site: with no model call where ids, classes, a
// banner or the rows' order changed, though a heal model was available;
// with exactly one call to the heal model where Apply moved into a menu;
// and a named failure where the posting is closed. One recording serves
// every subtest, and each replay is one child process (one Chromium).
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
	t.Run("recording", func(t *testing.T) { checkDemoRecording(t, rec, r) })

	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The recording with the typed email as a secret placeholder.
	secretHistory := write("secret.json", editHistory(t, history, func(items []any) {
		for _, it := range items {
			for _, a := range it.(map[string]any)["actions"].([]any) {
				a := a.(map[string]any)
				if p, ok := a["params"].(map[string]any); ok && a["name"] == "input" && p["text"] == "ada@example.com" {
					p["text"] = "<secret>email</secret>"
					return
				}
			}
		}
		t.Fatal("the recording typed no ada@example.com")
	}))

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
		// A heal model is not built for a plan: no API key needed.
		if r := cli(t, []string{"OPENAI_API_KEY="}, "replay", "--dry-run", "--model", "openai:gpt-4.1-mini", history); r.code != 0 {
			t.Errorf("--dry-run --model without an API key: exit %d: %s", r.code, r.stderr)
		}
		// A secret without its --secret-env is in the plan's notes.
		r = cli(t, nil, "replay", "--dry-run", secretHistory)
		if r.code != 0 || !strings.Contains(r.stdout, "email (secret") || !strings.Contains(r.stdout, "no --secret-env email=ENVVAR given") {
			t.Errorf("--dry-run of a history with a secret: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		notJSON := write("notes.json", []byte("these are my notes, not a history"))
		empty := write("empty.json", []byte(`{"task":"nothing","history":[]}`))
		cv := filepath.Join(rec, demosite.CVName)
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
			{"flags after the history", []string{"replay", history, "--dry-run"}, 2, `flags go before HISTORY.json: "--dry-run" came after it`},
			{"missing upload file", []string{"replay", "--var", "cv=" + filepath.Join(dir, "no-such-cv.txt"), history}, 2, "--var cv=" + filepath.Join(dir, "no-such-cv.txt") + ": step 3 uploads it, and it is no such file"},
			{"upload folder", []string{"replay", "--var", "cv=" + dir, history}, 2, "step 3 uploads it, and it is a folder"},
			{"missing secret", []string{"replay", "--file", cv, secretHistory}, 2, "step 3 types <secret>email</secret>: pass --secret-env email=ENVVAR"},
			{"bad human", []string{"replay", "--human", "maybe", history}, 2, `--human "maybe"`},
			{"secret in demo --replay", []string{"demo", "--replay", secretHistory}, 2, "demo --replay has no secrets"},
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
		// A recording whose trace was edited is warned about (the browser
		// here is unreachable, so nothing runs).
		forgedDir := filepath.Join(dir, "forged")
		if err := os.MkdirAll(forgedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		hb, err := os.ReadFile(history)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := os.ReadFile(filepath.Join(rec, "trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(forgedDir, "history.json"), hb, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(forgedDir, "trace.jsonl"), bytes.Replace(tb, []byte("Ada Lovelace"), []byte("Eve Mallory!"), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		r := cli(t, nil, "replay", "--cdp-url", "http://127.0.0.1:1", "--file", cv, "--out", filepath.Join(dir, "forged-out"), filepath.Join(forgedDir, "history.json"))
		if r.code == 0 || !strings.Contains(r.stderr, "warning: the recording's trace "+filepath.Join(forgedDir, "trace.jsonl")+" does not verify") {
			t.Errorf("a recording with an edited trace: exit %d, stderr %s", r.code, r.stderr)
		}
	})

	// Renamed through demo --replay --heal: a heal model is there, and not
	// called.
	t.Run("renamed", func(t *testing.T) {
		r := cli(t, nil, "demo", "--replay", history, "--heal", "--site-version", "renamed", "--out", filepath.Join(dir, "renamed"))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		replayed, total, healed, calls := replayCounts(t, r.stdout)
		if calls != "0" || healed != "0" || replayed != total {
			t.Errorf("%s of %s replayed, %s healed, %s model calls; want all, 0, 0", replayed, total, healed, calls)
		}
		if !strings.Contains(r.stdout, "the site received: Ada Lovelace <ada@example.com>, 5-10 years, CV "+demosite.CVName) {
			t.Errorf("the site did not receive the application:\n%s", r.stdout)
		}
		if !strings.Contains(r.stderr, "[replay]") {
			t.Errorf("the progress does not mark replayed steps:\n%s", r.stderr)
		}
	})

	// Banner through the plain replay command, with a heal model behind an
	// OpenAI-compatible server (its calls counted where they happen) and the
	// email typed as a secret from the environment: the site receives the
	// secret, which appears nowhere in the replay's folder.
	t.Run("banner", func(t *testing.T) {
		site, err := demosite.Start(demosite.Banner)
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		srv, err := scriptserver.Start(scripted.New(demosite.HealScript()), scriptserver.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		const secret = "grace.secret-7731@example.org"
		out := filepath.Join(dir, "banner")
		r := cli(t, []string{"F3_TEST_EMAIL=" + secret}, "replay", "--rebase", recOrigin[1]+"="+site.URL(), "--file", filepath.Join(rec, demosite.CVName),
			"--secret-env", "email=F3_TEST_EMAIL", "--model", "openai:heal", "--base-url", srv.URL(), "--allowed-domains", "127.0.0.1", "--out", out, secretHistory)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if n := srv.Calls(); n != 0 {
			t.Errorf("the heal model was called %d times, want 0", n)
		}
		replayed, total, healed, calls := replayCounts(t, r.stdout)
		if calls != "0" || healed != "0" || replayed != total {
			t.Errorf("%s of %s replayed, %s healed, %s model calls; want all, 0, 0", replayed, total, healed, calls)
		}
		apps := site.Applications()
		if len(apps) != 1 || apps[0].Email != secret || apps[0].Name != "Ada Lovelace" {
			t.Fatalf("the site received %+v", apps)
		}
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Error("the secret is in the command's output")
		}
		err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	// Reordered, as JSON, with the heal model available (demo --replay
	// fails unless the site received exactly one application, so exit 0
	// says it did).
	t.Run("reordered", func(t *testing.T) {
		r := cli(t, nil, "demo", "--replay", history, "--heal", "--site-version", "reordered", "--json", "--out", filepath.Join(dir, "reordered"))
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
				Error      any
			} `json:"replay"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if !got.Result.Success || got.Replay == nil || got.Replay.ModelCalls != 0 || got.Replay.Healed != 0 || len(got.Replay.Actions) != 10 || got.Replay.Error != nil {
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
		if err := os.MkdirAll(filepath.Dir(cv), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cv, []byte("Grace Hopper\n"), 0o644); err != nil {
			t.Fatal(err)
		}
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
		// One heal step, every other step replayed (a fence could split a
		// recorded step's batch into two replayed steps).
		heals, others := 0, 0
		for _, it := range h.Items {
			switch it.Source {
			case agent.SourceHeal:
				heals++
			case agent.SourceReplay:
			default:
				others++
			}
		}
		if heals != 1 || others != 0 {
			t.Errorf("the replay's history has %d heal steps and %d neither replayed nor healed; want 1 and 0", heals, others)
		}
		// The trace says what was replayed, and its chain holds.
		menuTrace := filepath.Join(dir, "menu", "trace.jsonl")
		if rep, err := trace.VerifyFile(menuTrace); err != nil || !rep.Closed {
			t.Fatalf("the replay's trace: %+v %v", rep, err)
		}
		md := traceReplayMeta(t, menuTrace)
		hb, err := os.ReadFile(history)
		if err != nil {
			t.Fatal(err)
		}
		recRep, err := trace.VerifyFile(filepath.Join(rec, "trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if md.SHA256 != fmt.Sprintf("%x", sha256.Sum256(hb)) || md.History != history || md.RecordingHead != recRep.Head ||
			md.HealModel != "openai:heal" || strings.Join(md.Vars, ",") != "cv,name" || md.Rebase[recOrigin[1]] != site.URL() {
			t.Errorf("the trace's replay metadata: %+v", md)
		}
		html, err := os.ReadFile(filepath.Join(dir, "menu", "report.html"))
		if err != nil || !bytes.Contains(html, []byte("1 healed by the model")) {
			t.Errorf("the report does not show the heal step (err %v)", err)
		}
	})

	// A recording whose "Senior Go Engineer" link had a look-alike: the
	// matcher can only choose it by position, which --allow-ambiguous
	// accepts (the refusal without it: TestReplayApprover).
	t.Run("ambiguous allowed", func(t *testing.T) {
		ambiguous := write("ambiguous.json", editHistory(t, history, func(items []any) {
			elem := items[1].(map[string]any)["actions"].([]any)[0].(map[string]any)["element"].(map[string]any)
			elem["similar"], elem["ordinal"] = 2, 1
			delete(elem, "distinct")
		}))
		site, err := demosite.Start(demosite.Original)
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		r := cli(t, nil, "replay", "--rebase", recOrigin[1]+"="+site.URL(), "--allowed-domains", "127.0.0.1", "--file", filepath.Join(rec, demosite.CVName),
			"--allow-ambiguous", "--out", filepath.Join(dir, "amb"), ambiguous)
		if r.code != 0 || len(site.Applications()) != 1 {
			t.Fatalf("--allow-ambiguous: exit %d, %d applications\n%s", r.code, len(site.Applications()), r.stderr)
		}
		if !strings.Contains(r.stdout, "1 chosen by position among look-alikes (allowed)") {
			t.Errorf("the summary does not say one element was found by position:\n%s", r.stdout)
		}
	})

	t.Run("closed fails naming the step", func(t *testing.T) {
		r := cli(t, nil, "demo", "--replay", history, "--site-version", "closed", "--json", "--out", filepath.Join(dir, "closed"))
		if r.code != exitReplay {
			t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitReplay, r.stdout, r.stderr)
		}
		for _, want := range []string{"replay step 2 action 0 (click)", `"Apply for this job"`, "candidates:"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		var got struct {
			Replay *struct {
				Error *struct {
					Step, Action  int
					Name, Element string
					URL, Reason   string
					Candidates    []struct{ Tag, Name string }
				}
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if got.Replay == nil || got.Replay.Error == nil {
			t.Fatalf("the JSON has no replay error:\n%s", r.stdout)
		}
		e := got.Replay.Error
		if e.Step != 2 || e.Action != 0 || e.Name != "click" || !strings.Contains(e.Element, "Apply for this job") ||
			!strings.HasSuffix(e.URL, "/jobs/go-engineer.html") || e.Reason != agent.ErrReplayNoMatch.Error() || len(e.Candidates) == 0 {
			t.Errorf("the JSON's replay error: %+v", e)
		}
	})
}

// editHistory returns the history file at path with edit applied to its
// items (decoded as generic JSON).
func editHistory(t *testing.T, path string, edit func(items []any)) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	edit(raw["history"].([]any))
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	return b
}

// replayTraceMeta is the replay metadata of a trace's open record.
type replayTraceMeta struct {
	History       string            `json:"history"`
	SHA256        string            `json:"history_sha256"`
	RecordingHead string            `json:"recording_trace_head"`
	Vars          []string          `json:"vars"`
	Rebase        map[string]string `json:"rebase"`
	HealModel     string            `json:"heal_model"`
}

func traceReplayMeta(t *testing.T, path string) replayTraceMeta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var rec trace.Record
	var open struct {
		Replay replayTraceMeta `json:"replay"`
	}
	if err := json.Unmarshal(first, &rec); err != nil || rec.Type != trace.TypeOpen {
		t.Fatalf("the trace's first record %s: %v", first, err)
	}
	if err := json.Unmarshal(rec.Data, &open); err != nil {
		t.Fatal(err)
	}
	return open.Replay
}

// checkDemoRecording checks a demo run's output (r) and folder: the
// application, the trace (verified, its head printed), the report, verify
// catching an edited copy, and report regenerating the HTML.
func checkDemoRecording(t *testing.T, out string, r cliResult) {
	for _, want := range []string{"done: Applied for Senior Go Engineer", "the site received: Ada Lovelace <ada@example.com>, 5-10 years, CV cv-ada-lovelace.txt", "report:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rep, err := trace.VerifyFile(filepath.Join(out, "trace.jsonl"))
	if err != nil || !rep.Closed {
		t.Fatalf("demo trace: %+v %v", rep, err)
	}
	if !strings.Contains(r.stdout, rep.Head) {
		t.Errorf("stdout does not print the trace head %s", rep.Head)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !bytes.Contains(html, []byte("trace intact")) || !bytes.Contains(html, []byte("data:image/jpeg;base64,")) {
		t.Fatalf("report missing, unverified or without screenshots (err %v)", err)
	}
	if bytes.Contains(html, []byte(" steps · 0.0 s")) {
		t.Fatal("report shows a run that took no time")
	}

	// verify agrees, and catches an edited copy.
	if v := cli(t, nil, "verify", filepath.Join(out, "trace.jsonl")); v.code != 0 || !strings.HasPrefix(v.stdout, "ok:") {
		t.Fatalf("verify: %d %s %s", v.code, v.stdout, v.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(t.TempDir(), "forged.jsonl")
	if err := os.WriteFile(forged, bytes.Replace(raw, []byte("Ada Lovelace"), []byte("Eve Mallory!"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := cli(t, nil, "verify", forged); v.code != 1 || !strings.Contains(v.stderr, "edited") {
		t.Fatalf("verify of a forged trace: exit %d, stderr %s", v.code, v.stderr)
	}

	// report regenerates the HTML from the trace.
	again := filepath.Join(t.TempDir(), "again.html")
	if rr := cli(t, nil, "report", "-o", again, filepath.Join(out, "trace.jsonl")); rr.code != 0 || strings.TrimSpace(rr.stdout) != again {
		t.Fatalf("report: %d %q %s", rr.code, rr.stdout, rr.stderr)
	}
}

// TestReplayApprover: replay's approval policy refuses an element chosen
// by position unless --allow-ambiguous, and evaluate unless
// --allow-evaluate; a refused ambiguous step's error is exit code 5 and
// the JSON's replay error.
func TestReplayApprover(t *testing.T) {
	ctx := context.Background()
	amb := agent.ApprovalRequest{Action: "click", Params: json.RawMessage(`{"index":12}`), Match: &match.Result{Index: 12, Strategy: match.ByPosition, Ambiguous: true}}
	eval := agent.ApprovalRequest{Action: "evaluate", Params: json.RawMessage(`{"code":"document.title"}`)}
	click := agent.ApprovalRequest{Action: "click", Params: json.RawMessage(`{"index":3}`)}
	for _, c := range []struct {
		name  string
		a     replayApprover
		req   agent.ApprovalRequest
		allow bool
		why   string
	}{
		{"ambiguous refused", replayApprover{}, amb, false, "--allow-ambiguous"},
		{"ambiguous allowed", replayApprover{allowAmbiguous: true}, amb, true, ""},
		{"evaluate refused", replayApprover{allowAmbiguous: true}, eval, false, "--allow-evaluate"},
		{"evaluate allowed", replayApprover{allowEvaluate: true}, eval, true, ""},
		{"a plain click", replayApprover{}, click, true, ""},
	} {
		d, err := c.a.Approve(ctx, c.req)
		if err != nil || d.Allow != c.allow || !strings.Contains(d.Reason, c.why) {
			t.Errorf("%s: %+v %v; want allow %v and a reason naming %q", c.name, d, err, c.allow, c.why)
		}
	}

	// The engine's error for a refused choice, as the command ends with it.
	re := &agent.ReplayError{Step: 1, Action: 0, Name: "click", URL: "http://127.0.0.1:1/", Element: `<a> "Senior Go Engineer"`,
		Err:        fmt.Errorf("%w: %w: the approval policy refused the choice by position", agent.ErrReplayAmbiguous, agent.ErrDenied),
		Candidates: []match.Candidate{{Index: 12, Tag: "a", Name: "Senior Go Engineer", Score: 0.6}, {Index: 14, Tag: "a", Name: "Senior Go Engineer", Score: 0.6}}}
	err := fmt.Errorf("replay: %w", re)
	out := &runOutcome{Result: &agent.Result{}, Replay: &replaySummary{Actions: []agent.ReplayedAction{{Step: 1, Name: "click", Error: "denied"}}}}
	noteReplayError(out, err)
	var ee *exitError
	if e := replayExit(out, err); !errors.As(e, &ee) || ee.code != exitReplay {
		t.Fatalf("replayExit: %v, want exit code %d", e, exitReplay)
	}
	var b strings.Builder
	printReplayOutcome(&b, out, true)
	var got struct {
		Replay struct {
			Error replayFailure
		}
	}
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if e := got.Replay.Error; e.Step != 1 || e.Name != "click" || e.Reason != agent.ErrReplayAmbiguous.Error() || len(e.Candidates) != 2 || !strings.Contains(e.Error, "position") {
		t.Errorf("the JSON's replay error: %+v", e)
	}
	b.Reset()
	printReplayOutcome(&b, out, false)
	if !strings.Contains(b.String(), "replay: 0 of 1 actions replayed, 1 failed, 0 skipped") {
		t.Errorf("the summary: %s", b.String())
	}
}
