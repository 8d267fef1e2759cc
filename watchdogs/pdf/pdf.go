// Package pdf is the PDF watchdog: it answers events.ReadPDF with the text
// of the PDF the focused tab shows, page by page. The bytes are fetched by
// the tab itself (a fetch of its own URL in the page: the tab's cookies,
// the browser's network stack and the URL policy's request interception),
// never by a second HTTP client; the text is extracted in Go
// (github.com/ledongthuc/pdf, BSD-3-Clause). The last documents read are
// kept, so that the observation's page count and the pages read after it
// cost one fetch.
package pdf

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"

	lpdf "github.com/ledongthuc/pdf"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// Name is the PDF watchdog's name and the name of its handler.
const Name = "pdf"

// Defaults of Config.
const (
	DefaultMaxBytes = 50 << 20
	DefaultKeep     = 4
)

// Config configures the PDF watchdog. The zero value is usable.
type Config struct {
	// MaxBytes caps the size of a PDF that is read (default 50 MiB): a
	// larger one is an error wrapping events.ErrPDFUnreadable.
	MaxBytes int
	// Keep is how many read documents are kept for later reads (default
	// 4); negative keeps none.
	Keep int
	// Logger receives debug logs; default: the session's, named "pdf".
	Logger *zap.Logger
}

// Watchdog is the PDF watchdog. It holds no goroutines; one value may be
// attached to several sessions. It is safe for concurrent use.
type Watchdog struct {
	cfg  Config
	mu   sync.Mutex
	docs []*doc // most recent last
}

// doc is one read document.
type doc struct {
	key   string // tab, URL and document start
	url   string
	title string
	pages []string // text of each page; computed at first read
	err   error    // the document is not a readable PDF
}

// New returns the PDF watchdog for cfg (defaults applied).
func New(cfg Config) *Watchdog {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Keep == 0 {
		cfg.Keep = DefaultKeep
	}
	return &Watchdog{cfg: cfg}
}

// Name implements session.Watchdog; it is "pdf".
func (w *Watchdog) Name() string { return Name }

// Attach registers the ReadPDF handler.
func (w *Watchdog) Attach(s *session.Session) error {
	if s.Bus() == nil {
		return session.ErrNotStarted
	}
	return session.Handle(s, events.ReadPDF, Name, func(ctx context.Context, ev events.ReadPDFEvent) (events.ReadPDFResult, error) {
		return w.read(ctx, s, ev)
	})
}

//go:embed js/probe.js
var probeJS string

//go:embed js/fetch.js
var fetchJS string

// IsPDFURL reports a URL whose path ends in .pdf (any case).
func IsPDFURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	return strings.EqualFold(path.Ext(p.Path), ".pdf")
}

// read answers ReadPDF.
//
// Contracts: a tab that shows no PDF is an error wrapping
// events.ErrNotPDF; pages outside 1..N, or Last before First, wrap
// events.ErrPDFPage and say N; bytes that are not a readable PDF wrap
// events.ErrPDFUnreadable; a fetch the browser refused (the URL policy)
// is an error, and nothing was fetched around it.
func (w *Watchdog) read(ctx context.Context, s *session.Session, ev events.ReadPDFEvent) (events.ReadPDFResult, error) {
	var res events.ReadPDFResult
	if ev.First < 0 || ev.Last < 0 || (ev.Last > 0 && ev.First == 0) {
		return res, fmt.Errorf("%w: pages %d-%d (pages count from 1)", events.ErrPDFPage, ev.First, ev.Last)
	}
	ps, err := s.PageSession("")
	if err != nil {
		return res, err
	}
	var pr struct {
		URL    string  `json:"url"`
		Type   string  `json:"type"`
		Origin float64 `json:"origin"`
	}
	if err := pagejs.Evaluate(ctx, ps, probeJS, &pr); err != nil {
		return res, fmt.Errorf("pdf: reading the tab: %w", err)
	}
	res.URL = pr.URL
	if pr.Type != "application/pdf" && !IsPDFURL(pr.URL) {
		return res, fmt.Errorf("%w: %s is a %s document; read_pdf is for a tab that shows a PDF (a PDF the site sends as a download is saved, not shown, and is not read)", events.ErrNotPDF, pr.URL, pr.Type)
	}
	key := fmt.Sprintf("%s %s %.3f", ps.TargetID(), pr.URL, pr.Origin)
	d := w.cached(key)
	if d == nil {
		d, err = w.load(ctx, s, key)
		if err != nil {
			if ctx.Err() == nil && (errors.Is(err, events.ErrNotPDF) || errors.Is(err, events.ErrPDFUnreadable)) {
				// The same document fails the same way: an observation of
				// an HTML page at a .pdf URL does not fetch it every step.
				w.keep(&doc{key: key, err: err})
			}
			return res, err
		}
		w.keep(d)
	}
	if d.err != nil {
		return res, d.err
	}
	res.Pages, res.Title = len(d.pages), d.title
	if ev.InfoOnly {
		return res, nil
	}
	first, last := ev.First, ev.Last
	if first == 0 {
		first, last = 1, len(d.pages)
	} else if last == 0 {
		last = first
	}
	switch {
	case len(d.pages) == 0:
		return res, fmt.Errorf("%w: the document has no pages", events.ErrPDFPage)
	case first > len(d.pages) || last > len(d.pages):
		return res, fmt.Errorf("%w: the document has %d pages; asked for %s", events.ErrPDFPage, len(d.pages), span(first, last))
	case last < first:
		return res, fmt.Errorf("%w: %s ends before it starts", events.ErrPDFPage, span(first, last))
	}
	for i := first; i <= last; i++ {
		res.Text = append(res.Text, events.PDFPage{Number: i, Text: d.pages[i-1]})
	}
	return res, nil
}

