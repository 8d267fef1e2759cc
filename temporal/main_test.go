package temporal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// workerBin is the browseragent-temporal command, built once for the
// tests that run workers as processes.
var workerBin string

// TestMain builds the command, runs the tests, and checks that no
// goroutine outlives them but those the in-process Temporal server and
// the SDK leave behind (named below).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "browseragent-temporal-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin = filepath.Join(dir, "browseragent-temporal")
	build := exec.Command("go", "build", "-o", workerBin, "./cmd/browseragent-temporal")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(leftovers...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: errors on successful test run:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers are the goroutines temporaltest's server and the SDK keep
// after Stop (process-wide caches and pools with no stop of theirs).
var leftovers = []goleak.Option{}
