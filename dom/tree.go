package dom

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// DOM node types (Node.nodeType).
const (
	ElementNode          = 1
	TextNode             = 3
	CommentNode          = 8
	DocumentNode         = 9
	DocumentTypeNode     = 10
	DocumentFragmentNode = 11
)

// Frame is one document's context: which target and session it came from and
// how its coordinates map into the top-level page.
type Frame struct {
	TargetID  string
	SessionID string
	FrameID   string
	URL       string
	Depth     int  // 0 for the page's document
	OOPIF     bool // captured from its own target
	// Offset translates this document's coordinates to page coordinates.
	OffsetX, OffsetY float64
	// View is this document's viewport in page coordinates (zero if unknown).
	View Rect
	// ContentW/ContentH is the document's scrollable size (snapshot), 0 if
	// unknown.
	ContentW, ContentH float64
	Parent             *Frame
}

// AXInfo is the accessibility data merged onto a node.
type AXInfo struct {
	Role        string
	Name        string
	Description string
	Ignored     bool
	// Props maps AX property names (focusable, checked, valuetext, …) to their
	// values rendered as strings (booleans as "true"/"false").
	Props map[string]string
}

// Node is one node of the enhanced tree: DOM + snapshot + AX merged by
// backend node id. Nodes are owned by their Tree and must be treated as
// read-only by everything except this package.
type Node struct {
	BackendNodeID cdpproto.BackendNodeID
	NodeID        cdpproto.NodeID
	Type          int64
	NodeName      string // as CDP reports it, e.g. "DIV", "#text"
	Tag           string // lower-case element name; "" for non-elements
	Value         string // nodeValue (text of text nodes)
	// attrs is the flat name/value list of DOM.Node.attributes, shared with
	// the input (never modified).
	attrs []string

	ShadowRootType string // for shadow-root fragments: open, closed, user-agent
	DOMFrameID     string // frameId reported on frame owner elements
	IsScrollable   bool   // DOM.Node.isScrollable

	Parent          *Node
	Children        []*Node // light-DOM children
	ShadowRoots     []*Node
	ContentDocument *Node // iframe content, same-process or OOPIF

	Frame  *Frame
	Layout *Layout // nil when the snapshot has no row for the node
	// Bounds is the layout box in page coordinates (frame offsets applied).
	Bounds      Rect
	AX          *AXInfo
	HasListener bool
	Visible     bool
	// Control is, for a <label>, the control it labels: the labelable
	// element its for= names in the same document or shadow root, else
	// (no for=) the first labelable element it wraps. Nil otherwise.
	Control *Node
	// StandIn is, for a control no one can click where it is (hidden, or
	// a box of at most 1 px: custom checkboxes draw their label instead),
	// its first visible label: that label is indexed in its place, and the
	// control is not. Nil otherwise.
	StandIn *Node
}

// Attr returns an attribute value ("" if absent).
func (n *Node) Attr(k string) string { v, _ := n.LookupAttr(k); return v }

// LookupAttr returns an attribute value and whether it is present.
func (n *Node) LookupAttr(k string) (string, bool) {
	for i := 0; i+1 < len(n.attrs); i += 2 {
		if n.attrs[i] == k {
			return n.attrs[i+1], true
		}
	}
	return "", false
}

// EachAttr calls f for every attribute in document order.
func (n *Node) EachAttr(f func(name, value string)) {
	for i := 0; i+1 < len(n.attrs); i += 2 {
		f(n.attrs[i], n.attrs[i+1])
	}
}

// NumAttrs returns the number of attributes.
func (n *Node) NumAttrs() int { return len(n.attrs) / 2 }

// HasAttr reports whether the attribute is present.
func (n *Node) HasAttr(k string) bool { _, ok := n.LookupAttr(k); return ok }

// IsElement reports whether n is an element.
func (n *Node) IsElement() bool { return n.Type == ElementNode }

// eachChild visits shadow roots, then light children, then the content
// document: the order the serializer renders them.
func (n *Node) eachChild(f func(*Node)) {
	for _, c := range n.ShadowRoots {
		f(c)
	}
	for _, c := range n.Children {
		f(c)
	}
	if n.ContentDocument != nil {
		f(n.ContentDocument)
	}
}

