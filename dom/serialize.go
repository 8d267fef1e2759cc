package dom

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	cdpproto "github.com/chromedp/cdproto/cdp"
)

// DefaultIncludeAttributes is the attribute whitelist of the text view, in
// output order (upstream's DEFAULT_INCLUDE_ATTRIBUTES). Names that are AX
// properties (checked, expanded, …) are read from the AX node.
var DefaultIncludeAttributes = []string{
	"title", "type", "checked", "id", "name", "role", "value", "placeholder",
	"data-date-format", "alt", "aria-label", "aria-expanded", "data-state",
	"aria-checked", "aria-valuemin", "aria-valuemax", "aria-valuenow",
	"aria-placeholder", "pattern", "min", "max", "minlength", "maxlength", "step",
	"accept", "multiple", "inputmode", "autocomplete", "aria-autocomplete", "list",
	"data-mask", "data-inputmask", "data-datepicker", "format", "expected_format",
	"contenteditable", "pseudo", "selected", "expanded", "pressed", "disabled",
	"invalid", "valuemin", "valuemax", "valuenow", "keyshortcuts", "haspopup",
	"multiselectable", "required", "valuetext", "level", "busy", "live", "ax_name",
}

// ErrNilTree is returned by Serialize for a nil tree.
var ErrNilTree = errors.New("dom: nil tree")

// EmptyPageText is the text of a page with nothing to show.
const EmptyPageText = "Empty DOM tree (you might have to wait for the page to load)"

// SerializeOptions tunes Serialize. The zero value means the defaults.
type SerializeOptions struct {
	// IncludeAttributes replaces DefaultIncludeAttributes when non-nil.
	IncludeAttributes []string
	// MaxChars caps Result.Text (bytes, so also characters). 0 means 40000.
	MaxChars int
	// AttrCap caps attribute values. 0 means 100.
	AttrCap int
	// ValueCap caps input/textarea values. 0 means 500. A cut value is
	// followed by "… N more chars (read_value)".
	ValueCap int
	// ExcludeAttr: elements with this attribute set to "true" are dropped
	// with their subtree (our own overlays). "" means "data-browseragent-exclude".
	ExcludeAttr string
	// DisablePaintOrder turns the covered-element filter off.
	DisablePaintOrder bool
	// DisableBBoxFilter turns the contained-in-link/button filter off.
	DisableBBoxFilter bool
}

func (o SerializeOptions) withDefaults() SerializeOptions {
	if o.IncludeAttributes == nil {
		o.IncludeAttributes = DefaultIncludeAttributes
	}
	if o.MaxChars <= 0 {
		o.MaxChars = 40000
	}
	if o.AttrCap <= 0 {
		o.AttrCap = 100
	}
	if o.ValueCap <= 0 {
		o.ValueCap = 500
	}
	if o.ExcludeAttr == "" {
		o.ExcludeAttr = "data-browseragent-exclude"
	}
	return o
}

// Result is one observation's text view.
type Result struct {
	// Text is what the model reads, at most MaxChars long.
	Text string
	// Map resolves every index that Serialize assigned, including indexes
	// cut from Text by truncation.
	Map   *SelectorMap
	Stats PageStats
	// Truncated reports that Text was cut; TruncatedElements counts the
	// indexed elements whose lines were cut.
	Truncated         bool
	TruncatedElements int
}

// sNode is a node of the simplified tree the serializer works on.
type sNode struct {
	node        *Node
	children    []*sNode
	shadowHost  bool
	closedHost  bool
	excluded    bool // by the bounding-box filter
	paintHidden bool // covered by the paint-order filter
	indexed     bool
	index       int64
	isNew       bool
	inter       int8 // IsInteractive cache: 0 unknown, 1 yes, -1 no
	label       string
	widget      *Node // a hidden <select>'s drawn widget (backingWidget)
}

func (s *sNode) interactive() bool {
	if s.inter == 0 {
		s.inter = -1
		if IsInteractive(s.node) {
			s.inter = 1
		}
	}
	return s.inter == 1
}

var disabledElements = map[string]bool{
	"style": true, "script": true, "head": true, "meta": true, "link": true,
	"title": true, "noscript": true, "template": true,
}

type serializer struct {
	opts    SerializeOptions
	include []string
	incSet  map[string]bool
	prev    *SelectorMap
	smap    *SelectorMap
	used    map[int64]bool
	nextSyn int64
	stats   PageStats
	scopes  map[*Node]*scopeIndex
	slab    []sNode
}

