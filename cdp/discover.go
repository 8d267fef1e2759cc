package cdp

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Browser families of a Candidate.
const (
	BrowserChrome   = "Chrome"
	BrowserChromium = "Chromium"
	BrowserEdge     = "Edge"
	BrowserBrave    = "Brave"
)

// Candidate is one place where FindChrome looks for a browser: a Path, or
// a Name looked up on PATH (exactly one is set).
type Candidate struct {
	// Path is an absolute path in the target OS's layout (backslashes for
	// Windows).
	Path string `json:"path,omitempty"`
	// Name is a command name looked up on PATH.
	Name string `json:"name,omitempty"`
	// Browser is BrowserChrome, BrowserChromium, BrowserEdge, BrowserBrave,
	// or "" for $BROWSERAGENT_CHROME (any browser).
	Browser string `json:"browser,omitempty"`
	// Why says where the place comes from ("$BROWSERAGENT_CHROME",
	// "system-wide install", "on PATH", …).
	Why string `json:"why"`
}

// FromEnv reports whether the candidate is $BROWSERAGENT_CHROME (then it is
// the only one tried).
func (c Candidate) FromEnv() bool { return c.Browser == "" }

// String is the place in short: the path, or "NAME on PATH".
func (c Candidate) String() string {
	if c.Name != "" {
		return c.Name + " on PATH"
	}
	return c.Path
}

