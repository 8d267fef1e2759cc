package events

import "errors"

// ReadPDFEvent asks for the text of the PDF the focused tab shows (the
// PDF viewer's document, or a tab whose URL names a PDF). First and Last
// are 1-based page numbers, inclusive: both 0 means every page, Last 0
// means First alone. Emitted by the agent's read_pdf action and, with
// InfoOnly, by the agent's observation (the page count); handled by the
// PDF watchdog, which fetches the bytes through the tab itself (its
// cookies, and the URL policy's request interception).
type ReadPDFEvent struct {
	First, Last int
	// InfoOnly asks for URL and Pages only (no text).
	InfoOnly bool
}

// PDFPage is one page's text.
type PDFPage struct {
	Number int // 1-based
	Text   string
}

// ReadPDFResult is the document's page count and the requested pages.
type ReadPDFResult struct {
	URL   string
	Pages int // pages in the document
	Text  []PDFPage
	// Title is the document's title from its metadata, if any.
	Title string
}

// Errors of ReadPDF, usable with errors.Is.
var (
	// ErrNotPDF: the focused tab does not show a PDF.
	ErrNotPDF = errors.New("the tab does not show a PDF")
	// ErrPDFPage: a page number outside the document, or a range that is
	// not one.
	ErrPDFPage = errors.New("no such PDF page")
	// ErrPDFUnreadable: the bytes are not a PDF the reader understands
	// (damaged, encrypted, an image-only scan has no text instead).
	ErrPDFUnreadable = errors.New("the PDF cannot be read")
	// ErrPDFTooLarge: the document is over the PDF watchdog's size cap
	// (pdf.Config.MaxBytes); its bytes were dropped as they came. The
	// error wraps ErrPDFUnreadable too.
	ErrPDFTooLarge = errors.New("the PDF is over the size cap")
)

// ReadPDF reads a PDF's text (30 s).
var ReadPDF = def[ReadPDFEvent, ReadPDFResult]("ReadPDF", 30*sec)
