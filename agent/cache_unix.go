//go:build unix

package agent

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkCacheDir refuses a cache directory another user owns or that
// group or others may write: whoever can plant an entry there makes a
// later run act (and type its secrets) as the entry says.
func checkCacheDir(dir string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: action cache %s is writable by group or others (mode %v); chmod go-w it", ErrSettings, dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: action cache %s is owned by another user (uid %d)", ErrSettings, dir, st.Uid)
	}
	return nil
}