// Tree is the result of Build. It is not modified afterwards (MergeAX
// aside), so Serialize, Markdown, FingerprintOf and AXCandidates may run on
// it concurrently. Nodes share attribute slices with the PageInput, which
// the caller must not modify while the tree is in use.
type Tree struct {
	Root   *Node
	Frames []*Frame // Frames[0] is the page
	URL    string
	Title  string
	// ReadyState as given in PageInput.
	ReadyState string
	// Warnings lists what was skipped (frames over the limits, OOPIFs whose
	// owner was not found). Build still succeeds.
	Warnings []string
	// ContentHeight/Width of the main document (snapshot), 0 if unknown.
	ContentWidth, ContentHeight float64
	Viewport                    Viewport
	// Unlisted sums FrameInput.Unlisted over the stitched frames.
	Unlisted  Unlisted
	nodeCount int
}

// NodeCount returns the number of nodes in the tree.
func (t *Tree) NodeCount() int { return t.nodeCount }

// Walk visits every node depth-first (shadow roots, children, content
// document) until f returns false for a node, which skips its subtree.
func (t *Tree) Walk(f func(*Node) bool) {
	var rec func(*Node)
	rec = func(n *Node) {
		if !f(n) {
			return
		}
		n.eachChild(rec)
	}
	if t.Root != nil {
		rec(t.Root)
	}
}

type builder struct {
	opts       Options
	tree       *Tree
	frameCount int
	// iframe elements without content, candidates for OOPIF owners.
	owners []*Node
	slab   []Node // nodes are allocated in chunks
	// owners whose OOPIF was refused (limits); they take no other frame.
	skipped map[*Node]bool
}

type frameData struct {
	in        *FrameInput
	snap      *snapLookup
	ax        map[cdpproto.BackendNodeID]*accessibility.Node
	listeners map[cdpproto.BackendNodeID]bool
}

