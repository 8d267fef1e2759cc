package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// The Temporal commands (worker, submit, cancel) live in the add-on command
// browseragent-temporal, built from the separate module temporal/: the core
// module must not depend on Temporal, so this CLI runs the add-on instead of
// linking it.

// addonName is the add-on command's file name (without .exe).
const addonName = "browseragent-temporal"

// addonInstall says how to get the add-on; the missing-binary error ends
// with it.
const addonInstall = "install it with\n" +
	"  go install github.com/browseragent/browseragent/temporal/cmd/browseragent-temporal@latest\n" +
	"or, in a checkout of browseragent, run 'make temporal' (it builds bin/browseragent and bin/browseragent-temporal side by side)"

// errAddonNotFound is returned when browseragent-temporal is neither next to
// this executable nor on PATH.
var errAddonNotFound = errors.New(addonName + " not found")

// addonGrace is how long the add-on has to stop after it was interrupted
// (our context cancelled: Ctrl-C, SIGTERM) before it is killed. A worker
// hands its running tasks back to Temporal in that time.
var addonGrace = 30 * time.Second

// handoff returns a command that runs the add-on with name and the same
// arguments.
func handoff(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return runAddon(ctx, append([]string{name}, args...), os.Stdin, stdout, stderr)
	}
}

// findAddon looks for the add-on next to this executable first (a release
// archive or 'make temporal' puts both in one folder), then on PATH.
func findAddon() (string, error) {
	file := addonName
	if runtime.GOOS == "windows" {
		file += ".exe"
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), file)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		looked = append(looked, "next to "+exe)
	}
	if p, err := exec.LookPath(addonName); err == nil {
		return p, nil
	} else if errors.Is(err, exec.ErrDot) {
		// A binary in the current folder found through a relative PATH
		// entry is not run (os/exec's rule): say so rather than "missing".
		return "", fmt.Errorf("%w: %s is in the current folder only through a relative PATH entry, which is not trusted; %s", errAddonNotFound, p, addonInstall)
	}
	looked = append(looked, "on PATH")
	return "", fmt.Errorf("%w (looked %s): the Temporal commands live in that separate command so that browseragent itself never depends on Temporal; %s",
		errAddonNotFound, joinOr(looked), addonInstall)
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}

// addonExit is the add-on's own non-zero exit: its code is ours, and it has
// said why on its stderr already.
type addonExit struct{ code int }

func (e *addonExit) Error() string { return fmt.Sprintf("%s exited with code %d", addonName, e.code) }
func (e *addonExit) exitCode() int { return e.code }
func (e *addonExit) silent() bool  { return true }

// runAddon runs the add-on with args, stdio passed through. When ctx ends
// (Ctrl-C, SIGTERM) the add-on gets os.Interrupt, and is killed if it has
// not stopped addonGrace later. Its exit code is returned as an addonExit.
func runAddon(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	path, err := findAddon()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Cancel = func() error {
		if runtime.GOOS == "windows" {
			return cmd.Process.Kill() // no os.Interrupt to send there
		}
		return cmd.Process.Signal(os.Interrupt)
	}
	cmd.WaitDelay = addonGrace
	err = cmd.Run()
	if cmd.ProcessState == nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	// The add-on ran: its status is the answer, whether it stopped by
	// itself or on our interrupt (an exit 0 after it is a clean stop).
	if code := exitCodeOf(cmd.ProcessState); code != 0 {
		return &addonExit{code: code}
	}
	return nil
}

// exitCodeOf is the shell's code for a finished process: its status, or
// 128+signal when a signal ended it (130 for an interrupt).
func exitCodeOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	return 1
}
