package dom

import (
	"cmp"
	"slices"
	"strings"
)

// maxUnionRects bounds the covered-area union. Each insertion can split
// existing pieces, so heavily layered pages could blow up; once full the
// union stops growing, which only means fewer elements are treated as
// covered (conservative).
const maxUnionRects = 5000

// opaqueMinOpacity: only nodes at least this opaque hide what is under them.
const opaqueMinOpacity = 0.8

const gridCell = 256.0

// rectUnion is a set of disjoint rectangles with a coarse grid index so that
// lookups only touch nearby pieces.
type rectUnion struct {
	rects []Rect
	grid  map[[2]int32][]int32
	big   []int32  // pieces spanning too many cells to index; always candidates
	seen  []uint32 // per-rect visit stamp for de-duplication across cells
	stamp uint32
}

func newRectUnion() *rectUnion { return &rectUnion{grid: map[[2]int32][]int32{}} }

func cellRange(r Rect) (x0, y0, x1, y1 int32) {
	return int32(floorDiv(r.X)), int32(floorDiv(r.Y)), int32(floorDiv(r.Right())), int32(floorDiv(r.Bottom()))
}

func floorDiv(v float64) float64 {
	q := v / gridCell
	if q < -1e6 {
		q = -1e6
	} else if q > 1e6 {
		q = 1e6
	}
	if q < 0 {
		return float64(int64(q) - 1)
	}
	return float64(int64(q))
}

// candidates returns indexes of union pieces that may intersect r.
func (u *rectUnion) candidates(r Rect, buf []int32) []int32 {
	u.stamp++
	if u.stamp == 0 { // wrapped: reset stamps
		for i := range u.seen {
			u.seen[i] = 0
		}
		u.stamp = 1
	}
	x0, y0, x1, y1 := cellRange(r)
	if int64(x1-x0+1)*int64(y1-y0+1) > 4096 {
		// Huge query: scan everything.
		for i := range u.rects {
			buf = append(buf, int32(i))
		}
		return buf
	}
	for _, i := range u.big {
		u.seen[i] = u.stamp
		buf = append(buf, i)
	}
	for cx := x0; cx <= x1; cx++ {
		for cy := y0; cy <= y1; cy++ {
			for _, i := range u.grid[[2]int32{cx, cy}] {
				if u.seen[i] != u.stamp {
					u.seen[i] = u.stamp
					buf = append(buf, i)
				}
			}
		}
	}
	return buf
}

func intersects(a, b Rect) bool {
	return a.X < b.Right() && b.X < a.Right() && a.Y < b.Bottom() && b.Y < a.Bottom()
}

