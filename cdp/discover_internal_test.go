package cdp

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeFS is a file system of absolute paths (any OS's layout): a mode per
// path, fs.ModeDir for directories.
type fakeFS map[string]fs.FileMode

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

func (f fakeFS) stat(p string) (fs.FileInfo, error) {
	m, ok := f[p]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return fakeInfo{name: p, mode: m}, nil
}

// system returns a fake machine of goos whose PATH holds the names in path
// (name → resolved path).
func (f fakeFS) system(goos string, path map[string]string) system {
	return system{goos: goos, stat: f.stat, lookPath: func(name string) (string, error) {
		if p, ok := path[name]; ok {
			return p, nil
		}
		return "", errors.New("not found")
	}}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// find is FindChrome on a fake machine.
func find(s system, env map[string]string, home string) (string, error) {
	return s.find(ChromeCandidates(s.goos, envOf(env), home))
}

func places(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestChromeCandidatesOrder(t *testing.T) {
	linux := places(ChromeCandidates("linux", envOf(nil), "/home/u"))
	// The historical order comes first.
	want := []string{debianRealChromium, "chromium on PATH", "chromium-browser on PATH", "google-chrome on PATH", "google-chrome-stable on PATH"}
	if !slices.Equal(linux[:len(want)], want) {
		t.Errorf("linux starts with %q, want %q", linux[:len(want)], want)
	}
	for _, p := range []string{"/snap/bin/chromium", "/usr/bin/google-chrome-stable", "/opt/google/chrome/chrome", "microsoft-edge on PATH", "brave-browser on PATH"} {
		if !slices.Contains(linux, p) {
			t.Errorf("linux lacks %s", p)
		}
	}

	mac := ChromeCandidates("darwin", envOf(nil), "/Users/u")
	wantMac := []string{
		"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		"/Users/u/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		"/Applications/Google Chrome Canary.app/Contents/MacOS/Google Chrome Canary",
	}
	if got := places(mac)[:3]; !slices.Equal(got, wantMac) {
		t.Errorf("darwin starts with %q, want %q", got, wantMac)
	}
	if got := browsers(mac); !slices.Equal(got, []string{BrowserChrome, BrowserChromium, BrowserEdge, BrowserBrave}) {
		t.Errorf("darwin browser order %q", got)
	}
	if noHome := ChromeCandidates("darwin", envOf(nil), ""); slices.ContainsFunc(noHome, func(c Candidate) bool { return !strings.HasPrefix(c.Path, "/Applications/") && c.Name == "" }) {
		t.Errorf("darwin without a home looks outside /Applications: %q", places(noHome))
	}

	win := ChromeCandidates("windows", envOf(map[string]string{
		"ProgramFiles": `C:\Program Files`, "ProgramFiles(x86)": `C:\Program Files (x86)`, "LOCALAPPDATA": `C:\Users\u\AppData\Local\`,
	}), `C:\Users\u`)
	wantWin := []string{
		`C:\Program Files\Google\Chrome\Application\chrome.exe`,
		`C:\Program Files (x86)\Google\Chrome\Application\chrome.exe`,
		`C:\Users\u\AppData\Local\Google\Chrome\Application\chrome.exe`,
		`C:\Program Files\Chromium\Application\chrome.exe`,
	}
	if got := places(win)[:4]; !slices.Equal(got, wantWin) {
		t.Errorf("windows starts with %q, want %q", got, wantWin)
	}
	if got := browsers(win); !slices.Equal(got, []string{BrowserChrome, BrowserChromium, BrowserEdge, BrowserBrave}) {
		t.Errorf("windows browser order %q", got)
	}
	if len(win) != 12 {
		t.Errorf("windows: %d candidates, want 4 browsers × 3 roots", len(win))
	}
}

// browsers is the order in which the families first appear.
func browsers(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.Browser) {
			out = append(out, c.Browser)
		}
	}
	return out
}

func TestChromeCandidatesWindowsDefaults(t *testing.T) {
	// No environment: Windows' default roots, and LocalAppData under home.
	// A 32-bit process sees the same ProgramFiles twice: checked once.
	got := places(ChromeCandidates("windows", envOf(map[string]string{"ProgramFiles": `C:\Program Files (x86)`}), `D:\Users\u`))
	want := []string{
		`C:\Program Files (x86)\Google\Chrome\Application\chrome.exe`,
		`D:\Users\u\AppData\Local\Google\Chrome\Application\chrome.exe`,
	}
	if !slices.Equal(got[:2], want) || len(got) != 8 {
		t.Errorf("got %q, want %q first and 8 in all", got, want)
	}
}

func TestFindChromeLinux(t *testing.T) {
	// Debian's binary wins over PATH.
	f := fakeFS{debianRealChromium: 0o755}
	path := map[string]string{"google-chrome": "/usr/bin/google-chrome"}
	if got, err := find(f.system("linux", path), nil, "/home/u"); got != debianRealChromium || err != nil {
		t.Errorf("got %q, %v", got, err)
	}
	// Without it, PATH in the historical order.
	if got, _ := find(fakeFS{}.system("linux", path), nil, "/home/u"); got != "/usr/bin/google-chrome" {
		t.Errorf("got %q, want google-chrome from PATH", got)
	}
	// A non-executable file or a directory is skipped, with the reason.
	f = fakeFS{debianRealChromium: 0o644, "/snap/bin/chromium": fs.ModeDir | 0o755, "/opt/google/chrome/chrome": 0o755}
	s := f.system("linux", nil)
	if got, _ := find(s, nil, ""); got != "/opt/google/chrome/chrome" {
		t.Errorf("got %q, want /opt/google/chrome/chrome", got)
	}
	r := s.report(ChromeCandidates("linux", envOf(nil), ""), true)
	if reasons := reasonsOf(r); reasons[debianRealChromium] != "not executable" || !strings.Contains(reasons["/snap/bin/chromium"], "directory") {
		t.Errorf("reasons %q", reasons)
	}
	if len(r.Probes) != len(linuxCandidates()) {
		t.Errorf("report checked %d of %d", len(r.Probes), len(linuxCandidates()))
	}
}

func reasonsOf(r ChromeReport) map[string]string {
	m := map[string]string{}
	for _, p := range r.Probes {
		m[p.String()] = p.Reason
	}
	return m
}

func TestFindChromeEnv(t *testing.T) {
	f := fakeFS{debianRealChromium: 0o755, "/custom/chrome": 0o755, "/custom": fs.ModeDir | 0o755}
	s := f.system("linux", map[string]string{"my-chrome": "/usr/local/bin/my-chrome"})
	if got, err := find(s, map[string]string{EnvChrome: "/custom/chrome"}, ""); got != "/custom/chrome" || err != nil {
		t.Errorf("env override: %q, %v", got, err)
	}
	// A bare name is looked up on PATH.
	if got, err := find(s, map[string]string{EnvChrome: "my-chrome"}, ""); got != "/usr/local/bin/my-chrome" || err != nil {
		t.Errorf("env name: %q, %v", got, err)
	}
	// A missing or unusable env path is an error, even though Debian's
	// binary exists: the user asked for that browser.
	for env, reason := range map[string]string{"/nonexistent/chrome": "no such file", "/custom": "directory"} {
		_, err := find(s, map[string]string{EnvChrome: env}, "")
		if !errors.Is(err, ErrBrowserNotFound) || !strings.Contains(err.Error(), EnvChrome+`="`+env+`"`) || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: %v", env, err)
		}
	}
}

func TestFindChromeDarwin(t *testing.T) {
	userEdge := "/Users/u/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge"
	f := fakeFS{
		userEdge: 0o755,
		"/Applications/Brave Browser.app/Contents/MacOS/Brave Browser": 0o755,
		// An app bundle whose binary is missing: the .app is a directory.
		"/Applications/Google Chrome.app": fs.ModeDir | 0o755,
	}
	if got, err := find(f.system("darwin", nil), nil, "/Users/u"); got != userEdge || err != nil {
		t.Errorf("got %q, %v; want the per-user Edge before Brave", got, err)
	}
	// Without a home, ~/Applications is not looked at.
	if got, _ := find(f.system("darwin", nil), nil, ""); !strings.Contains(got, "Brave") {
		t.Errorf("got %q, want Brave", got)
	}
	// Chrome in /Applications wins over everything.
	f["/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"] = 0o755
	if got, _ := find(f.system("darwin", nil), nil, "/Users/u"); got != "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" {
		t.Errorf("got %q, want Chrome", got)
	}
}

func TestFindChromeWindows(t *testing.T) {
	env := map[string]string{"ProgramFiles": `C:\Program Files`, "ProgramFiles(x86)": `C:\Program Files (x86)`, "LOCALAPPDATA": `C:\Users\u\AppData\Local`}
	edge := `C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe`
	userChrome := `C:\Users\u\AppData\Local\Google\Chrome\Application\chrome.exe`
	f := fakeFS{edge: 0o666}
	// Windows has no executable bits: an existing .exe is enough.
	if got, err := find(f.system("windows", nil), env, `C:\Users\u`); got != edge || err != nil {
		t.Errorf("got %q, %v; want Edge", got, err)
	}
	// A per-user Chrome wins over the system-wide Edge.
	f[userChrome] = 0o666
	if got, _ := find(f.system("windows", nil), env, `C:\Users\u`); got != userChrome {
		t.Errorf("got %q, want the per-user Chrome", got)
	}
	// A directory named like the executable is skipped.
	f = fakeFS{`C:\Program Files\Google\Chrome\Application\chrome.exe`: fs.ModeDir, edge: 0}
	if got, _ := find(f.system("windows", nil), env, ""); got != edge {
		t.Errorf("got %q, want Edge past the directory", got)
	}
	// The env var must name an .exe on Windows.
	f = fakeFS{`D:\chrome`: 0o666}
	if _, err := find(f.system("windows", nil), map[string]string{EnvChrome: `D:\chrome`}, ""); !errors.Is(err, ErrBrowserNotFound) || !strings.Contains(err.Error(), ".exe") {
		t.Errorf("env without .exe: %v", err)
	}
}

func TestFindChromeNothing(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		_, err := find(fakeFS{}.system(goos, nil), nil, "/home/u")
		if !errors.Is(err, ErrBrowserNotFound) {
			t.Fatalf("%s: %v", goos, err)
		}
		msg := err.Error()
		for _, c := range ChromeCandidates(goos, envOf(nil), "/home/u") {
			if want := c.Path + c.Name; !strings.Contains(msg, want) {
				t.Errorf("%s: the error does not list %s: %s", goos, want, msg)
			}
		}
	}
}

// FindChrome on this machine agrees with the report it summarises.
func TestFindChromeMatchesReport(t *testing.T) {
	got, err := FindChrome()
	r := FindChromeReport()
	p, ok := r.Chosen()
	if ok != (err == nil) || p.Found != got {
		t.Fatalf("FindChrome %q, %v; report chose %q", got, err, p.Found)
	}
	if os.Getenv(EnvChrome) == "" && len(r.Probes) != len(hostCandidates()) {
		t.Errorf("the report checked %d of %d places", len(r.Probes), len(hostCandidates()))
	}
}
