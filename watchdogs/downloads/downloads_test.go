package downloads

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/chromedp/cdproto/browser"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// harness is a started session with the downloads watchdog and a recorder
// of the events it emits.
type harness struct {
	t   *testing.T
	env *testbrowser.Env
	s   *session.Session
	w   *Watchdog
	rec *wdtest.Recorder
	ctx context.Context
}

func start(t *testing.T, prof session.Profile, cfg Config) *harness {
	t.Helper()
	w := New(cfg)
	s, env, rec, ctx := wdtest.Connect(t, prof, w)
	return &harness{t: t, env: env, s: s, w: w, rec: rec, ctx: ctx}
}

// stop stops the session before the test ends (cleanup's Stop is then a
// no-op).
func (h *harness) stop() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.s.Stop(ctx); err != nil {
		h.t.Errorf("stop: %v", err)
	}
}

// recorded returns the recorded events of type E, oldest first.
func recorded[E any](rec *wdtest.Recorder) []E {
	var out []E
	for _, ev := range rec.All() {
		if e, ok := ev.(E); ok {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) started() []events.DownloadStartedEvent {
	return recorded[events.DownloadStartedEvent](h.rec)
}

func (h *harness) progress() []events.DownloadProgressEvent {
	return recorded[events.DownloadProgressEvent](h.rec)
}

// waitFiles waits for n FileDownloaded events and returns them.
func (h *harness) waitFiles(n int) []events.FileDownloadedEvent {
	h.t.Helper()
	wdtest.WaitEvent(h.t, h.rec, time.Minute, func(events.FileDownloadedEvent) bool {
		return len(recorded[events.FileDownloadedEvent](h.rec)) >= n
	})
	return recorded[events.FileDownloadedEvent](h.rec)
}

// waitProgress waits for a DownloadProgress event matching ok.
func (h *harness) waitProgress(ok func(events.DownloadProgressEvent) bool) events.DownloadProgressEvent {
	h.t.Helper()
	return wdtest.WaitEvent(h.t, h.rec, time.Minute, ok)
}

func (h *harness) eval(expr string) {
	h.t.Helper()
	wdtest.Eval(h.t, h.ctx, h.s, expr, nil)
}

// navigateDownload navigates to a URL that answers with an attachment.
// The session currently reports such a navigation as a failed one
// (Page.navigate answers isDownload=true together with net::ERR_ABORTED);
// both that and a download verdict are accepted here, the file is what the
// tests check.
func (h *harness) navigateDownload(u string) {
	h.t.Helper()
	res, err := bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u})
	var ne *session.NavigationError
	switch {
	case err == nil:
		if res.Outcome.Verdict != events.VerdictDownload {
			h.t.Fatalf("navigation to %s: verdict %q, want download", u, res.Outcome.Verdict)
		}
	case errors.As(err, &ne) && strings.Contains(ne.ErrorText, "ERR_ABORTED"):
	default:
		h.t.Fatalf("navigation to %s: %v", u, err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertInside(t *testing.T, dir, p string) {
	t.Helper()
	if filepath.Dir(p) != dir {
		t.Fatalf("file %s is not directly inside %s", p, dir)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("%s is %s, want a regular file", p, fi.Mode())
	}
}

func TestDownloadsLinkClick(t *testing.T) {
	h := start(t, session.Profile{}, Config{})
	dir := h.w.Dir()
	if dir == "" || !strings.Contains(filepath.Base(dir), "browseragent-downloads-") {
		t.Fatalf("temp dir %q", dir)
	}
	wdtest.Navigate(t, h.ctx, h.s, h.env.URL("/links.html"))
	h.eval(`document.getElementById("download").click(), true`)
	files := h.waitFiles(1)
	f := files[0]
	assertInside(t, dir, f.Path)
	if f.FileName != "report.txt" || filepath.Base(f.Path) != "report.txt" {
		t.Fatalf("file %+v", f)
	}
	if got, want := readFile(t, f.Path), "browseragent download fixture: report.txt\n"; got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
	if f.Size != int64(len("browseragent download fixture: report.txt\n")) || f.FileType != "txt" || f.MIMEType != "text/plain" || f.AutoDownload {
		t.Fatalf("file metadata %+v", f)
	}
	if !strings.HasSuffix(f.URL, "/download?name=report.txt") || f.GUID == "" {
		t.Fatalf("file url/guid %+v", f)
	}
	started, progress := h.started(), h.progress()
	if len(started) != 1 || started[0].GUID != f.GUID || started[0].SuggestedFilename != "report.txt" {
		t.Fatalf("started %+v", started)
	}
	last := progress[len(progress)-1]
	if last.GUID != f.GUID || last.State != "completed" || last.ReceivedBytes != f.Size {
		t.Fatalf("progress %+v", progress)
	}
	if got := h.w.Files(); len(got) != 1 || got[0].Path != f.Path {
		t.Fatalf("Files() = %+v", got)
	}
	// No guid-named leftovers.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %v", entries)
	}
	// Detach removes the directory it created.
	h.stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir still there after Stop: %v", err)
	}
}

func TestDownloadsNavigationAndCollisions(t *testing.T) {
	given := filepath.Join(t.TempDir(), "given")
	h := start(t, session.Profile{DownloadsDir: given}, Config{})
	if h.w.Dir() != given {
		real, _ := filepath.EvalSymlinks(given)
		if h.w.Dir() != real {
			t.Fatalf("Dir() = %q, want %q", h.w.Dir(), given)
		}
	}
	want := []string{"report.txt", "report (1).txt", "report (2).txt"}
	for i := range want {
		h.navigateDownload(h.env.URL("/download?name=report.txt"))
		h.waitFiles(i + 1)
	}
	files := h.w.Files()
	for i, f := range files {
		if f.FileName != want[i] {
			t.Fatalf("file %d named %q, want %q", i, f.FileName, want[i])
		}
		assertInside(t, h.w.Dir(), f.Path)
		if readFile(t, f.Path) != "browseragent download fixture: report.txt\n" {
			t.Fatalf("content of %s", f.Path)
		}
	}
	dir := h.w.Dir()
	h.stop()
	// A directory given by the caller is kept, with its files.
	if _, err := os.Stat(filepath.Join(dir, "report (2).txt")); err != nil {
		t.Fatalf("given directory was not kept: %v", err)
	}
}

// hostileServer serves attachments whose names try to leave the folder.
func hostileServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Header().Set("Content-Disposition", `attachment; filename="../../x"`)
		case "/encoded":
			w.Header().Set("Content-Disposition", `attachment; filename*=UTF-8''..%2F..%2Fevil.txt`)
		case "/dots":
			w.Header().Set("Content-Disposition", `attachment; filename=".."`)
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte("hostile " + r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDownloadsHostileNamesStayInside(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "downloads")
	h := start(t, session.Profile{}, Config{Dir: dir})
	srv := hostileServer(t)
	paths := []string{"/plain", "/encoded", "/dots"}
	for i, p := range paths {
		h.navigateDownload(srv.URL + p)
		h.waitFiles(i + 1)
	}
	real := h.w.Dir()
	for i, f := range h.w.Files() {
		assertInside(t, real, f.Path)
		if f.FileName == ".." || strings.HasPrefix(f.FileName, ".") || strings.ContainsAny(f.FileName, `/\`) {
			t.Fatalf("file name %q", f.FileName)
		}
		t.Logf("%s saved as %q", paths[i], f.FileName)
		if got := readFile(t, f.Path); got != "hostile "+paths[i] {
			t.Fatalf("content of %s = %q", f.Path, got)
		}
	}
	// Nothing was written next to the download folder or above it.
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "downloads" {
		t.Fatalf("parent directory holds %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(parent), "x")); err == nil {
		t.Fatal("a file escaped to the grandparent directory")
	}
}

func TestDownloadsCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="big.bin"`)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		_, _ = w.Write(make([]byte, 4096))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select { // never finishes on its own
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	h := start(t, session.Profile{}, Config{})
	h.navigateDownload(srv.URL + "/big")
	guid := wdtest.WaitEvent(t, h.rec, time.Minute, func(events.DownloadStartedEvent) bool { return true }).GUID
	if err := h.w.Cancel(h.ctx, guid); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	h.waitProgress(func(p events.DownloadProgressEvent) bool { return p.GUID == guid && p.State == "canceled" })
	if err := h.w.Cancel(h.ctx, guid); !errors.Is(err, ErrDownloadNotFound) {
		t.Fatalf("cancelling a finished download: %v, want ErrDownloadNotFound", err)
	}
	if len(h.w.Files()) != 0 {
		t.Fatalf("a cancelled download is listed: %+v", h.w.Files())
	}
}

// pdfFixture is a minimal valid one-page PDF.
const pdfFixture = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n" +
	"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n" +
	"trailer<</Root 1 0 R>>\n%%EOF\n"

func TestDownloadsAutoPDF(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/docs/sample.pdf" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte(pdfFixture))
	}))
	t.Cleanup(srv.Close)
	h := start(t, session.Profile{AutoDownloadPDFs: true}, Config{})
	wdtest.Navigate(t, h.ctx, h.s, srv.URL+"/docs/sample.pdf")
	f := h.waitFiles(1)[0]
	assertInside(t, h.w.Dir(), f.Path)
	if f.FileName != "sample.pdf" || f.MIMEType != "application/pdf" {
		t.Fatalf("file %+v", f)
	}
	if got := readFile(t, f.Path); got != pdfFixture {
		t.Fatalf("content %q", got)
	}
	t.Logf("PDF saved with AutoDownload=%v", f.AutoDownload)
	if n := len(h.w.Files()); n != 1 {
		t.Fatalf("the PDF was saved %d times: %+v", n, h.w.Files())
	}
}

