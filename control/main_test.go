package control_test

import (
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) { testbrowser.Main(m) }
