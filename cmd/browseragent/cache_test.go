package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/scriptserver"
)

// run --cache twice on the careers site: the second run takes both page
// steps from the cache, asks the model only for done, and says so.
func TestRunCache(t *testing.T) {
	site, err := demosite.Start(demosite.Original)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	steps := []scripted.Step{
		{Action: "click", Label: "Senior Go Engineer", Tag: "a"},
		{WaitFor: "Apply for this job", Action: "click", Label: "Apply for this job", Tag: "a"},
		{WaitFor: "Submit application", Action: "done", Params: map[string]any{"text": "the form is open", "success": true}},
	}
	cacheDir := filepath.Join(t.TempDir(), "cache")
	task := "Open the application form of the Senior Go Engineer job at " + site.URL() + "/"
	for round, script := range [][]scripted.Step{steps, steps[2:]} {
		model := scripted.New(script)
		srv, err := scriptserver.Start(model, scriptserver.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--base-url", srv.URL(),
			"--vision", "off", "--allowed-domains", "127.0.0.1", "--cache", cacheDir, "--out", filepath.Join(t.TempDir(), "run"), task)
		calls := srv.Calls()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if r.code != 0 {
			t.Fatalf("round %d: exit %d\nstdout:\n%s\nstderr:\n%s", round, r.code, r.stdout, r.stderr)
		}
		if errs := model.Errors(); len(errs) > 0 {
			t.Fatalf("round %d: the script failed: %v", round, errs)
		}
		// A page still loading when observed costs a wait reply (never
		// cached): every miss is one model call, whatever their number.
		hits := []int{0, 2}[round]
		m := regexp.MustCompile(`cache: (\d+) hits, (\d+) misses, (\d+) model calls saved`).FindStringSubmatch(r.stdout)
		if m == nil || m[1] != strconv.Itoa(hits) || m[3] != m[1] || m[2] != strconv.Itoa(calls) {
			t.Fatalf("round %d: want %d hits and one miss per model call (%d) in the cache line:\n%s", round, hits, calls, r.stdout)
		}
		if round == 1 && calls != 1 {
			t.Logf("round 2 made %d model calls (waits for a loading page)", calls)
		}
	}
	// A cache folder that is a file is refused before anything starts.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--cache", file, "say ok")
	if r.code == 0 || !strings.Contains(r.stderr, "--cache") || !strings.Contains(r.stderr, "not a directory") {
		t.Fatalf("a file as --cache: exit %d, stderr %s", r.code, r.stderr)
	}
}
