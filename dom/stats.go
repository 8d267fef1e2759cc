package dom

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// PageStats summarises a page for the model and for loop detection.
type PageStats struct {
	Links            int // <a href>
	Inputs           int // input, textarea, select
	Iframes          int
	ScrollContainers int
	Images           int
	TotalElements    int // element nodes in the tree (all frames)
	Interactive      int // indexed elements
	TextChars        int // visible text characters
	// PagesAbove/PagesBelow are viewport heights of page content above and
	// below the main viewport (0 when the viewport is unknown).
	PagesAbove, PagesBelow float64
	// AppearsEmpty: nothing indexed and almost no visible text.
	AppearsEmpty bool
	// MayBeLoading: readyState is not "complete", or the page is nearly
	// empty.
	MayBeLoading bool
}

func (p *PageStats) fill(t *Tree) {
	t.Walk(func(n *Node) bool {
		switch n.Type {
		case ElementNode:
			p.TotalElements++
			switch n.Tag {
			case "a":
				if n.HasAttr("href") {
					p.Links++
				}
			case "input", "textarea", "select":
				p.Inputs++
			case "iframe", "frame":
				p.Iframes++
			case "img":
				p.Images++
			case "script", "style", "head", "template", "noscript":
				return false
			}
			if isScrollable(n) && n.Tag != "html" && n.Tag != "body" {
				p.ScrollContainers++
			}
		case TextNode:
			if n.Visible {
				p.TextChars += len(strings.TrimSpace(n.Value))
			}
		}
		return true
	})
	// What a viewport-scoped capture left out still counts.
	u := t.Unlisted
	p.TotalElements += u.Elements
	p.Links += u.Links
	p.Inputs += u.Inputs
	p.Images += u.Images
	vp := t.Viewport
	if vp.Height > 0 && t.ContentHeight > 0 {
		p.PagesAbove = maxf(0, vp.ScrollY) / vp.Height
		p.PagesBelow = maxf(0, t.ContentHeight-vp.ScrollY-vp.Height) / vp.Height
	}
	p.AppearsEmpty = p.Interactive == 0 && p.TextChars < 20
	p.MayBeLoading = (t.ReadyState != "" && t.ReadyState != "complete") || p.TotalElements < 10
}

// Hints returns short sentences for the model about the page state.
func (p PageStats) Hints() []string {
	var h []string
	if p.AppearsEmpty {
		h = append(h, "The page appears empty.")
	}
	if p.MayBeLoading {
		h = append(h, "The page may still be loading; consider waiting.")
	}
	if p.PagesBelow > 0.05 {
		h = append(h, fmt.Sprintf("%.1f pages below the viewport; scroll down to see more.", p.PagesBelow))
	}
	if p.PagesAbove > 0.05 {
		h = append(h, fmt.Sprintf("%.1f pages above the viewport.", p.PagesAbove))
	}
	return h
}

// String renders the stats on one line.
func (p PageStats) String() string {
	return fmt.Sprintf("%d links, %d inputs, %d iframes, %d scroll containers, %d interactive, %d elements total, %.1f pages above, %.1f pages below",
		p.Links, p.Inputs, p.Iframes, p.ScrollContainers, p.Interactive, p.TotalElements, p.PagesAbove, p.PagesBelow)
}

// Fingerprint is a cheap summary of a page used to notice that it changed
// (mutation fence, loop detection). Equal fingerprints mean "probably the
// same page state", never proof.
type Fingerprint struct {
	URL          string
	ElementCount int
	TextHash     uint64 // FNV-1a of visible text, in document order
}

// FingerprintOf computes the fingerprint of a tree.
func FingerprintOf(t *Tree) Fingerprint {
	h := fnv.New64a()
	fp := Fingerprint{URL: t.URL}
	t.Walk(func(n *Node) bool {
		switch n.Type {
		case ElementNode:
			fp.ElementCount++
			if disabledElements[n.Tag] {
				return false
			}
		case TextNode:
			if n.Visible {
				if s := strings.TrimSpace(n.Value); s != "" {
					h.Write([]byte(s))
					h.Write([]byte{0})
				}
			}
		}
		return true
	})
	fp.TextHash = h.Sum64()
	return fp
}

// Equal reports whether two fingerprints match.
func (f Fingerprint) Equal(o Fingerprint) bool { return f == o }
