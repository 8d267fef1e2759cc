//go:build unix

package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/browseragent/browseragent/agent"
)

// A cache folder others may write is refused: whoever plants an entry
// there makes a later run act as it says. The same folder made private is
// accepted.
func TestDirCacheRefusesAWritableFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		if err := os.Chmod(dir, mode); err != nil { // Chmod ignores the umask
			t.Fatal(err)
		}
		if _, err := agent.NewDirCache(dir); !errors.Is(err, agent.ErrSettings) {
			t.Fatalf("mode %v: %v, want ErrSettings", mode, err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewDirCache(dir); err != nil {
		t.Fatalf("mode 0755: %v", err)
	}
}