func TestDownloadsSanitizeName(t *testing.T) {
	long := strings.Repeat("é", 150) + ".pdf"
	cases := []struct{ in, want string }{
		{"report.txt", "report.txt"},
		{"../../x", "x"},
		{`..\..\windows\system32\evil.dll`, "evil.dll"},
		{"/etc/passwd", "passwd"},
		{"..", "download"},
		{".", "download"},
		{"", "download"},
		{"   ", "download"},
		{".bashrc", "bashrc"},
		{"...hidden.txt", "hidden.txt"},
		{"a\x00b\x1fc\x7f.txt", "abc.txt"},
		{"bad\u202Etxt.exe", "badtxt.exe"},
		{`a<b>c:d"e|f?g*h.txt`, "a_b_c_d_e_f_g_h.txt"},
		{"CON", "_CON"},
		{"nul.txt", "_nul.txt"},
		{"com1.tar.gz", "_com1.tar.gz"},
		{"trailing. . ", "trailing"},
		{"in\xffvalid.txt", "in_valid.txt"},
		{"dir/", "download"},
	}
	for _, c := range cases {
		if got := sanitizeName(c.in); got != c.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := sanitizeName(long)
	if len(got) > maxName || !utf8.ValidString(got) || !strings.HasSuffix(got, ".pdf") {
		t.Errorf("long name -> %q (%d bytes)", got, len(got))
	}
}

func TestDownloadsContainment(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		p    string
		want bool
	}{
		{filepath.Join(dir, "a.txt"), true},
		{dir, false},
		{filepath.Join(dir, "..", "a.txt"), false},
		{filepath.Join(dir, "sub", "a.txt"), false},
		{"/etc/passwd", false},
	} {
		if got := contained(dir, c.p); got != c.want {
			t.Errorf("contained(%q) = %v, want %v", c.p, got, c.want)
		}
	}
	// A symlink planted under the wanted name is never followed or replaced.
	outside := filepath.Join(t.TempDir(), "target.txt")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "0123abcd-guid")
	if err := os.WriteFile(src, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst, err := moveInto(dir, src, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dst) != "a (1).txt" {
		t.Fatalf("moved to %s", dst)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatalf("symlink target was overwritten: %q", b)
	}
	// A raw hostile suggested name (Chromium sanitizes its own, this is the
	// second line of defence) ends inside the folder.
	w := &Watchdog{}
	guid := "6f1c2a9e-0000-4000-8000-00000000abcd"
	if err := os.WriteFile(filepath.Join(dir, guid), []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := w.finish(context.Background(), dir, &active{guid: guid, url: "http://x/", name: "../../x"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != filepath.Join(dir, "x") || f.Size != 7 {
		t.Fatalf("finished as %+v", f)
	}
	if _, err := w.finish(context.Background(), dir, &active{guid: "../../etc/passwd", name: "p"}); err == nil {
		t.Fatal("a guid naming a path was accepted")
	}
	// Bad input loses nothing: a missing source leaves no placeholder.
	if _, err := moveInto(dir, filepath.Join(dir, "missing"), "b.txt"); err == nil {
		t.Fatal("moving a missing file succeeded")
	}
	if _, err := os.Lstat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("placeholder left behind: %v", err)
	}
}

// TestDownloadsAutoPDFErrors: an oversized PDF and an HTTP error on the
// page's fetch are reported with their sentinel errors and a canceled
// progress, and nothing is written.
func TestDownloadsAutoPDFErrors(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big.pdf":
		case "/once.pdf": // the tab gets the PDF, the watchdog's fetch a 404
			if served.Add(1) > 1 {
				http.NotFound(w, r)
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte(pdfFixture))
	}))
	t.Cleanup(srv.Close)
	h := start(t, session.Profile{}, Config{AutoDownloadPDFs: true, MaxPDFBytes: 16})

	wdtest.Navigate(t, h.ctx, h.s, srv.URL+"/big.pdf")
	var ct string
	wdtest.Eval(t, h.ctx, h.s, "document.contentType", &ct)
	if ct != "application/pdf" {
		t.Skipf("this Chromium does not show PDFs in the tab (content type %q): nothing to auto-download", ct)
	}
	canceled := h.waitProgress(func(p events.DownloadProgressEvent) bool {
		return strings.HasPrefix(p.GUID, "pdf-") && p.State == "canceled"
	})
	tab := h.s.FocusedTab()
	_, err := h.w.onNavigationComplete(h.ctx, events.NavigationCompleteEvent{TargetID: tab, URL: srv.URL + "/big.pdf"})
	if !errors.Is(err, ErrPDFTooLarge) || !strings.Contains(err.Error(), "/big.pdf") {
		t.Fatalf("oversized PDF: %v, want ErrPDFTooLarge naming the URL", err)
	}

	wdtest.Navigate(t, h.ctx, h.s, srv.URL+"/once.pdf")
	h.waitProgress(func(p events.DownloadProgressEvent) bool {
		return strings.HasPrefix(p.GUID, "pdf-") && p.GUID != canceled.GUID && p.State == "canceled"
	})
	_, err = h.w.onNavigationComplete(h.ctx, events.NavigationCompleteEvent{TargetID: tab, URL: srv.URL + "/once.pdf"})
	if !errors.Is(err, ErrPDFFetch) || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("PDF fetch answered 404: %v, want ErrPDFFetch naming the status", err)
	}
	if files := h.w.Files(); len(files) != 0 {
		t.Fatalf("a failed auto-download was listed: %+v", files)
	}
	if entries, _ := os.ReadDir(h.w.Dir()); len(entries) != 0 {
		t.Fatalf("a failed auto-download left %v", entries)
	}
}

