//go:build !unix

package main

import (
	"errors"
	"os"
	"time"
)

// spawnSession is not supported here: background sessions need Unix
// sockets and process sessions.
func spawnSession(string, []string, string, time.Duration) (int, error) {
	return 0, errors.ErrUnsupported
}

// readyPipe is the pipe open gave as file descriptor fd.
func readyPipe(fd int) *os.File { return os.NewFile(uintptr(fd), "ready") }
