//go:build windows

package testbrowser

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// KillProcess ends process pid at once (TerminateProcess).
func KillProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// TerminateProcess would ask process pid to end; Windows has no signal
// for that, so it fails.
func TerminateProcess(pid int) error {
	return errors.New("testbrowser: no SIGTERM on Windows")
}

// ProcessExists reports whether process pid runs.
func ProcessExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}

// GroupExists reports, as Windows has no process groups, whether the
// process pgid runs; the browser's helpers are in its job object there.
func GroupExists(pgid int) bool { return ProcessExists(pgid) }

// KillGroup ends process pgid, as Windows has no process groups.
func KillGroup(pgid int) error { return KillProcess(pgid) }
