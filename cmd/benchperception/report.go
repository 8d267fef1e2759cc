package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// tool names, the keys of pageResult.Samples.
const (
	toolFloor      = "floor"
	toolOurs       = "browseragent"
	toolReobserve  = "reobserve"
	toolPlaywright = "playwright"
)

// result is one run: the machine and each page's samples.
type result struct {
	Date       time.Time    `json:"date"`
	GOOS       string       `json:"goos"`
	GOARCH     string       `json:"goarch"`
	CPUs       int          `json:"cpus"`
	Browser    string       `json:"browser"`
	Playwright string       `json:"playwright,omitempty"` // version, "" when not measured
	Rounds     int          `json:"rounds"`
	Pages      []pageResult `json:"pages"`
	Targets    []target     `json:"targets"`
}

// pageResult is one page: its size, each tool's samples (ms, in round
// order), the medians and the text sizes.
type pageResult struct {
	Name     string               `json:"name"`
	URL      string               `json:"url"`
	Elements int                  `json:"elements"`
	Samples  map[string][]float64 `json:"samples_ms"`
	Median   map[string]float64   `json:"median_ms"`
	// Chars is the text each tool returns (runes; Playwright's in UTF-16
	// units), from the last round.
	Chars map[string]int `json:"chars"`
	// Indexed is the number of indexed elements of browseragent's view.
	Indexed int `json:"indexed"`
	// Errors are the samples that failed (tool: error), left out of the
	// medians.
	Errors []string `json:"errors,omitempty"`
}

// target is one of issue 13's goals, checked on this run.
type target struct {
	Goal   string `json:"goal"`
	Status string `json:"status"` // PASS, MISS or n/a
	Detail string `json:"detail"`
}

// median returns the median of xs (the mean of the middle two for an even
// count); NaN-free: 0 for no samples.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// finish computes the medians and the targets.
func (r *result) finish() {
	for i := range r.Pages {
		p := &r.Pages[i]
		p.Median = map[string]float64{}
		for k, v := range p.Samples {
			if len(v) > 0 {
				p.Median[k] = median(v)
			}
		}
	}
	r.Targets = targets(r.Pages)
}

func ratio(a, b float64) (float64, bool) {
	if a <= 0 || b <= 0 {
		return 0, false
	}
	return a / b, true
}

// targets checks issue 13's goals: ≤0.5× the floor on the 10k and 50k
// generated pages, ≤0.8× Playwright on every page, ≤100 ms on the 1k page,
// an unchanged page re-observed in <50 ms (every page). A goal whose page
// or tool was not measured is n/a.
func targets(pages []pageResult) []target {
	byName := map[string]*pageResult{}
	for i := range pages {
		byName[pages[i].Name] = &pages[i]
	}
	var out []target
	for _, n := range []string{"gen-10000", "gen-50000"} {
		t := target{Goal: fmt.Sprintf("≤0.5× floor on %s", n), Status: "n/a", Detail: "page not measured"}
		if p := byName[n]; p != nil {
			if r, ok := ratio(p.Median[toolOurs], p.Median[toolFloor]); ok {
				t.Status, t.Detail = passMiss(r <= 0.5), fmt.Sprintf("%.2f×", r)
			}
		}
		out = append(out, t)
	}
	t := target{Goal: "≤0.8× Playwright on every page", Status: "n/a", Detail: "Playwright not measured"}
	var worst float64
	var worstPage string
	all := len(pages) > 0
	for _, p := range pages {
		r, ok := ratio(p.Median[toolOurs], p.Median[toolPlaywright])
		if !ok {
			all = false
			continue
		}
		if r > worst {
			worst, worstPage = r, p.Name
		}
	}
	if all {
		t.Status, t.Detail = passMiss(worst <= 0.8), fmt.Sprintf("worst %.2f× (%s)", worst, worstPage)
	}
	out = append(out, t)
	t = target{Goal: "≤100 ms on gen-1000", Status: "n/a", Detail: "page not measured"}
	if p := byName["gen-1000"]; p != nil && p.Median[toolOurs] > 0 {
		t.Status, t.Detail = passMiss(p.Median[toolOurs] <= 100), ms(p.Median[toolOurs])
	}
	out = append(out, t)
	t = target{Goal: "unchanged re-observe <50 ms (every page)", Status: "n/a", Detail: "not measured"}
	worst, worstPage = 0, ""
	for _, p := range pages {
		if v := p.Median[toolReobserve]; v > worst {
			worst, worstPage = v, p.Name
		}
	}
	if worstPage != "" {
		t.Status, t.Detail = passMiss(worst < 50), fmt.Sprintf("worst %s (%s)", ms(worst), worstPage)
	}
	return append(out, t)
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// ms formats milliseconds as the table does: "81 ms", "3.67 s".
func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// cell is a time with its ratio to ref, or "–" when not measured.
func cell(v, ref float64) string {
	if v <= 0 {
		return "–"
	}
	if r, ok := ratio(v, ref); ok {
		return fmt.Sprintf("%s (%.2f)", ms(v), r)
	}
	return ms(v)
}

func count(n int) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

// writeTable prints the run as Markdown: the machine, the table (ratios
// to the floor; "ours/PW" is browseragent's median over Playwright's),
// and the targets.
func writeTable(w io.Writer, r result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s/%s, %d CPUs, %s; %d rounds per page, medians", r.Date.UTC().Format("2006-01-02 15:04 MST"), r.GOOS, r.GOARCH, r.CPUs, r.Browser, r.Rounds)
	if r.Playwright != "" {
		fmt.Fprintf(&b, "; playwright-core %s", r.Playwright)
	}
	b.WriteString("\n\n")
	b.WriteString("| page (elements) | floor | browseragent (× floor) | re-observe unchanged | Playwright ai (× floor) | ours/PW | text chars ours / PW | indexed |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Pages {
		f := p.Median[toolFloor]
		ourPW := "–"
		if x, ok := ratio(p.Median[toolOurs], p.Median[toolPlaywright]); ok {
			ourPW = fmt.Sprintf("%.2f", x)
		}
		re := "–"
		if v := p.Median[toolReobserve]; v > 0 {
			re = ms(v)
		}
		fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s | %s / %s | %s |\n",
			p.Name, count(p.Elements), cell(f, 0), cell(p.Median[toolOurs], f), re,
			cell(p.Median[toolPlaywright], f), ourPW, count(p.Chars[toolOurs]), count(p.Chars[toolPlaywright]), count(p.Indexed))
	}
	for _, p := range r.Pages {
		for _, e := range p.Errors {
			fmt.Fprintf(&b, "\nfailed sample on %s: %s\n", p.Name, firstLine(e))
		}
	}
	b.WriteString("\n| target (issue 13) | status | measured |\n|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Goal, t.Status, t.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, r result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func newResult(rounds int) result {
	return result{Date: time.Now().UTC(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), Rounds: rounds}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
