package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// ReadPDFParams are read_pdf's parameters: one page, or a range "2-4";
// neither reads from the first page on (up to the cap).
type ReadPDFParams struct {
	Page  int    `json:"page,omitempty"`
	Pages string `json:"pages,omitempty"`
}

// DefaultReadPDFChars caps the text read_pdf puts in read_state; the whole
// text of the pages asked then goes to a file.
const DefaultReadPDFChars = 20000

// registerReadPDF adds read_pdf.
func registerReadPDF(r *Registry, must func(error)) {
	must(Register(r, "read_pdf", "A PDF tab's text; pages: \"2-4\".", readPDFAction, WithRisk(RiskRead)))
}

// stateSpecific names the actions offered only on pages where they apply
// (read_pdf: a PDF tab; read_value: a field whose value the state shows
// cut), listed with the page's state rather than in the system prompt,
// which stays the same on every step.
func stateSpecific(name string) bool { return name == "read_pdf" || name == "read_value" }

// valueCutMark is what the element text writes after a cut value (dom's
// moreChars: "… 1,240 more chars (read_value)").
const valueCutMark = " more chars (read_value)"

// pdfActions drops the state-specific actions from a step's actions where
// they do not apply: read_pdf unless the tab shows a PDF, read_value unless
// a value is cut in the element text.
func pdfActions(specs []ActionSpec, st *events.BrowserState) []ActionSpec {
	pdf := st != nil && st.IsPDFViewer
	cut := st != nil && strings.Contains(st.DOMText, valueCutMark)
	out := specs[:0:0]
	for _, s := range specs {
		if (s.Name == "read_pdf" && !pdf) || (s.Name == "read_value" && !cut) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// pdfNote is what an observation of a PDF tab says.
func pdfNote(pages int) string {
	if pages > 0 {
		return fmt.Sprintf("This tab shows a PDF of %d pages: its text is not in the element list; read it with read_pdf (page: n, or pages: \"2-4\").", pages)
	}
	return "This tab shows a PDF viewer: its content is not in the element list; read its text with read_pdf."
}

// parsePages reads read_pdf's page or pages ("3", "2-4", "5-").
func parsePages(p ReadPDFParams) (first, last int, err error) {
	switch {
	case p.Page != 0 && p.Pages != "":
		return 0, 0, fmt.Errorf("%w: read_pdf takes page or pages, not both", ErrBadParams)
	case p.Page < 0:
		return 0, 0, fmt.Errorf("%w: page %d: pages count from 1", ErrBadParams, p.Page)
	case p.Page > 0:
		return p.Page, p.Page, nil
	case strings.TrimSpace(p.Pages) == "":
		return 0, 0, nil
	}
	s := strings.ReplaceAll(strings.TrimSpace(p.Pages), " ", "")
	a, b, isRange := strings.Cut(s, "-")
	if first, err = strconv.Atoi(a); err != nil || first < 1 {
		return 0, 0, fmt.Errorf("%w: pages %q: write a page (3) or a range (2-4)", ErrBadParams, p.Pages)
	}
	if !isRange {
		return first, first, nil
	}
	if b == "" {
		return first, -1, nil // to the end
	}
	if last, err = strconv.Atoi(b); err != nil || last < first {
		return 0, 0, fmt.Errorf("%w: pages %q: write a page (3) or a range (2-4)", ErrBadParams, p.Pages)
	}
	return first, last, nil
}

func readPDFAction(ctx context.Context, ac *ActionContext, p ReadPDFParams) (ActionResult, error) {
	first, last, err := parsePages(p)
	if err != nil {
		return ActionResult{}, err
	}
	ev := events.ReadPDFEvent{First: first, Last: last}
	if last == -1 {
		info, err := bus.Call(ctx, ac.Browser.Bus(), events.ReadPDF, events.ReadPDFEvent{InfoOnly: true})
		if err != nil {
			return ActionResult{}, err
		}
		ev.Last = info.Pages
	}
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.ReadPDF, ev)
	if err != nil {
		return ActionResult{}, err
	}
	var b strings.Builder
	for _, pg := range res.Text {
		fmt.Fprintf(&b, "--- page %d of %d ---\n", pg.Number, res.Pages)
		if strings.TrimSpace(pg.Text) == "" {
			b.WriteString("(no text on this page: an image or a scan)\n")
		} else {
			b.WriteString(pg.Text + "\n")
		}
	}
	text := b.String()
	span := "all pages"
	if len(res.Text) > 0 {
		span = fmt.Sprintf("page %d", res.Text[0].Number)
		if n := len(res.Text); n > 1 {
			span = fmt.Sprintf("pages %d-%d", res.Text[0].Number, res.Text[n-1].Number)
		}
	}
	r := ActionResult{Text: fmt.Sprintf("Read %s of %d of the PDF %s (%d characters, in read_state).", span, res.Pages, res.URL, len(text))}
	if len(text) > DefaultReadPDFChars {
		name := fmt.Sprintf("pdf_%s.md", strings.NewReplacer(" ", "_").Replace(span))
		cut := strings.ToValidUTF8(text[:DefaultReadPDFChars], "")
		if werr := ac.FileSystem.Write(name, text, false); werr == nil {
			r.Files = append(r.Files, name)
			cut += fmt.Sprintf("\n[cut at %d characters; the whole text is in the file %s: read_file it, or read fewer pages]", DefaultReadPDFChars, name)
			r.Text += " The whole text is saved as " + name + "."
		} else {
			cut += fmt.Sprintf("\n[cut at %d characters; read fewer pages for the rest]", DefaultReadPDFChars)
		}
		text = cut
	}
	r.ReadOnce = text
	return r, nil
}
