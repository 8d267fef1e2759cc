package dom

import "github.com/browseragent/browseragent/dom"

// mediaTags are the elements whose content neither the element list nor
// the page text shows: drawn (canvas, WebGL), played (video) or embedded
// by a plug-in (embed, object).
var mediaTags = map[string]bool{"canvas": true, "video": true, "embed": true, "object": true}

// mediaCoverage is the fraction (0..1) of the main viewport covered by the
// largest visible media element (events.DOMStats.MediaCoverage); 0 when the
// viewport is unknown. An element counts only where it can be seen: within
// the viewport, the boxes of the iframes it is in, and the boxes of its
// ancestors that clip their overflow (overflow other than visible, per
// axis). Limits: an absolutely or fixed positioned element escapes an
// overflow clip whose box is not its containing block, which this does
// not model (it is clipped all the same, so it may count for less than it
// shows); scrolling inside an iframe is not applied to its content's
// boxes; what covers the element (another element on top) is not
// subtracted.
func mediaCoverage(t *dom.Tree) float64 {
	if t == nil || t.Root == nil || t.Viewport.Width <= 0 || t.Viewport.Height <= 0 {
		return 0
	}
	vp := t.Viewport
	area := vp.Width * vp.Height
	best := 0.0
	var walk func(n *dom.Node, clip dom.Rect)
	walk = func(n *dom.Node, clip dom.Rect) {
		if n.Type == dom.ElementNode {
			if mediaTags[n.Tag] && n.Visible {
				if r := intersect(n.Bounds, clip); !r.Empty() {
					best = max(best, r.W*r.H/area)
				}
				if n.Tag == "object" {
					return // an object's fallback content is not shown
				}
			}
			// The root's and the body's overflow is the viewport's (CSS
			// propagates it there): no clip of their own boxes.
			if n.Layout != nil && n.Layout.HasLayout && n.Tag != "html" && n.Tag != "body" {
				st := n.Layout.Styles
				x, y := clips(st.OverflowX, st.Overflow), clips(st.OverflowY, st.Overflow)
				if x || y {
					b := n.Bounds
					c := clip
					if x {
						c = intersect(c, dom.Rect{X: b.X, Y: c.Y, W: b.W, H: c.H})
					}
					if y {
						c = intersect(c, dom.Rect{X: c.X, Y: b.Y, W: c.W, H: b.H})
					}
					clip = c
				}
			}
		}
		if clip.Empty() {
			return
		}
		for _, c := range n.ShadowRoots {
			walk(c, clip)
		}
		for _, c := range n.Children {
			walk(c, clip)
		}
		if n.ContentDocument != nil {
			// A frame shows its document within its own box.
			walk(n.ContentDocument, intersect(clip, n.Bounds))
		}
	}
	walk(t.Root, dom.Rect{X: vp.ScrollX, Y: vp.ScrollY, W: vp.Width, H: vp.Height})
	return min(best, 1)
}

// clips reports whether an overflow value (the axis's, else the
// shorthand's) clips content to the box.
func clips(axis, shorthand string) bool {
	v := axis
	if v == "" {
		v = shorthand
	}
	return v != "" && v != "visible"
}

// intersect is the common part of two rectangles (empty when none).
func intersect(a, b dom.Rect) dom.Rect {
	x0, y0 := max(a.X, b.X), max(a.Y, b.Y)
	x1, y1 := min(a.X+a.W, b.X+b.W), min(a.Y+a.H, b.Y+b.H)
	if x1 <= x0 || y1 <= y0 {
		return dom.Rect{}
	}
	return dom.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
}
