package control

import (
	"errors"
	"syscall"
)

// wsaeconnrefused is Winsock's "connection refused" (WSAECONNREFUSED),
// which syscall.ECONNREFUSED does not match on Windows.
const wsaeconnrefused syscall.Errno = 10061

// isRefused reports a connection nothing listens for.
func isRefused(err error) bool {
	return errors.Is(err, wsaeconnrefused) || errors.Is(err, syscall.ECONNREFUSED)
}
