package watchdogs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// dlHarness is a started session with the downloads watchdog and the
// download events it emitted.
type dlHarness struct {
	t   *testing.T
	env *testbrowser.Env
	s   *session.Session
	w   *Downloads
	ctx context.Context

	mu       sync.Mutex
	started  []events.DownloadStartedEvent
	progress []events.DownloadProgressEvent
	files    []events.FileDownloadedEvent
	notify   chan struct{}
	stopped  bool
}

func dlStart(t *testing.T, prof session.Profile, cfg DownloadsConfig) *dlHarness {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	prof.CDPURL = env.Browser.WebSocketURL()
	w := NewDownloads(cfg)
	s := session.New(prof, session.WithWatchdogs(w))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	h := &dlHarness{t: t, env: env, s: s, w: w, ctx: ctx, notify: make(chan struct{}, 1)}
	t.Cleanup(func() { h.stop() })
	wake := func() {
		select {
		case h.notify <- struct{}{}:
		default:
		}
	}
	b := s.Bus()
	_, err1 := bus.Handle(b, events.DownloadStarted, "dltest", func(_ context.Context, e events.DownloadStartedEvent) (events.None, error) {
		h.mu.Lock()
		h.started = append(h.started, e)
		h.mu.Unlock()
		wake()
		return events.None{}, nil
	})
	_, err2 := bus.Handle(b, events.DownloadProgress, "dltest", func(_ context.Context, e events.DownloadProgressEvent) (events.None, error) {
		h.mu.Lock()
		h.progress = append(h.progress, e)
		h.mu.Unlock()
		wake()
		return events.None{}, nil
	})
	_, err3 := bus.Handle(b, events.FileDownloaded, "dltest", func(_ context.Context, e events.FileDownloadedEvent) (events.None, error) {
		h.mu.Lock()
		h.files = append(h.files, e)
		h.mu.Unlock()
		wake()
		return events.None{}, nil
	})
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *dlHarness) stop() {
	h.t.Helper()
	h.mu.Lock()
	done := h.stopped
	h.stopped = true
	h.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.s.Stop(ctx); err != nil {
		h.t.Errorf("stop: %v", err)
	}
}

// waitUntil waits (bounded generously) until cond holds under h.mu.
func (h *dlHarness) waitUntil(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		h.mu.Lock()
		ok := cond()
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-h.notify:
		case <-deadline:
			h.mu.Lock()
			defer h.mu.Unlock()
			h.t.Fatalf("timed out waiting for %s; started %+v progress %+v files %+v", what, h.started, h.progress, h.files)
		}
	}
}

// waitFiles waits for n FileDownloaded events and returns them.
func (h *dlHarness) waitFiles(n int) []events.FileDownloadedEvent {
	h.t.Helper()
	h.waitUntil(strconv.Itoa(n)+" downloaded files", func() bool { return len(h.files) >= n })
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]events.FileDownloadedEvent(nil), h.files...)
}