// subtract returns the parts of a not covered by b (up to 4 pieces).
func subtract(a, b Rect, out []Rect) []Rect {
	if !intersects(a, b) {
		return append(out, a)
	}
	if b.Y > a.Y { // top band
		out = append(out, Rect{X: a.X, Y: a.Y, W: a.W, H: b.Y - a.Y})
	}
	if b.Bottom() < a.Bottom() { // bottom band
		out = append(out, Rect{X: a.X, Y: b.Bottom(), W: a.W, H: a.Bottom() - b.Bottom()})
	}
	y0, y1 := maxf(a.Y, b.Y), minf(a.Bottom(), b.Bottom())
	if b.X > a.X { // left
		out = append(out, Rect{X: a.X, Y: y0, W: b.X - a.X, H: y1 - y0})
	}
	if b.Right() < a.Right() { // right
		out = append(out, Rect{X: b.Right(), Y: y0, W: a.Right() - b.Right(), H: y1 - y0})
	}
	return out
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func minf(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

// remainder subtracts all union pieces from r and returns what is left.
func (u *rectUnion) remainder(r Rect, scratch *[2][]Rect, cand []int32) []Rect {
	cur := append(scratch[0][:0], r)
	next := scratch[1][:0]
	for _, i := range cand {
		p := u.rects[i]
		next = next[:0]
		for _, c := range cur {
			next = subtract(c, p, next)
		}
		cur, next = next, cur
		if len(cur) == 0 {
			break
		}
	}
	scratch[0], scratch[1] = cur, next
	return cur
}

func (u *rectUnion) covers(r Rect, scratch *[2][]Rect, cbuf []int32) bool {
	if r.Empty() || len(u.rects) == 0 {
		return false
	}
	cand := u.candidates(r, cbuf[:0])
	return len(u.remainder(r, scratch, cand)) == 0
}

func (u *rectUnion) add(r Rect, scratch *[2][]Rect, cbuf []int32) {
	if r.Empty() || len(u.rects) >= maxUnionRects {
		return
	}
	cand := u.candidates(r, cbuf[:0])
	for _, p := range u.remainder(r, scratch, cand) {
		if len(u.rects) >= maxUnionRects {
			return
		}
		if p.Empty() {
			continue
		}
		idx := int32(len(u.rects))
		u.rects = append(u.rects, p)
		u.seen = append(u.seen, 0)
		x0, y0, x1, y1 := cellRange(p)
		if int64(x1-x0+1)*int64(y1-y0+1) > 4096 {
			u.big = append(u.big, idx)
			continue
		}
		for cx := x0; cx <= x1; cx++ {
			for cy := y0; cy <= y1; cy++ {
				k := [2]int32{cx, cy}
				u.grid[k] = append(u.grid[k], idx)
			}
		}
	}
}

// isTransparentColor reports whether a computed background-color paints
// nothing.
func isTransparentColor(c string) bool {
	switch c {
	case "rgba(0, 0, 0, 0)", "transparent", "":
		return true
	}
	if strings.HasPrefix(c, "rgb(") {
		return false
	}
	c = strings.TrimSpace(strings.ToLower(c))
	if c == "" || c == "transparent" {
		return true
	}
	if strings.HasPrefix(c, "rgba(") {
		inner := strings.TrimSuffix(strings.TrimPrefix(c, "rgba("), ")")
		parts := strings.Split(inner, ",")
		if len(parts) == 4 {
			a, ok := parseOpacity(parts[3])
			return ok && a <= 0
		}
	}
	return false
}

// isOpaque decides whether a node hides what is painted under it. An
// unparsable opacity counts as not opaque: it must never make content
// disappear.
func isOpaque(n *Node) bool {
	l := n.Layout
	if l == nil || isTransparentColor(l.Styles.BackgroundColor) {
		return false
	}
	if l.Styles.Opacity == "" {
		return true
	}
	op, ok := parseOpacity(l.Styles.Opacity)
	return ok && op >= opaqueMinOpacity
}

// applyPaintOrder marks simplified nodes fully covered by opaque nodes
// painted above them, per frame document. Covers that form a band (see
// bands.go) hide only what cannot be scrolled clear of them.
func applyPaintOrder(root *sNode) {
	type item struct {
		s   *sNode
		ctx *paintCtx
	}
	groups := map[*Frame][]item{}
	var collect func(s *sNode, ctx *paintCtx)
	collect = func(s *sNode, ctx *paintCtx) {
		n := s.node
		if ctx == nil || n.Frame != ctx.frame {
			ctx = rootPaintCtx(n.Frame)
		}
		if n.Type == ElementNode {
			ctx = ctx.enter(n)
		}
		if n.Layout != nil && n.Layout.HasLayout && !n.Bounds.Empty() && (n.Type == ElementNode || n.Type == TextNode) {
			groups[n.Frame] = append(groups[n.Frame], item{s, ctx})
		}
		if scrollContainer(n) {
			ctx = ctx.inside(n)
		}
		for _, c := range s.children {
			collect(c, ctx)
		}
	}
	collect(root, nil)
	var scratch, bandScratch [2][]Rect
	cbuf := make([]int32, 0, 64)
	var rest []Rect
	for _, list := range groups {
		slices.SortStableFunc(list, func(a, b item) int {
			return cmp.Compare(b.s.node.Layout.PaintOrder, a.s.node.Layout.PaintOrder)
		})
		hard, soft := newRectUnion(), newRectUnion() // plain covers, band covers
		var bands []*band
		bandFor := map[*Node]*band{}
		// covered: by plain covers alone, or by bands too and no scrolling
		// clears it of them.
		covered := func(it item) bool {
			r := it.s.node.Bounds
			if hard.covers(r, &scratch, cbuf) {
				return true
			}
			if len(soft.rects) == 0 || !intersectsAny(r, bands) {
				return false
			}
			rest = append(rest[:0], hard.remainder(r, &scratch, hard.candidates(r, cbuf[:0]))...)
			for _, p := range rest {
				if !soft.covers(p, &bandScratch, cbuf) {
					return false
				}
			}
			return !escapes(r, it.ctx, bands)
		}
		for i := 0; i < len(list); {
			j := i
			po := list[i].s.node.Layout.PaintOrder
			for j < len(list) && list[j].s.node.Layout.PaintOrder == po {
				j++
			}
			// Nodes painted together cannot cover each other: test the whole
			// group before adding any of it.
			for _, it := range list[i:j] {
				if covered(it) {
					it.s.paintHidden = true
				}
			}
			for _, it := range list[i:j] {
				n := it.s.node
				if it.s.paintHidden || n.Type != ElementNode || !isOpaque(n) {
					continue
				}
				b, known := bandFor[it.ctx.root]
				if !known && it.ctx.root != nil {
					if len(bands) < maxBands {
						b = bandOf(it.ctx)
					}
					bandFor[it.ctx.root] = b
					if b != nil {
						bands = append(bands, b)
					}
				}
				if b != nil {
					soft.add(n.Bounds, &scratch, cbuf)
				} else {
					hard.add(n.Bounds, &scratch, cbuf)
				}
			}
			i = j
		}
	}
}

func intersectsAny(r Rect, bands []*band) bool {
	for _, b := range bands {
		if intersects(r, b.box) {
			return true
		}
	}
	return false
}
