package dom

import "strings"

var interactiveTags = map[string]bool{
	"button": true, "input": true, "select": true, "textarea": true, "a": true,
	"details": true, "summary": true, "option": true, "optgroup": true,
}

var interactiveAttrs = []string{"onclick", "onmousedown", "onmouseup", "onkeydown", "onkeyup", "tabindex"}

var interactiveRoles = map[string]bool{
	"button": true, "link": true, "menuitem": true, "option": true, "radio": true,
	"checkbox": true, "tab": true, "textbox": true, "combobox": true, "slider": true,
	"spinbutton": true, "search": true, "searchbox": true, "row": true, "cell": true,
	"gridcell": true,
}

var searchIndicators = []string{
	"search", "magnify", "glass", "lookup", "find", "query",
	"search-icon", "search-btn", "search-button", "searchbox",
}

var iconAttrs = []string{"class", "role", "onclick", "data-action", "aria-label"}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func hasFormControlDescendant(n *Node, depth int) bool {
	if depth <= 0 {
		return false
	}
	found := false
	n.eachChild(func(c *Node) {
		if found || c.Type != ElementNode && c.Type != DocumentFragmentNode {
			return
		}
		if c.Tag == "input" || c.Tag == "select" || c.Tag == "textarea" {
			found = true
			return
		}
		found = hasFormControlDescendant(c, depth-1)
	})
	return found
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "0", "no", "null":
		return false
	}
	return true
}

// IsInteractive applies the clickable heuristics in priority order (the
// first rule that decides wins):
//  1. non-elements and html: no; body: only as an editing host (below)
//  2. a JS click listener: yes
//  3. iframe/frame larger than 100×100: yes
//  4. a label standing in for a control no one can click (Node.StandIn): yes;
//     other label[for]: no; label or span wrapping input/select/textarea
//     within 2 levels: yes
//  5. search-like words in class, id or data-* values: yes
//  6. AX disabled/hidden: no; AX focusable/settable true: yes; an editing
//     host (contenteditable other than "false", or AX editable that its
//     parent does not share: design mode; the paragraphs inside an editor
//     are not fields of their own): yes;
//     AX checked/expanded/pressed/selected present: yes; AX
//     required/autocomplete/keyshortcuts set: yes
//  7. native tags button, input, select, textarea, a, details, summary, option, optgroup: yes
//  8. onclick/onmousedown/onmouseup/onkeydown/onkeyup/tabindex attributes,
//     draggable="true": yes
//  9. a table row or cell (tr, td, th, or role/AX role row, cell,
//     rowheader, columnheader): yes only inside a grid or treegrid (role
//     or AX role on an ancestor; not its column headers without aria-sort
//     nor their row) or with its own cursor: pointer (not
//     inherited from its parent), or a cell holding no control whose table
//     delegates clicks (a listener on its table, row group, or the table's
//     parent or grandparent: a date picker's days); a plain table's rows
//     and cells are layout, however the AX tree calls them
//  10. role attribute or AX role in the interactive role set (AX adds listbox): yes
//  11. icon-sized (10–50 px both ways) with class/role/onclick/data-action/aria-label: yes
//  12. computed cursor: pointer: yes
func IsInteractive(n *Node) bool {
	if n == nil || n.Type != ElementNode || n.Tag == "html" {
		return false
	}
	if n.Tag == "body" {
		return editingHost(n) // a rich-text editor's iframe document
	}
	if n.HasListener {
		return true
	}
	if (n.Tag == "iframe" || n.Tag == "frame") && n.Layout != nil && n.Layout.HasLayout &&
		n.Bounds.W > 100 && n.Bounds.H > 100 {
		return true
	}
	if n.Tag == "label" {
		if standsIn(n) {
			return true
		}
		if n.Attr("for") != "" {
			return false
		}
		if hasFormControlDescendant(n, 2) {
			return true
		}
	}
	if n.Tag == "span" && hasFormControlDescendant(n, 2) {
		return true
	}
	if n.NumAttrs() > 0 {
		if c := n.Attr("class"); c != "" && containsAny(strings.ToLower(c), searchIndicators) {
			return true
		}
		if id := n.Attr("id"); id != "" && containsAny(strings.ToLower(id), searchIndicators) {
			return true
		}
		search := false
		n.EachAttr(func(k, v string) {
			if !search && strings.HasPrefix(k, "data-") && v != "" && containsAny(strings.ToLower(v), searchIndicators) {
				search = true
			}
		})
		if search {
			return true
		}
	}
	if n.AX != nil && len(n.AX.Props) > 0 {
		if truthy(n.AX.Props["disabled"]) || truthy(n.AX.Props["hidden"]) {
			return false
		}
		for _, k := range []string{"focusable", "settable"} {
			if truthy(n.AX.Props[k]) {
				return true
			}
		}
		for _, k := range []string{"checked", "expanded", "pressed", "selected"} {
			if _, ok := n.AX.Props[k]; ok {
				return true
			}
		}
		for _, k := range []string{"required", "autocomplete", "keyshortcuts"} {
			if truthy(n.AX.Props[k]) {
				return true
			}
		}
	}
	if editingHost(n) {
		return true
	}
	if interactiveTags[n.Tag] {
		return true
	}
	for _, a := range interactiveAttrs {
		if n.HasAttr(a) {
			return true
		}
	}
	if strings.EqualFold(n.Attr("draggable"), "true") {
		return true // an HTML5 drag source (a card, a list item): drag takes its index
	}
	if tablePart(n) {
		// A table's rows and cells are layout unless the table is a grid
		// (rules above decided listeners, handlers, tabindex and AX states).
		if inGrid(n) {
			return !columnHeaderRow(n) && !(columnHeader(n) && !n.HasAttr("aria-sort"))
		}
		return ownPointer(n) || delegatedCell(n)
	}
	if r, ok := n.LookupAttr("role"); ok && interactiveRoles[r] {
		return true
	}
	if n.AX != nil && (interactiveRoles[n.AX.Role] || n.AX.Role == "listbox") {
		return true
	}
	if n.Layout != nil && n.Layout.HasLayout {
		w, h := n.Bounds.W, n.Bounds.H
		if w >= 10 && w <= 50 && h >= 10 && h <= 50 {
			for _, a := range iconAttrs {
				if n.HasAttr(a) {
					return true
				}
			}
		}
		if n.Layout.Styles.Cursor == "pointer" {
			return true
		}
	}
	return false
}

