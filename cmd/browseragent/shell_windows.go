package main

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
)

// detachedAttr starts the background process without a console and in a
// process group of its own, so the console's Ctrl-C and Ctrl-Break do not
// reach it.
func detachedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS, HideWindow: true}
}

// spawnSession is the Unix-socket start (a ready pipe as an extra file),
// which Windows does not have: sessions there use the TCP transport and
// spawnPolled.
func spawnSession(string, []string, string, time.Duration) (int, error) {
	return 0, errors.ErrUnsupported
}

// readyPipe is the pipe open gave as file descriptor fd (not used here).
func readyPipe(fd int) *os.File { return os.NewFile(uintptr(fd), "ready") }
