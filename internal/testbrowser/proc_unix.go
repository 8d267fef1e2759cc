//go:build unix

package testbrowser

import (
	"errors"
	"syscall"
)

// KillProcess ends process pid at once (SIGKILL).
func KillProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// TerminateProcess asks process pid to end (SIGTERM).
func TerminateProcess(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

// ProcessExists reports whether process pid exists; a zombie counts.
func ProcessExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// GroupExists reports whether process group pgid has a member; a zombie
// counts.
func GroupExists(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// KillGroup ends every process of group pgid at once (SIGKILL).
func KillGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }
