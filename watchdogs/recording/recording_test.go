package recording

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
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// start runs a session with a recording watchdog writing into cfg.Dir
// (a temp dir if empty) and navigates it to the index page. The session is
// stopped at cleanup if the test did not stop it.
func start(t *testing.T, cfg Config) (*testbrowser.Env, *session.Session, *Watchdog, context.Context) {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	w := New(cfg)
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, w)
	wdtest.Navigate(t, ctx, s, env.URL("/index.html"))
	return env, s, w, ctx
}

// stop stops the session (all frames are written then).
func stop(t *testing.T, s *session.Session) {
	t.Helper()
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// paint makes the page in ps repaint a few times (headless Chrome only
// sends screencast frames when the page paints).
func paint(t *testing.T, ctx context.Context, ps *cdp.Session) {
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
	if err := pagejs.Evaluate(ctx, ps, script, nil); err != nil {
		t.Fatalf("paint: %v", err)
	}
}

// paintUntil repaints the focused tab until cond holds, failing after a
// generous bound.
func paintUntil(t *testing.T, ctx context.Context, s *session.Session, what string, cond func() bool) {
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
		paint(t, ctx, ps)
	}
}

// manifest reads frames.jsonl and checks every frame line: fields set, the
// file exists and decodes in the recorded size. Gap lines are checked and
// left out.
func manifest(t *testing.T, dir, format string) []frameLine {
	t.Helper()
	frames, _ := readManifest(t, dir, format)
	return frames
}

func readManifest(t *testing.T, dir, format string) ([]frameLine, []gapLine) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, Manifest))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []frameLine
	var gaps []gapLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("manifest line %q: %v", sc.Text(), err)
		}
		if _, ok := raw["gap"]; ok {
			var g gapLine
			if err := json.Unmarshal(sc.Bytes(), &g); err != nil || g.Gap == "" || g.Target == "" || raw["file"] != nil {
				t.Fatalf("gap line %q: %v", sc.Text(), err)
			}
			checkTime(t, g.Time)
			gaps = append(gaps, g)
			continue
		}
		var l frameLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("manifest line %q: %v", sc.Text(), err)
		}
		if l.Seq < 1 || l.Target == "" || l.Width <= 0 || l.Height <= 0 || l.Width > DefaultMaxWidth || l.Height > DefaultMaxHeight {
			t.Fatalf("manifest line %+v", l)
		}
		checkTime(t, l.Time)
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
	return lines, gaps
}

// checkTime checks a manifest time: RFC 3339 in UTC, about now.
func checkTime(t *testing.T, s string) {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || ts.Location() != time.UTC || time.Since(ts) > time.Hour || time.Until(ts) > time.Hour {
		t.Fatalf("manifest time %q: %v", s, err)
	}
}

// frameFiles lists the frame files in dir.
func frameFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "frame-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRecordingWritesFrames(t *testing.T) {
	dir := t.TempDir()
	_, s, w, ctx := start(t, Config{Dir: dir})
	tab := s.FocusedTab()
	paintUntil(t, ctx, s, "a frame", func() bool { return w.Frames() >= 1 })
	stop(t, s)
	n := w.Frames()
	lines := manifest(t, dir, "jpeg")
	files := frameFiles(t, dir)
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
	if got := len(frameFiles(t, dir)); got != n || w.Frames() != n {
		t.Fatalf("after Stop: %d files, Frames()=%d, want %d", got, w.Frames(), n)
	}
}

func TestRecordingPNG(t *testing.T) {
	dir := t.TempDir()
	_, s, w, ctx := start(t, Config{Dir: dir, Format: "png", MaxWidth: 400, MaxHeight: 300})
	paintUntil(t, ctx, s, "a frame", func() bool { return w.Frames() >= 1 })
	stop(t, s)
	for _, l := range manifest(t, dir, "png") {
		if !strings.HasSuffix(l.File, ".png") || l.Width > 400 || l.Height > 300 {
			t.Fatalf("line %+v: want a .png within 400x300", l)
		}
	}
}

