package watchdogs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// recStart runs a session with a recording watchdog writing into cfg.Dir
// (a temp dir if empty) and navigates it to the index page. The session is
// stopped at cleanup if the test did not stop it.
func recStart(t *testing.T, cfg RecordingConfig) (*testbrowser.Env, *session.Session, *Recording, context.Context) {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	rec := NewRecording(cfg)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL()}, session.WithWatchdogs(rec))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		s.Stop(sctx)
	})
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/index.html")}); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	return env, s, rec, ctx
}

// recPaint makes the page in ps repaint a few times (headless Chrome only
// sends screencast frames when the page paints).
func recPaint(t *testing.T, ctx context.Context, ps *cdp.Session) {
	t.Helper()
	// setTimeout, not requestAnimationFrame: rAF does not run in a
	// background tab.
	const script = `new Promise(done => {
		const colours = ["#c33", "#3c3", "#33c", "#cc3", "#3cc", "#c3c"];
		let i = 0;
		const step = () => {
			document.body.style.background = colours[i % colours.length];
			document.body.textContent = "frame " + i + " " + Math.random();
			if (++i >= 6) { setTimeout(() => done(true), 150); return; }
			setTimeout(step, 150);
		};
		step();
	})`
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := evaluate(ctx, ps, script, nil); err != nil {
		t.Fatalf("paint: %v", err)
	}
}

// recPaintUntil repaints the focused tab until cond holds, failing after a
// generous bound.
func recPaintUntil(t *testing.T, ctx context.Context, s *session.Session, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		ps, err := s.PageSession("")
		if err != nil {
			t.Fatal(err)
		}
		recPaint(t, ctx, ps)
	}
}

// recManifest reads frames.jsonl and checks every line: fields set, the
// file exists and decodes in the recorded size.
func recManifest(t *testing.T, dir, format string) []recFrameLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, RecordingManifest))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []recFrameLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l recFrameLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("manifest line %q: %v", sc.Text(), err)
		}
		if l.Seq < 1 || l.Target == "" || l.Width <= 0 || l.Height <= 0 || l.Width > DefaultRecordingMaxWidth || l.Height > DefaultRecordingMaxHeight {
			t.Fatalf("manifest line %+v", l)
		}
		ts, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil || ts.Location() != time.UTC || time.Since(ts) > time.Hour || time.Until(ts) > time.Hour {
			t.Fatalf("manifest time %q: %v", l.Time, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, l.File))
		if err != nil {
			t.Fatalf("manifest names %s: %v", l.File, err)
		}
		var img image.Image
		if format == "png" {
			img, err = png.Decode(bytes.NewReader(data))
		} else {
			img, err = jpeg.Decode(bytes.NewReader(data))
		}
		if err != nil {
			t.Fatalf("%s is not a %s: %v", l.File, format, err)
		}
		if b := img.Bounds(); b.Dx() != l.Width || b.Dy() != l.Height {
			t.Fatalf("%s is %v, manifest says %dx%d", l.File, b, l.Width, l.Height)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// recFiles lists the frame files in dir.
func recFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "frame-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRecordingWritesFrames(t *testing.T) {
	dir := t.TempDir()
	_, s, rec, ctx := recStart(t, RecordingConfig{Dir: dir})
	tab := s.FocusedTab()
	recPaintUntil(t, ctx, s, "a frame", func() bool { return rec.Frames() >= 1 })

	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	n := rec.Frames()
	lines := recManifest(t, dir, "jpeg")
	files := recFiles(t, dir)
	if len(lines) != n || len(files) != n || n < 1 {
		t.Fatalf("Frames()=%d, manifest lines %d, files %d", n, len(lines), len(files))
	}
	if _, err := os.Stat(filepath.Join(dir, "frame-000001.jpg")); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	seen := map[int]bool{}
	for _, l := range lines {
		if l.Target != tab || seen[l.Seq] || l.File != filepath.Base(l.File) || !strings.HasSuffix(l.File, ".jpg") {
			t.Fatalf("line %+v (tab %s)", l, tab)
		}
		seen[l.Seq] = true
	}
	// Stopped means stopped: nothing more is written.
	time.Sleep(300 * time.Millisecond)
	if got := len(recFiles(t, dir)); got != n || rec.Frames() != n {
		t.Fatalf("after Stop: %d files, Frames()=%d, want %d", got, rec.Frames(), n)
	}
}

