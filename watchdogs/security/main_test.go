package security

import (
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }
