package events

import "fmt"

// SearchPageEvent asks for the places a pattern occurs in a tab's visible
// text (innerText), with the text around each: a free look-up that needs no
// model call. Emitted by the agent's search_page action; handled by the DOM
// watchdog. The search runs in the page under a time bound, so a
// pathological regular expression is stopped rather than hanging the page.
type SearchPageEvent struct {
	TargetID string // "" = the focused tab
	Pattern  string
	// Regex makes Pattern a JavaScript regular expression; otherwise it is
	// plain text.
	Regex bool
	// CaseSensitive: default false.
	CaseSensitive bool
	// ContextChars is how much text to keep on each side of a match
	// (0: 150, at most 1000).
	ContextChars int
	// Scope is a CSS selector: only the text of the elements it matches is
	// searched ("" = the whole document).
	Scope string
	// MaxResults bounds the matches returned (0: 25, at most 200); Total
	// still counts them all.
	MaxResults int
}

// PageMatch is one occurrence found by SearchPage.
type PageMatch struct {
	Match, Before, After string
	// Cut* say that Before or After was cut at ContextChars.
	CutBefore, CutAfter bool
}

// SearchPageResult are the matches, in document order.
type SearchPageResult struct {
	URL     string
	Total   int // every match, including those beyond MaxResults
	Matches []PageMatch
}

// Summary implements bus.Summarizer (no page text in traces).
func (r SearchPageResult) Summary() string {
	return fmt.Sprintf("%s: %d matches", r.URL, r.Total)
}

// SearchPage searches a page's text (10 s).
var SearchPage = def[SearchPageEvent, SearchPageResult]("SearchPage", 10*sec)

// FindElementsEvent asks which elements a CSS selector matches in a tab,
// with their attributes and text. Emitted by the agent's find_elements
// action; handled by the DOM watchdog.
type FindElementsEvent struct {
	TargetID string // "" = the focused tab
	Selector string
	// Attributes lists the attributes to report ("" or nil: id, class, name,
	// type, href, value, placeholder, aria-label, role, title, alt).
	Attributes []string
	// MaxResults bounds the elements returned (0: 50, at most 500); Total
	// still counts them all.
	MaxResults int
	// NoText leaves out each element's text.
	NoText bool
}

// FoundElement is one element FindElements matched.
type FoundElement struct {
	Tag        string
	Attributes map[string]string
	Text       string // visible text, whitespace collapsed, at most 300 characters
	Visible    bool   // it has a box on the page
	// BackendNodeID identifies the node; the agent shows the element's
	// index when the last observation gave it one.
	BackendNodeID int64
}

// FindElementsResult are the matches, in document order.
type FindElementsResult struct {
	URL      string
	Total    int
	Elements []FoundElement
}

// Summary implements bus.Summarizer.
func (r FindElementsResult) Summary() string {
	return fmt.Sprintf("%s: %d elements", r.URL, r.Total)
}

// FindElements queries a page with a CSS selector (10 s).
var FindElements = def[FindElementsEvent, FindElementsResult]("FindElements", 10*sec)

// PrintPDFEvent asks for a tab printed as a PDF document (headless
// Chromium only). Emitted by the agent's save_as_pdf action; handled by the
// screenshot watchdog, which captures pages.
type PrintPDFEvent struct {
	TargetID        string // "" = the focused tab
	Landscape       bool
	PrintBackground bool
	// Scale of the rendering, 0.1 to 2 (0: 1).
	Scale float64
	// Paper is a paper format: Letter (default), Legal, Tabloid, Ledger,
	// A0–A6.
	Paper string
}

// PrintPDFResult is the PDF.
type PrintPDFResult struct {
	PDF      []byte
	TargetID string
	URL      string
}

// Summary implements bus.Summarizer (no bytes in traces).
func (r PrintPDFResult) Summary() string { return fmt.Sprintf("%s: pdf %d bytes", r.URL, len(r.PDF)) }

// PrintPDF prints a page to PDF (30 s).
var PrintPDF = def[PrintPDFEvent, PrintPDFResult]("PrintPDF", 30*sec)