// Build merges the frames of a page capture into one enhanced tree and
// computes visibility.
//
// Frames[0] is the page. Its document's same-process iframes are stitched
// from contentDocument; every other FrameInput is an out-of-process frame
// stitched under its owner <iframe> (see OwnerRef), offset by that
// iframe's position, in any order and nested. At most opts.MaxIframes frame
// documents and opts.MaxIframeDepth levels are stitched.
//
// Visibility: display, visibility, opacity > 0, a non-empty layout box, and
// intersection with every enclosing frame's viewport (widened on every side
// by opts.ViewportThreshold).
//
// Build does not modify input. It fails only on input it cannot interpret
// (ErrNoFrames, or a *FrameError wrapping ErrNoDocument, ErrNoSnapshot or
// ErrBadSnapshot); frames over the limits and OOPIFs whose owner is not in
// the tree become Tree.Warnings.
func Build(input *PageInput, opts Options) (*Tree, error) {
	if input == nil || len(input.Frames) == 0 {
		return nil, ErrNoFrames
	}
	opts = opts.withDefaults()
	b := &builder{opts: opts, tree: &Tree{URL: input.URL, Title: input.Title, ReadyState: input.ReadyState},
		skipped: map[*Node]bool{}}
	data := make([]*frameData, len(input.Frames))
	for i := range input.Frames {
		fi := &input.Frames[i]
		if fi.Document == nil {
			return nil, &FrameError{Index: i, TargetID: fi.TargetID, Err: ErrNoDocument}
		}
		if fi.Snapshot == nil {
			return nil, &FrameError{Index: i, TargetID: fi.TargetID, Err: ErrNoSnapshot}
		}
		scale := 1.0
		if opts.DivideBoundsByDPR && fi.Viewport.DPR > 0 {
			scale = fi.Viewport.DPR
		}
		sl, err := decodeSnapshot(fi.Snapshot, scale)
		if err != nil {
			return nil, &FrameError{Index: i, TargetID: fi.TargetID, Err: err}
		}
		fd := &frameData{in: fi, snap: sl}
		if len(fi.AX) > 0 {
			fd.ax = make(map[cdpproto.BackendNodeID]*accessibility.Node, len(fi.AX))
			for _, a := range fi.AX {
				if a != nil && a.BackendDOMNodeID != 0 {
					fd.ax[a.BackendDOMNodeID] = a
				}
			}
		}
		if len(fi.ClickListeners) > 0 {
			fd.listeners = make(map[cdpproto.BackendNodeID]bool, len(fi.ClickListeners))
			for _, id := range fi.ClickListeners {
				fd.listeners[id] = true
			}
		}
		data[i] = fd
	}

	main := data[0]
	mf := &Frame{TargetID: main.in.TargetID, SessionID: main.in.SessionID, FrameID: main.in.FrameID,
		URL: main.in.Document.DocumentURL}
	if b.tree.URL == "" {
		b.tree.URL = main.in.Document.DocumentURL
	}
	b.tree.Viewport = main.in.Viewport
	if len(main.snap.docs) > 0 && main.snap.docs[0] != nil {
		d := main.snap.docs[0]
		b.tree.ContentWidth, b.tree.ContentHeight = d.ContentWidth, d.ContentHeight
		mf.ContentW, mf.ContentH = d.ContentWidth, d.ContentHeight
		if b.tree.Viewport.ScrollX == 0 && b.tree.Viewport.ScrollY == 0 {
			b.tree.Viewport.ScrollX, b.tree.Viewport.ScrollY = d.ScrollOffsetX, d.ScrollOffsetY
		}
	}
	vp := b.tree.Viewport
	if vp.Width > 0 && vp.Height > 0 {
		mf.View = Rect{X: vp.ScrollX, Y: vp.ScrollY, W: vp.Width, H: vp.Height}
	} else if cr := htmlClientRect(main, main.in.Document); cr != nil && !cr.Empty() {
		mf.View = Rect{X: vp.ScrollX, Y: vp.ScrollY, W: cr.W, H: cr.H}
	}
	b.tree.Frames = append(b.tree.Frames, mf)
	b.tree.Unlisted = main.in.Unlisted
	b.tree.Root = b.build(main, main.in.Document, nil, mf)

	// Attach OOPIFs; nested ones may need several passes.
	pending := make([]int, 0, len(data)-1)
	for i := 1; i < len(data); i++ {
		pending = append(pending, i)
	}
	for len(pending) > 0 {
		var rest []int
		for _, i := range pending {
			owner := b.findOwner(data[i].in)
			if owner == nil {
				rest = append(rest, i)
				continue
			}
			b.attachOOPIF(owner, data[i])
		}
		if len(rest) == len(pending) {
			for _, i := range rest {
				b.tree.Warnings = append(b.tree.Warnings,
					fmt.Sprintf("frame %d (target %q): owner iframe not found; not stitched", i, data[i].in.TargetID))
			}
			break
		}
		pending = rest
	}
	linkLabels(b.tree.Root)
	return b.tree, nil
}

// contentBox is the area of a frame owner that shows the child document, in
// page coordinates: the border box moved in by the border widths, which the
// snapshot reports as the client rect's x/y (clientLeft/clientTop).
func contentBox(owner *Node) Rect {
	r := owner.Bounds
	if l := owner.Layout; l != nil && l.ClientRect != nil && l.ClientRect.W > 0 && l.ClientRect.H > 0 {
		cr := l.ClientRect
		r = Rect{X: r.X + cr.X, Y: r.Y + cr.Y, W: cr.W, H: cr.H}
	}
	return r
}

// htmlClientRect returns the snapshot client rect of the document's <html>.
func htmlClientRect(fd *frameData, doc *cdpproto.Node) *Rect {
	for _, c := range doc.Children {
		if c != nil && c.NodeType == ElementNode && strings.EqualFold(c.NodeName, "html") {
			if l := fd.snap.byBackend[c.BackendNodeID]; l != nil {
				return l.ClientRect
			}
		}
	}
	return nil
}

func (b *builder) findOwner(fi *FrameInput) *Node {
	if fi.Owner.BackendNodeID != 0 {
		for _, o := range b.owners {
			if o.ContentDocument == nil && !b.skipped[o] && o.BackendNodeID == fi.Owner.BackendNodeID &&
				(fi.Owner.ParentTargetID == "" || o.Frame.TargetID == fi.Owner.ParentTargetID) {
				return o
			}
		}
	}
	fid := fi.Owner.FrameID
	if fid == "" {
		fid = fi.FrameID
	}
	if fid != "" {
		for _, o := range b.owners {
			if o.ContentDocument == nil && !b.skipped[o] && o.DOMFrameID == fid {
				return o
			}
		}
	}
	return nil
}

