package dom

import (
	"strconv"
	"strings"
)

var dateFormats = map[string]string{
	"date": "YYYY-MM-DD", "time": "HH:MM", "datetime-local": "YYYY-MM-DDTHH:MM",
	"month": "YYYY-MM", "week": "YYYY-W##",
}

// protectedAttrs are never dropped as duplicates of another attribute.
var protectedAttrs = map[string]bool{
	"format": true, "expected_format": true, "placeholder": true, "value": true,
	"aria-label": true, "title": true,
}

// attrs builds the attribute part of an element line: whitelisted DOM
// attributes, AX states, live form values (never for passwords), format
// hints, then our additions (label, hint, compound_components).
func (s *serializer) attrs(sn *sNode) string {
	n := sn.node
	vals := make(map[string]string, 8)
	n.EachAttr(func(k, v string) {
		if !s.incSet[k] || k == "value" {
			return
		}
		if v = strings.TrimSpace(v); v != "" {
			vals[k] = v
		}
	})
	if n.Tag == "body" && s.incSet["contenteditable"] && vals["contenteditable"] == "" && editingHost(n) {
		vals["contenteditable"] = "true" // design mode: editable without the attribute
	}
	typ := strings.ToLower(strings.TrimSpace(n.Attr("type")))
	password := isPassword(n)
	if n.Tag == "input" {
		if f, ok := dateFormats[typ]; ok {
			vals["format"] = f
			if _, ok := vals["placeholder"]; !ok && s.incSet["placeholder"] {
				vals["placeholder"] = f
			}
		} else if _, ok := vals["placeholder"]; !ok && s.incSet["placeholder"] {
			cls := strings.ToLower(n.Attr("class"))
			switch {
			case typ == "tel" && vals["pattern"] == "":
				vals["placeholder"] = "123-456-7890"
			case typ == "text" || typ == "":
				if f := n.Attr("uib-datepicker-popup"); f != "" {
					vals["expected_format"], vals["format"] = f, f
				} else if strings.Contains(cls, "datepicker") || strings.Contains(cls, "datetimepicker") ||
					strings.Contains(cls, "daterangepicker") || n.HasAttr("data-datepicker") {
					f := n.Attr("data-date-format")
					if f == "" {
						f = "mm/dd/yyyy"
					}
					vals["placeholder"], vals["format"] = f, f
				}
			}
		}
	}
	if n.AX != nil {
		for k, v := range n.AX.Props {
			if !s.incSet[k] || k == "value" || k == "valuetext" {
				continue
			}
			if v = strings.TrimSpace(v); v != "" {
				vals[k] = v
			}
		}
		if !password && s.incSet["valuetext"] && n.Tag != "input" && n.Tag != "textarea" && n.Tag != "select" {
			if v := strings.TrimSpace(n.AX.Props["valuetext"]); v != "" {
				vals["valuetext"] = v
			}
		}
	}
	// The current value, exactly as typed. Passwords never.
	exactValue := false
	if !password && s.incSet["value"] {
		if v, known := formValue(n); known {
			if v != "" {
				vals["value"] = v
				exactValue = true
			}
		} else if v := strings.TrimSpace(n.Attr("value")); v != "" {
			vals["value"] = v
		}
	}
	if password {
		delete(vals, "value")
		delete(vals, "valuetext")
	}

	keys := make([]string, 0, len(vals)+3)
	for _, k := range s.include {
		if _, ok := vals[k]; ok {
			keys = append(keys, k)
		}
	}
	// Duplicate values (over 5 chars) are shown once.
	if len(keys) > 1 {
		seen := make(map[string]bool, len(keys))
		kept := keys[:0]
		for _, k := range keys {
			v := vals[k]
			if len(v) > 5 {
				if seen[v] && !protectedAttrs[k] {
					continue
				}
				seen[v] = true
			}
			kept = append(kept, k)
		}
		keys = kept
	}
	drop := func(k string) bool {
		v := vals[k]
		switch k {
		case "role":
			return v == n.Tag
		case "type":
			return strings.EqualFold(v, n.Tag)
		case "invalid":
			return strings.EqualFold(v, "false")
		case "required":
			switch strings.ToLower(v) {
			case "false", "0", "no":
				return true
			}
		case "aria-expanded":
			_, ok := vals["expanded"]
			return ok
		}
		return false
	}
	var b strings.Builder
	write := func(k, v string, limit int, exact bool) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		if !exact {
			v = collapseSpace(v) // one line per element
		}
		v = capText(v, limit)
		switch {
		case v == "":
			b.WriteString("''")
		case exact && needsQuote(v):
			b.WriteString(strconv.Quote(v))
		default:
			b.WriteString(v)
		}
	}
	for _, k := range keys {
		if drop(k) {
			continue
		}
		if k == "value" && exactValue {
			v, more := cutValue(vals[k], s.opts.ValueCap)
			write(k, v, s.opts.ValueCap, true)
			if more > 0 {
				b.WriteString(moreChars(more))
			}
			continue
		}
		write(k, vals[k], s.opts.AttrCap, false)
	}
	if standsIn(n) {
		// The model clicks the label; tell it what the hidden control is.
		c := n.Control
		if t := strings.ToLower(strings.TrimSpace(c.Attr("type"))); c.Tag == "input" && (t == "checkbox" || t == "radio") {
			if _, ok := vals["role"]; !ok {
				write("role", t, s.opts.AttrCap, false)
			}
			write("checked", checkedState(c), s.opts.AttrCap, false)
		}
		if c.HasAttr("disabled") {
			write("disabled", "true", s.opts.AttrCap, false)
		}
	}
	if n.Tag == "select" {
		if c := selectCompound(n); c != "" {
			write("compound_components", c, 4*s.opts.AttrCap, false)
		}
		if sn.widget != nil && sn.indexed {
			// Hidden behind a drawn dropdown: use select_dropdown on it.
			write("hidden-backing", "true", s.opts.AttrCap, false)
			write("widget_text", widgetText(sn.widget), s.opts.AttrCap, false)
		}
	}
	if sn.indexed {
		if lbl := s.looseLabel(n); lbl != "" {
			write("label", lbl, s.opts.AttrCap, false)
		}
		if !s.hasName(n, vals) {
			if n.AX != nil && strings.TrimSpace(n.AX.Name) != "" && s.incSet["ax_name"] {
				write("ax_name", strings.TrimSpace(n.AX.Name), s.opts.AttrCap, false)
			} else if h := identHint(n); h != "" {
				write("hint", h, s.opts.AttrCap, false)
			}
		}
	}
	return b.String()
}

