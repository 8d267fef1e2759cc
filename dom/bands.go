package dom

import "strings"

// Band covers. A header, footer or sidebar that stays put while the
// content scrolls (position fixed or sticky, or absolute over a scrolling
// pane) covers what is scrolled under it, but a person scrolls that out
// from under it and clicks it. Such a cover is a band: it lies at an edge
// of its reference box (the frame's viewport, or the scroll container a
// sticky or absolute element sits in) and covers at most half of that
// box. What only bands cover stays visible when the scroll containers
// that move it, but not the band, have room to scroll it clear. A cover
// over most of the viewport (a modal's backdrop) is never a band.

// maxBands bounds the bands per frame; covers beyond count as plain covers
// (conservative: they hide what is under them).
const maxBands = 32

// bandMaxShare: a band covers at most this share of its reference box, in
// area and in thickness.
const bandMaxShare = 0.5

type edge int8

const (
	edgeTop edge = iota
	edgeBottom
	edgeLeft
	edgeRight
)

// paintCtx is what the band rule needs to know about a node: what scrolls
// it and which positioned element its covers belong to. Nodes share the
// context of their parent unless they are positioned or their parent
// scrolls.
type paintCtx struct {
	frame *Frame
	// movers are the scroll containers whose scrolling moves the node;
	// a nil entry is the frame's root scroller. Empty: nothing moves it
	// (fixed).
	movers []*Node
	// root is the outermost fixed or sticky ancestor-or-self, else the
	// nearest absolute one; nil if none. Its covers may form a band.
	root      *Node
	rootFixed bool    // root is fixed or sticky
	rootMover []*Node // movers of root
	rootRef   *Node   // root's reference scroll container; nil: the frame's viewport
}

func rootPaintCtx(f *Frame) *paintCtx {
	return &paintCtx{frame: f, movers: []*Node{nil}}
}

// enter returns the context of element n, a child of a node with ctx.
func (c *paintCtx) enter(n *Node) *paintCtx {
	if n.Layout == nil {
		return c
	}
	pos := strings.ToLower(n.Layout.Styles.Position)
	if pos != "fixed" && pos != "sticky" && pos != "absolute" {
		return c
	}
	nc := *c
	var ref *Node // nearest scroll container around n; nil: the viewport
	if len(c.movers) > 0 {
		ref = c.movers[len(c.movers)-1]
	}
	switch pos {
	case "fixed":
		nc.movers, ref = nil, nil
	case "sticky":
		// While stuck it stays put in its scroll container.
		if len(c.movers) > 0 {
			nc.movers = c.movers[: len(c.movers)-1 : len(c.movers)-1]
		}
	}
	fixed := pos != "absolute"
	if c.root == nil || !c.rootFixed { // outermost fixed or sticky, else nearest absolute
		nc.root, nc.rootFixed, nc.rootMover, nc.rootRef = n, fixed, nc.movers, ref
	}
	return &nc
}

// inside returns the context of the children of scroll container n.
func (c *paintCtx) inside(n *Node) *paintCtx {
	nc := *c
	nc.movers = append(c.movers[:len(c.movers):len(c.movers)], n)
	return &nc
}

// scrollContainer reports an element whose scrolling moves its content;
// html and body scroll with the viewport (the root scroller).
func scrollContainer(n *Node) bool {
	return n.Type == ElementNode && n.Tag != "html" && n.Tag != "body" && isScrollable(n)
}

// band is one band cover: the box of its root, clipped to the reference
// box, and what moves it.
type band struct {
	box    Rect
	ref    Rect
	edge   edge
	movers []*Node
}

// bandOf returns the band that root r of ctx forms, or nil.
func bandOf(c *paintCtx) *band {
	r, f := c.root, c.frame
	if r == nil || f == nil {
		return nil
	}
	ref := f.View
	if c.rootRef != nil {
		ref = contentBox(c.rootRef)
	}
	if ref.Empty() {
		return nil
	}
	b, ok := intersection(r.Bounds, ref)
	if !ok || b.W*b.H > bandMaxShare*ref.W*ref.H {
		return nil
	}
	const tol = 2
	best, share := edge(-1), bandMaxShare
	try := func(e edge, at bool, s float64) {
		if at && s <= share {
			best, share = e, s
		}
	}
	try(edgeTop, b.Y <= ref.Y+tol, b.H/ref.H)
	try(edgeBottom, b.Bottom() >= ref.Bottom()-tol, b.H/ref.H)
	try(edgeLeft, b.X <= ref.X+tol, b.W/ref.W)
	try(edgeRight, b.Right() >= ref.Right()-tol, b.W/ref.W)
	if best < 0 {
		return nil
	}
	return &band{box: b, ref: ref, edge: best, movers: c.rootMover}
}

func intersection(a, b Rect) (Rect, bool) {
	x0, y0 := maxf(a.X, b.X), maxf(a.Y, b.Y)
	x1, y1 := minf(a.Right(), b.Right()), minf(a.Bottom(), b.Bottom())
	if x1 <= x0 || y1 <= y0 {
		return Rect{}, false
	}
	return Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}, true
}

// escapes reports whether r, in context c, can be scrolled clear of every
// band it intersects (at least one).
func escapes(r Rect, c *paintCtx, bands []*band) bool {
	hit := false
	for _, b := range bands {
		if !intersects(r, b.box) {
			continue
		}
		hit = true
		var need float64
		switch b.edge {
		case edgeTop:
			need = b.box.Bottom() - r.Y
		case edgeBottom:
			need = r.Y + minf(r.H, b.box.Y-b.ref.Y) - b.box.Y
		case edgeLeft:
			need = b.box.Right() - r.X
		case edgeRight:
			need = r.X + minf(r.W, b.box.X-b.ref.X) - b.box.X
		}
		room := 0.0
		for _, m := range c.movers {
			if !containsNode(b.movers, m) {
				room += scrollRoom(m, c.frame, b.edge)
			}
		}
		if need > room+0.5 {
			return false
		}
	}
	return hit
}

func containsNode(list []*Node, n *Node) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// scrollRoom is how far scroller m (nil: frame f's root scroller) can move
// its content away from edge e: towards the bottom for a top band, and so
// on.
func scrollRoom(m *Node, f *Frame, e edge) float64 {
	var pos, size, client float64
	vertical := e == edgeTop || e == edgeBottom
	switch {
	case m == nil:
		if f == nil || f.View.Empty() {
			return 0
		}
		if vertical {
			pos, size, client = f.View.Y-f.OffsetY, f.ContentH, f.View.H
		} else {
			pos, size, client = f.View.X-f.OffsetX, f.ContentW, f.View.W
		}
	case m.Layout != nil && m.Layout.ScrollRect != nil && m.Layout.ClientRect != nil:
		sr, cr := m.Layout.ScrollRect, m.Layout.ClientRect
		if vertical {
			pos, size, client = sr.Y, sr.H, cr.H
		} else {
			pos, size, client = sr.X, sr.W, cr.W
		}
	default:
		return 0
	}
	if e == edgeTop || e == edgeLeft {
		return maxf(0, pos) // scroll back towards the start
	}
	return maxf(0, size-client-pos)
}
