package watchdogs

import (
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/pdf"
)

// The defaults together: the observation of a PDF tab says it is one and
// how many pages it has (the DOM watchdog asks the PDF watchdog), and
// read_pdf's event reads a page of it.
func TestDefaultsObservePDFTab(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, Defaults()...)
	wdtest.Navigate(t, ctx, s, env.URL("/generated?n=400"))
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	site := servePDF(t, ctx, s)
	_, pages, err := pdf.Extract(site.doc)
	if err != nil || len(pages) < 2 {
		t.Fatalf("the printed fixture: %d pages, %v", len(pages), err)
	}
	u := site.base + "/report.pdf"
	wdtest.Navigate(t, ctx, s, u)
	// The viewer commits after the navigation's answer.
	for {
		var href string
		if pagejs.Evaluate(ctx, ps, "location.href", &href) == nil && href == u {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the tab never showed the PDF")
		case <-time.After(20 * time.Millisecond):
		}
	}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true})
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsPDFViewer || st.PDFPages != len(pages) {
		t.Fatalf("state: PDF %v with %d pages, want a PDF of %d", st.IsPDFViewer, st.PDFPages, len(pages))
	}
	res, err := bus.Call(ctx, s.Bus(), events.ReadPDF, events.ReadPDFEvent{First: 2})
	if err != nil || len(res.Text) != 1 || res.Text[0].Text != pages[1] {
		t.Fatalf("page 2: %+v, %v", res.Text, err)
	}
}