// newS allocates simplified nodes in chunks: one allocation per 256 nodes.
func (s *serializer) newS(n *Node) *sNode {
	if len(s.slab) == 0 {
		s.slab = make([]sNode, 256)
	}
	sn := &s.slab[0]
	s.slab = s.slab[1:]
	sn.node = n
	return sn
}

// Serialize renders the tree as the indexed text view and builds its
// selector map. prev is the previous observation's map (nil on the first
// observation: then nothing is marked new). The tree is not modified.
func Serialize(tree *Tree, prev *SelectorMap, opts SerializeOptions) (*Result, error) {
	if tree == nil {
		return nil, ErrNilTree
	}
	opts = opts.withDefaults()
	s := &serializer{opts: opts, prev: prev, smap: newSelectorMap(), used: map[int64]bool{}}
	s.include = dedupe(opts.IncludeAttributes)
	s.incSet = make(map[string]bool, len(s.include))
	for _, k := range s.include {
		s.incSet[k] = true
	}
	var maxID cdpproto.BackendNodeID
	tree.Walk(func(n *Node) bool {
		if n.BackendNodeID > maxID {
			maxID = n.BackendNodeID
		}
		return true
	})
	s.nextSyn = int64(maxID) + 1

	var root *sNode
	if tree.Root != nil {
		root = s.simplify(tree.Root)
	}
	if root != nil && !opts.DisablePaintOrder {
		applyPaintOrder(root)
	}
	root = prune(root)
	if root != nil && !opts.DisableBBoxFilter {
		bboxFilter(root, nil)
	}
	if root != nil {
		s.assign(root, false)
	}
	var lines []outLine
	if root != nil {
		lines = s.render(root, 0, nil)
	}
	res := &Result{Map: s.smap}
	s.stats.Interactive = s.smap.Len()
	s.stats.fill(tree)
	res.Stats = s.stats
	if len(lines) == 0 {
		res.Text = EmptyPageText
		if len(res.Text) > opts.MaxChars {
			res.Text = res.Text[:opts.MaxChars]
		}
		return res, nil
	}
	res.Text, res.Truncated, res.TruncatedElements = pack(lines, opts.MaxChars)
	return res, nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, k := range in {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// simplify builds the simplified tree: drops non-content elements, excluded
// subtrees, user-agent shadow roots, SVG internals (clickable shapes aside),
// invisible text; keeps shadow roots and iframe documents.
func (s *serializer) simplify(n *Node) *sNode {
	switch n.Type {
	case DocumentNode:
		sn := s.newS(n)
		for _, c := range n.Children {
			if cs := s.simplify(c); cs != nil {
				sn.children = append(sn.children, cs)
			}
		}
		if len(sn.children) == 0 {
			return nil
		}
		return sn
	case DocumentFragmentNode:
		if n.ShadowRootType == string(cdpproto.ShadowRootTypeUserAgent) {
			return nil // browser internals of inputs, media, …
		}
		sn := s.newS(n)
		for _, c := range n.Children {
			if cs := s.simplify(c); cs != nil {
				sn.children = append(sn.children, cs)
			}
		}
		return sn
	case TextNode:
		if n.Visible && strings.TrimSpace(n.Value) != "" {
			return s.newS(n)
		}
		return nil
	case ElementNode:
	default:
		return nil
	}
	if disabledElements[n.Tag] {
		return nil
	}
	if v, ok := n.LookupAttr(s.opts.ExcludeAttr); ok && strings.EqualFold(v, "true") {
		return nil
	}
	sn := s.newS(n)
	if n.Tag == "svg" {
		if n.Visible {
			s.svgShapes(sn, n, false) // the rest is collapsed
			return sn
		}
		return nil
	}
	for _, r := range n.ShadowRoots {
		if r.ShadowRootType == string(cdpproto.ShadowRootTypeUserAgent) {
			continue
		}
		sn.shadowHost = true
		if r.ShadowRootType == string(cdpproto.ShadowRootTypeClosed) {
			sn.closedHost = true
		}
		if cs := s.simplify(r); cs != nil {
			sn.children = append(sn.children, cs)
		}
	}
	for _, c := range n.Children {
		if cs := s.simplify(c); cs != nil {
			sn.children = append(sn.children, cs)
		}
	}
	if d := n.ContentDocument; d != nil {
		for _, c := range d.Children {
			if cs := s.simplify(c); cs != nil {
				sn.children = append(sn.children, cs)
			}
		}
	}
	if n.Tag == "select" {
		sn.widget = backingWidget(n)
	}
	if n.Visible || isScrollable(n) || len(sn.children) > 0 || sn.shadowHost || isFileInput(n) || sn.widget != nil {
		return sn
	}
	return nil
}

// svgShapes adds under parent the clickable elements inside an inline
// <svg> (shapes, groups, links: see svgClickable), flattened, each with
// the visible text it holds; everything else inside stays collapsed.
func (s *serializer) svgShapes(parent *sNode, n *Node, inShape bool) {
	for _, c := range n.Children {
		switch {
		case c.Type == TextNode:
			if inShape && c.Visible && strings.TrimSpace(c.Value) != "" {
				parent.children = append(parent.children, s.newS(c))
			}
		case c.Type != ElementNode || disabledElements[c.Tag]:
		case c.Visible && svgClickable(c):
			cs := s.newS(c)
			s.svgShapes(cs, c, true)
			parent.children = append(parent.children, cs)
		default:
			s.svgShapes(parent, c, inShape)
		}
	}
}

// svgClickable reports an element inside an <svg> that a person can click
// for an effect: a JS click listener, an on* mouse/key handler or
// tabindex, an interactive role, or an SVG link.
func svgClickable(n *Node) bool {
	if n.HasListener || n.Tag == "a" {
		return true
	}
	for _, a := range interactiveAttrs {
		if n.HasAttr(a) {
			return true
		}
	}
	return interactiveRoles[n.Attr("role")]
}

// prune drops invisible childless nodes (keeping text, scrollables, file
// inputs and shadow roots with content).
func prune(s *sNode) *sNode {
	if s == nil {
		return nil
	}
	kept := s.children[:0]
	for _, c := range s.children {
		if pc := prune(c); pc != nil {
			kept = append(kept, pc)
		}
	}
	s.children = kept
	n := s.node
	if n.Visible || n.Type == TextNode || len(s.children) > 0 || isScrollable(n) || isFileInput(n) || s.widget != nil {
		return s
	}
	return nil
}

func isFileInput(n *Node) bool {
	return n.Tag == "input" && strings.EqualFold(n.Attr("type"), "file")
}

// HumanTypedAttr marks a field a person typed into during a hand-off (the
// live view sets it): its value is withheld from the model like a
// password's, since what the person typed may be a code or a card number.
const HumanTypedAttr = "data-ba-human-typed"

// isPassword reports whether n's value is withheld: a password field, or
// a field a person typed into (HumanTypedAttr).
func isPassword(n *Node) bool {
	return n.Tag == "input" && strings.EqualFold(strings.TrimSpace(n.Attr("type")), "password") || n.HasAttr(HumanTypedAttr)
}

// isScrollable is the DOM's isScrollable, or content overflowing the client
// box with an overflow style that allows scrolling.
func isScrollable(n *Node) bool {
	if n.Type != ElementNode {
		return false
	}
	if n.IsScrollable {
		return true
	}
	l := n.Layout
	if l == nil || l.ScrollRect == nil || l.ClientRect == nil {
		return false
	}
	sr, cr := l.ScrollRect, l.ClientRect
	if !(sr.H > cr.H+1 || sr.W > cr.W+1) {
		return false
	}
	st := l.Styles
	if st.Overflow == "" && st.OverflowX == "" && st.OverflowY == "" {
		switch n.Tag {
		case "div", "main", "section", "article", "aside", "body", "html":
			return true
		}
		return false
	}
	allows := func(v string) bool {
		v = strings.ToLower(v)
		return v == "auto" || v == "scroll" || v == "overlay"
	}
	return allows(st.Overflow) || allows(st.OverflowX) || allows(st.OverflowY)
}

// showScrollInfo: scrollable. Nested scroll containers are marked too (unlike
// upstream, which hides a container inside a scrollable parent, so the model
// could not tell that the inner one scrolls on its own).
func showScrollInfo(n *Node) bool {
	return isScrollable(n)
}

// ScrollInfo is the scroll state of a scrollable element.
type ScrollInfo struct {
	PagesAbove, PagesBelow float64
	HorizontalPercent      float64
	Vertical, Horizontal   bool
}

// ScrollInfoOf computes scroll state from the snapshot rects; ok is false
// for nodes without both rects.
func ScrollInfoOf(n *Node) (ScrollInfo, bool) {
	if n.Layout == nil || n.Layout.ScrollRect == nil || n.Layout.ClientRect == nil {
		return ScrollInfo{}, false
	}
	sr, cr := *n.Layout.ScrollRect, *n.Layout.ClientRect
	var si ScrollInfo
	if cr.H > 0 {
		above := maxf(0, sr.Y)
		below := maxf(0, sr.H-cr.H-sr.Y)
		si.PagesAbove, si.PagesBelow = above/cr.H, below/cr.H
	}
	si.Vertical = sr.H > cr.H
	si.Horizontal = sr.W > cr.W
	if si.Horizontal && sr.W-cr.W > 0 {
		si.HorizontalPercent = sr.X / (sr.W - cr.W) * 100
	}
	return si, true
}

func scrollText(n *Node) string {
	si, ok := ScrollInfoOf(n)
	if !ok {
		return ""
	}
	var parts []string
	if si.Vertical {
		parts = append(parts, fmt.Sprintf("%.1f pages above, %.1f pages below", si.PagesAbove, si.PagesBelow))
	}
	if si.Horizontal {
		parts = append(parts, fmt.Sprintf("horizontal %.0f%%", si.HorizontalPercent))
	}
	return strings.Join(parts, " ")
}

// propagating reports whether n's box swallows clicks on its descendants.
func propagating(n *Node) bool {
	role := n.Attr("role")
	switch n.Tag {
	case "a", "button":
		return true
	case "div", "span":
		return role == "button" || role == "combobox"
	case "input":
		return role == "combobox"
	}
	return false
}

var bboxKeepRoles = map[string]bool{
	"button": true, "link": true, "checkbox": true, "radio": true, "tab": true, "menuitem": true, "option": true,
}

// bboxFilter marks descendants at least 99% inside the nearest propagating
// ancestor as excluded, except form controls, labels, other propagating
// elements, onclick handlers, aria-labelled and role-bearing controls.
func bboxFilter(s *sNode, active *Rect) {
	n := s.node
	if active != nil && n.Type == ElementNode && shouldExclude(n, *active) {
		s.excluded = true
	}
	next := active
	if n.Type == ElementNode && propagating(n) && n.Layout != nil && n.Layout.HasLayout && !n.Bounds.Empty() {
		b := n.Bounds
		next = &b
	}
	for _, c := range s.children {
		bboxFilter(c, next)
	}
}

func shouldExclude(n *Node, parent Rect) bool {
	if n.Layout == nil || !n.Layout.HasLayout || n.Bounds.Empty() {
		return false
	}
	switch n.Tag {
	case "input", "select", "textarea", "label":
		return false
	}
	if propagating(n) || n.HasAttr("onclick") || strings.TrimSpace(n.Attr("aria-label")) != "" || bboxKeepRoles[n.Attr("role")] {
		return false
	}
	c := n.Bounds
	ix := minf(c.Right(), parent.Right()) - maxf(c.X, parent.X)
	iy := minf(c.Bottom(), parent.Bottom()) - maxf(c.Y, parent.Y)
	if ix <= 0 || iy <= 0 {
		return false
	}
	return ix*iy >= 0.99*c.W*c.H
}

var dropdownRoles = map[string]bool{"listbox": true, "menu": true, "combobox": true, "menubar": true, "tree": true, "grid": true}

func isDropdownContainer(n *Node) bool {
	if dropdownRoles[strings.ToLower(n.Attr("role"))] || n.Tag == "select" {
		return true
	}
	cls := strings.ToLower(n.Attr("class"))
	for _, c := range strings.Fields(cls) {
		if c == "dropdown" || c == "dropdown-menu" || c == "select-menu" {
			return true
		}
	}
	return false
}

func hasInteractiveDescendant(s *sNode) bool {
	for _, c := range s.children {
		if c.interactive() || hasInteractiveDescendant(c) {
			return true
		}
	}
	return false
}

// assign gives indexes (backend node ids, synthetic on collision) and new
// marks.
func (s *serializer) assign(sn *sNode, inShadow bool) {
	n := sn.node
	if n.Type == DocumentFragmentNode {
		inShadow = true
	}
	if n.Type == ElementNode && !sn.excluded && (!sn.paintHidden || sn.widget != nil) {
		want := false
		if isScrollable(n) {
			want = isDropdownContainer(n) || !hasInteractiveDescendant(sn)
		} else if sn.interactive() {
			noLayout := n.Layout == nil || !n.Layout.HasLayout
			shadowControl := inShadow && noLayout && (n.Tag == "input" || n.Tag == "button" || n.Tag == "select" || n.Tag == "textarea" || n.Tag == "a")
			// A control with a stand-in label is reached through the label.
			want = n.Visible && n.StandIn == nil || isFileInput(n) || shadowControl
			if want && standsIn(n) && backingWidget(n.Control) != nil {
				want = false // the backing select is indexed itself
			}
		}
		if sn.widget != nil {
			want = true // a select behind a drawn dropdown: select_dropdown drives it
		}
		if want {
			idx := int64(n.BackendNodeID)
			if s.used[idx] || idx <= 0 {
				idx = s.nextSyn
				s.nextSyn++
			}
			s.used[idx] = true
			sn.indexed, sn.index = true, idx
			e := &Element{Index: idx, BackendNodeID: n.BackendNodeID, Node: n}
			if n.Frame != nil {
				e.TargetID, e.SessionID, e.FrameID = n.Frame.TargetID, n.Frame.SessionID, n.Frame.FrameID
			}
			if s.prev != nil {
				k := keyOf(n)
				if !s.prev.Contains(k.scope, k.id) {
					sn.isNew, e.New = true, true
				}
			}
			s.smap.add(e)
		}
	}
	for _, c := range sn.children {
		s.assign(c, inShadow)
	}
}

type outLine struct {
	text    string
	indexed bool
}

func (s *serializer) render(sn *sNode, depth int, out []outLine) []outLine {
	n := sn.node
	ind := indent(depth)
	switch n.Type {
	case TextNode:
		if !sn.paintHidden && n.Visible {
			if t := collapseSpace(n.Value); t != "" {
				out = append(out, outLine{text: ind + t})
			}
		}
		return out
	case DocumentFragmentNode:
		if len(sn.children) == 0 {
			return out
		}
		if n.ShadowRootType == string(cdpproto.ShadowRootTypeClosed) {
			out = append(out, outLine{text: ind + "Closed Shadow"})
		} else {
			out = append(out, outLine{text: ind + "Open Shadow"})
		}
		for _, c := range sn.children {
			out = s.render(c, depth+1, out)
		}
		return append(out, outLine{text: ind + "Shadow End"})
	case ElementNode:
	default:
		for _, c := range sn.children {
			out = s.render(c, depth, out)
		}
		return out
	}
	if sn.excluded {
		for _, c := range sn.children {
			out = s.render(c, depth, out)
		}
		return out
	}
	shadow := ""
	if sn.shadowHost {
		shadow = "|SHADOW(open)|"
		if sn.closedHost {
			shadow = "|SHADOW(closed)|"
		}
	}
	marker := ""
	if sn.indexed {
		if sn.isNew {
			marker = "*"
		}
		marker += "[" + strconv.FormatInt(sn.index, 10) + "]"
	}
	if n.Tag == "svg" {
		line := ind + shadow + marker + "<svg"
		if a := s.attrs(sn); a != "" {
			line += " " + a
		}
		if len(sn.children) == 0 {
			return append(out, outLine{text: line + " /> <!-- SVG content collapsed -->", indexed: sn.indexed})
		}
		// Only the clickable shapes follow, one level deeper.
		out = append(out, outLine{text: line + " />", indexed: sn.indexed})
		for _, c := range sn.children {
			out = s.render(c, depth+1, out)
		}
		return out
	}
	isFrame := n.Tag == "iframe" || n.Tag == "frame"
	scroll := isScrollable(n)
	next := depth
	if sn.indexed || scroll || isFrame {
		next++
		show := showScrollInfo(n)
		var prefix string
		switch {
		case isFrame:
			prefix = "|" + strings.ToUpper(n.Tag) + "|" + marker
		case sn.indexed && show:
			prefix = strings.Replace(marker, "[", "|scroll element[", 1)
		case sn.indexed:
			prefix = marker
		case show:
			prefix = "|scroll element|"
		}
		line := ind + shadow + prefix + "<" + n.Tag
		if a := s.attrs(sn); a != "" {
			line += " " + a
		}
		line += " />"
		if show {
			if t := scrollText(n); t != "" {
				line += " (" + t + ")"
			}
		} else if isFrame && n.ContentDocument != nil {
			if h := frameHTML(n.ContentDocument); h != nil && isScrollable(h) {
				if t := scrollText(h); t != "" {
					line += " (" + t + ")"
				}
			}
		}
		out = append(out, outLine{text: line, indexed: sn.indexed})
	}
	for _, c := range sn.children {
		out = s.render(c, next, out)
	}
	if isFrame && n.ContentDocument != nil {
		out = append(out, frameBelowHints(n, ind)...)
	}
	return out
}

// maxFrameHints bounds the hint lines under one iframe.
const maxFrameHints = 10

// cssVisible is visibility without the viewport test.
func cssVisible(n *Node) bool {
	l := n.Layout
	if l == nil || !l.HasLayout || n.Bounds.Empty() {
		return false
	}
	if strings.EqualFold(l.Styles.Display, "none") || strings.EqualFold(l.Styles.Visibility, "hidden") {
		return false
	}
	op, ok := parseOpacity(l.Styles.Opacity)
	return !ok || op > 0
}

// frameBelowHints tells the model about interactive elements of an iframe's
// document that are below the iframe's viewport (so they got no index):
// "... (N more elements below - scroll to reveal):" and one line each.
func frameBelowHints(iframe *Node, ind string) []outLine {
	doc := iframe.ContentDocument
	f := doc.Frame
	if f == nil || f.View.Empty() {
		return nil
	}
	type hidden struct {
		tag, text string
		pages     float64
	}
	var found []hidden
	total := 0
	var rec func(*Node)
	rec = func(c *Node) {
		if c.Type == ElementNode && disabledElements[c.Tag] {
			return
		}
		if c.Type == ElementNode && c.Frame == f && !c.Visible && cssVisible(c) &&
			c.Bounds.Y >= f.View.Bottom() && IsInteractive(c) {
			total++
			if len(found) < maxFrameHints {
				txt := capText(collapseSpace(visibleText(c, 60)), 40)
				if txt == "" {
					txt = capText(collapseSpace(c.Attr("aria-label")+" "+c.Attr("placeholder")), 40)
				}
				found = append(found, hidden{tag: c.Tag, text: txt, pages: (c.Bounds.Y - f.View.Bottom()) / f.View.H})
			}
			return
		}
		for _, k := range c.ShadowRoots {
			rec(k)
		}
		for _, k := range c.Children {
			rec(k)
		}
	}
	rec(doc)
	if total == 0 {
		return nil
	}
	out := make([]outLine, 0, len(found)+1)
	out = append(out, outLine{text: fmt.Sprintf("%s... (%d more elements below - scroll to reveal):", ind, total)})
	for _, h := range found {
		out = append(out, outLine{text: fmt.Sprintf("%s    <%s> %q ~%.1f pages down", ind, h.tag, h.text, h.pages)})
	}
	return out
}

var tabs = strings.Repeat("\t", 64)

func indent(depth int) string {
	if depth <= len(tabs) {
		return tabs[:depth]
	}
	return strings.Repeat("\t", depth)
}

func frameHTML(doc *Node) *Node {
	for _, c := range doc.Children {
		if c.Tag == "html" {
			return c
		}
	}
	return nil
}

func collapseSpace(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if !strings.ContainsAny(s, "\n\r\t\v\f") && !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// pack joins lines under max bytes, appending an honest notice when lines
// are cut.
func pack(lines []outLine, max int) (string, bool, int) {
	total := 0
	for _, l := range lines {
		total += len(l.text) + 1
	}
	total-- // no trailing newline
	if total <= max {
		var b strings.Builder
		b.Grow(total)
		for i, l := range lines {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(l.text)
		}
		return b.String(), false, 0
	}
	const reserve = 220
	budget := max - reserve
	var b strings.Builder
	cut := len(lines)
	for i, l := range lines {
		need := len(l.text)
		if i > 0 {
			need++
		}
		if b.Len()+need > budget {
			cut = i
			// A long text line may be shown in part; indexed lines never are.
			if !l.indexed {
				room := budget - b.Len() - 1
				if i == 0 {
					room++
				}
				if room > 40 {
					if i > 0 {
						b.WriteByte('\n')
					}
					b.WriteString(truncRunes(l.text, room-3) + "...")
					cut = i + 1
				}
			}
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
	}
	cutElems, cutLines := 0, len(lines)-cut
	for _, l := range lines[cut:] {
		if l.indexed {
			cutElems++
		}
	}
	notice := fmt.Sprintf("[... page truncated at %d characters: %d more interactive elements and %d more lines not shown; scroll or use extract to see the rest]", max, cutElems, cutLines)
	if b.Len() > 0 {
		notice = "\n" + notice
	}
	text := b.String() + notice
	if len(text) > max {
		text = text[:max] // only for absurdly small caps; notice is ASCII
	}
	return text, true, cutElems
}

// truncRunes cuts s to at most n bytes on a rune boundary.
func truncRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// capText caps s at n runes, marking the cut with "...".
func capText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "..."
		}
		i++
	}
	return s
}
