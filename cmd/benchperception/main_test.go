package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rounds != 5 || len(o.Pages) != 5 || o.Pages[1] != (pageSpec{Name: "gen-10000", N: 10000}) || o.Playwright || o.PlaywrightDir == "" {
		t.Fatalf("defaults: %+v", o)
	}
	o, err = parseFlags([]string{"--pages", "gen-2k, manual,gen-2000", "--rounds", "3", "--json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Pages) != 2 || o.Pages[0].N != 2000 || o.Pages[1].Name != "manual" || o.Rounds != 3 || !o.JSON {
		t.Fatalf("parsed: %+v", o)
	}
	for _, bad := range [][]string{{"--pages", "gen-0"}, {"--pages", "wiki"}, {"--pages", ","}, {"--pages", "gen-999999"}} {
		if _, err := parseFlags(bad, io.Discard); !errors.Is(err, ErrBadPage) {
			t.Errorf("%q: err %v, want ErrBadPage", bad, err)
		}
	}
	if _, err := parseFlags([]string{"--rounds", "0"}, io.Discard); err == nil {
		t.Error("--rounds 0 accepted")
	}
	if _, err := parseFlags([]string{"--nope"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("extra argument: %v", err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{9, 9, 1, 100, 2}, 9}} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("median reordered its input: %v", c.in)
			}
		}
	}
}

// sampleResult is a run with every tool on the pages.
func sampleResult() result {
	r := result{Date: time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC), GOOS: "linux", GOARCH: "amd64", CPUs: 2, Browser: "Chrome/1", Playwright: "1.0", Rounds: 3}
	add := func(name string, el int, floor, ours, re, pw []float64) {
		r.Pages = append(r.Pages, pageResult{Name: name, Elements: el, Indexed: 10,
			Samples: map[string][]float64{toolFloor: floor, toolOurs: ours, toolReobserve: re, toolPlaywright: pw},
			Chars:   map[string]int{toolOurs: 100, toolPlaywright: 1000}})
	}
	add("gen-1000", 1005, []float64{80, 81, 90}, []float64{60, 70, 500}, []float64{5, 6, 7}, []float64{120, 121, 130})
	add("gen-10000", 10005, []float64{800, 845, 900}, []float64{400, 420, 430}, []float64{10, 11, 12}, []float64{700, 776, 800})
	add("gen-50000", 50005, []float64{3600, 3670, 3700}, []float64{2000, 2100, 2200}, []float64{40, 60, 61}, []float64{4700, 4720, 4800})
	r.finish()
	return r
}

func TestTargets(t *testing.T) {
	r := sampleResult()
	got := map[string]string{}
	for _, tg := range r.Targets {
		got[tg.Goal] = tg.Status + " " + tg.Detail
	}
	want := map[string]string{
		"≤0.5× floor on gen-10000":                 "PASS 0.50×",
		"≤0.5× floor on gen-50000":                 "MISS 0.57×",
		"≤0.8× Playwright on every page":           "PASS worst 0.58× (gen-1000)",
		"≤100 ms on gen-1000":                      "PASS 70 ms",
		"unchanged re-observe <50 ms (every page)": "MISS worst 60 ms (gen-50000)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	// Without Playwright the goal is n/a, not PASS.
	for i := range r.Pages {
		delete(r.Pages[i].Samples, toolPlaywright)
	}
	r.finish()
	for _, tg := range r.Targets {
		if strings.Contains(tg.Goal, "Playwright") && tg.Status != "n/a" {
			t.Errorf("no Playwright: %+v", tg)
		}
	}
}

func TestWriteTable(t *testing.T) {
	r := sampleResult()
	r.Pages[2].Samples[toolPlaywright] = nil
	r.finish()
	var b bytes.Buffer
	if err := writeTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"2026-12-02 21:00 UTC, linux/amd64, 2 CPUs, Chrome/1; 3 rounds per page, medians; playwright-core 1.0",
		"| gen-1000 (1005) | 81 ms | 70 ms (0.86) | 6.0 ms | 121 ms (1.49) | 0.58 | 100 / 1000 | 10 |",
		"| gen-50000 (50005) | 3.67 s | 2.10 s (0.57) | 60 ms | – | – | 100 / 1000 | 10 |",
		"| ≤0.5× floor on gen-50000 | MISS | 0.57× |",
		"| ≤0.8× Playwright on every page | n/a | Playwright not measured |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := writeJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Pages[1].Median[toolOurs] != 420 {
		t.Fatalf("JSON round trip: %v %+v", err, back.Pages)
	}
	// --from-json renders a saved run's table.
	saved := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(saved, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := run(context.Background(), []string{"--from-json", saved}, &table, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "| gen-10000 (10005) | 845 ms | 420 ms (0.50) |") {
		t.Errorf("table from JSON:\n%s", table.String())
	}
	if err := run(context.Background(), []string{"--from-json", filepath.Join(t.TempDir(), "none.json")}, io.Discard, io.Discard); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestManualSize(t *testing.T) {
	html := manualHTML(36)
	// Elements are counted in Chromium by the real run; here, the tags.
	n := strings.Count(html, "<") - strings.Count(html, "</") - strings.Count(html, "<!")
	if n < 17000 || n > 21000 {
		t.Fatalf("manual has %d elements, want about 19k", n)
	}
}

// TestRunSmall is one short real run: Chromium, the default watchdogs, a
// 50-element generated page, one round, JSON out.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, log bytes.Buffer
	if err := run(ctx, []string{"--pages", "gen-50", "--rounds", "2", "--json"}, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(r.Pages) != 1 || r.Browser == "" || r.Playwright != "" {
		t.Fatalf("result: %+v", r)
	}
	p := r.Pages[0]
	if p.Elements < 50 || p.Indexed == 0 || p.Chars[toolOurs] == 0 {
		t.Fatalf("page: %+v", p)
	}
	for _, tool := range []string{toolFloor, toolOurs, toolReobserve} {
		if len(p.Samples[tool]) != 2 || p.Median[tool] <= 0 {
			t.Errorf("%s: samples %v median %v", tool, p.Samples[tool], p.Median[tool])
		}
	}
	if len(p.Samples[toolPlaywright]) != 0 {
		t.Errorf("Playwright measured without --playwright: %v", p.Samples[toolPlaywright])
	}
	if len(r.Targets) != 5 {
		t.Errorf("targets: %+v", r.Targets)
	}
}
