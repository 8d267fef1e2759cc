package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
)

func TestReadPDFPagesParse(t *testing.T) {
	for _, c := range []struct {
		p           ReadPDFParams
		first, last int
		bad         bool
	}{
		{ReadPDFParams{}, 0, 0, false},
		{ReadPDFParams{Page: 3}, 3, 3, false},
		{ReadPDFParams{Pages: "2-4"}, 2, 4, false},
		{ReadPDFParams{Pages: " 2 - 4 "}, 2, 4, false},
		{ReadPDFParams{Pages: "5"}, 5, 5, false},
		{ReadPDFParams{Pages: "5-"}, 5, -1, false},
		{ReadPDFParams{Pages: "4-2"}, 0, 0, true},
		{ReadPDFParams{Pages: "x"}, 0, 0, true},
		{ReadPDFParams{Pages: "0-2"}, 0, 0, true},
		{ReadPDFParams{Page: -1}, 0, 0, true},
		{ReadPDFParams{Page: 2, Pages: "2-3"}, 0, 0, true},
	} {
		f, l, err := parsePages(c.p)
		if c.bad != (err != nil) || (err != nil && !errors.Is(err, ErrBadParams)) || f != c.first || l != c.last {
			t.Errorf("%+v: %d, %d, %v", c.p, f, l, err)
		}
	}
}

// read_pdf is offered only while the tab shows a PDF, and never in the
// system prompt's list; the observation says how many pages and how to
// read them.
func TestReadPDFOfferedOnPDFTabsOnly(t *testing.T) {
	specs := DefaultRegistry().offered("https://example.com/", nil, nil, false)
	has := func(ss []ActionSpec) bool {
		for _, s := range ss {
			if s.Name == "read_pdf" {
				return true
			}
		}
		return false
	}
	if !has(specs) {
		t.Fatal("read_pdf is not a built-in")
	}
	if has(pdfActions(specs, &events.BrowserState{})) {
		t.Error("read_pdf offered on a page that is not a PDF")
	}
	if !has(pdfActions(specs, &events.BrowserState{IsPDFViewer: true})) {
		t.Error("read_pdf not offered on a PDF tab")
	}
	if n := pdfNote(7); !strings.Contains(n, "PDF of 7 pages") || !strings.Contains(n, "read_pdf") {
		t.Errorf("note %q", n)
	}
}

// drag's parameters are checked before anything is sent.
func TestDragParamsRefusedBeforeTheBrowser(t *testing.T) {
	one, two, x := 1, 2, 5.0
	ac := &ActionContext{}
	for _, p := range []CoordinateDragParams{
		{},
		{Index: &one},
		{Index: &one, ToIndex: &two, DX: &x},
		{Index: &one, CoordinateX: &x, CoordinateY: &x, DX: &x},
	} {
		if _, err := ac.drag(context.Background(), p); !errors.Is(err, ErrBadParams) {
			t.Errorf("%+v: %v, want ErrBadParams", p, err)
		}
	}
}

// read_value is offered with the page state only when a value is shown cut
// (dom writes "… N more chars (read_value)" after it), not on every step.
func TestReadValueOfferedOnlyWithACutValue(t *testing.T) {
	specs := DefaultRegistry().offered("https://example.com/", nil, nil, false)
	has := func(ss []ActionSpec) bool {
		for _, s := range ss {
			if s.Name == "read_value" {
				return true
			}
		}
		return false
	}
	if !has(specs) {
		t.Fatal("read_value is not a built-in")
	}
	if has(pdfActions(specs, &events.BrowserState{DOMText: `[3]<textarea value="short" />`})) {
		t.Error("read_value offered with no cut value")
	}
	if !has(pdfActions(specs, &events.BrowserState{DOMText: `[3]<textarea value="Dear…"… 1,240 more chars (read_value) />`})) {
		t.Error("read_value not offered beside a cut value")
	}
}
