package main

import "golang.org/x/sys/unix"

// fdIsTerminal reports whether fd is a terminal (a character device is
// not enough: /dev/null is one).
func fdIsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// inForeground reports whether this process's group is the foreground one
// of the terminal fd: reading a terminal from the background stops the
// process (SIGTTIN), as in `browseragent run task &`.
func inForeground(fd int) bool {
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
