//go:build !unix && !windows

package cdp

import (
	"context"
	"os"
	"os/exec"
)

// On systems other than Unix and Windows, Launch starts the browser
// without a process group or a job: Close kills the browser process only,
// and its helpers may outlive it.

func setProcAttrs(cmd *exec.Cmd)                           {}
func lockThread()                                          {}
func unlockThread()                                        {}
func adoptProcess(*os.Process) (*procGroup, error)         { return nil, nil }
func processAlive(pid int) bool                            { return pid > 0 } // unknown: assume alive, so nothing is reaped
func waitGroupGone(context.Context, int, *procGroup) error { return nil }

// procGroup: there are no groups here.
type procGroup struct{}

func killGroup(pid int, _ *procGroup) {
	if pid <= 0 {
		return // the group only: there is none
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// interruptProcess asks the browser to quit with os.Interrupt where the
// system can send it.
func interruptProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(os.Interrupt)
}

// ReapLeftovers does nothing here: there is no way to find leftover
// browsers.
func ReapLeftovers() (int, error) { return 0, nil }

// tempDirEnv is the environment that makes dir the browser's temporary
// directory.
func tempDirEnv(dir string) []string { return []string{"TMPDIR=" + dir} }
