//go:build !unix && !windows

package control

import "errors"

// checkDir cannot check ownership here: sessions need a Unix system or
// Windows.
func checkDir(string) error { return errors.ErrUnsupported }

// Lock is a session's lock (unsupported on this system).
type Lock struct{}

// TryLock is unsupported on this system.
func (p Paths) TryLock() (*Lock, error) { return nil, errors.ErrUnsupported }

// Unlock does nothing.
func (l *Lock) Unlock() error { return nil }
