package pdf

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

//go:embed testdata/pages.html
var pagesHTML []byte

// site serves the HTML fixture and, once set, the PDF printed from it, on
// loopback; it counts the PDF's requests.
type site struct {
	base string
	srv  *http.Server
	mu   sync.Mutex
	pdf  []byte
	hits atomic.Int64
	fake atomic.Int64 // requests for /fake.pdf, an HTML page
	// big: requests for /big.pdf, whose first answer is the PDF and later
	// ones an endless body without a length; bigSent counts what those
	// wrote before the client hung up.
	big, bigSent atomic.Int64
	// moved: requests for /moved.pdf, whose first answer is the PDF and
	// later ones a redirect to movedTo.
	moved   atomic.Int64
	movedTo string
}

func newSite(t *testing.T) *site {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := &site{base: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/pages.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(pagesHTML)
	})
	mux.HandleFunc("/report.pdf", func(w http.ResponseWriter, _ *http.Request) {
		st.hits.Add(1)
		st.mu.Lock()
		b := st.pdf
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/fake.pdf", func(w http.ResponseWriter, _ *http.Request) {
		st.fake.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("<!doctype html><title>Not found</title><p>No such report."))
	})
	mux.HandleFunc("/big.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Cache-Control", "no-store")
		if st.big.Add(1) == 1 {
			st.mu.Lock()
			b := st.pdf
			st.mu.Unlock()
			_, _ = w.Write(b)
			return
		}
		chunk := bytes.Repeat([]byte("%padding\n"), 64<<10/9)
		fl, _ := w.(http.Flusher)
		for sent := 0; sent < 1<<30; sent += len(chunk) { // 1 GiB unless the reader stops
			if _, err := w.Write(chunk); err != nil || r.Context().Err() != nil {
				return
			}
			st.bigSent.Add(int64(len(chunk)))
			if fl != nil {
				fl.Flush()
			}
		}
	})
	mux.HandleFunc("/moved.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if st.moved.Add(1) > 1 {
			st.mu.Lock()
			to := st.movedTo
			st.mu.Unlock()
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		st.mu.Lock()
		b := st.pdf
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/attached.pdf", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		b := st.pdf
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Disposition", `attachment; filename="report.pdf"`)
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/framed.html", func(w http.ResponseWriter, _ *http.Request) {
		// The PDF from another site (localhost against 127.0.0.1).
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Framed</title><iframe id=f width=600 height=400 src="` + strings.Replace(st.base, "127.0.0.1", "localhost", 1) + `/report.pdf"></iframe>`))
	})
	st.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = st.srv.Serve(ln) }()
	t.Cleanup(func() { _ = st.srv.Close(); <-done })
	return st
}

type harness struct {
	t    *testing.T
	ctx  context.Context
	s    *session.Session
	site *site
}

// start runs a session with the PDF watchdog (and extra ones) and prints
// the three-page fixture to the site's /report.pdf with Chromium.
func start(t *testing.T, cfg Config, extra ...session.Watchdog) *harness {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(append([]session.Watchdog{New(cfg)}, extra...)...))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	h := &harness{t: t, ctx: ctx, s: s, site: newSite(t)}
	h.navigate("/pages.html")
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := cdpproto.Call(ctx, ps, page.PrintToPDF, page.PrintToPDFParams{})
	if err != nil {
		t.Fatalf("printToPDF: %v", err)
	}
	b, err := base64.StdEncoding.DecodeString(string(pdf.Data))
	if err != nil {
		b = []byte(pdf.Data)
	}
	h.site.mu.Lock()
	h.site.pdf = b
	h.site.mu.Unlock()
	return h
}

// navigate opens p and waits until the tab shows it (a PDF's viewer
// commits after the navigation's answer).
func (h *harness) navigate(p string) {
	h.t.Helper()
	if _, err := bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: h.site.base + p}); err != nil {
		h.t.Fatalf("navigate %s: %v", p, err)
	}
	ps, err := h.s.PageSession("")
	if err != nil {
		h.t.Fatal(err)
	}
	for {
		var u string
		if err := pagejs.Evaluate(h.ctx, ps, "location.href", &u); err == nil && u == h.site.base+p {
			return
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("the tab never showed %s", p)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestReadPDFPages(t *testing.T) {
	h := start(t, Config{})
	h.navigate("/report.pdf")
	info, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{InfoOnly: true})
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.Pages != 3 || len(info.Text) != 0 || !strings.HasSuffix(info.URL, "/report.pdf") {
		t.Fatalf("info = %+v, want 3 pages of /report.pdf and no text", info)
	}
	res, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 2})
	if err != nil {
		t.Fatalf("page 2: %v", err)
	}
	if len(res.Text) != 1 || res.Text[0].Number != 2 {
		t.Fatalf("page 2 = %+v", res.Text)
	}
	txt := res.Text[0].Text
	for _, want := range []string{"Beta chapter", "Revenue grew 42 percent in the second quarter.", "1,234 crates"} {
		if !strings.Contains(txt, want) {
			t.Errorf("page 2 text %q lacks %q", txt, want)
		}
	}
	if strings.Contains(txt, "Alpha") || strings.Contains(txt, "Gamma") {
		t.Errorf("page 2 text %q holds another page's", txt)
	}
	all, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 2, Last: 3})
	if err != nil || len(all.Text) != 2 || !strings.Contains(all.Text[1].Text, "cherries") {
		t.Fatalf("pages 2-3 = %+v, %v", all.Text, err)
	}
	// The document was fetched once, through the tab (the navigation's
	// own load, then one fetch kept for the later reads).
	if n := h.site.hits.Load(); n > 3 {
		t.Errorf("the PDF was requested %d times", n)
	}
	for _, c := range []events.ReadPDFEvent{{First: 4}, {First: 0, Last: 2}, {First: 3, Last: 2}, {First: -1}, {First: 2, Last: 9}} {
		_, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, c)
		if !errors.Is(err, events.ErrPDFPage) {
			t.Errorf("%+v: err %v, want ErrPDFPage", c, err)
		}
		if c.First == 4 && (err == nil || !strings.Contains(err.Error(), "3 pages")) {
			t.Errorf("%+v: the error %v does not say the count", c, err)
		}
	}
}

func TestReadPDFNotAPDF(t *testing.T) {
	h := start(t, Config{})
	_, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
	if !errors.Is(err, events.ErrNotPDF) {
		t.Fatalf("err %v, want ErrNotPDF", err)
	}
	if n := h.site.hits.Load(); n != 0 {
		t.Errorf("the PDF was requested %d times", n)
	}
}

func TestExtractRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("%PDF-1.4\nnot really"), []byte("<html>")} {
		if _, _, err := Extract(b); !errors.Is(err, events.ErrPDFUnreadable) {
			t.Errorf("Extract(%q): %v, want ErrPDFUnreadable", b, err)
		}
	}
}

// A .pdf URL that answers HTML is no PDF: ErrNotPDF, and a second read of
// the same document does not fetch it again (an observation asks every
// step).
func TestReadPDFHTMLAtPDFURL(t *testing.T) {
	h := start(t, Config{})
	h.navigate("/fake.pdf")
	for i := 0; i < 2; i++ {
		if _, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{InfoOnly: true}); !errors.Is(err, events.ErrNotPDF) {
			t.Fatalf("read %d: %v, want ErrNotPDF", i+1, err)
		}
	}
	if n := h.site.fake.Load(); n != 2 {
		t.Errorf("/fake.pdf was requested %d times, want 2 (the navigation and one fetch)", n)
	}
}

// A PDF over the cap, sent without a length, is dropped as it comes: the
// read stops near the cap (never the whole body in memory) with
// ErrPDFTooLarge, which wraps ErrPDFUnreadable.
func TestReadPDFOverCapStreamed(t *testing.T) {
	const maxBytes = 1 << 20
	h := start(t, Config{MaxBytes: maxBytes})
	h.navigate("/big.pdf")
	_, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
	if !errors.Is(err, events.ErrPDFTooLarge) || !errors.Is(err, events.ErrPDFUnreadable) {
		t.Fatalf("err %v, want ErrPDFTooLarge and ErrPDFUnreadable", err)
	}
	if !strings.Contains(err.Error(), "cap") {
		t.Errorf("err %v does not name the cap", err)
	}
	if h.site.big.Load() != 2 {
		t.Errorf("/big.pdf was requested %d times, want 2 (the navigation, one fetch)", h.site.big.Load())
	}
	// The server stops writing once the tab cancels the body; what it got
	// out before is the cap plus the pipes' buffers, far from 1 GiB.
	if sent := h.site.bigSent.Load(); sent > 64<<20 {
		t.Errorf("the server sent %d bytes before the read stopped", sent)
	}
}

// A PDF served as an attachment is downloaded, not shown: the tab keeps
// the page it had, and read_pdf says so (ErrNotPDF naming downloads).
func TestReadPDFAttachmentIsNotShown(t *testing.T) {
	h := start(t, Config{})
	_, _ = bus.Call(h.ctx, h.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: h.site.base + "/attached.pdf"})
	_, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
	if !errors.Is(err, events.ErrNotPDF) {
		t.Fatalf("err %v, want ErrNotPDF", err)
	}
	if !strings.Contains(err.Error(), "download") {
		t.Errorf("err %v does not say a downloaded PDF is not read", err)
	}
}

// A PDF in a cross-site iframe is not the tab's document: read_pdf reads
// the tab's own document only (ErrNotPDF), and fetches nothing.
func TestReadPDFInCrossSiteFrameIsNotRead(t *testing.T) {
	h := start(t, Config{})
	h.navigate("/framed.html")
	// The frame's own load of the PDF.
	for h.site.hits.Load() == 0 {
		select {
		case <-h.ctx.Done():
			t.Fatal("the frame never loaded the PDF")
		case <-time.After(20 * time.Millisecond):
		}
	}
	before := h.site.hits.Load()
	_, err := bus.Call(h.ctx, h.s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
	if !errors.Is(err, events.ErrNotPDF) {
		t.Fatalf("err %v, want ErrNotPDF", err)
	}
	if n := h.site.hits.Load(); n != before {
		t.Errorf("read_pdf fetched the framed PDF (%d more requests)", n-before)
	}
}