func span(first, last int) string {
	if first == last {
		return fmt.Sprintf("page %d", first)
	}
	return fmt.Sprintf("pages %d-%d", first, last)
}

func (w *Watchdog) cached(key string) *doc {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.docs {
		if d.key == key {
			return d
		}
	}
	return nil
}

func (w *Watchdog) keep(d *doc) {
	if w.cfg.Keep < 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.docs = append(w.docs, d)
	if len(w.docs) > w.cfg.Keep {
		w.docs = w.docs[len(w.docs)-w.cfg.Keep:]
	}
}

// load fetches the tab's document through the tab and extracts its text.
func (w *Watchdog) load(ctx context.Context, s *session.Session, key string) (*doc, error) {
	ps, err := s.PageSession("")
	if err != nil {
		return nil, err
	}
	var f struct {
		URL        string `json:"url"`
		Status     int    `json:"status"`
		Type       string `json:"type"`
		Size       int    `json:"size"`
		TooBig     bool   `json:"tooBig"`
		Redirected bool   `json:"redirected"`
		Data       string `json:"data"`
		Error      string `json:"error"`
	}
	if err := pagejs.Evaluate(ctx, ps, fmt.Sprintf("(%s)(%d)", strings.TrimSpace(fetchJS), w.cfg.MaxBytes), &f); err != nil {
		return nil, fmt.Errorf("pdf: fetching the document in the tab: %w", err)
	}
	switch {
	case f.Error != "":
		return nil, fmt.Errorf("pdf: the browser refused to fetch %s (%s); a URL the policy blocks is not read", f.URL, f.Error)
	case f.Redirected:
		return nil, fmt.Errorf("pdf: %s now redirects elsewhere; the redirect is not followed (navigate to where it leads, then read)", f.URL)
	case f.Status >= 400 || f.Status == 0:
		return nil, fmt.Errorf("pdf: fetching %s: HTTP %d", f.URL, f.Status)
	case f.TooBig:
		return nil, fmt.Errorf("%w (%w): %s is over the %d-byte cap (%d bytes read when it stopped)", events.ErrPDFTooLarge, events.ErrPDFUnreadable, f.URL, w.cfg.MaxBytes, f.Size)
	}
	b, err := base64.StdEncoding.DecodeString(f.Data)
	if err != nil {
		return nil, fmt.Errorf("pdf: decoding the fetched bytes: %w", err)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(b, "\x00\t\r\n "), []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: %s answered %q, not a PDF", events.ErrNotPDF, f.URL, f.Type)
	}
	title, pages, err := ExtractContext(ctx, b)
	if err != nil {
		return nil, err
	}
	w.logger(s).Debug("read a PDF", zap.String("url", f.URL), zap.Int("bytes", len(b)), zap.Int("pages", len(pages)))
	return &doc{key: key, url: f.URL, title: title, pages: pages}, nil
}

func (w *Watchdog) logger(s *session.Session) *zap.Logger {
	if w.cfg.Logger != nil {
		return w.cfg.Logger
	}
	return s.Logger().Named(Name)
}

