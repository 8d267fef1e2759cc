//go:build unix

package control

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// checkDir refuses a socket directory that is not the caller's own with
// mode 0700.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (%s); remove it", ErrUnsafeDir, path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: %s: cannot tell its owner", ErrUnsafeDir, path)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to you (uid %d): another user may read or replace its sockets; use another XDG_RUNTIME_DIR or TMPDIR",
			ErrUnsafeDir, path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		return fmt.Errorf("%w: %s has mode %04o, not 0700: others may reach its sockets; fix it with chmod 700 %s if it is yours alone",
			ErrUnsafeDir, path, perm, path)
	}
	return nil
}

// Lock is a session's lock, held with flock.
type Lock struct{ f *os.File }

// TryLock takes the session's lock without waiting, or returns an error
// wrapping ErrLocked when another process (or another Lock of this one)
// holds it. The kernel releases it when the process dies, however it
// dies.
func (p Paths) TryLock() (*Lock, error) {
	f, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, p.Lock)
		}
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The lock file stays: removing it would let two
// processes lock two different files of the same name.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