func needsQuote(v string) bool {
	if v != strings.TrimSpace(v) {
		return true
	}
	return strings.ContainsAny(v, "\n\r\t\"") || strings.Contains(v, "  ")
}

// formValue returns the live value of a form control: the snapshot's
// inputValue/textValue (exact), the selected option, else the AX value.
// known is false when none of those sources speaks for the control; the
// caller then falls back to the value attribute (the default value, or the
// label of a submit button).
func formValue(n *Node) (v string, known bool) {
	switch n.Tag {
	case "input":
		switch strings.ToLower(n.Attr("type")) {
		case "checkbox", "radio", "submit", "button", "reset", "image", "file":
			return "", false
		}
		if n.Layout != nil && n.Layout.HasInputValue {
			return n.Layout.InputValue, true
		}
	case "textarea":
		if n.Layout != nil && n.Layout.HasTextValue {
			return n.Layout.TextValue, true
		}
	case "select":
		if t := selectedOption(n); t != "" {
			return t, true
		}
	default:
		return "", false
	}
	if n.AX != nil {
		if v := n.AX.Props["valuetext"]; v != "" {
			return v, true
		}
		if v := n.AX.Props["value"]; v != "" {
			return v, true
		}
	}
	return "", false
}

func optionText(o *Node) string {
	var parts []string
	for _, c := range o.Children {
		if c.Type == TextNode {
			if t := strings.TrimSpace(c.Value); t != "" {
				parts = append(parts, t)
			}
		}
	}
	t := strings.Join(parts, " ")
	if t == "" {
		t = strings.TrimSpace(o.Attr("value"))
	}
	return t
}

func eachOption(n *Node, f func(*Node)) {
	for _, c := range n.Children {
		switch c.Tag {
		case "option":
			f(c)
		case "optgroup":
			eachOption(c, f)
		}
	}
}

func selectedOption(n *Node) string {
	var first, sel string
	eachOption(n, func(o *Node) {
		t := optionText(o)
		if first == "" {
			first = t
		}
		if sel == "" && ((o.Layout != nil && o.Layout.OptionSelected) || o.HasAttr("selected")) {
			sel = t
		}
	})
	if sel == "" && !n.HasAttr("multiple") {
		sel = first
	}
	return sel
}

