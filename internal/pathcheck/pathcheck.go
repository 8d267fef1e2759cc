// Package pathcheck decides whether a path lies inside a directory, and
// whether a file name is one Windows refuses, by the rules of an operating
// system's paths, lexically: no file system is read.
//
// Every check takes absolute paths; a relative path (on Windows also a
// drive-relative "C:x" or a rooted "\x" without a drive) is never inside
// anything. Resolve symbolic links first (filepath.EvalSymlinks) when a
// link could lead out of the directory: these functions only see names.
//
// Windows rules: '/' and '\' are both separators; the volume is a drive
// letter ("C:") or a UNC share ("\\server\share"), and "\\?\C:\" and
// "\\?\UNC\server\share\" are read as those; other device paths ("\\.\")
// are inside nothing. Names compare case-insensitively (simple Unicode
// folding, as NTFS does by default), and a name's trailing dots and spaces
// are ignored, as Win32 does. Not handled: 8.3 short names (PROGRA~1) and
// directories marked case-sensitive: both make Within answer false or, for
// a case-sensitive directory, true for a sibling differing only in case.
//
// Unix rules (Linux, macOS): '/' only, case-sensitive. On macOS's default
// case-insensitive volumes this is stricter than the file system (a path
// spelled in another case is said to be outside), never looser.
package pathcheck

import (
	"runtime"
	"strings"
)

// Style is a set of path rules.
type Style int

// The styles.
const (
	Unix Style = iota + 1
	Windows
)

// Host is the style of the system this program runs on.
var Host = func() Style {
	if runtime.GOOS == "windows" {
		return Windows
	}
	return Unix
}()

func (s Style) String() string {
	switch s {
	case Unix:
		return "unix"
	case Windows:
		return "windows"
	}
	return "Style(?)"
}

// Within reports whether path lies strictly inside dir (at any depth; dir
// itself is not inside), by the host's rules.
func Within(dir, path string) bool { return Host.Within(dir, path) }

// Child reports whether path names an entry directly inside dir (not dir,
// nothing deeper), by the host's rules.
func Child(dir, path string) bool { return Host.Child(dir, path) }

// Same reports whether a and b name the same path, by the host's rules.
func Same(a, b string) bool { return Host.Same(a, b) }

// Within reports whether path lies strictly inside dir (at any depth; dir
// itself is not inside). A path on another volume, a relative path, or one
// whose ".." climbs out of dir is not.
func (s Style) Within(dir, path string) bool {
	d, ok1 := s.parse(dir)
	p, ok2 := s.parse(path)
	return ok1 && ok2 && len(p.elems) > len(d.elems) && s.prefix(d, p)
}

// Child reports whether path names an entry directly inside dir.
func (s Style) Child(dir, path string) bool {
	d, ok1 := s.parse(dir)
	p, ok2 := s.parse(path)
	return ok1 && ok2 && len(p.elems) == len(d.elems)+1 && s.prefix(d, p)
}

// Same reports whether a and b are one absolute path (after "." and ".."
// are resolved; on Windows, with case and separators ignored).
func (s Style) Same(a, b string) bool {
	x, ok1 := s.parse(a)
	y, ok2 := s.parse(b)
	return ok1 && ok2 && len(x.elems) == len(y.elems) && s.prefix(x, y)
}

// parsed is an absolute path: its volume ("" on Unix) and its names, "."
// and ".." resolved.
type parsed struct {
	vol   string
	elems []string
}

// prefix reports whether d's volume is p's and d's names begin p's.
func (s Style) prefix(d, p parsed) bool {
	if !s.equal(d.vol, p.vol) {
		return false
	}
	for i, e := range d.elems {
		if !s.equal(e, p.elems[i]) {
			return false
		}
	}
	return true
}

