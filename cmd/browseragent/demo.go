package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/demosite"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	outDir := fs.String("out", "", "folder for the trace, history, screenshots and report (default out/demo, or out/demo-replay with --replay)")
	version := fs.String("site-version", string(demosite.Original), "which version of the careers site to serve: "+versionNames()+" (docs/replay.md)")
	replayPath := fs.String("replay", "", "replay this recorded demo (OUT/history.json of an earlier demo) on --site-version without the model; the site's new address and the new CV file are passed to the replay by themselves")
	heal := fs.Bool("heal", false, "with --replay: heal a step that breaks with the bundled heal model (a scripted model that opens the job page's \"More\" menu)")
	asJSON := fs.Bool("json", false, "print the run result as JSON")
	record := fs.Bool("record", false, "record a screencast of the run into OUT/frames; the report shows it as a filmstrip")
	otel := fs.Bool("otel", false, "export OpenTelemetry spans (run, steps, model calls, actions) over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent demo [flags]")
		fmt.Fprintln(stderr, "Runs the whole agent loop offline: a bundled careers site, a scripted model, a trace and an HTML report.")
		fmt.Fprintln(stderr, "With --replay, runs a recorded demo again without the model on --site-version (docs/replay.md); exit code 5 when a step cannot be replayed.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("demo takes no arguments")
	}
	v, err := demosite.ParseVersion(*version)
	if err != nil {
		return usagef("--site-version: %v", err)
	}
	if *heal && *replayPath == "" {
		return usagef("--heal needs --replay")
	}
	var rec *agent.History
	if *replayPath != "" {
		if rec, err = loadRecording(*replayPath); err != nil {
			return err
		}
	}
	if *outDir == "" {
		*outDir = filepath.Join("out", "demo")
		if rec != nil {
			*outDir = filepath.Join("out", "demo-replay")
		}
	}
	site, err := demosite.Start(v)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := site.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	cv, err := filepath.Abs(filepath.Join(*outDir, demosite.CVName))
	if err != nil {
		return err
	}
	if err := os.WriteFile(cv, []byte(demosite.CVText), 0o644); err != nil {
		return err
	}
	// The site runs on 127.0.0.1: the agent may go nowhere else.
	bf.allowed = "127.0.0.1"
	if rec != nil {
		return replayDemo(ctx, demoReplay{rec: rec, path: *replayPath, site: site, cv: cv, heal: *heal, browser: bf, outDir: *outDir, asJSON: *asJSON, record: *record, otel: *otel}, stdout, stderr)
	}
	model := scripted.New(demosite.Script(cv), scripted.WithName("scripted-demo"))
	fmt.Fprintf(stderr, "demo site: %s\n", site.URL())
	out, err := runAgent(ctx, runConfig{
		task:     demosite.Task + " The site is at " + site.URL() + "/",
		model:    model,
		browser:  bf,
		outDir:   *outDir,
		settings: agent.Settings{MaxSteps: 15, AvailableFilePaths: []string{cv}},
		quiet:    *asJSON, otel: *otel, record: *record,
	}, stderr)
	printOutcome(stdout, out, *asJSON)
	if err != nil {
		return err
	}
	apps := site.Applications()
	switch {
	case out.Result == nil || !out.Result.Success:
		return fmt.Errorf("demo: %w: %s", errNotSuccessful, strings.Join(scriptErrors(model), "; "))
	case len(apps) != 1:
		return fmt.Errorf("demo: the site received %d applications, want 1", len(apps))
	}
	if !*asJSON {
		a := apps[0]
		fmt.Fprintf(stdout, "the site received: %s <%s>, %s years, CV %s (%d bytes), reference %s\n", a.Name, a.Email, a.Experience, a.CVName, a.CVSize, a.Reference)
	}
	return nil
}

func scriptErrors(m *scripted.Model) []string {
	var out []string
	for _, e := range m.Errors() {
		out = append(out, e.Error())
	}
	if len(out) == 0 {
		out = append(out, errors.New("see the report").Error())
	}
	return out
}

func versionNames() string {
	var names []string
	for _, v := range demosite.Versions() {
		names = append(names, string(v))
	}
	return strings.Join(names, ", ")
}

// demoReplay is demo --replay's run.
type demoReplay struct {
	rec          *agent.History
	path         string // the history file
	site         *demosite.Site
	cv           string // the CV file written for this run
	heal         bool
	browser      browserFlags
	outDir       string
	asJSON       bool
	record, otel bool
}

// replayDemo replays a recorded demo on d.site: every loopback origin of
// the recording is rebased onto the site's, and the recorded CV upload
// takes this run's CV file.
func replayDemo(ctx context.Context, d demoReplay, stdout, stderr io.Writer) error {
	opts := agent.ReplayOptions{Rebase: map[string]string{}, Vars: map[string]string{}}
	for _, o := range recordedOrigins(d.rec) {
		if u, err := url.Parse(o); err == nil && u.Hostname() == "127.0.0.1" && o != d.site.URL() {
			opts.Rebase[o] = d.site.URL()
		}
	}
	for _, v := range agent.ReplayVariables(d.rec) {
		if !v.Secret && filepath.Base(v.Value) == demosite.CVName {
			opts.Vars[v.Name] = d.cv
		}
	}
	var heal llm.Model
	if d.heal {
		heal = scripted.New(demosite.HealScript(), scripted.WithName("scripted-heal"))
		opts.Model = heal
	}
	plan, err := planRecording(d.rec, opts)
	if err != nil {
		return err
	}
	if v := missingSecrets(plan, nil); len(v) > 0 {
		return usagef("step %d types <secret>%s</secret>: demo --replay has no secrets; use replay --secret-env", v[0].Step, v[0].Name)
	}
	// The same upload rule as replay: only this run's CV file (the cv
	// variable) is uploaded, never a path the history names.
	uploads, err := trustedUploads(plan, opts.Vars, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "demo site (%s): %s\n", d.site.Version(), d.site.URL())
	out, err := runAgent(ctx, runConfig{
		task: d.rec.Task, model: heal, browser: d.browser, outDir: d.outDir,
		settings: agent.Settings{AvailableFilePaths: uploads, Approver: replayApprover{}},
		quiet:    d.asJSON, otel: d.otel, record: d.record,
		replay: &replayConfig{history: d.rec, path: d.path, opts: opts},
	}, stderr)
	noteReplayError(out, err)
	printReplayOutcome(stdout, out, d.asJSON)
	if err := replayExit(out, err); err != nil {
		return err
	}
	apps := d.site.Applications()
	if len(apps) != 1 {
		return fmt.Errorf("demo: the site received %d applications, want 1", len(apps))
	}
	if !d.asJSON {
		a := apps[0]
		fmt.Fprintf(stdout, "the site received: %s <%s>, %s years, CV %s (%d bytes), reference %s\n", a.Name, a.Email, a.Experience, a.CVName, a.CVSize, a.Reference)
	}
	return nil
}

// recordedOrigins lists the origins a recording visited or navigated to.
func recordedOrigins(h *agent.History) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if o, err := origin(s); err == nil && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	for _, it := range h.Items {
		add(it.State.URL)
		for _, a := range it.Actions {
			var p struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(a.Params, &p) == nil {
				add(p.URL)
			}
		}
	}
	return out
}