// selectCompound previews a select's options: (role=listbox,count=N,options=a|b|c|d).
func selectCompound(n *Node) string {
	var opts []string
	count := 0
	eachOption(n, func(o *Node) {
		count++
		if len(opts) < 4 {
			opts = append(opts, capText(optionText(o), 30))
		}
	})
	if count == 0 {
		return ""
	}
	s := "(role=listbox,count=" + strconv.Itoa(count) + ",options=" + strings.Join(opts, "|")
	if count > 4 {
		s += "|…"
	}
	return s + ")"
}

// visibleText concatenates the text below n (bounded).
func visibleText(n *Node, limit int) string {
	var b strings.Builder
	var rec func(*Node)
	rec = func(c *Node) {
		if b.Len() >= limit {
			return
		}
		if c.Type == TextNode {
			if t := strings.TrimSpace(c.Value); t != "" {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(t)
			}
			return
		}
		if c.Type == ElementNode && disabledElements[c.Tag] {
			return
		}
		c.eachChild(rec)
	}
	n.eachChild(rec)
	return b.String()
}

// hasName reports whether the line will already say what the element is.
func (s *serializer) hasName(n *Node, vals map[string]string) bool {
	for _, k := range []string{"aria-label", "title", "placeholder", "alt", "value", "name", "id", "valuetext"} {
		if vals[k] != "" {
			return true
		}
	}
	if strings.TrimSpace(n.Attr("aria-labelledby")) != "" {
		return true
	}
	if visibleText(n, 64) != "" {
		return true
	}
	return s.labelFor(n) != ""
}

// scopeIndex indexes one document or shadow root: ids and label[for].
type scopeIndex struct {
	ids       map[string]bool
	labelsFor map[string]*Node
}

func scopeRoot(n *Node) *Node {
	root := n
	for root.Parent != nil && root.Type != DocumentNode && root.Type != DocumentFragmentNode {
		root = root.Parent
	}
	return root
}

// scope returns the (cached) index of n's document or shadow root.
func (s *serializer) scope(n *Node) *scopeIndex {
	root := scopeRoot(n)
	if si, ok := s.scopes[root]; ok {
		return si
	}
	si := &scopeIndex{ids: map[string]bool{}, labelsFor: map[string]*Node{}}
	var rec func(*Node)
	rec = func(c *Node) {
		if c.Type == ElementNode {
			if id := c.Attr("id"); id != "" {
				si.ids[id] = true
			}
			if c.Tag == "label" {
				if f := c.Attr("for"); f != "" {
					if _, dup := si.labelsFor[f]; !dup {
						si.labelsFor[f] = c
					}
				}
			}
		}
		for _, k := range c.Children {
			rec(k)
		}
	}
	rec(root)
	if s.scopes == nil {
		s.scopes = map[*Node]*scopeIndex{}
	}
	s.scopes[root] = si
	return si
}

// labelFor returns the text of a label associated with n (for=id or
// wrapping).
func (s *serializer) labelFor(n *Node) string {
	for p := n.Parent; p != nil && p.Type == ElementNode; p = p.Parent {
		if p.Tag == "label" {
			return strings.TrimSpace(visibleText(p, 100))
		}
	}
	id := n.Attr("id")
	if id == "" {
		return ""
	}
	if l := s.scope(n).labelsFor[id]; l != nil {
		return strings.TrimSpace(visibleText(l, 100))
	}
	return ""
}

var formControls = map[string]bool{"input": true, "select": true, "textarea": true}

