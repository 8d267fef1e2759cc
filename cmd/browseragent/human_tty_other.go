//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package main

import "os"

// stdinIsTerminal reports whether stdin is a character device (on these
// systems, the best cheap guess at a terminal).
func stdinIsTerminal() bool { return isTerminal(os.Stdin) }