// TestDownloadsWaitForFile: the wait for a completed download's file ends
// when the file appears, when its bound passes, and at once when its
// context (the watchdog's group) ends.
func TestDownloadsWaitForFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "late")
	// Written aside and renamed, as Chrome finishes a download: WriteFile
	// alone creates the file empty first, and the wait may see it then.
	appear := time.AfterFunc(3*fileTick, func() {
		if os.WriteFile(p+".part", []byte("x"), 0o644) == nil {
			_ = os.Rename(p+".part", p)
		}
	})
	defer appear.Stop()
	if fi, err := waitForFile(context.Background(), p, time.Minute); err != nil || fi.Size() != 1 {
		t.Fatalf("waiting for a file that appears: %v, %v", fi, err)
	}
	if _, err := waitForFile(context.Background(), filepath.Join(dir, "never"), 2*fileTick); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bounded wait: %v, want a not-exist error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	begun := time.Now()
	if _, err := waitForFile(ctx, filepath.Join(dir, "never"), time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	if d := time.Since(begun); d > 10*time.Second {
		t.Fatalf("a cancelled wait took %s", d)
	}
	// A stopped group ends the wait of a finish in progress.
	w := &Watchdog{}
	if _, err := w.finish(ctx, dir, &active{guid: "0123abcd", name: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("finish with a stopped group: %v", err)
	}
}

// TestDownloadsResync: after lost events, a download whose file the
// browser completed is saved (and its late completed event ignored), one
// still writing its .crdownload is left running, one with no file is
// logged as possibly lost, and guid-named files no event announced are
// logged and left alone.
func TestDownloadsResync(t *testing.T) {
	dir := t.TempDir()
	const (
		done    = "11111111-1111-4111-8111-111111111111"
		running = "22222222-2222-4222-8222-222222222222"
		missing = "33333333-3333-4333-8333-333333333333"
		orphan  = "44444444-4444-4444-8444-444444444444"
	)
	for name, content := range map[string]string{
		done:                       "complete payload",
		running + ".crdownload":    "part",
		orphan:                     "from another run",
		"report.txt":               "an earlier download",
		"55555555-5555.crdownload": "not a uuid: ignored",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zap.DebugLevel)
	w := &Watchdog{
		dir: dir, log: zap.New(core), done: map[string]bool{},
		active: map[string]*active{
			done:    {guid: done, url: "http://x/r", name: "report.txt"},
			running: {guid: running, url: "http://x/b", name: "big.bin"},
			missing: {guid: missing, url: "http://x/m", name: "gone.txt"},
		},
	}
	// A stopped group resyncs nothing.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	w.resync(stopped)
	if len(w.Files()) != 0 || len(w.active) != 3 {
		t.Fatalf("resync with a stopped group acted: files %+v, active %d", w.Files(), len(w.active))
	}

	ctx := context.Background()
	w.resync(ctx)
	files := w.Files()
	if len(files) != 1 || files[0].GUID != done || files[0].FileName != "report (1).txt" || files[0].Size != int64(len("complete payload")) {
		t.Fatalf("files after resync: %+v", files)
	}
	if got := readFile(t, files[0].Path); got != "complete payload" {
		t.Fatalf("saved content %q", got)
	}
	if w.active[done] != nil || w.active[running] == nil || w.active[missing] == nil {
		t.Fatalf("in progress after resync: %v", w.active)
	}
	lost := logs.FilterMessageSnippet("may be lost").All()
	if len(lost) != 1 || lost[0].ContextMap()["guid"] != missing || lost[0].ContextMap()["url"] != "http://x/m" {
		t.Fatalf("possibly lost downloads logged: %+v", lost)
	}
	unann := logs.FilterMessageSnippet("no event announced").All()
	if len(unann) != 1 || fmt.Sprint(unann[0].ContextMap()["files"]) != "["+orphan+"]" {
		t.Fatalf("unannounced files logged: %+v", unann)
	}
	if got := readFile(t, filepath.Join(dir, orphan)); got != "from another run" {
		t.Fatalf("an unannounced file was touched: %q", got)
	}
	// The completed event that was only late, not lost, changes nothing.
	w.progress(ctx, &browser.EventDownloadProgress{GUID: done, State: browser.DownloadProgressStateCompleted, ReceivedBytes: 16, TotalBytes: 16})
	if len(w.Files()) != 1 || logs.FilterMessage("saving download").Len() != 0 {
		t.Fatalf("the late completed event was handled again: files %+v, logs %+v", w.Files(), logs.All())
	}
	// The running one completes normally.
	if err := os.Rename(filepath.Join(dir, running+".crdownload"), filepath.Join(dir, running)); err != nil {
		t.Fatal(err)
	}
	w.progress(ctx, &browser.EventDownloadProgress{GUID: running, State: browser.DownloadProgressStateCompleted})
	if files := w.Files(); len(files) != 2 || files[1].FileName != "big.bin" {
		t.Fatalf("files after the running download completed: %+v", files)
	}
}