func (b *builder) attachOOPIF(owner *Node, fd *frameData) {
	depth := owner.Frame.Depth + 1
	if depth > b.opts.MaxIframeDepth {
		b.tree.Warnings = append(b.tree.Warnings, fmt.Sprintf("target %q: iframe depth %d over limit %d; not stitched", fd.in.TargetID, depth, b.opts.MaxIframeDepth))
		b.skipped[owner] = true
		return
	}
	if b.frameCount >= b.opts.MaxIframes {
		b.tree.Warnings = append(b.tree.Warnings, fmt.Sprintf("target %q: more than %d iframes; not stitched", fd.in.TargetID, b.opts.MaxIframes))
		b.skipped[owner] = true
		return
	}
	b.frameCount++
	f := &Frame{TargetID: fd.in.TargetID, SessionID: fd.in.SessionID, FrameID: fd.in.FrameID,
		URL: fd.in.Document.DocumentURL, Depth: depth, OOPIF: true, Parent: owner.Frame}
	sx, sy := fd.in.Viewport.ScrollX, fd.in.Viewport.ScrollY
	if len(fd.snap.docs) > 0 && fd.snap.docs[0] != nil {
		d := fd.snap.docs[0]
		if sx == 0 && sy == 0 {
			sx, sy = d.ScrollOffsetX, d.ScrollOffsetY
		}
		f.ContentW, f.ContentH = d.ContentWidth, d.ContentHeight
	}
	f.View = contentBox(owner)
	f.OffsetX, f.OffsetY = f.View.X-sx, f.View.Y-sy
	b.tree.Frames = append(b.tree.Frames, f)
	u := &b.tree.Unlisted
	u.Elements, u.Links, u.Inputs, u.Images = u.Elements+fd.in.Unlisted.Elements, u.Links+fd.in.Unlisted.Links,
		u.Inputs+fd.in.Unlisted.Inputs, u.Images+fd.in.Unlisted.Images
	doc := b.build(fd, fd.in.Document, owner, f)
	owner.ContentDocument = doc
}

// build converts one cdp node (and its subtree) within frame f.
func (b *builder) build(fd *frameData, cn *cdpproto.Node, parent *Node, f *Frame) *Node {
	if len(b.slab) == 0 {
		b.slab = make([]Node, 256)
	}
	n := &b.slab[0]
	b.slab = b.slab[1:]
	*n = Node{
		BackendNodeID:  cn.BackendNodeID,
		NodeID:         cn.NodeID,
		Type:           cn.NodeType,
		NodeName:       cn.NodeName,
		Value:          cn.NodeValue,
		ShadowRootType: string(cn.ShadowRootType),
		DOMFrameID:     string(cn.FrameID),
		IsScrollable:   cn.IsScrollable,
		Parent:         parent,
		Frame:          f,
	}
	b.tree.nodeCount++
	if cn.NodeType == ElementNode {
		n.Tag = cn.LocalName
		if n.Tag == "" {
			n.Tag = strings.ToLower(cn.NodeName)
		}
		n.attrs = cn.Attributes
	}
	if l := fd.snap.byBackend[cn.BackendNodeID]; l != nil {
		n.Layout = l
		if l.HasLayout {
			n.Bounds = Rect{X: l.Bounds.X + f.OffsetX, Y: l.Bounds.Y + f.OffsetY, W: l.Bounds.W, H: l.Bounds.H}
		}
	}
	if a := fd.ax[cn.BackendNodeID]; a != nil {
		n.AX = convertAX(a)
	}
	n.HasListener = fd.listeners[cn.BackendNodeID]
	n.Visible = b.visible(n)

	for _, s := range cn.ShadowRoots {
		if s == nil {
			continue
		}
		n.ShadowRoots = append(n.ShadowRoots, b.build(fd, s, n, f))
	}
	if len(cn.Children) > 0 {
		n.Children = make([]*Node, 0, len(cn.Children))
		for _, c := range cn.Children {
			if c == nil || (c.NodeType == DocumentFragmentNode && c.ShadowRootType != "") {
				continue // shadow roots are listed in ShadowRoots
			}
			n.Children = append(n.Children, b.build(fd, c, n, f))
		}
	}
	if cn.ContentDocument != nil {
		depth := f.Depth + 1
		switch {
		case depth > b.opts.MaxIframeDepth:
			b.tree.Warnings = append(b.tree.Warnings, fmt.Sprintf("iframe %d: depth %d over limit %d; not stitched", cn.BackendNodeID, depth, b.opts.MaxIframeDepth))
		case b.frameCount >= b.opts.MaxIframes:
			b.tree.Warnings = append(b.tree.Warnings, fmt.Sprintf("iframe %d: more than %d iframes; not stitched", cn.BackendNodeID, b.opts.MaxIframes))
		default:
			b.frameCount++
			cf := &Frame{TargetID: f.TargetID, SessionID: f.SessionID, FrameID: string(cn.FrameID),
				URL: cn.ContentDocument.DocumentURL, Depth: depth, Parent: f}
			if cf.FrameID == "" {
				cf.FrameID = string(cn.ContentDocument.FrameID)
			}
			var sx, sy float64
			if l := fd.snap.byBackend[cn.ContentDocument.BackendNodeID]; l != nil && l.docIndex < len(fd.snap.docs) {
				d := fd.snap.docs[l.docIndex]
				sx, sy = d.ScrollOffsetX, d.ScrollOffsetY
				cf.ContentW, cf.ContentH = d.ContentWidth, d.ContentHeight
			}
			cf.View = contentBox(n)
			cf.OffsetX, cf.OffsetY = cf.View.X-sx, cf.View.Y-sy
			b.tree.Frames = append(b.tree.Frames, cf)
			n.ContentDocument = b.build(fd, cn.ContentDocument, n, cf)
		}
	} else if n.Tag == "iframe" || n.Tag == "frame" {
		b.owners = append(b.owners, n)
	}
	return n
}

