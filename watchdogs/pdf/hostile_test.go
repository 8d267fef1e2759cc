package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
)

// buildPDF writes a PDF of the given objects (numbered from 1) with a
// correct cross-reference table; object 1 is the catalog.
func buildPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// onePage is a valid one-page document that says "Hello hostile world".
func onePage() []byte {
	content := "BT /F1 12 Tf 72 712 Td (Hello hostile world) Tj ET"
	return buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	)
}

func TestExtractHandBuilt(t *testing.T) {
	_, pages, err := Extract(onePage())
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if len(pages) != 1 || !strings.Contains(pages[0], "Hello hostile world") {
		t.Fatalf("pages = %q", pages)
	}
}

// Hostile documents end in ErrPDFUnreadable, promptly: none hangs (the
// reader's own page lookup follows a /Kids loop forever) or panics.
func TestExtractHostile(t *testing.T) {
	nested := "<< /Type /Catalog /Pages 2 0 R /X " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + " >>"
	cases := map[string][]byte{
		"kids loop to itself": buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
		),
		"kids loop, two ways": buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R 2 0 R] /Count 5 >>",
		),
		"a loop through a child": buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Pages /Kids [2 0 R] /Count 1 /Parent 2 0 R >>",
		),
		"a count of two billion": buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [] /Count 2000000000 >>",
		),
		"nested 200,000 deep": buildPDF(nested, "<< /Type /Pages /Kids [] /Count 1 >>"),
		"truncated":           onePage()[:200],
		"no catalog":          buildPDF("<< /Type /Pages /Kids [] /Count 0 >>"),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, pages, err := Extract(b)
			if !errors.Is(err, events.ErrPDFUnreadable) {
				t.Fatalf("Extract: %d pages, err %v; want ErrPDFUnreadable", len(pages), err)
			}
		})
	}
}

func TestExtractStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ExtractContext(ctx, onePage()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// FuzzExtract: whatever the bytes, Extract returns (an error wrapping
// ErrPDFUnreadable, or pages), without a panic or a hang.
func FuzzExtract(f *testing.F) {
	f.Add(onePage())
	f.Add(buildPDF("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"))
	f.Add([]byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, pages, err := Extract(b)
		if err != nil && !errors.Is(err, events.ErrPDFUnreadable) {
			t.Fatalf("err %v does not wrap ErrPDFUnreadable", err)
		}
		if err == nil && len(pages) == 0 {
			t.Fatal("no error and no pages")
		}
	})
}