// editingHost reports where editable content starts: a contenteditable
// attribute other than "false", or AX editable (set by contenteditable and
// by design mode) that the parent element does not share.
func editingHost(n *Node) bool {
	if editableAttr(n) {
		return true
	}
	p := n.Parent
	return axEditable(n) && (p == nil || !axEditable(p) && !editableAttr(p))
}

func editableAttr(n *Node) bool {
	v, ok := n.LookupAttr("contenteditable")
	return ok && !strings.EqualFold(strings.TrimSpace(v), "false")
}

func axEditable(n *Node) bool {
	return n.AX != nil && truthy(n.AX.Props["editable"])
}

// tableRoles are the roles of a table's rows and cells; gridcell is not
// among them (it exists only in grids, so it is always an action).
var tableRoles = map[string]bool{"row": true, "cell": true, "rowheader": true, "columnheader": true}

// tablePart reports a table row or cell: by tag, role attribute or AX role.
func tablePart(n *Node) bool {
	switch n.Tag {
	case "tr", "td", "th":
		return true
	}
	if r, ok := n.LookupAttr("role"); ok {
		return tableRoles[strings.ToLower(strings.TrimSpace(r))]
	}
	return n.AX != nil && tableRoles[n.AX.Role]
}

// maxGridHops bounds the walk from a cell up to its grid (cell, row,
// rowgroup, table: a few levels even with wrappers).
const maxGridHops = 6

// inGrid reports a row or cell of an interactive grid: an ancestor within
// a few levels has role grid or treegrid (attribute or AX role).
func inGrid(n *Node) bool {
	for p, hops := n.Parent, 0; p != nil && p.Type == ElementNode && hops < maxGridHops; p, hops = p.Parent, hops+1 {
		r := strings.ToLower(strings.TrimSpace(p.Attr("role")))
		if r == "" && p.AX != nil {
			r = p.AX.Role
		}
		if r == "grid" || r == "treegrid" {
			return true
		}
		if p.Tag == "table" {
			return false // the nearest table decides
		}
	}
	return false
}

// columnHeader reports a column's header cell: role columnheader (the
// attribute, else the AX role), or a th in a thead.
func columnHeader(n *Node) bool {
	if r, ok := n.LookupAttr("role"); ok {
		return strings.EqualFold(strings.TrimSpace(r), "columnheader")
	}
	if n.AX != nil && n.AX.Role != "" {
		return n.AX.Role == "columnheader"
	}
	return n.Tag == "th" && n.Parent != nil && n.Parent.Parent != nil && n.Parent.Parent.Tag == "thead"
}

// columnHeaderRow reports a row of column headers: every element child a
// column header. A grid's header row names columns; its cells act only
// with their own signs (a listener, tabindex, aria-sort).
func columnHeaderRow(n *Node) bool {
	cells := 0
	for _, c := range n.Children {
		if c.Type != ElementNode {
			continue
		}
		if !columnHeader(c) {
			return false
		}
		cells++
	}
	return cells > 0
}

// ownPointer reports computed cursor: pointer that the element sets
// itself: its parent's cursor is not pointer (cells of a clickable row
// inherit the row's cursor; the row is the action).
func ownPointer(n *Node) bool {
	if n.Layout == nil || !n.Layout.HasLayout || n.Layout.Styles.Cursor != "pointer" {
		return false
	}
	p := n.Parent
	for p != nil && p.Type == ElementNode && (p.Layout == nil || !p.Layout.HasLayout) {
		p = p.Parent // display:contents wrappers have no layout
	}
	return p == nil || p.Layout == nil || p.Layout.Styles.Cursor != "pointer"
}

// delegatedCell reports a cell of a table that handles clicks for its
// cells: a click listener on the row group, the table, or the table's
// parent or grandparent (not body or a form: their listeners are about
// other things). A cell holding a form control is layout around that
// control.
func delegatedCell(n *Node) bool {
	switch n.Tag {
	case "td", "th":
	default:
		if r := strings.ToLower(strings.TrimSpace(n.Attr("role"))); r != "cell" && r != "gridcell" {
			return false
		}
	}
	if hasFormControlDescendant(n, 3) {
		return false
	}
	after := -1 // levels climbed past the table
	for p, hops := n.Parent, 0; p != nil && p.Type == ElementNode && hops < maxGridHops+2; p, hops = p.Parent, hops+1 {
		if p.Tag == "body" || p.Tag == "html" || p.Tag == "form" {
			return false // page- or form-wide listeners are about other things
		}
		if after >= 0 {
			after++
		}
		if p.Tag == "table" || strings.EqualFold(p.Attr("role"), "table") {
			after = 0
		}
		if p.HasListener && p.Tag != "tr" {
			return true
		}
		if after >= 2 {
			return false
		}
	}
	return false
}
