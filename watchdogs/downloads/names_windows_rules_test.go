package downloads

import (
	"strings"
	"testing"
)

// Every device name Windows knows is renamed, not only the classic ones,
// and Windows paths the page supplies keep only their last name.
func TestDownloadsWindowsDeviceNames(t *testing.T) {
	for in, want := range map[string]string{
		"COM0.txt":           "_COM0.txt",
		"lpt¹.pdf":           "_lpt¹.pdf",
		"CONIN$":             "_CONIN$",
		"conout$.log":        "_conout$.log",
		"con .txt":           "_con .txt",
		"console.txt":        "console.txt",
		`C:\Users\ada\x.pdf`: "x.pdf",
		`\\srv\share\NUL`:    "_NUL",
		"report.pdf. . .":    "report.pdf",
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsAny(sanitizeName(in), `\/:`) {
			t.Errorf("sanitizeName(%q) kept a separator", in)
		}
	}
}
