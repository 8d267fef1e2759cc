package screenshot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// ErrPDFUnsupported: the browser cannot print to PDF (Chromium prints
// only when headless).
var ErrPDFUnsupported = errors.New("screenshot: this browser cannot print to PDF (headless Chromium only)")

// paperSizes are the paper formats PrintPDF knows, in inches (portrait).
var paperSizes = map[string][2]float64{
	"letter": {8.5, 11}, "legal": {8.5, 14}, "tabloid": {11, 17}, "ledger": {17, 11},
	"a0": {33.1, 46.8}, "a1": {23.4, 33.1}, "a2": {16.54, 23.4}, "a3": {11.7, 16.54},
	"a4": {8.27, 11.7}, "a5": {5.83, 8.27}, "a6": {4.13, 5.83},
}

// printPDF answers PrintPDF for the event's tab (else the focused one).
func printPDF(ctx context.Context, s *session.Session, ev events.PrintPDFEvent) (events.PrintPDFResult, error) {
	var r events.PrintPDFResult
	paper := strings.ToLower(strings.TrimSpace(ev.Paper))
	if paper == "" {
		paper = "letter"
	}
	size, ok := paperSizes[paper]
	if !ok {
		return r, fmt.Errorf("%w: unknown paper format %q (Letter, Legal, Tabloid, Ledger, A0–A6)", ErrBadRequest, ev.Paper)
	}
	scale := ev.Scale
	if scale == 0 {
		scale = 1
	}
	if math.IsNaN(scale) || scale < 0.1 || scale > 2 {
		return r, fmt.Errorf("%w: scale %v is outside 0.1–2", ErrBadRequest, ev.Scale)
	}
	tab := ev.TargetID
	if tab == "" {
		tab = s.FocusedTab()
	}
	if err := s.Readable(tab); err != nil {
		return r, fmt.Errorf("screenshot: pdf: %w", err)
	}
	cs, err := s.PageSession(tab)
	if err != nil {
		return r, fmt.Errorf("screenshot: pdf: %w", err)
	}
	res, err := cdpproto.Call(ctx, cs, page.PrintToPDF, page.PrintToPDFParams{
		Landscape:               pagejs.Ptr(ev.Landscape),
		PrintBackground:         pagejs.Ptr(ev.PrintBackground),
		Scale:                   scale,
		PaperWidth:              size[0],
		PaperHeight:             size[1],
		GenerateTaggedPDF:       pagejs.Ptr(true),
		GenerateDocumentOutline: pagejs.Ptr(true),
	})
	if err != nil {
		if ctx.Err() == nil && strings.Contains(strings.ToLower(err.Error()), "not implemented") {
			return r, ErrPDFUnsupported
		}
		return r, fmt.Errorf("screenshot: pdf: %w", err)
	}
	if len(res.Data) == 0 {
		return r, fmt.Errorf("screenshot: pdf: the browser returned no document")
	}
	r = events.PrintPDFResult{PDF: res.Data, TargetID: tab}
	for _, t := range s.Tabs() {
		if t.TargetID == tab {
			r.URL = t.URL
		}
	}
	return r, nil
}
