package dom

import "github.com/browseragent/browseragent/dom"

// mediaTags are the elements whose content neither the element list nor
// the page text shows: drawn (canvas, WebGL), played (video) or embedded
// by a plug-in (embed, object).
var mediaTags = map[string]bool{"canvas": true, "video": true, "embed": true, "object": true}

// mediaCoverage is the fraction (0..1) of the main viewport covered by the
// largest visible media element (events.DOMStats.MediaCoverage); 0 when the
// viewport is unknown.
func mediaCoverage(t *dom.Tree) float64 {
	if t == nil || t.Viewport.Width <= 0 || t.Viewport.Height <= 0 {
		return 0
	}
	vp := t.Viewport
	best := 0.0
	t.Walk(func(n *dom.Node) bool {
		if n.Type != dom.ElementNode || !mediaTags[n.Tag] || !n.Visible {
			return true
		}
		b := n.Bounds // page coordinates, like the viewport's scroll offsets
		w := min(b.X+b.W, vp.ScrollX+vp.Width) - max(b.X, vp.ScrollX)
		h := min(b.Y+b.H, vp.ScrollY+vp.Height) - max(b.Y, vp.ScrollY)
		if w > 0 && h > 0 {
			best = max(best, w*h/(vp.Width*vp.Height))
		}
		return n.Tag != "object" // an object's fallback content is not shown
	})
	return min(best, 1)
}
