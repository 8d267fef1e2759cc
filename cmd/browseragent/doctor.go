package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/control"
)

// Bounds of the doctor's version checks. `chrome --version` answers in
// 0.3 s here; a headless launch in about a second (measured), more on a
// loaded machine.
const (
	versionTimeout = 10 * time.Second
	launchTimeout  = 30 * time.Second
)

// doctorReport is what `browseragent doctor --json` prints.
type doctorReport struct {
	// OK: a browser was found and told its version.
	OK      bool   `json:"ok"`
	Browser string `json:"browser,omitempty"` // the binary that would be launched
	Family  string `json:"family,omitempty"`  // Chrome, Chromium, Edge, Brave
	Why     string `json:"why,omitempty"`     // the candidate that matched
	Version string `json:"version,omitempty"`
	// VersionFrom is "--version" or "launch" (headless, Browser.getVersion).
	VersionFrom string `json:"version_from,omitempty"`
	Error       string `json:"error,omitempty"`

	OS        string `json:"os"`
	Arch      string `json:"arch"`
	GoVersion string `json:"go_version"`
	// SocketDir holds the shell sessions' sockets; StateDir their traces.
	SocketDir string `json:"socket_dir"`
	StateDir  string `json:"state_dir,omitempty"`

	// Places are the candidates in the order they are tried.
	Places []cdp.Probe `json:"places"`
}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	launch := fs.Bool("launch", false, "start the browser headless and ask it its version, proving it runs (default: run it with --version; Windows always launches)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent doctor [--json] [--launch]")
		fmt.Fprintln(stderr, "Say which browser sessions would launch and why, its version, and where sessions keep their files.")
		fmt.Fprintln(stderr, "Exits 0 when a browser is usable, 1 otherwise.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("doctor takes no arguments")
	}
	rep := diagnose(ctx, *launch)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printDoctor(stdout, rep)
	}
	if !rep.OK {
		// stdout has the report; stderr gets the one-line reason.
		return &exitError{code: exitFailed, err: errors.New(rep.Error)}
	}
	return nil
}

// diagnose finds the browser and asks its version; the rest is read from
// the environment.
func diagnose(ctx context.Context, launch bool) doctorReport {
	r := cdp.FindChromeReport()
	rep := doctorReport{
		OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(),
		SocketDir: control.DefaultDir(), Places: r.Probes,
	}
	if d, err := stateDir(); err == nil {
		rep.StateDir = d
	}
	p, ok := r.Chosen()
	if !ok {
		rep.Error = r.Err().Error()
		return rep
	}
	rep.Browser, rep.Family, rep.Why = p.Found, p.Browser, p.Why
	v, from, err := browserVersion(ctx, p.Found, launch || runtime.GOOS == "windows")
	rep.Version, rep.VersionFrom = v, from
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	rep.OK = true
	return rep
}

// browserVersion runs bin --version, or, when launch is set or --version
// printed no version (chrome.exe prints nothing), launches it headless and
// asks Browser.getVersion. It returns the version and which way it was
// found.
func browserVersion(ctx context.Context, bin string, launch bool) (string, string, error) {
	if !launch {
		v, err := versionFlag(ctx, bin)
		if err != nil {
			return "", "--version", err
		}
		if strings.ContainsAny(v, "0123456789") {
			return v, "--version", nil
		}
	}
	v, err := versionByLaunch(ctx, bin)
	return v, "launch", err
}

// versionFlag runs bin --version, bounded by versionTimeout.
func versionFlag(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	// A child holding the pipe open must not outlive the bound.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s --version did not answer within %v", bin, versionTimeout)
		}
		return "", fmt.Errorf("%s --version failed: %v: %s", bin, err, firstLine(out.String()))
	}
	return firstLine(out.String()), nil
}

// versionByLaunch starts bin headless with a temporary profile and asks
// it Browser.getVersion: slower than --version, but it proves the browser
// starts and speaks CDP.
func versionByLaunch(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{ExecPath: bin, StartTimeout: launchTimeout})
	if err != nil {
		return "", fmt.Errorf("launching %s: %w", bin, err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), launchTimeout)
		defer cancel()
		_ = b.Close(closeCtx)
	}()
	conn, err := cdp.Dial(ctx, b.WebSocketURL())
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", bin, err)
	}
	defer conn.Close()
	v, err := cdpproto.Call(ctx, conn.Browser(), browser.GetVersion, cdpproto.Empty{})
	if err != nil {
		return "", fmt.Errorf("asking %s its version: %w", bin, err)
	}
	return v.Product, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

func printDoctor(w io.Writer, rep doctorReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if rep.Browser != "" {
		fmt.Fprintf(tw, "browser:\t%s (%s; %s)\n", rep.Browser, cmp.Or(rep.Family, "any"), rep.Why)
	} else {
		fmt.Fprintf(tw, "browser:\tnone found\n")
	}
	if rep.Version != "" {
		fmt.Fprintf(tw, "version:\t%s (from %s)\n", rep.Version, rep.VersionFrom)
	}
	if rep.Error != "" {
		fmt.Fprintf(tw, "problem:\t%s\n", rep.Error)
	}
	fmt.Fprintf(tw, "system:\t%s/%s, built with %s\n", rep.OS, rep.Arch, rep.GoVersion)
	fmt.Fprintf(tw, "sockets:\t%s\n", rep.SocketDir)
	if rep.StateDir != "" {
		fmt.Fprintf(tw, "traces:\t%s\n", rep.StateDir)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nplaces looked at, in order:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	chosen := false
	for _, p := range rep.Places {
		state, place := "no", p.String()
		switch {
		case p.Found != "" && !chosen:
			state, chosen = "used", true
		case p.Found != "":
			state = "found"
		}
		if p.Name != "" && p.Found != "" {
			place += ": " + p.Found
		}
		why := p.Why
		if p.Name != "" && why == "on PATH" {
			why = "" // said by the place
		}
		row := "  " + state + "\t" + place + "\t" + why
		if p.Reason != "" {
			row += "\t" + p.Reason
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	if len(rep.Places) == 1 && rep.Places[0].FromEnv() {
		fmt.Fprintf(w, "(no other place is tried while $%s is set)\n", cdp.EnvChrome)
	}
}
