package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/report"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
)

// driveFlags are the flags of the commands through which another program
// drives a browser step by step (mcp, open): the browser, where the trace
// goes, secrets and what the caller may do.
type driveFlags struct {
	browser  browserFlags
	outDir   string
	secrets  secretFlags
	evaluate bool
	deny     string
}

func (f *driveFlags) register(fs *flag.FlagSet) {
	f.browser.register(fs)
	f.secrets = secretFlags{}
	fs.StringVar(&f.outDir, "out", "", "folder for the trace, history, screenshots, files and report (default: a new folder under "+stateDirHint+")")
	fs.Var(f.secrets, "secret-env", "a secret usable as <secret>name</secret>, read from an environment variable: name=ENVVAR (repeatable); it never appears in results, history or trace")
	fs.BoolVar(&f.evaluate, "allow-evaluate", false, "offer the evaluate action (JavaScript written by the caller runs in the page)")
	fs.StringVar(&f.deny, "deny", "", "comma-separated risk classes to refuse: read, input, submit, navigate, script, upload, download")
}

// risks parses a comma-separated list of risk classes.
func risks(s string) ([]agent.Risk, error) {
	known := map[agent.Risk]bool{agent.RiskRead: true, agent.RiskInput: true, agent.RiskSubmit: true, agent.RiskNavigate: true, agent.RiskScript: true, agent.RiskUpload: true, agent.RiskDownload: true}
	var out []agent.Risk
	for _, r := range splitList(s) {
		if !known[agent.Risk(r)] {
			return nil, usagef("unknown risk class %q (want read, input, submit, navigate, script, upload or download)", r)
		}
		out = append(out, agent.Risk(r))
	}
	return out, nil
}

// stateDirHint names the default output folder in help texts.
const stateDirHint = "$XDG_STATE_HOME/browseragent (~/.local/state/browseragent)"

// stateDir is the per-user folder for the traces of driven sessions.
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "browseragent"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no folder for the trace: %w (pass --out)", err)
	}
	return filepath.Join(home, ".local", "state", "browseragent"), nil
}

// drivenConfig is one driven session as a command sets it up.
type drivenConfig struct {
	flags *driveFlags
	// kind names the session in its folder name and trace ("mcp", "shell").
	kind string
	// approver is asked before each action after the --deny list; nil
	// allows.
	approver agent.Approver
	// settings are the Driver's settings before the flags are applied.
	settings agent.Settings
	// opts are extra session options.
	opts []session.Option
}

// driven is a started browser session with its Driver and its trace.
type driven struct {
	Session *session.Session
	Driver  *agent.Driver
	// Dir holds the trace, history, screenshots, files and report.
	Dir, Trace, Report string

	tw     *trace.Writer
	traced *trace.AgentObserver
}

// startDriven creates the output folder and the trace, starts the browser
// and returns the Driver over it. Close undoes all of it.
func startDriven(ctx context.Context, cfg drivenConfig) (*driven, error) {
	f := cfg.flags
	dir := f.outDir
	if dir == "" {
		base, err := stateDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(base, cfg.kind+"-"+time.Now().UTC().Format("20060102-150405.000"))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	deny, err := risks(f.deny)
	if err != nil {
		return nil, err
	}
	d := &driven{Dir: dir, Trace: filepath.Join(dir, "trace.jsonl"), Report: filepath.Join(dir, "report.html")}
	d.tw, err = trace.Create(d.Trace, trace.WithSecrets(f.secrets),
		trace.WithMetadata(map[string]any{"task": agent.DriverTask, "mode": cfg.kind, "started": time.Now().UTC()}))
	if err != nil {
		return nil, err
	}
	opts := append([]session.Option{session.WithBusHook(d.tw.ObserveBus)}, cfg.opts...)
	d.Session, err = startSession(ctx, &f.browser, opts...)
	if err != nil {
		d.tw.Close()
		return nil, err
	}
	set := cfg.settings
	set.RunDir = dir
	set.SensitiveData = f.secrets
	d.traced = trace.NewAgentObserver(d.tw, dir)
	set.Observers = append(set.Observers, d.traced)
	if !f.evaluate {
		set.ExcludeActions = append(set.ExcludeActions, "evaluate")
	}
	set.Approver = denyThen(deny, cfg.approver)
	d.Driver, err = agent.NewDriver(d.Session, set)
	if err != nil {
		stopSession(d.Session)
		d.tw.Close()
		return nil, err
	}
	return d, nil
}

// denyThen refuses the listed risk classes, then asks next (nil: allow).
func denyThen(deny []agent.Risk, next agent.Approver) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
		for _, r := range deny {
			if req.Risk == r {
				return agent.Decision{Reason: fmt.Sprintf("%s actions are refused in this session (--deny)", r)}, nil
			}
		}
		if next == nil {
			return agent.Decision{Allow: true}, nil
		}
		return next.Approve(ctx, req)
	})
}

// Close ends the Driver, stops the browser, closes the trace and writes the
// report; it returns the first error. It is bounded even when the caller's
// context has ended.
func (d *driven) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if err := d.Driver.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("history: %w", err))
	}
	if err := stopSession(d.Session); err != nil {
		errs = append(errs, err)
	}
	if err := d.traced.Err(); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	if err := d.tw.Close(); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	if err := report.WriteFile(d.Trace, d.Report); err != nil {
		errs = append(errs, fmt.Errorf("report: %w", err))
	}
	return errors.Join(errs...)
}
