//go:build unix && !linux

package cdp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// setProcAttrs makes the browser lead a process group of its own, so that
// Close kills its renderers and helpers too. There is no Pdeathsig outside
// Linux and nothing takes its place: a browser whose owner dies without
// Close (a crash, SIGKILL) keeps running, with its helpers, until the next
// Launch on this machine reaps it (ReapLeftovers).
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// lockThread and unlockThread do nothing: only Linux's Pdeathsig ties the
// browser to the thread that started it.
func lockThread()   {}
func unlockThread() {}

// groupRunning reports whether process group pgid has a member, for
// waitGroupGone. Unlike on Linux, a zombie counts (there is no /proc to
// tell it apart); the killed helpers' parent is gone, so launchd (or init)
// reaps them, which it does at once.
func groupRunning(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// ReapLeftovers kills browsers left by earlier runs that died without Close,
// and removes their profiles. It considers only temporary profiles and
// private TMPDIRs made by Launch (os.TempDir()/ProfilePrefix* and
// TempDirPrefix*) whose owner marker names a process that no longer exists;
// a directory without a marker (being created right now) or with a live
// owner is left alone. The browsers using them are found in the output of
// ps (there is no /proc): any process whose command line names such a
// directory, with its process group if it leads one. It returns how many
// processes it killed. If ps fails, it kills nothing and removes nothing
// (a browser may still use the directories), and returns the error.
// Launch calls it; calling it directly is safe too.
func ReapLeftovers() (int, error) {
	dead, err := deadOwnedDirs()
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	// -ww: never cut a command line to the terminal's width.
	out, err := exec.Command("/bin/ps", "-axww", "-o", "pid=,pgid=,command=").Output()
	if err != nil {
		return 0, fmt.Errorf("cdp: listing processes: %w", err)
	}
	var victims []int
	for _, p := range parsePS(string(out)) {
		if p.pid == os.Getpid() || !commandUses(p.command, dead) {
			continue
		}
		if p.pgid == p.pid {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		victims = append(victims, p.pid)
	}
	// A killed process may still be writing into the profile for a moment
	// (the signal is asynchronous): wait until each is gone, then remove,
	// retrying briefly.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range victims {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return len(victims), removeDirs(dead)
}
