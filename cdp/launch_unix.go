//go:build unix

package cdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// adoptProcess does nothing on Unix: the browser leads its own process
// group from the start (setProcAttrs), which killGroup kills.
func adoptProcess(*os.Process) (*procGroup, error) { return nil, nil }

// procGroup is the browser's process group on Unix: its id is the
// browser's pid, so there is nothing to keep.
type procGroup struct{}

// killGroup SIGKILLs the process group led by pid (Launch makes the browser
// a group leader), and pid itself in case it left the group. A negative pid
// kills only the group -pid.
func killGroup(pid int, _ *procGroup) {
	if pid < 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return
	}
	if pid == 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// interruptProcess asks the browser process (only it, not its helpers) to
// quit: SIGINT makes Chromium shut down cleanly.
func interruptProcess(pid int) error {
	if pid <= 0 {
		return syscall.ESRCH
	}
	return syscall.Kill(pid, syscall.SIGINT)
}

// waitGroupGone waits (bounded by ctx and 10 s) until no process of group
// pgid runs any more (groupRunning decides what counts), killing again
// meanwhile.
func waitGroupGone(ctx context.Context, pgid int, _ *procGroup) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if !groupRunning(pgid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d not empty", pgid)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// processAlive reports whether pid exists (a zombie counts as alive).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// tempDirEnv is the environment that makes dir the browser's temporary
// directory.
func tempDirEnv(dir string) []string { return []string{"TMPDIR=" + dir} }
