package downloads

import (
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// fetchPDFJS fetches a URL inside the page, bounded in bytes; called on the
// document with (url, maxBytes).
//
//go:embed js/fetch_pdf.js
var fetchPDFJS string

// Errors of the PDF auto-download (returned by the NavigationComplete
// handler, wrapped with the URL).
var (
	// ErrPDFTooLarge: the PDF is longer than Config.MaxPDFBytes; nothing is
	// written.
	ErrPDFTooLarge = errors.New("downloads: PDF larger than the configured maximum")
	// ErrPDFFetch: the page's fetch of the PDF got an HTTP error status.
	ErrPDFFetch = errors.New("downloads: fetching the PDF failed")
)

// pdfObjectGroup prefixes the object group that holds the document handle
// of one auto-download, released when it ends. Each fetch has a group of its
// own: two fetches of one tab at once (a NavigationComplete handled while
// another runs) must not release each other's handle.
const pdfObjectGroup = "browseragent-downloads-pdf-"

// pdfGroups numbers the fetches' object groups.
var pdfGroups atomic.Int64

// onNavigationComplete auto-downloads a PDF a session navigation opened.
func (w *Watchdog) onNavigationComplete(ctx context.Context, ev events.NavigationCompleteEvent) (events.None, error) {
	w.mu.Lock()
	auto, s, dir := w.autoPDF, w.sess, w.dir
	w.mu.Unlock()
	if !auto || ev.ErrorMessage != "" || ev.TargetID == "" || s == nil {
		return events.None{}, nil
	}
	u, err := url.Parse(ev.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		return events.None{}, nil
	}
	if w.seenURL(ev.URL) {
		return events.None{}, nil // the browser saved it as a download
	}
	cs, err := s.PageSession(ev.TargetID)
	if err != nil {
		return events.None{}, nil
	}
	// Only a tab really showing a PDF counts: a navigation that became a
	// download leaves the tab on its previous page.
	var ct string
	if err := pagejs.Evaluate(ctx, cs, "document.contentType", &ct); err != nil || !strings.EqualFold(ct, "application/pdf") {
		return events.None{}, nil
	}
	max := w.cfg.MaxPDFBytes
	if max <= 0 {
		max = DefaultMaxPDFBytes
	}
	guid := "pdf-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	name := nameFromURL(ev.URL)
	if !strings.HasSuffix(strings.ToLower(name), ".pdf") {
		name += ".pdf"
	}
	b := s.Bus()
	_, _ = bus.Emit(ctx, b, events.DownloadStarted, events.DownloadStartedEvent{GUID: guid, URL: ev.URL, SuggestedFilename: name, AutoDownload: true})
	data, err := fetchPDF(ctx, cs, ev.URL, max)
	var dst string
	if err == nil {
		dst, err = writeInto(dir, sanitizeName(name), data)
		if err != nil {
			err = fmt.Errorf("downloads: saving the PDF %s: %w", ev.URL, err)
		}
	}
	if err != nil {
		_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{GUID: guid, State: string(browser.DownloadProgressStateCanceled)})
		return events.None{}, err
	}
	n := int64(len(data))
	_, _ = bus.Emit(ctx, b, events.DownloadProgress, events.DownloadProgressEvent{GUID: guid, ReceivedBytes: n, TotalBytes: n, State: string(browser.DownloadProgressStateCompleted)})
	f := fileEvent(guid, ev.URL, dst, n, true)
	f.MIMEType = "application/pdf"
	w.record(ctx, f)
	return events.None{}, nil
}

// fetchPDF fetches rawURL inside the page of cs (same origin, the page's
// cookies and credentials: the bytes the user would get), at most max
// bytes.
func fetchPDF(ctx context.Context, cs *cdp.Session, rawURL string, max int64) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("downloads: auto-downloading the PDF %s: %w", rawURL, err)
	}
	group := pdfObjectGroup + strconv.FormatInt(pdfGroups.Add(1), 10)
	doc, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: "document", ObjectGroup: group})
	if err != nil {
		return fail(err)
	}
	defer func() {
		// Best effort: the document may be gone already.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = cdpproto.Call(rctx, cs, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	}()
	if doc.ExceptionDetails != nil || doc.Result == nil || doc.Result.ObjectID == "" {
		return fail(errors.New("the page has no document"))
	}
	var got struct {
		Data     string `json:"data"`
		Status   int    `json:"status"`
		TooLarge bool   `json:"tooLarge"`
	}
	if err := pagejs.CallOn(ctx, cs, doc.Result.ObjectID, fetchPDFJS, &got, rawURL, max); err != nil {
		return fail(err)
	}
	switch {
	case got.TooLarge:
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrPDFTooLarge, rawURL, max)
	case got.Status != 0:
		return nil, fmt.Errorf("%w: %s answered HTTP %d", ErrPDFFetch, rawURL, got.Status)
	}
	data, err := base64.StdEncoding.DecodeString(got.Data)
	if err != nil {
		return fail(fmt.Errorf("decoding the page's base64: %w", err))
	}
	return data, nil
}

// seenURL reports whether a browser download of rawURL is in progress or
// done in this run.
func (w *Watchdog) seenURL(rawURL string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.active {
		if a.url == rawURL {
			return true
		}
	}
	for _, f := range w.files {
		if f.URL == rawURL && !f.AutoDownload {
			return true
		}
	}
	return false
}
