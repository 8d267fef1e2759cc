package pool

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the package's tests: every
// pool is closed by its test, and Close leaves nothing behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
