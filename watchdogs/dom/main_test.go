package dom

import (
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestMain shares one Chromium and fixture server across the package's tests
// and checks for leaked goroutines afterwards.
func TestMain(m *testing.M) { testbrowser.Main(m) }
