package dom

import "strings"

// Select-replacement plugins (select2, chosen, selectize, tom-select,
// nice-select, …) keep the real <select> hidden — clipped to a pixel,
// display:none, opacity:0, or inside a zero-size overflow:hidden wrapper —
// and draw a widget next to it that shows the current choice. The select
// is what select_dropdown can drive; it is indexed as the widget's hidden
// backing (hidden-backing=true widget_text=…), and a select that no
// visible widget draws stays unindexed.

// widgetWords name a drawn dropdown in class tokens.
var widgetWords = []string{"select", "dropdown", "combo", "chosen", "choice", "picker", "listbox"}

const (
	// maxBackingHops bounds how far up from the select the widget is
	// looked for: plugins put it next to the select or next to the
	// wrapper that hides it.
	maxBackingHops = 2
	// maxWidgetText bounds the text read from a widget.
	maxWidgetText = 200
)

// backingWidget returns the visible widget drawn for sel when sel is a
// <select> hidden by a select-replacement plugin, else nil. The widget is
// an element next to the select (or next to the wrapper hiding it, up to
// maxBackingHops levels up): visible, and either showing the selected
// option's text or named like a dropdown (class tokens, role combobox or
// listbox, aria-haspopup).
func backingWidget(sel *Node) *Node {
	if sel == nil || sel.Type != ElementNode || sel.Tag != "select" || !hiddenSelect(sel) {
		return nil
	}
	chosen := selectedOption(sel)
	cur := sel
	for hops := 0; hops <= maxBackingHops && cur.Parent != nil && cur.Parent.Type == ElementNode; hops++ {
		if w := widgetNear(cur, chosen); w != nil {
			return w
		}
		cur = cur.Parent
		if cssVisible(cur) && cur.Bounds.W > 1 && cur.Bounds.H > 1 {
			return nil // a shown container: the widget would be its child
		}
	}
	return nil
}

// hiddenSelect reports a select a person cannot use where it is: not
// rendered, transparent, at most a pixel, hidden from assistive
// technology, or inside a collapsed overflow:hidden wrapper.
func hiddenSelect(sel *Node) bool {
	if !cssVisible(sel) || sel.Bounds.W <= 1 || sel.Bounds.H <= 1 {
		return true
	}
	if strings.EqualFold(strings.TrimSpace(sel.Attr("aria-hidden")), "true") {
		return true
	}
	for p, hops := sel.Parent, 0; p != nil && p.Type == ElementNode && hops < maxBackingHops; p, hops = p.Parent, hops+1 {
		if l := p.Layout; l != nil && l.HasLayout && (p.Bounds.W <= 1 || p.Bounds.H <= 1) && clips(l.Styles) {
			return true
		}
	}
	return false
}

func clips(st Styles) bool {
	for _, v := range []string{st.Overflow, st.OverflowX, st.OverflowY} {
		if v == "hidden" || v == "clip" {
			return true
		}
	}
	return false
}

// widgetNear looks at the element siblings of n: the next two, then the
// previous one.
func widgetNear(n *Node, chosen string) *Node {
	p := n.Parent
	pos := -1
	for i, c := range p.Children {
		if c == n {
			pos = i
			break
		}
	}
	if pos < 0 {
		return nil
	}
	seen := 0
	for i := pos + 1; i < len(p.Children) && seen < 2; i++ {
		if c := p.Children[i]; c.Type == ElementNode {
			seen++
			if isWidget(c, chosen) {
				return c
			}
		}
	}
	for i := pos - 1; i >= 0; i-- {
		if c := p.Children[i]; c.Type == ElementNode {
			if isWidget(c, chosen) {
				return c
			}
			break
		}
	}
	return nil
}

// isWidget reports whether w is a visible element that draws a dropdown.
func isWidget(w *Node, chosen string) bool {
	if !w.Visible || formControls[w.Tag] || w.Tag == "label" || holdsSelect(w, 4) {
		return false // another select's field is not this one's widget
	}
	if chosen != "" && strings.Contains(collapseSpace(visibleText(w, maxWidgetText)), chosen) {
		return true
	}
	return namedLikeWidget(w, 3)
}

// namedLikeWidget reports a dropdown's name on w or its descendants
// (depth levels): a class token with a widget word, role combobox or
// listbox, or aria-haspopup.
func namedLikeWidget(w *Node, depth int) bool {
	if w.Type != ElementNode || depth < 0 {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(w.Attr("role"))) {
	case "combobox", "listbox":
		return true
	}
	if truthy(w.Attr("aria-haspopup")) {
		return true
	}
	for _, tok := range strings.Fields(strings.ToLower(w.Attr("class"))) {
		if containsAny(tok, widgetWords) {
			return true
		}
	}
	for _, c := range w.Children {
		if namedLikeWidget(c, depth-1) {
			return true
		}
	}
	return false
}

// widgetText is what the widget shows: its visible text, collapsed.
func widgetText(w *Node) string {
	return collapseSpace(visibleText(w, maxWidgetText))
}

// holdsSelect reports a <select> among n's descendants (depth levels).
func holdsSelect(n *Node, depth int) bool {
	if depth <= 0 {
		return false
	}
	for _, c := range n.Children {
		if c.Type == ElementNode && (c.Tag == "select" || holdsSelect(c, depth-1)) {
			return true
		}
	}
	return false
}