// visible applies CSS visibility, non-empty bounds and the viewport test of
// every frame from the node's own up to the page.
func (b *builder) visible(n *Node) bool {
	l := n.Layout
	if l == nil || !l.HasLayout {
		return false
	}
	if strings.EqualFold(l.Styles.Display, "none") || strings.EqualFold(l.Styles.Visibility, "hidden") {
		return false
	}
	if op, ok := parseOpacity(l.Styles.Opacity); ok && op <= 0 {
		return false
	}
	if n.Type == ElementNode && l.Bounds.Empty() {
		return false
	}
	if n.Type != ElementNode && l.Bounds.W <= 0 && l.Bounds.H <= 0 {
		return false
	}
	thr := b.opts.ViewportThreshold
	if thr < 0 {
		return true
	}
	r := n.Bounds
	for f := n.Frame; f != nil; f = f.Parent {
		v := f.View
		if !v.Empty() {
			// Both directions: a wide row or a horizontally scrolled page
			// is as reachable by scrolling as a long one.
			if !(r.X < v.Right()+thr && r.Right() > v.X-thr && r.Y < v.Bottom()+thr && r.Bottom() > v.Y-thr) {
				return false
			}
		}
	}
	return true
}

// parseOpacity parses a CSS opacity; ok is false for anything unparsable
// (which callers treat as fully opaque for visibility, and not opaque for
// covering).
func parseOpacity(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 1, false
	}
	pct := strings.HasSuffix(s, "%")
	if pct {
		s = strings.TrimSuffix(s, "%")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v { // NaN
		return 1, false
	}
	if pct {
		v /= 100
	}
	return v, true
}

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	return rawToString(v.Value)
}

func rawToString(raw jsonv2.Value) string {
	switch raw[0] {
	case '"':
		var s string
		if err := jsonv2.Unmarshal(raw, &s); err == nil {
			return s
		}
	case 'n':
		return ""
	}
	return string(raw)
}

func convertAX(a *accessibility.Node) *AXInfo {
	info := &AXInfo{Role: axString(a.Role), Name: axString(a.Name), Description: axString(a.Description), Ignored: a.Ignored}
	if len(a.Properties) > 0 || a.Value != nil {
		info.Props = make(map[string]string, len(a.Properties)+1)
		for _, p := range a.Properties {
			if p == nil {
				continue
			}
			info.Props[string(p.Name)] = axString(p.Value)
		}
		if a.Value != nil {
			if _, ok := info.Props["value"]; !ok {
				info.Props["value"] = axString(a.Value)
			}
		}
	}
	return info
}