func (h *dlHarness) eval(expr string) {
	h.t.Helper()
	cs, err := h.s.PageSession("")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := evaluate(h.ctx, cs, expr, nil); err != nil {
		h.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// navigateDownload navigates to a URL that answers with an attachment.
// The session currently reports such a navigation as a failed one
// (Page.navigate answers isDownload=true together with net::ERR_ABORTED);
// both that and a download verdict are accepted here, the file is what the
// tests check.
func (h *dlHarness) navigateDownload(u string) {
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

func dlReadFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dlAssertInside(t *testing.T, dir, p string) {
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
	h := dlStart(t, session.Profile{}, DownloadsConfig{})
	dir := h.w.Dir()
	if dir == "" || !strings.Contains(filepath.Base(dir), "browseragent-downloads-") {
		t.Fatalf("temp dir %q", dir)
	}
	if _, err := bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: h.env.URL("/links.html")}); err != nil {
		t.Fatal(err)
	}
	h.eval(`document.getElementById("download").click(), true`)
	files := h.waitFiles(1)
	f := files[0]
	dlAssertInside(t, dir, f.Path)
	if f.FileName != "report.txt" || filepath.Base(f.Path) != "report.txt" {
		t.Fatalf("file %+v", f)
	}
	if got, want := dlReadFile(t, f.Path), "browseragent download fixture: report.txt\n"; got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
	if f.Size != int64(len("browseragent download fixture: report.txt\n")) || f.FileType != "txt" || f.MIMEType != "text/plain" || f.AutoDownload {
		t.Fatalf("file metadata %+v", f)
	}
	if !strings.HasSuffix(f.URL, "/download?name=report.txt") || f.GUID == "" {
		t.Fatalf("file url/guid %+v", f)
	}
	h.mu.Lock()
	started, progress := append([]events.DownloadStartedEvent(nil), h.started...), append([]events.DownloadProgressEvent(nil), h.progress...)
	h.mu.Unlock()
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
	h := dlStart(t, session.Profile{DownloadsDir: given}, DownloadsConfig{})
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
		dlAssertInside(t, h.w.Dir(), f.Path)
		if dlReadFile(t, f.Path) != "browseragent download fixture: report.txt\n" {
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

// dlHostileServer serves attachments whose names try to leave the folder.
func dlHostileServer(t *testing.T) *httptest.Server {
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
	h := dlStart(t, session.Profile{}, DownloadsConfig{Dir: dir})
	srv := dlHostileServer(t)
	paths := []string{"/plain", "/encoded", "/dots"}
	for i, p := range paths {
		h.navigateDownload(srv.URL + p)
		h.waitFiles(i + 1)
	}
	real := h.w.Dir()
	for i, f := range h.w.Files() {
		dlAssertInside(t, real, f.Path)
		if f.FileName == ".." || strings.HasPrefix(f.FileName, ".") || strings.ContainsAny(f.FileName, `/\`) {
			t.Fatalf("file name %q", f.FileName)
		}
		t.Logf("%s saved as %q", paths[i], f.FileName)
		if got := dlReadFile(t, f.Path); got != "hostile "+paths[i] {
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
	h := dlStart(t, session.Profile{}, DownloadsConfig{})
	h.navigateDownload(srv.URL + "/big")
	h.waitUntil("download start", func() bool { return len(h.started) == 1 })
	h.mu.Lock()
	guid := h.started[0].GUID
	h.mu.Unlock()
	if err := h.w.Cancel(h.ctx, guid); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	h.waitUntil("canceled state", func() bool {
		for _, p := range h.progress {
			if p.GUID == guid && p.State == "canceled" {
				return true
			}
		}
		return false
	})
	if err := h.w.Cancel(h.ctx, guid); err == nil {
		t.Fatal("cancelling a finished download must fail")
	}
	if len(h.w.Files()) != 0 {
		t.Fatalf("a cancelled download is listed: %+v", h.w.Files())
	}
}

// dlPDF is a minimal valid one-page PDF.
const dlPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n" +
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
		_, _ = w.Write([]byte(dlPDF))
	}))
	t.Cleanup(srv.Close)
	h := dlStart(t, session.Profile{AutoDownloadPDFs: true}, DownloadsConfig{})
	if _, err := bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + "/docs/sample.pdf"}); err != nil {
		t.Fatalf("navigate to the PDF: %v", err)
	}
	f := h.waitFiles(1)[0]
	dlAssertInside(t, h.w.Dir(), f.Path)
	if f.FileName != "sample.pdf" || f.MIMEType != "application/pdf" {
		t.Fatalf("file %+v", f)
	}
	if got := dlReadFile(t, f.Path); got != dlPDF {
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
		if got := dlSanitizeName(c.in); got != c.want {
			t.Errorf("dlSanitizeName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := dlSanitizeName(long)
	if len(got) > dlMaxName || !utf8.ValidString(got) || !strings.HasSuffix(got, ".pdf") {
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
		if got := dlContained(dir, c.p); got != c.want {
			t.Errorf("dlContained(%q) = %v, want %v", c.p, got, c.want)
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
	dst, err := dlMoveInto(dir, src, "a.txt")
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
	w := &Downloads{}
	guid := "6f1c2a9e-0000-4000-8000-00000000abcd"
	if err := os.WriteFile(filepath.Join(dir, guid), []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := w.dlFinish(make(chan struct{}), dir, &dlActive{guid: guid, url: "http://x/", name: "../../x"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != filepath.Join(dir, "x") || f.Size != 7 {
		t.Fatalf("finished as %+v", f)
	}
	if _, err := w.dlFinish(make(chan struct{}), dir, &dlActive{guid: "../../etc/passwd", name: "p"}); err == nil {
		t.Fatal("a guid naming a path was accepted")
	}
	// Bad input loses nothing: a missing source leaves no placeholder.
	if _, err := dlMoveInto(dir, filepath.Join(dir, "missing"), "b.txt"); err == nil {
		t.Fatal("moving a missing file succeeded")
	}
	if _, err := os.Lstat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("placeholder left behind: %v", err)
	}
}
