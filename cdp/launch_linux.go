//go:build linux

package cdp

import (
	"bytes"
	"errors"
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

// groupRunning reports whether a process of group pgid exists that is not
// a zombie, for waitGroupGone. Zombies count as gone: the killed helpers
// are reparented to init, which may reap them seconds later (about 2 s on
// a Firecracker VM's init, measured), and a zombie neither runs nor writes
// to the profile. It scans /proc only while kill(-pgid, 0) finds members.
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

// ReapLeftovers kills browsers left by earlier runs that died without Close,
// and removes their profiles. It considers only temporary profiles and
// private TMPDIRs made by Launch (os.TempDir()/ProfilePrefix* and
// TempDirPrefix*) whose owner marker names a process that no longer exists;
// a directory without a marker (being created right now) or with a live
// owner is left alone. It returns how many browser processes it killed.
// Launch calls it; calling it directly is safe too.
func ReapLeftovers() (int, error) {
	dead, err := deadOwnedDirs()
	if err != nil || len(dead) == 0 {
		return 0, err
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
	return len(victims), removeDirs(dead)
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