func (s Style) equal(a, b string) bool {
	if s == Windows {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// parse splits an absolute path; ok is false for anything else (relative,
// empty, a Windows device path, a name Windows would rewrite).
func (s Style) parse(path string) (parsed, bool) {
	switch s {
	case Unix:
		if !strings.HasPrefix(path, "/") {
			return parsed{}, false
		}
		return split("", path[1:], "/", false, false)
	case Windows:
		path = strings.ReplaceAll(path, "/", `\`)
		verbatim := strings.HasPrefix(path, `\\?\`)
		vol, rest, ok := windowsVolume(path)
		if !ok {
			return parsed{}, false
		}
		return split(vol, rest, `\`, true, verbatim)
	}
	return parsed{}, false
}

// windowsVolume splits an absolute Windows path (separators already '\')
// into its volume and the rest after the root separator.
func windowsVolume(p string) (vol, rest string, ok bool) {
	if strings.HasPrefix(p, `\\?\`) {
		// The Win32 file namespace: the same path without normalisation.
		p = p[4:]
		if len(p) >= 4 && strings.EqualFold(p[:4], `UNC\`) {
			p = `\\` + p[4:]
		} else if !isDrive(p) {
			return "", "", false // \\?\Volume{GUID}\ and the like
		}
	}
	switch {
	case isDrive(p):
		if len(p) == 2 || p[2] != '\\' {
			return "", "", false // "C:" or "C:x": relative to the drive's current directory
		}
		return strings.ToUpper(p[:2]), p[3:], true
	case strings.HasPrefix(p, `\\`):
		// \\server\share\rest; "\\.\" is the device namespace.
		parts := strings.SplitN(p[2:], `\`, 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" || parts[0] == "." || parts[0] == "?" {
			return "", "", false
		}
		rest := ""
		if len(parts) == 3 {
			rest = parts[2]
		}
		return `\\` + parts[0] + `\` + parts[1], rest, true
	}
	return "", "", false // relative, or rooted on the current drive
}

func isDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// split resolves rest's names below vol. On Windows a name's trailing dots
// and spaces are dropped (Win32 does), and a name of only dots and spaces
// other than "." and ".." is refused: its meaning depends on the API. A
// verbatim path (\\?\) is not normalised by Windows, so any name it would
// have normalised is refused.
func split(vol, rest, sep string, windows, verbatim bool) (parsed, bool) {
	var elems []string
	for _, e := range strings.Split(rest, sep) {
		if verbatim && (e == "." || e == ".." || strings.TrimRight(e, ". ") != e) {
			return parsed{}, false
		}
		if windows && e != "." && e != ".." {
			t := strings.TrimRight(e, ". ")
			if t == "" && e != "" {
				return parsed{}, false
			}
			e = t
		}
		switch e {
		case "", ".":
		case "..":
			if len(elems) > 0 {
				elems = elems[:len(elems)-1]
			}
		default:
			elems = append(elems, e)
		}
	}
	return parsed{vol: vol, elems: elems}, true
}

// reservedNames are the Windows device names: a file may not be named so,
// whatever its extension (CON, CON.txt, con .md).
var reservedNames = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true, "conin$": true, "conout$": true,
}

// Reserved reports whether Windows refuses or misreads name as a file's
// base name: a device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with the
// superscript digits ¹²³, CONIN$, CONOUT$; in any case, with any
// extension, with spaces before the extension), a name ending in a dot or
// a space (Windows drops them, so the file gets another name), or one
// holding a character Windows forbids in names (<>:"/\|?* and controls).
// Whatever the host, a file created from a name a page or a model chose
// should not be Reserved, so the folder can be copied to Windows.
func Reserved(name string) bool {
	if name == "" || strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return true
	}
	for _, r := range name {
		if r < 0x20 || strings.ContainsRune(`<>:"/\|?*`, r) {
			return true
		}
	}
	stem := name
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	stem = strings.ToLower(strings.TrimRight(stem, " "))
	if reservedNames[stem] {
		return true
	}
	if len(stem) >= 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) {
		switch stem[3:] {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return true
		}
	}
	return false
}