func TestRecordingFollowsFocus(t *testing.T) {
	dir := t.TempDir()
	env, s, w, ctx := start(t, Config{Dir: dir})
	first := s.FocusedTab()
	paintUntil(t, ctx, s, "a frame of the first tab", func() bool { return w.Frames() >= 1 })

	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/other.html"), NewTab: true}); err != nil {
		t.Fatalf("new tab: %v", err)
	}
	second := s.FocusedTab()
	if second == first || second == "" {
		t.Fatalf("focus %q after opening a new tab (first %q)", second, first)
	}
	count := func(target string) int {
		n := 0
		for _, l := range manifest(t, dir, "jpeg") {
			if l.Target == target {
				n++
			}
		}
		return n
	}
	paintUntil(t, ctx, s, "a frame of the new tab", func() bool { return count(second) >= 1 })

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
	paint(t, ctx, old)
	if _, err := cdpproto.Call(ctx, s.Conn().Browser(), target.ActivateTarget, target.ActivateTargetParams{TargetID: target.ID(second)}); err != nil {
		t.Fatal(err)
	}
	n2 := count(second)
	paintUntil(t, ctx, s, "another frame of the new tab", func() bool { return count(second) > n2 })
	if after := count(first); after != before {
		t.Fatalf("old tab still recorded: %d frames before, %d after", before, after)
	}
}

func TestRecordingMaxFrames(t *testing.T) {
	dir := t.TempDir()
	_, s, w, ctx := start(t, Config{Dir: dir, MaxFrames: 2})
	paintUntil(t, ctx, s, "two frames", func() bool { return w.Frames() >= 2 })
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		paint(t, ctx, ps)
	}
	stop(t, s)
	if n, lines, files := w.Frames(), len(manifest(t, dir, "jpeg")), len(frameFiles(t, dir)); n != 2 || lines != 2 || files != 2 {
		t.Fatalf("MaxFrames 2: Frames()=%d, manifest lines %d, files %d", n, lines, files)
	}
}

func TestRecordingConfigErrors(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := wdtest.Ctx(t)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Dir is required"},
		{Config{Dir: t.TempDir(), Format: "webp"}, `Format "webp"`},
		{Config{Dir: t.TempDir(), Quality: 101}, "Quality 101"},
		{Config{Dir: t.TempDir(), MaxFrames: -1}, "MaxFrames -1"},
	} {
		s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(New(tc.cfg)))
		err := s.Start(ctx)
		if err == nil {
			s.Stop(ctx)
			t.Fatalf("Start accepted %+v", tc.cfg)
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("config %+v: error %v, want ErrConfig mentioning %q", tc.cfg, err, tc.want)
		}
		if s.Running() {
			t.Fatal("session running after a failed Start")
		}
	}
}

// Frames lost to an overflow cannot come back: the gap is marked in the
// manifest (a line without a file, which report/ skips) and the screencast
// restarted, so later frames are recorded.
func TestRecordingGapAfterLostFrames(t *testing.T) {
	dir := t.TempDir()
	_, s, w, ctx := start(t, Config{Dir: dir})
	tab := s.FocusedTab()
	paintUntil(t, ctx, s, "a frame", func() bool { return w.Frames() >= 1 })
	w.mu.Lock()
	cur := w.cur
	w.mu.Unlock()
	w.resync(cur) // what follow.Run calls after an overflow
	before := w.Frames()
	paintUntil(t, ctx, s, "a frame after the gap", func() bool { return w.Frames() > before })
	stop(t, s)

	frames, gaps := readManifest(t, dir, "jpeg")
	if len(gaps) != 1 || gaps[0].Target != tab || !strings.Contains(gaps[0].Gap, "frames lost") {
		t.Fatalf("gaps = %+v, want one for tab %s", gaps, tab)
	}
	if len(frames) != w.Frames() {
		t.Fatalf("%d frame lines, Frames()=%d", len(frames), w.Frames())
	}
	// The gap sits between frames: after the ones recorded before resync
	// was called (at least one), no later than the count read after it
	// returned (a frame already on its way may land in between), and
	// before the frames painted after.
	raw, err := os.ReadFile(filepath.Join(dir, Manifest))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, `"gap"`) {
			at = i
		}
	}
	if len(lines) != len(frames)+1 || at < 1 || at > before || at == len(lines)-1 {
		t.Fatalf("gap at line %d, want between frame 1..%d and a later frame:\n%s", at, before, raw)
	}
}