func TestRecordingPNG(t *testing.T) {
	dir := t.TempDir()
	_, s, rec, ctx := recStart(t, RecordingConfig{Dir: dir, Format: "png", MaxWidth: 400, MaxHeight: 300})
	recPaintUntil(t, ctx, s, "a frame", func() bool { return rec.Frames() >= 1 })
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, l := range recManifest(t, dir, "png") {
		if !strings.HasSuffix(l.File, ".png") || l.Width > 400 || l.Height > 300 {
			t.Fatalf("line %+v: want a .png within 400x300", l)
		}
	}
}

func TestRecordingFollowsFocus(t *testing.T) {
	dir := t.TempDir()
	env, s, rec, ctx := recStart(t, RecordingConfig{Dir: dir})
	first := s.FocusedTab()
	recPaintUntil(t, ctx, s, "a frame of the first tab", func() bool { return rec.Frames() >= 1 })

	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/other.html"), NewTab: true}); err != nil {
		t.Fatalf("new tab: %v", err)
	}
	second := s.FocusedTab()
	if second == first || second == "" {
		t.Fatalf("focus %q after opening a new tab (first %q)", second, first)
	}
	count := func(target string) int {
		n := 0
		for _, l := range recManifest(t, dir, "jpeg") {
			if l.Target == target {
				n++
			}
		}
		return n
	}
	recPaintUntil(t, ctx, s, "a frame of the new tab", func() bool { return count(second) >= 1 })

	// The old tab is no longer recorded, even when it is brought to the
	// front (a hidden tab would not paint at all) and paints.
	before := count(first)
	old, err := s.PageSession(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cdpproto.Call(ctx, old, page.BringToFront, cdpproto.Empty{}); err != nil {
		t.Fatal(err)
	}
	recPaint(t, ctx, old)
	if _, err := cdpproto.Call(ctx, s.Conn().Browser(), target.ActivateTarget, target.ActivateTargetParams{TargetID: target.ID(second)}); err != nil {
		t.Fatal(err)
	}
	n2 := count(second)
	recPaintUntil(t, ctx, s, "another frame of the new tab", func() bool { return count(second) > n2 })
	if after := count(first); after != before {
		t.Fatalf("old tab still recorded: %d frames before, %d after", before, after)
	}
}

func TestRecordingMaxFrames(t *testing.T) {
	dir := t.TempDir()
	_, s, rec, ctx := recStart(t, RecordingConfig{Dir: dir, MaxFrames: 2})
	recPaintUntil(t, ctx, s, "two frames", func() bool { return rec.Frames() >= 2 })
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		recPaint(t, ctx, ps)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n, lines, files := rec.Frames(), len(recManifest(t, dir, "jpeg")), len(recFiles(t, dir)); n != 2 || lines != 2 || files != 2 {
		t.Fatalf("MaxFrames 2: Frames()=%d, manifest lines %d, files %d", n, lines, files)
	}
}

func TestRecordingConfigErrors(t *testing.T) {
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		cfg  RecordingConfig
		want string
	}{
		{RecordingConfig{}, "Dir is required"},
		{RecordingConfig{Dir: t.TempDir(), Format: "webp"}, `Format "webp"`},
		{RecordingConfig{Dir: t.TempDir(), Quality: 101}, "Quality 101"},
		{RecordingConfig{Dir: t.TempDir(), MaxFrames: -1}, "MaxFrames -1"},
	} {
		s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL()}, session.WithWatchdogs(NewRecording(tc.cfg)))
		err := s.Start(ctx)
		if err == nil {
			s.Stop(ctx)
			t.Fatalf("Start accepted %+v", tc.cfg)
		}
		if !errors.Is(err, ErrRecordingConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("config %+v: error %v, want ErrRecordingConfig mentioning %q", tc.cfg, err, tc.want)
		}
		if s.Running() {
			t.Fatal("session running after a failed Start")
		}
	}
}
