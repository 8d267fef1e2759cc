//go:build !windows

package control

import (
	"errors"
	"syscall"
)

// isRefused reports a connection nothing listens for.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
