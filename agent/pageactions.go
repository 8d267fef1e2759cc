package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// The actions that read the page without a model call (search_page,
// find_elements) and save_as_pdf.

type (
	// SearchPageParams are search_page's parameters. Every parameter is
	// sent to the model on every step, so only the ones that change what
	// is found are offered; the event has more (context, result count).
	SearchPageParams struct {
		Pattern       string `json:"pattern"`
		Regex         bool   `json:"regex,omitempty"`
		CaseSensitive bool   `json:"case_sensitive,omitempty"`
		CSSScope      string `json:"css_scope,omitempty"`
	}
	// FindElementsParams are find_elements' parameters.
	FindElementsParams struct {
		Selector   string   `json:"selector"`
		Attributes []string `json:"attributes,omitempty"`
	}
	// SavePDFParams are save_as_pdf's parameters.
	SavePDFParams struct {
		FileName    string `json:"file_name,omitempty"`
		Landscape   bool   `json:"landscape,omitempty"`
		PaperFormat string `json:"paper_format,omitempty"`
	}
)

// registerPageActions adds search_page, find_elements, save_as_pdf,
// read_pdf (pdf.go) and drag (drag.go).
func registerPageActions(r *Registry, must func(error)) {
	must(Register(r, "search_page", "Text matches in context (free).", searchPageAction, WithRisk(RiskRead)))
	must(Register(r, "find_elements", "CSS matches with indexes (free).", findElementsAction, WithRisk(RiskRead)))
	must(Register(r, "save_as_pdf", "paper_format: Letter (default), Legal, Tabloid, Ledger, A0-A6.", savePDFAction, WithRisk(RiskDownload)))
	registerReadPDF(r, must)
	registerDrag(r, must)
}

// readOnceCap bounds what the page queries put in read_state.
const readOnceCap = 20000

func searchPageAction(ctx context.Context, ac *ActionContext, p SearchPageParams) (ActionResult, error) {
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.SearchPage, events.SearchPageEvent{
		Pattern: p.Pattern, Regex: p.Regex, CaseSensitive: p.CaseSensitive, Scope: p.CSSScope,
	})
	if err != nil {
		return ActionResult{}, err
	}
	what := fmt.Sprintf("%q", p.Pattern)
	if p.CSSScope != "" {
		what += " in " + p.CSSScope
	}
	if res.Total == 0 {
		return ActionResult{Text: fmt.Sprintf("No match for %s on the page.", what)}, nil
	}
	var b strings.Builder
	for i, m := range res.Matches {
		before, after := oneLine(m.Before), oneLine(m.After)
		if m.CutBefore {
			before = "…" + before
		}
		if m.CutAfter {
			after += "…"
		}
		fmt.Fprintf(&b, "%d. %s«%s»%s\n", i+1, before, oneLine(m.Match), after)
		if b.Len() > readOnceCap {
			fmt.Fprintf(&b, "[%d more not shown]\n", len(res.Matches)-i-1)
			break
		}
	}
	text := fmt.Sprintf("Found %d match(es) for %s (in read_state).", res.Total, what)
	if res.Total > len(res.Matches) {
		text = fmt.Sprintf("Found %d match(es) for %s; the first %d are in read_state.", res.Total, what, len(res.Matches))
	}
	return ActionResult{Text: text, ReadOnce: b.String()}, nil
}

func findElementsAction(ctx context.Context, ac *ActionContext, p FindElementsParams) (ActionResult, error) {
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.FindElements, events.FindElementsEvent{
		Selector: p.Selector, Attributes: p.Attributes,
	})
	if err != nil {
		return ActionResult{}, err
	}
	if res.Total == 0 {
		return ActionResult{Text: fmt.Sprintf("No element matches %q.", p.Selector)}, nil
	}
	// An element the last observation indexed is shown with its index, so
	// the model can act on it directly.
	indexOf := map[int64]int{}
	if st := ac.BrowserState; st != nil {
		for _, e := range st.Elements {
			if e.TargetID == "" || e.TargetID == st.FocusedTarget {
				indexOf[e.BackendNodeID] = e.Index
			}
		}
	}
	var b strings.Builder
	for i, e := range res.Elements {
		if idx, ok := indexOf[e.BackendNodeID]; ok && e.BackendNodeID != 0 {
			fmt.Fprintf(&b, "[%d]", idx)
		}
		b.WriteString("<" + e.Tag)
		keys := make([]string, 0, len(e.Attributes))
		for k := range e.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%q", k, e.Attributes[k])
		}
		if !e.Visible {
			b.WriteString(" hidden")
		}
		b.WriteString(">")
		if e.Text != "" {
			b.WriteString(" " + e.Text)
		}
		b.WriteString("\n")
		if b.Len() > readOnceCap {
			fmt.Fprintf(&b, "[%d more not shown]\n", len(res.Elements)-i-1)
			break
		}
	}
	text := fmt.Sprintf("%d element(s) match %q (in read_state).", res.Total, p.Selector)
	if res.Total > len(res.Elements) {
		text = fmt.Sprintf("%d element(s) match %q; the first %d are in read_state.", res.Total, p.Selector, len(res.Elements))
	}
	return ActionResult{Text: text, ReadOnce: b.String()}, nil
}

func savePDFAction(ctx context.Context, ac *ActionContext, p SavePDFParams) (ActionResult, error) {
	name := strings.TrimSpace(p.FileName)
	if name == "" {
		name = pdfName(ac.BrowserState)
	}
	if err := plainName(name, "a plain name ending in .pdf"); err != nil {
		return ActionResult{}, err
	}
	if !strings.HasSuffix(strings.ToLower(name), ".pdf") {
		return ActionResult{}, fmt.Errorf("%w: %q (a plain name ending in .pdf)", ErrFileName, name)
	}
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.PrintPDF, events.PrintPDFEvent{Landscape: p.Landscape, PrintBackground: true, Paper: p.PaperFormat})
	if err != nil {
		return ActionResult{}, err
	}
	path := filepath.Join(ac.FileSystem.Dir(), name)
	if err := os.WriteFile(path, res.PDF, 0o644); err != nil {
		return ActionResult{}, fmt.Errorf("agent: save_as_pdf: %w", err)
	}
	return ActionResult{Text: fmt.Sprintf("Saved the page as %s (%d KB).", name, (len(res.PDF)+1023)/1024), Files: []string{path}}, nil
}

// pdfName derives a file name from the page's title.
func pdfName(st *events.BrowserState) string {
	base := ""
	if st != nil {
		base = st.Title
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "page"
	}
	return name + ".pdf"
}

// oneLine collapses runs of whitespace to one space, so a match reads on
// one line and keeps its spacing.
func oneLine(s string) string { return spaceRun.ReplaceAllString(s, " ") }

var spaceRun = regexp.MustCompile(`\s+`)
