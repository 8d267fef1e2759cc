package control

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// isRefused reports a connection nothing listens for (Winsock's
// WSAECONNREFUSED, which syscall.ECONNREFUSED does not match on Windows).
func isRefused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, syscall.ECONNREFUSED)
}