// Bounds of the page tree Extract walks: a hostile document's tree can
// point back at itself or claim any count.
const (
	// MaxPages is the most pages Extract reads; a document with more is
	// an error wrapping events.ErrPDFUnreadable.
	MaxPages = 10000
	// maxTreeDepth bounds the nesting of /Pages nodes (real documents nest
	// a few levels; a cycle nests forever).
	maxTreeDepth = 64
	// maxTreeNodes bounds the page tree nodes visited.
	maxTreeNodes = 4 * MaxPages
)

// Extract is ExtractContext without a deadline.
func Extract(b []byte) (title string, pages []string, err error) {
	return ExtractContext(context.Background(), b)
}

// ExtractContext returns a PDF's title and the text of each of its pages,
// rows in reading order (top to bottom), words of a row separated by
// spaces. A page without text (a scan) is "". Bytes the reader cannot
// parse (damaged, encrypted), a page tree that loops, nests deeper than
// 64 or holds over MaxPages pages, and the reader's panics on malformed
// input are errors wrapping events.ErrPDFUnreadable. ctx is checked
// between pages.
func ExtractContext(ctx context.Context, b []byte) (title string, pages []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			title, pages, err = "", nil, fmt.Errorf("%w: %v", events.ErrPDFUnreadable, r)
		}
	}()
	r, err := lpdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", events.ErrPDFUnreadable, err)
	}
	if t := r.Trailer().Key("Info").Key("Title"); !t.IsNull() {
		title = strings.TrimSpace(t.Text())
	}
	// The reader's Page(i) walks the tree from the root for every page and
	// follows a /Kids cycle forever; one bounded walk lists them all.
	list, err := pageList(r.Trailer().Key("Root").Key("Pages"))
	if err != nil {
		return "", nil, err
	}
	n := len(list)
	for i, v := range list {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		p := lpdf.Page{V: v}
		if p.V.IsNull() {
			pages = append(pages, "")
			continue
		}
		rows, err := p.GetTextByRow()
		if err != nil {
			return "", nil, fmt.Errorf("%w: page %d: %v", events.ErrPDFUnreadable, i+1, err)
		}
		var sb strings.Builder
		for _, row := range rows {
			line := rowText(row)
			if line == "" {
				continue
			}
			sb.WriteString(line)
			sb.WriteByte('\n')
		}
		pages = append(pages, strings.TrimRight(sb.String(), "\n"))
	}
	if n == 0 {
		return title, nil, fmt.Errorf("%w: the document has no pages", events.ErrPDFUnreadable)
	}
	return title, pages, nil
}

// pageList lists the page tree's leaves in order, bounded by maxTreeDepth,
// maxTreeNodes and MaxPages (a /Kids cycle hits the depth bound).
func pageList(root lpdf.Value) ([]lpdf.Value, error) {
	var (
		out   []lpdf.Value
		nodes int
		walk  func(v lpdf.Value, depth int) error
	)
	walk = func(v lpdf.Value, depth int) error {
		if depth > maxTreeDepth {
			return fmt.Errorf("%w: the page tree nests deeper than %d (a loop?)", events.ErrPDFUnreadable, maxTreeDepth)
		}
		kids := v.Key("Kids")
		for i := 0; i < kids.Len(); i++ {
			if nodes++; nodes > maxTreeNodes {
				return fmt.Errorf("%w: the page tree has over %d nodes", events.ErrPDFUnreadable, maxTreeNodes)
			}
			kid := kids.Index(i)
			switch kid.Key("Type").Name() {
			case "Pages":
				if err := walk(kid, depth+1); err != nil {
					return err
				}
			case "Page":
				if len(out) >= MaxPages {
					return fmt.Errorf("%w: the document has over %d pages", events.ErrPDFUnreadable, MaxPages)
				}
				out = append(out, kid)
			}
		}
		return nil
	}
	if root.Key("Type").Name() != "Pages" {
		return nil, nil
	}
	return out, walk(root, 0)
}

// rowText joins a row's glyph runs, with a space where they are apart by
// more than a fraction of the font size (the PDF draws words apart, not
// the spaces between them).
func rowText(row *lpdf.Row) string {
	var sb strings.Builder
	var lastEnd float64
	for i, t := range row.Content {
		if i > 0 && t.X-lastEnd > t.FontSize*0.15 && !strings.HasSuffix(sb.String(), " ") && t.S != " " {
			sb.WriteByte(' ')
		}
		sb.WriteString(t.S)
		lastEnd = t.X + t.W
	}
	return strings.Join(strings.Fields(sb.String()), " ")
}
