//go:build !unix && !windows

package main

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// spawnSession is not supported here: background sessions need Unix
// sockets and process sessions, or Windows.
func spawnSession(string, []string, string, time.Duration) (int, error) {
	return 0, errors.ErrUnsupported
}

// detachedAttr: nothing to set here.
func detachedAttr() *syscall.SysProcAttr { return nil }

// readyPipe is the pipe open gave as file descriptor fd.
func readyPipe(fd int) *os.File { return os.NewFile(uintptr(fd), "ready") }
