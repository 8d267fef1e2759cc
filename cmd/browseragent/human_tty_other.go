//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package main

import "os"

// fdIsTerminal reports whether fd (0, 1 or 2) is a character device (on
// these systems, the best cheap guess at a terminal).
func fdIsTerminal(fd int) bool {
	f := map[int]*os.File{0: os.Stdin, 1: os.Stdout, 2: os.Stderr}[fd]
	return f != nil && isTerminal(f)
}

// inForeground: these systems have no background reads that stop a
// process.
func inForeground(int) bool { return true }
