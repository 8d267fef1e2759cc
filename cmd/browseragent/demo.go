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
	"github.com/browseragent/browseragent/internal/demosite"
)

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
	site, err := demosite.Start(demosite.Original)
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
