package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

// demoScript applies for the Go job on the bundled careers site. Elements
// are named by what a person sees (link text, placeholders, field names),
// never by index: the scripted model finds them in the same page text a
// real model reads.
func demoScript(cvPath string) []scripted.Step {
	return []scripted.Step{
		{
			Evaluation: "Start: the careers page lists open positions.",
			Memory:     "Task: apply for the Senior Go Engineer job.",
			NextGoal:   "Open the Senior Go Engineer posting.",
			Actions:    []scripted.Action{{Name: "click", Label: "Senior Go Engineer", Tag: "a"}},
		},
		{
			WaitFor:    "Apply for this job",
			Evaluation: "Success: the job posting is open.",
			NextGoal:   "Open the application form.",
			Actions:    []scripted.Action{{Name: "click", Label: "Apply for this job", Tag: "a"}},
		},
		{
			WaitFor:    "Submit application",
			Evaluation: "Success: the application form is shown.",
			Memory:     "Form fields: name, email, experience, CV, consent.",
			NextGoal:   "Fill in every field and attach the CV.",
			Actions: []scripted.Action{
				{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace", "clear": true}},
				{Name: "input", Label: "you@example.com", Params: map[string]any{"text": "ada@example.com", "clear": true}},
				{Name: "select_dropdown", Label: "experience", Tag: "select", Params: map[string]any{"text": "5 to 10 years"}},
				{Name: "upload_file", Label: "cv", Tag: "input", Params: map[string]any{"path": cvPath}},
				{Name: "click", Label: "consent", Tag: "input"},
			},
		},
		{
			Evaluation: "Success: the fields are filled and the CV is attached.",
			NextGoal:   "Submit the application.",
			Actions:    []scripted.Action{{Name: "click", Label: "Submit application", Tag: "button"}},
		},
		{
			WaitFor:    "Application received",
			Evaluation: "Success: the site confirmed the application.",
			NextGoal:   "Report the result.",
			Actions: []scripted.Action{{Name: "done", Params: map[string]any{
				"success": true,
				"text":    "Applied for Senior Go Engineer as Ada Lovelace; the site answered \"Application received\".",
			}}},
		},
	}
}

const demoTask = "Apply for the Senior Go Engineer position on the careers site: name Ada Lovelace, email ada@example.com, 5 to 10 years of Go experience, attach the CV file, agree to data processing, submit, and confirm that the application was received."

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	outDir := fs.String("out", filepath.Join("out", "demo"), "folder for the trace, history, screenshots and report")
	asJSON := fs.Bool("json", false, "print the run result as JSON")
	record := fs.Bool("record", false, "record a screencast of the run into OUT/frames; the report shows it as a filmstrip")
	otel := fs.Bool("otel", false, "export OpenTelemetry spans (run, steps, model calls, actions) over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent demo [flags]")
		fmt.Fprintln(stderr, "Runs the whole agent loop offline: a bundled careers site, a scripted model, a trace and an HTML report.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("demo takes no arguments")
	}
	site, err := startDemoSite()
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
	cv, err := filepath.Abs(filepath.Join(*outDir, "cv-ada-lovelace.txt"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(cv, []byte("Ada Lovelace\nAnalyst, programmer, Go enthusiast.\n"), 0o644); err != nil {
		return err
	}
	// The site runs on 127.0.0.1: the agent may go nowhere else.
	bf.allowed = "127.0.0.1"
	model := scripted.New(demoScript(cv), scripted.WithName("scripted-demo"))
	fmt.Fprintf(stderr, "demo site: %s\n", site.URL())
	out, err := runAgent(ctx, runConfig{
		task:     demoTask + " The site is at " + site.URL() + "/",
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
