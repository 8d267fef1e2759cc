//go:build linux

package cdp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own group: Close kills renderers and helpers too
		Pdeathsig: syscall.SIGKILL, // the browser dies with this process (see Browser.run)
	}
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }

// killGroup SIGKILLs the process group led by pid (Launch makes the browser
// a group leader), and pid itself in case it left the group. A negative pid
// kills only the group -pid.
func killGroup(pid int) {
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
// pgid runs any more, killing again meanwhile. Zombies count as gone: the
// killed helpers are reparented to init, which may reap them seconds later
// (about 2 s on a Firecracker VM's init, measured), and a zombie neither
// runs nor writes to the profile.
func waitGroupGone(ctx context.Context, pgid int) error {
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

// groupRunning reports whether a process of group pgid exists that is not
// a zombie. It scans /proc only while kill(-pgid, 0) finds members.
func groupRunning(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != want {
			continue
		}
		if f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// processAlive reports whether pid exists (a zombie counts as alive).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ReapLeftovers kills browsers left by earlier runs that died without Close,
// and removes their profiles. It considers only temporary profiles and
// private TMPDIRs made by Launch (os.TempDir()/ProfilePrefix* and
// TempDirPrefix*) whose owner marker names a process that no longer exists;
// a directory without a marker (being created right now) or with a live
// owner is left alone. It returns how many browser processes it killed.
// Launch calls it; calling it directly is safe too.
func ReapLeftovers() (int, error) {
	tmp := os.TempDir()
	var dirs []string
	for _, prefix := range []string{ProfilePrefix, TempDirPrefix} {
		m, err := filepath.Glob(filepath.Join(tmp, prefix+"*"))
		if err != nil {
			return 0, err
		}
		dirs = append(dirs, m...)
	}
	dead := map[string]bool{}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || owner == os.Getpid() || processAlive(owner) {
			continue
		}
		dead[filepath.Clean(d)] = true
	}
	if len(dead) == 0 {
		return 0, nil
	}
	var victims []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if !reapUses(cmdline, dead) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		victims = append(victims, pid)
	}
	// A killed process may still be writing into the profile for a moment
	// (the signal is asynchronous): wait until each is gone or a zombie,
	// then remove, retrying briefly.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range victims {
		for time.Now().Before(deadline) {
			cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if err != nil || len(cmd) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var errs []error
	for d := range dead {
		if err := removeAllRetry(context.Background(), d); err != nil {
			errs = append(errs, err)
		}
	}
	return len(victims), errors.Join(errs...)
}

// reapUses reports whether a process's command line names one of the dead
// profiles: the browser (--user-data-dir=DIR) and its helpers, such as the
// crash handler (--database=DIR/Crashpad), which may sit in another group.
func reapUses(cmdline []byte, dead map[string]bool) bool {
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		a := string(arg)
		if _, v, ok := strings.Cut(a, "="); ok {
			a = v
		}
		for d := range dead {
			if a == d || strings.HasPrefix(a, d+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}
