package pathcheck

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The Windows cases are literal Windows paths: filepath on Linux would
// read their backslashes as ordinary characters, so none is used here.
func TestWithinWindows(t *testing.T) {
	for _, c := range []struct {
		dir, path string
		within    bool
	}{
		{`C:\Users\ada\files`, `C:\Users\ada\files\x.pdf`, true},
		{`C:\Users\ada\files`, `c:\users\ada\FILES\x.pdf`, true},
		{`c:\users\ada\FILES`, `C:\Users\ada\files\sub\x.pdf`, true},
		{`C:\Users\ada\files`, `C:/Users/ada/files/x.pdf`, true},
		{`C:/Users/ada/files/`, `C:\Users\ada\files\\sub\.\x.pdf`, true},
		{`C:\Users\ada\files\`, `C:\Users\ada\files\x.pdf`, true},
		{`C:\Users\ada\files`, `C:\Users\ada\files`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files\`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files\..\secret.txt`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files\sub\..\..\secret.txt`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files\sub\..\x.pdf`, true},
		{`C:\Users\ada\files`, `C:\Users\ada\filesX\x.pdf`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files2\x.pdf`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\x.pdf`, false},
		// Another drive: outside, never an error or inside.
		{`C:\Users\ada\files`, `D:\Users\ada\files\x.pdf`, false},
		{`D:\`, `C:\x.pdf`, false},
		{`C:\`, `C:\x.pdf`, true},
		{`C:\`, `c:\Windows\x.dll`, true},
		// Drive-relative and rooted paths are not absolute.
		{`C:\Users\ada\files`, `C:Users\ada\files\x.pdf`, false},
		{`C:\Users\ada\files`, `\Users\ada\files\x.pdf`, false},
		{`C:\Users\ada\files`, `files\x.pdf`, false},
		{`files`, `files\x.pdf`, false},
		{``, `C:\x.pdf`, false},
		// UNC shares.
		{`\\server\share\dir`, `\\server\share\dir\x.pdf`, true},
		{`\\server\share\dir`, `\\SERVER\Share\DIR\x.pdf`, true},
		{`\\server\share\dir`, `//server/share/dir/x.pdf`, true},
		{`\\server\share\dir`, `\\server\share\x.pdf`, false},
		{`\\server\share\dir`, `\\server\other\dir\x.pdf`, false},
		{`\\server\share\dir`, `\\other\share\dir\x.pdf`, false},
		{`\\server\share\dir`, `\\server\share\dir\..\..\other\x.pdf`, false},
		{`\\server\share`, `\\server\share\x.pdf`, true},
		{`\\server\share\dir`, `C:\server\share\dir\x.pdf`, false},
		{`\\server`, `\\server\share\x.pdf`, false},
		// The long-path prefix names the same places.
		{`C:\Users\ada\files`, `\\?\C:\Users\ada\files\x.pdf`, true},
		{`\\?\c:\users\ada\files`, `C:\Users\ada\files\x.pdf`, true},
		{`\\server\share\dir`, `\\?\UNC\server\share\dir\x.pdf`, true},
		{`C:\Users\ada\files`, `\\?\C:\Users\ada\files\..\x.pdf`, false},
		{`C:\Users\ada\files`, `\\?\C:\Users\ada\files\x.pdf.`, false},
		// Device paths are inside nothing.
		{`C:\Users\ada\files`, `\\.\C:\Users\ada\files\x.pdf`, false},
		{`\\.\C:\Users\ada\files`, `\\.\C:\Users\ada\files\x.pdf`, false},
		{`C:\`, `\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\x.pdf`, false},
		// Win32 drops a name's trailing dots and spaces.
		{`C:\Users\ada\files`, `C:\Users\ada\files.\x.pdf`, true},
		{`C:\Users\ada\files`, `C:\Users\ada\files \x.pdf`, true},
		{`C:\Users\ada\files`, `C:\Users\ada\files\...\x.pdf`, false},
		{`C:\Users\ada\files`, `C:\Users\ada\files\. .\x.pdf`, false},
	} {
		if got := Windows.Within(c.dir, c.path); got != c.within {
			t.Errorf("Windows.Within(%q, %q) = %v, want %v", c.dir, c.path, got, c.within)
		}
	}
}

func TestWithinUnix(t *testing.T) {
	for _, c := range []struct {
		dir, path string
		within    bool
	}{
		{"/home/ada/files", "/home/ada/files/x.pdf", true},
		{"/home/ada/files/", "/home/ada/files//sub/./x.pdf", true},
		{"/home/ada/files", "/home/ada/files", false},
		{"/home/ada/files", "/home/ada/files/", false},
		{"/home/ada/files", "/home/ada/files/../x.pdf", false},
		{"/home/ada/files", "/home/ada/files/a/../../x.pdf", false},
		{"/home/ada/files", "/home/ada/filesX/x.pdf", false},
		// Case matters, and a backslash is a character of a name.
		{"/home/ada/files", "/home/ada/FILES/x.pdf", false},
		{"/home/ada/files", `/home/ada/files\..\x.pdf`, false}, // one name in /home/ada
		{"/home/ada/files", `/home/ada/files/..\x.pdf`, true},
		{"/", "/x", true},
		{"/home/ada/files", "files/x.pdf", false},
		{"files", "files/x.pdf", false},
		{"/home/ada/files", `C:\home\ada\files\x.pdf`, false},
		// Trailing dots are a name's own characters here.
		{"/home/ada/files", "/home/ada/files./x.pdf", false},
		{"/home/ada/files", "/home/ada/files/.../x.pdf", true},
	} {
		if got := Unix.Within(c.dir, c.path); got != c.within {
			t.Errorf("Unix.Within(%q, %q) = %v, want %v", c.dir, c.path, got, c.within)
		}
	}
}

func TestChild(t *testing.T) {
	for _, c := range []struct {
		s         Style
		dir, path string
		child     bool
	}{
		{Windows, `C:\dl`, `C:\dl\a.pdf`, true},
		{Windows, `C:\dl`, `c:\DL\a.pdf`, true},
		{Windows, `C:\dl`, `C:\dl\sub\a.pdf`, false},
		{Windows, `C:\dl`, `C:\dl`, false},
		{Windows, `C:\dl`, `C:\dl\..\a.pdf`, false},
		{Windows, `C:\dl`, `D:\dl\a.pdf`, false},
		{Windows, `\\srv\share\dl`, `\\srv\share\dl\a.pdf`, true},
		{Unix, "/dl", "/dl/a.pdf", true},
		{Unix, "/dl", "/dl/sub/a.pdf", false},
		{Unix, "/dl", "/dl", false},
		{Unix, "/dl", "/dl/../a.pdf", false},
		{Unix, "/dl", `/dl/a\b.pdf`, true},
	} {
		if got := c.s.Child(c.dir, c.path); got != c.child {
			t.Errorf("%v.Child(%q, %q) = %v, want %v", c.s, c.dir, c.path, got, c.child)
		}
	}
}

func TestSame(t *testing.T) {
	for _, c := range []struct {
		s    Style
		a, b string
		same bool
	}{
		{Windows, `C:\Users\ada\cv.pdf`, `c:/users/ADA/cv.pdf`, true},
		{Windows, `C:\Users\ada\cv.pdf`, `C:\Users\ada\x\..\cv.pdf`, true},
		{Windows, `C:\Users\ada\cv.pdf`, `D:\Users\ada\cv.pdf`, false},
		{Windows, `C:\Users\ada\cv.pdf`, `cv.pdf`, false},
		{Windows, `\\srv\share\cv.pdf`, `\\?\UNC\SRV\share\cv.pdf`, true},
		{Unix, "/home/ada/cv.pdf", "/home/ada/./cv.pdf", true},
		{Unix, "/home/ada/cv.pdf", "/home/ADA/cv.pdf", false},
		{Unix, "cv.pdf", "cv.pdf", false},
	} {
		if got := c.s.Same(c.a, c.b); got != c.same {
			t.Errorf("%v.Same(%q, %q) = %v, want %v", c.s, c.a, c.b, got, c.same)
		}
	}
}

// The host style agrees with filepath on paths it builds.
func TestHost(t *testing.T) {
	dir := t.TempDir()
	if !Within(dir, filepath.Join(dir, "a", "b")) || !Child(dir, filepath.Join(dir, "a")) || Within(dir, filepath.Dir(dir)) || !Same(dir, filepath.Join(dir, "a", "..")) {
		t.Fatalf("the host style disagrees with filepath under %s", dir)
	}
}

func TestReserved(t *testing.T) {
	for _, name := range []string{
		"CON", "con", "Con.txt", "con .md", "NUL", "nul.tar.gz", "PRN.pdf", "AUX", "COM1", "com9.txt", "COM0", "LPT1", "lpt5.log",
		"COM¹", "lpt³.txt", "CONIN$", "conout$.txt",
		"report.", "report ", "report.pdf.", "a:b", `a\b`, "a/b", "a*b", "a?b", `a"b`, "a<b", "a>b", "a|b", "a\x01b", "",
	} {
		if !Reserved(name) {
			t.Errorf("Reserved(%q) = false", name)
		}
	}
	for _, name := range []string{
		"report.pdf", "console.txt", "CONFIG", "nul_", "_nul", "COM10", "COM", "LPT", "lpt1x", "com1a.txt", "a.con", "CON_", "notes.md", ".hidden", "résumé.pdf",
	} {
		if Reserved(name) {
			t.Errorf("Reserved(%q) = true", name)
		}
	}
}
