package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// errUsage is returned for bad flags (after the flag package printed why).
var errUsage = errors.New("usage")

// ErrBadPage is returned for a --pages entry that names no known page.
var ErrBadPage = errors.New("unknown page")

// DefaultPages are the pages of issue 13's table.
const DefaultPages = "gen-1000,gen-10000,gen-50000,go-spec,manual"

// DefaultPlaywrightVersion is the playwright-core that --playwright
// installs when --playwright-dir has none.
const DefaultPlaywrightVersion = "1.65.1"

// options are the parsed flags.
type options struct {
	// Rounds per page (default 5).
	Rounds int
	// Pages in order; see parsePage.
	Pages []pageSpec
	// Playwright adds Playwright's column (installing playwright-core into
	// PlaywrightDir when missing).
	Playwright        bool
	PlaywrightDir     string
	PlaywrightVersion string
	// JSON prints JSON instead of the table.
	JSON bool
	// Timeout bounds the whole run (default 30 min).
	Timeout time.Duration
	// StallTimeout is the session's cdp stall timeout (default 2 min).
	StallTimeout time.Duration
	// FromJSON renders a previous --json run instead of measuring.
	FromJSON string
}

// pageSpec is one page of the run: a generated page of N elements
// ("gen-N", internal/testbrowser's /generated), Go's specification from
// GOROOT ("go-spec") or the generated manual ("manual").
type pageSpec struct {
	Name string
	N    int // gen-N only
}

func parsePage(s string) (pageSpec, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "go-spec", "manual":
		return pageSpec{Name: s}, nil
	}
	if rest, ok := strings.CutPrefix(s, "gen-"); ok {
		rest = strings.TrimSuffix(rest, "k")
		n, err := strconv.Atoi(rest)
		if strings.HasSuffix(s, "k") {
			n *= 1000
		}
		if err == nil && n > 0 && n <= 200_000 {
			return pageSpec{Name: fmt.Sprintf("gen-%d", n), N: n}, nil
		}
	}
	return pageSpec{}, fmt.Errorf("%w %q (want gen-N with 0<N≤200000, go-spec or manual)", ErrBadPage, s)
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("benchperception", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	fs.IntVar(&o.Rounds, "rounds", 5, "interleaved rounds per page (each tool's median is reported)")
	pages := fs.String("pages", DefaultPages, "comma-separated pages: gen-N (N generated elements), go-spec, manual")
	fs.BoolVar(&o.Playwright, "playwright", false, "measure Playwright's ariaSnapshot({mode:'ai'}) too (needs node; installs playwright-core with npm when missing)")
	fs.StringVar(&o.PlaywrightDir, "playwright-dir", "", "folder with node_modules/playwright-core (default: the user cache folder's browseragent/benchperception)")
	fs.StringVar(&o.PlaywrightVersion, "playwright-version", DefaultPlaywrightVersion, "playwright-core version to install when missing")
	fs.BoolVar(&o.JSON, "json", false, "print JSON instead of the table")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "bound on the whole run")
	fs.DurationVar(&o.StallTimeout, "stall-timeout", 2*time.Minute, "how long the browser may stay silent before the connection is given up (the session's default is 10 s)")
	fs.StringVar(&o.FromJSON, "from-json", "", "render the table of a previous --json run (a file) instead of measuring")
	if err := fs.Parse(args); err != nil {
		return o, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %q\n", fs.Args())
		return o, errUsage
	}
	if o.Rounds < 1 || o.Rounds > 100 {
		return o, fmt.Errorf("--rounds must be in [1, 100], got %d", o.Rounds)
	}
	if o.Timeout <= 0 {
		return o, fmt.Errorf("--timeout must be positive")
	}
	seen := map[string]bool{}
	for _, p := range strings.Split(*pages, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		ps, err := parsePage(p)
		if err != nil {
			return o, err
		}
		if !seen[ps.Name] {
			seen[ps.Name] = true
			o.Pages = append(o.Pages, ps)
		}
	}
	if len(o.Pages) == 0 {
		return o, fmt.Errorf("%w: --pages is empty", ErrBadPage)
	}
	if o.PlaywrightDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		o.PlaywrightDir = filepath.Join(dir, "browseragent", "benchperception")
	}
	return o, nil
}
