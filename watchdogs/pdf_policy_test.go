package watchdogs

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/pdf"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// pdfSite serves a PDF Chromium printed at /report.pdf and /moved.pdf
// (whose later answers redirect to movedTo), and counts what it was asked.
type pdfSite struct {
	base          string
	hits, moved   atomic.Int64
	movedTo       atomic.Value // string
	doc           []byte
	listener      net.Listener
	srv           *http.Server
	serveFinished chan struct{}
}

func servePDF(t *testing.T, ctx context.Context, s *session.Session) *pdfSite {
	t.Helper()
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	printed, err := cdpproto.Call(ctx, ps, page.PrintToPDF, page.PrintToPDFParams{})
	if err != nil {
		t.Fatalf("printToPDF: %v", err)
	}
	doc, err := base64.StdEncoding.DecodeString(string(printed.Data))
	if err != nil {
		doc = []byte(printed.Data)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	site := &pdfSite{base: "http://" + ln.Addr().String(), doc: doc, serveFinished: make(chan struct{})}
	site.movedTo.Store("")
	site.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/report.pdf":
			site.hits.Add(1)
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = w.Write(site.doc)
		case "/moved.pdf": // the first answer is the PDF, later ones a redirect
			if site.moved.Add(1) > 1 {
				http.Redirect(w, r, site.movedTo.Load().(string), http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = w.Write(site.doc)
		default:
			http.NotFound(w, r)
		}
	})}
	go func() { defer close(site.serveFinished); _ = site.srv.Serve(ln) }()
	t.Cleanup(func() { _ = site.srv.Close(); <-site.serveFinished })
	return site
}

// The PDF watchdog fetches the bytes through the browser, so the security
// watchdog's URL policy judges the fetch: once the policy refuses the
// PDF's URL nothing reaches the server. (Here, in the composition root:
// a test that needs two watchdogs together.)
func TestReadPDFPolicyRefusesFetch(t *testing.T) {
	var deny atomic.Bool
	pol := security.URLPolicyFunc(func(_ context.Context, r security.URLRequest) error {
		if deny.Load() && strings.Contains(r.URL, "/report.pdf") {
			return fmt.Errorf("%w: reports are off limits", security.ErrURLBlocked)
		}
		return nil
	})
	// Keep -1: every read fetches.
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, pdf.New(pdf.Config{Keep: -1}), security.New(security.Config{Policy: pol, Scope: security.ScopeRequests}))
	wdtest.Navigate(t, ctx, s, env.URL("/generated?n=400"))
	site := servePDF(t, ctx, s)
	wdtest.Navigate(t, ctx, s, site.base+"/report.pdf")
	if info, err := bus.Call(ctx, s.Bus(), events.ReadPDF, events.ReadPDFEvent{InfoOnly: true}); err != nil || info.Pages < 2 {
		t.Fatalf("before the policy changed: %+v, %v", info, err)
	}
	before := site.hits.Load()
	deny.Store(true)
	_, err := bus.Call(ctx, s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
	if err == nil {
		t.Fatal("read a PDF the policy refuses")
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("err %v does not say the browser refused", err)
	}
	if n := site.hits.Load(); n != before {
		t.Errorf("the server saw %d more requests for the PDF", n-before)
	}
}

// The re-fetch follows no redirect: under either policy scope a hop to a
// host the policy refuses is never requested.
func TestReadPDFRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte("%PDF-1.4 not for you"))
	}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = other.Serve(ln) }()
	t.Cleanup(func() { _ = other.Close(); <-done })
	otherURL := "http://" + ln.Addr().String() + "/secret.pdf"
	pol := security.URLPolicyFunc(func(_ context.Context, r security.URLRequest) error {
		if strings.HasPrefix(r.URL, "http://"+ln.Addr().String()) {
			return fmt.Errorf("%w: not that host", security.ErrURLBlocked)
		}
		return nil
	})
	for _, scope := range []security.Scope{security.ScopeRequests, security.ScopeNavigations} {
		t.Run(string(scope), func(t *testing.T) {
			s, env, _, ctx := wdtest.Connect(t, session.Profile{}, pdf.New(pdf.Config{Keep: -1}), security.New(security.Config{Policy: pol, Scope: scope}))
			wdtest.Navigate(t, ctx, s, env.URL("/generated?n=400"))
			site := servePDF(t, ctx, s)
			site.movedTo.Store(otherURL)
			wdtest.Navigate(t, ctx, s, site.base+"/moved.pdf")
			_, err := bus.Call(ctx, s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 1})
			if err == nil || !strings.Contains(err.Error(), "redirect") {
				t.Fatalf("err %v, want the redirect named", err)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the refused host saw %d requests", n)
			}
		})
	}
}
