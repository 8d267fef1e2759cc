package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// checkDir refuses a session directory that is not a plain directory (a
// symlink or a junction could lead elsewhere). Its access list and owner
// are not checked: Go sets none and reads none; see OpenDir.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 || !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a plain directory (%s); remove it", ErrUnsafeDir, path, fi.Mode().Type())
	}
	return nil
}

// Lock is a session's lock: its lock file held open without sharing.
type Lock struct{ h syscall.Handle }

// TryLock takes the session's lock without waiting, or returns an error
// wrapping ErrLocked when another process (or another Lock of this one)
// holds it. It opens NAME.lock with no sharing: Windows refuses any other
// open until the handle is closed, which it does when the process dies,
// however it dies.
func (p Paths) TryLock() (*Lock, error) {
	name, err := syscall.UTF16PtrFromString(p.Lock)
	if err != nil {
		return nil, err
	}
	h, err := syscall.CreateFile(name, syscall.GENERIC_READ|syscall.GENERIC_WRITE, 0, nil,
		syscall.OPEN_ALWAYS, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, p.Lock)
		}
		return nil, &fs.PathError{Op: "lock", Path: p.Lock, Err: err}
	}
	return &Lock{h: h}, nil
}

// Unlock releases the lock. The lock file stays, as on Unix.
func (l *Lock) Unlock() error {
	if l == nil || l.h == 0 || l.h == syscall.InvalidHandle {
		return nil
	}
	err := syscall.CloseHandle(l.h)
	l.h = syscall.InvalidHandle
	return err
}
