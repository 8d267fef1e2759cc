package dom

import (
	"strconv"
	"strings"
)

// labelable are the elements a <label> can label (HTML's labelable
// elements; input type=hidden excluded by isLabelable).
var labelable = map[string]bool{
	"button": true, "input": true, "meter": true, "output": true,
	"progress": true, "select": true, "textarea": true,
}

func isLabelable(n *Node) bool {
	return n.Type == ElementNode && labelable[n.Tag] && !(n.Tag == "input" && strings.EqualFold(strings.TrimSpace(n.Attr("type")), "hidden"))
}

// maxLabelScan bounds the descendants searched for a wrapped control:
// labels are small, and a label wrapping a whole page must not cost O(n)
// per label.
const maxLabelScan = 64

// linkLabels sets Node.Control on every <label> that labels a control and
// Node.StandIn on every control that a person cannot click itself but
// through a visible label of it. One walk collects each tree scope's ids
// and labels (document or shadow root: for= resolves in the label's own
// scope, as getElementById does); O(n).
func linkLabels(root *Node) {
	if root == nil {
		return
	}
	var w labelWalk
	w.visit(root, root)
	if len(w.labels) == 0 {
		return
	}
	byScope := map[*Node]map[string]*Node{}
	for _, l := range w.labels {
		var byID map[string]*Node
		if l.label.HasAttr("for") {
			var ok bool
			if byID, ok = byScope[l.scope]; !ok {
				byID = map[string]*Node{}
				idsInScope(l.scope, byID, true)
				byScope[l.scope] = byID
			}
		}
		c := labeledControl(l.label, byID)
		if c == nil {
			continue
		}
		l.label.Control = c
		if c.StandIn == nil && l.label.Visible && unclickable(c) {
			c.StandIn = l.label
		}
	}
}

// scopedLabel is a <label> and the root of its tree scope (a document or
// a shadow root: for= resolves there, as getElementById does).
type scopedLabel struct {
	label, scope *Node
}

// labelWalk finds the labels of a tree. Labels are rare, so the walk
// allocates nothing per node; ids are collected afterwards, only in the
// scopes that have a label with for=.
type labelWalk struct {
	labels []scopedLabel
}

func (w *labelWalk) visit(n, scope *Node) {
	if n.Type == DocumentNode || n.Type == DocumentFragmentNode {
		scope = n
	}
	if n.Type == ElementNode && n.Tag == "label" {
		w.labels = append(w.labels, scopedLabel{n, scope})
	}
	for _, c := range n.ShadowRoots {
		w.visit(c, scope)
	}
	for _, c := range n.Children {
		w.visit(c, scope)
	}
	if n.ContentDocument != nil {
		w.visit(n.ContentDocument, scope)
	}
}

// idsInScope adds the elements with an id under n to byID, staying in n's
// tree scope (not entering shadow roots or frames); the first in tree
// order wins, as in the DOM.
func idsInScope(n *Node, byID map[string]*Node, top bool) {
	if !top && (n.Type == DocumentNode || n.Type == DocumentFragmentNode) {
		return
	}
	if n.Type == ElementNode {
		if id := n.Attr("id"); id != "" {
			if _, dup := byID[id]; !dup {
				byID[id] = n
			}
		}
	}
	for _, c := range n.Children {
		idsInScope(c, byID, false)
	}
}

// labeledControl is HTML's labeled control: the element for= names if it
// is labelable, else (no for=) the first labelable descendant.
func labeledControl(l *Node, byID map[string]*Node) *Node {
	if f, ok := l.LookupAttr("for"); ok {
		if c := byID[f]; c != nil && isLabelable(c) {
			return c
		}
		return nil
	}
	var found *Node
	budget := maxLabelScan
	var rec func(n *Node)
	rec = func(n *Node) {
		for _, c := range n.Children {
			if found != nil || budget <= 0 {
				return
			}
			budget--
			if isLabelable(c) {
				found = c
				return
			}
			rec(c)
		}
	}
	rec(l)
	return found
}

// unclickable reports a control that cannot be clicked where it is: not
// visible (display:none, opacity:0, zero-size, far off-screen) or a box of
// at most one pixel (the clip/1px visually-hidden pattern). File inputs
// are excluded: they keep their own index for uploads.
func unclickable(c *Node) bool {
	if isFileInput(c) {
		return false
	}
	return !c.Visible || c.Bounds.W <= 1 || c.Bounds.H <= 1
}

// standsIn reports whether label l is indexed in place of its control.
func standsIn(l *Node) bool {
	return l.Control != nil && l.Control.StandIn == l
}

// checkedState is a checkbox's or radio's live checked state: the
// snapshot's (live, also for display:none controls), else AX, else the
// checked attribute.
func checkedState(c *Node) string {
	if c.Layout != nil {
		return strconv.FormatBool(c.Layout.InputChecked)
	}
	if c.AX != nil {
		if v, ok := c.AX.Props["checked"]; ok && v != "" {
			return v
		}
	}
	return strconv.FormatBool(c.HasAttr("checked"))
}
