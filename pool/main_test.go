package pool

import (
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestMain shares one test browser between the tests that run a pool on a
// given browser (a launch less each), then checks with goleak that no
// goroutine outlives the tests: every pool is closed by its test, and
// Close leaves nothing behind.
func TestMain(m *testing.M) { testbrowser.Main(m) }