// ChromeCandidates returns, in order, the places FindChrome checks on
// goos ("linux", "darwin", "windows"; any other is treated like linux),
// with env reading the environment and home the user's home directory
// ("" skips the places under it). It touches no file, so any OS's list can
// be computed on any OS.
//
// When $BROWSERAGENT_CHROME is set it is the only candidate: a path, or a
// name without a path separator looked up on PATH. Otherwise:
//
//   - linux: Debian's /usr/lib/chromium/chromium, then chromium,
//     chromium-browser, google-chrome, google-chrome-stable on PATH (the
//     historical order), then /snap/bin/chromium,
//     /usr/bin/google-chrome-stable, /opt/google/chrome/chrome,
//     microsoft-edge, microsoft-edge-stable, /opt/microsoft/msedge/msedge,
//     brave-browser, /opt/brave.com/brave/brave.
//   - darwin: the app bundles of Google Chrome, Google Chrome Canary,
//     Chromium, Microsoft Edge, Brave Browser, each in /Applications then
//     ~/Applications, then chromium and google-chrome on PATH.
//   - windows: Google\Chrome, Chromium, Microsoft\Edge,
//     BraveSoftware\Brave-Browser (each ...\Application\*.exe), each under
//     %ProgramFiles%, %ProgramFiles(x86)%, then %LocalAppData% (per-user
//     installs).
func ChromeCandidates(goos string, env func(string) string, home string) []Candidate {
	if p := env(EnvChrome); p != "" {
		c := Candidate{Path: p, Why: "$" + EnvChrome}
		if !strings.ContainsAny(p, `/\`) {
			c = Candidate{Name: p, Why: "$" + EnvChrome + " (on PATH)"}
		}
		return []Candidate{c}
	}
	switch goos {
	case "darwin":
		return darwinCandidates(home)
	case "windows":
		return windowsCandidates(env, home)
	default:
		return linuxCandidates()
	}
}

func linuxCandidates() []Candidate {
	return []Candidate{
		{Path: debianRealChromium, Browser: BrowserChromium, Why: "Debian's real binary, without the wrapper"},
		{Name: "chromium", Browser: BrowserChromium, Why: "on PATH"},
		{Name: "chromium-browser", Browser: BrowserChromium, Why: "on PATH"},
		{Name: "google-chrome", Browser: BrowserChrome, Why: "on PATH"},
		{Name: "google-chrome-stable", Browser: BrowserChrome, Why: "on PATH"},
		{Path: "/snap/bin/chromium", Browser: BrowserChromium, Why: "snap"},
		{Path: "/usr/bin/google-chrome-stable", Browser: BrowserChrome, Why: "Google's package"},
		{Path: "/opt/google/chrome/chrome", Browser: BrowserChrome, Why: "Google's package"},
		{Name: "microsoft-edge", Browser: BrowserEdge, Why: "on PATH"},
		{Name: "microsoft-edge-stable", Browser: BrowserEdge, Why: "on PATH"},
		{Path: "/opt/microsoft/msedge/msedge", Browser: BrowserEdge, Why: "Microsoft's package"},
		{Name: "brave-browser", Browser: BrowserBrave, Why: "on PATH"},
		{Path: "/opt/brave.com/brave/brave", Browser: BrowserBrave, Why: "Brave's package"},
	}
}

// darwinApps are the macOS app bundles, in order of preference.
var darwinApps = []struct{ app, browser string }{
	{"Google Chrome", BrowserChrome},
	{"Google Chrome Canary", BrowserChrome},
	{"Chromium", BrowserChromium},
	{"Microsoft Edge", BrowserEdge},
	{"Brave Browser", BrowserBrave},
}

func darwinCandidates(home string) []Candidate {
	var cs []Candidate
	for _, a := range darwinApps {
		bin := "/" + a.app + ".app/Contents/MacOS/" + a.app
		cs = append(cs, Candidate{Path: "/Applications" + bin, Browser: a.browser, Why: "system-wide app"})
		if home != "" {
			cs = append(cs, Candidate{Path: strings.TrimRight(home, "/") + "/Applications" + bin, Browser: a.browser, Why: "per-user app"})
		}
	}
	return append(cs,
		Candidate{Name: "chromium", Browser: BrowserChromium, Why: "on PATH"},
		Candidate{Name: "google-chrome", Browser: BrowserChrome, Why: "on PATH"})
}

// windowsApps are the executables under an install root, in order of
// preference.
var windowsApps = []struct{ rel, browser string }{
	{`Google\Chrome\Application\chrome.exe`, BrowserChrome},
	{`Chromium\Application\chrome.exe`, BrowserChromium},
	{`Microsoft\Edge\Application\msedge.exe`, BrowserEdge},
	{`BraveSoftware\Brave-Browser\Application\brave.exe`, BrowserBrave},
}

// windowsRoots are the install roots: the environment's values, else
// Windows' defaults. Duplicates (ProgramFiles equals ProgramFiles(x86) for
// a 32-bit process) are dropped.
func windowsRoots(env func(string) string, home string) []Candidate {
	local := env("LOCALAPPDATA")
	if local == "" && home != "" {
		local = strings.TrimRight(home, `\/`) + `\AppData\Local`
	}
	roots := []Candidate{
		{Path: cmp.Or(env("ProgramFiles"), `C:\Program Files`), Why: "%ProgramFiles%"},
		{Path: cmp.Or(env("ProgramFiles(x86)"), `C:\Program Files (x86)`), Why: "%ProgramFiles(x86)%"},
		{Path: local, Why: "%LocalAppData% (per-user install)"},
	}
	var out []Candidate
	seen := map[string]bool{}
	for _, r := range roots {
		r.Path = strings.TrimRight(r.Path, `\/`)
		if r.Path == "" || seen[strings.ToLower(r.Path)] {
			continue
		}
		seen[strings.ToLower(r.Path)] = true
		out = append(out, r)
	}
	return out
}

func windowsCandidates(env func(string) string, home string) []Candidate {
	var cs []Candidate
	roots := windowsRoots(env, home)
	for _, a := range windowsApps {
		for _, r := range roots {
			cs = append(cs, Candidate{Path: r.Path + `\` + a.rel, Browser: a.browser, Why: r.Why})
		}
	}
	return cs
}

// Probe is one Candidate as checked on this machine.
type Probe struct {
	Candidate
	// Found is the usable binary's path ("" when not usable).
	Found string `json:"found,omitempty"`
	// Reason says why the candidate is not usable ("" when it is).
	Reason string `json:"reason,omitempty"`
}

// ChromeReport is every candidate of ChromeCandidates checked, in order.
type ChromeReport struct {
	GOOS   string  `json:"goos"`
	Probes []Probe `json:"probes"`
}

// Chosen returns the first usable candidate: the one FindChrome returns.
func (r ChromeReport) Chosen() (Probe, bool) {
	for _, p := range r.Probes {
		if p.Found != "" {
			return p, true
		}
	}
	return Probe{}, false
}

// Err is nil when a candidate is usable, else FindChrome's error: it wraps
// ErrBrowserNotFound and lists the places looked at.
func (r ChromeReport) Err() error {
	if _, ok := r.Chosen(); ok {
		return nil
	}
	if len(r.Probes) == 1 && r.Probes[0].FromEnv() {
		p := r.Probes[0]
		return fmt.Errorf("%w: %s=%q: %s", ErrBrowserNotFound, EnvChrome, p.Candidate.Path+p.Name, p.Reason)
	}
	var paths, names []string
	for _, p := range r.Probes {
		if p.Name != "" {
			names = append(names, p.Name)
		} else {
			paths = append(paths, p.Path)
		}
	}
	places := strings.Join(paths, ", ")
	if len(names) > 0 {
		places += "; on PATH: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%w (looked at %s)", ErrBrowserNotFound, places)
}

// system is what discovery asks of the machine; tests fake it.
type system struct {
	goos     string
	stat     func(string) (fs.FileInfo, error)
	lookPath func(string) (string, error)
}

func hostSystem() system {
	return system{goos: runtime.GOOS, stat: os.Stat, lookPath: exec.LookPath}
}

// check returns the usable binary of c, or why there is none. A path must
// be a file (not a directory): executable on Unix, an .exe on Windows.
func (s system) check(c Candidate) (string, string) {
	if c.Name != "" {
		p, err := s.lookPath(c.Name)
		if err != nil {
			return "", "not on PATH"
		}
		return p, ""
	}
	st, err := s.stat(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "no such file"
	case err != nil:
		return "", err.Error()
	case st.IsDir():
		return "", "a directory, not the browser's executable"
	case s.goos == "windows" && !strings.HasSuffix(strings.ToLower(c.Path), ".exe"):
		return "", "not an .exe"
	case s.goos != "windows" && st.Mode()&0o111 == 0:
		return "", "not executable"
	}
	return c.Path, ""
}

// report checks cs in order; with all false it stops at the first usable
// one.
func (s system) report(cs []Candidate, all bool) ChromeReport {
	r := ChromeReport{GOOS: s.goos}
	for _, c := range cs {
		p := Probe{Candidate: c}
		p.Found, p.Reason = s.check(c)
		r.Probes = append(r.Probes, p)
		if p.Found != "" && !all {
			break
		}
	}
	return r
}

func hostCandidates() []Candidate {
	home, _ := os.UserHomeDir()
	return ChromeCandidates(runtime.GOOS, os.Getenv, home)
}

// FindChromeReport checks every place of ChromeCandidates for this OS and
// says what it found in each; the first usable one is what FindChrome
// returns. It is for diagnostics (browseragent doctor).
func FindChromeReport() ChromeReport {
	return hostSystem().report(hostCandidates(), true)
}

// find is FindChrome on system s with candidates cs.
func (s system) find(cs []Candidate) (string, error) {
	r := s.report(cs, false)
	if p, ok := r.Chosen(); ok {
		return p.Found, nil
	}
	return "", r.Err()
}
