//go:build !linux

package cdp

import (
	"context"
	"os"
	"os/exec"
)

func setProcAttrs(cmd *exec.Cmd) {}
func lockThread()                {}
func unlockThread()              {}

func killGroup(pid int) {
	if pid < 0 {
		pid = -pid
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// interruptProcess asks the browser to quit with os.Interrupt, which fails
// on Windows (Close then kills at once).
func interruptProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(os.Interrupt)
}

// ReapLeftovers is implemented on Linux only; elsewhere it does nothing.
func ReapLeftovers() (int, error) { return 0, nil }

func waitGroupGone(ctx context.Context, pgid int) error { return nil }