// looseLabel finds a <label> next to a form control that is not associated
// with it (no for=, not wrapping): the nearest preceding label among the
// control's previous siblings, or its parent's. Labels that point at another
// control are ignored.
func (s *serializer) looseLabel(n *Node) string {
	if !formControls[n.Tag] {
		return ""
	}
	if n.AX != nil && strings.TrimSpace(n.AX.Name) != "" {
		return "" // the browser already associated a name
	}
	if s.labelFor(n) != "" || n.Attr("aria-label") != "" || n.Attr("aria-labelledby") != "" {
		return ""
	}
	check := func(sib *Node) (string, bool) {
		if sib.Type != ElementNode {
			return "", false
		}
		if formControls[sib.Tag] {
			return "", true // another control in between: stop
		}
		if sib.Tag == "label" {
			if f := sib.Attr("for"); f != "" && f != n.Attr("id") {
				// Associated with some other control, unless that id does not exist.
				if s.scope(sib).ids[f] {
					return "", true
				}
			}
			if hasFormControlDescendant(sib, 3) {
				return "", true
			}
			return strings.TrimSpace(visibleText(sib, 100)), true
		}
		return "", false
	}
	for cur, hops := n, 0; cur != nil && cur.Parent != nil && hops < 2; cur, hops = cur.Parent, hops+1 {
		sibs := cur.Parent.Children
		pos := -1
		for i, c := range sibs {
			if c == cur {
				pos = i
				break
			}
		}
		for i, k := pos-1, 0; i >= 0 && k < 3; i-- {
			if sibs[i].Type != ElementNode {
				continue
			}
			k++
			if t, stop := check(sibs[i]); stop {
				return t
			}
		}
		if hops == 0 && len(sibs) > 3 {
			break // a crowded parent: do not look further up
		}
	}
	return rowHeader(n)
}

// rowHeader is the label of a form laid out in a table: the text of the
// header cell of the control's row (a <th> before the control's cell, else
// the row's first cell when it holds no control), "" when the control is
// not in a table cell or that cell is its own.
func rowHeader(n *Node) string {
	cell := n.Parent
	for hops := 0; cell != nil && cell.Type == ElementNode && cell.Tag != "td" && cell.Tag != "th"; hops++ {
		if hops >= 2 {
			return ""
		}
		cell = cell.Parent
	}
	if cell == nil || cell.Type != ElementNode || cell.Parent == nil || cell.Parent.Tag != "tr" {
		return ""
	}
	var first, th *Node
	for _, c := range cell.Parent.Children {
		if c == cell {
			break
		}
		if c.Type != ElementNode || c.Tag != "td" && c.Tag != "th" {
			continue
		}
		if first == nil {
			first = c
		}
		if c.Tag == "th" {
			th = c
		}
	}
	h := th
	if h == nil {
		h = first
	}
	if h == nil || hasFormControlDescendant(h, 4) {
		return ""
	}
	return strings.TrimSpace(collapseSpace(visibleText(h, 100)))
}

// identHint gives a nameless element something to be told apart by: a test
// id, class tokens that say what it does (ranked by classMeaning: never
// layout, state or generated ones), the icon it shows (iconName), other
// meaningful class tokens, or its link target.
func identHint(n *Node) string {
	for _, k := range []string{"data-testid", "data-test", "data-cy"} {
		if v := strings.TrimSpace(n.Attr(k)); v != "" {
			return k + ":" + v
		}
	}
	cls, rank := rankedClasses(n.Attr("class"), 2)
	if rank == 2 {
		return "." + strings.ReplaceAll(cls, " ", ".")
	}
	if w := iconName(n); w != "" {
		return "icon:" + capText(w, 40)
	}
	if cls != "" {
		return "." + strings.ReplaceAll(cls, " ", ".")
	}
	if h := strings.TrimSpace(n.Attr("href")); h != "" && !strings.HasPrefix(h, "javascript:") {
		return "href:" + capText(h, 60)
	}
	if src := strings.TrimSpace(n.Attr("src")); src != "" {
		if i := strings.LastIndexByte(src, '/'); i >= 0 {
			src = src[i+1:]
		}
		return "src:" + capText(src, 40)
	}
	// An icon child (img alt, svg class) often names the control.
	var hint string
	var rec func(*Node)
	rec = func(c *Node) {
		if hint != "" || c.Type != ElementNode && c.Type != DocumentFragmentNode {
			return
		}
		if c.Tag == "img" && strings.TrimSpace(c.Attr("alt")) != "" {
			hint = "img:" + strings.TrimSpace(c.Attr("alt"))
			return
		}
		if cls, r := rankedClasses(c.Attr("class"), 2); r > 0 && (c.Tag == "svg" || c.Tag == "i" || c.Tag == "span") {
			hint = c.Tag + "." + strings.ReplaceAll(cls, " ", ".")
			return
		}
		for _, k := range c.Children {
			rec(k)
		}
	}
	for _, c := range n.Children {
		rec(c)
	}
	return hint
}
