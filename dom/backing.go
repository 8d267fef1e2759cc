package dom

import (
	"strings"
	"unicode"
)

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
// an element next to the select (or next to the collapsed wrapper hiding
// it, up to maxBackingHops levels up): visible, and showing the selected
// option's text, or, when no option with text is chosen, named like a
// dropdown (class tokens, role combobox or listbox, aria-haspopup). A
// select inside a container that is not rendered has no widget.
func backingWidget(sel *Node) *Node {
	if sel == nil || sel.Type != ElementNode || sel.Tag != "select" || !hiddenSelect(sel) {
		return nil
	}
	chosen, texts := backingChoice(sel)
	cur := sel
	for hops := 0; hops <= maxBackingHops && cur.Parent != nil && cur.Parent.Type == ElementNode; hops++ {
		if w := widgetNear(cur, chosen, texts); w != nil {
			return w
		}
		cur = cur.Parent
		if !collapsedWrapper(cur) {
			// A shown container: the widget would be its child. A container
			// that is not rendered (a closed modal, a hidden tab) hides the
			// select with everything near it: what is shown beyond it is
			// not this select's widget.
			return nil
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

// collapsedWrapper reports an element that hides what it holds by its
// size alone, as a plugin's wrapper does: rendered (not display:none, not
// visibility:hidden) and at most a pixel wide or high.
func collapsedWrapper(n *Node) bool {
	l := n.Layout
	if l == nil || !l.HasLayout || strings.EqualFold(l.Styles.Display, "none") || strings.EqualFold(l.Styles.Visibility, "hidden") {
		return false
	}
	return n.Bounds.W <= 1 || n.Bounds.H <= 1
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
func widgetNear(n *Node, chosen string, texts []string) *Node {
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
			if isWidget(c, chosen, texts) {
				return c
			}
		}
	}
	for i := pos - 1; i >= 0; i-- {
		if c := p.Children[i]; c.Type == ElementNode {
			if isWidget(c, chosen, texts) {
				return c
			}
			break
		}
	}
	return nil
}

// isWidget reports whether w is a visible element that draws a dropdown
// for a select whose chosen option reads chosen and whose options read
// texts.
func isWidget(w *Node, chosen string, texts []string) bool {
	if !w.Visible || formControls[w.Tag] || w.Tag == "label" || holdsSelect(w, 4) {
		return false // another select's field is not this one's widget
	}
	if chosen == "" {
		return namedLikeWidget(w, 3) // nothing chosen: the widget shows a placeholder
	}
	// Plugins draw the chosen option's text: a neighbour named like a
	// dropdown that shows none of the options is some other control (a
	// navigation menu next to a select kept hidden for no widget). Another
	// option's text counts too: the capture may not hold a selection a
	// script made.
	wt := collapseSpace(visibleText(w, maxWidgetText))
	if len([]rune(chosen)) < 3 {
		// "1" or "A" is in any text: the widget must show it alone (a
		// clear button's × aside).
		return strings.TrimFunc(wt, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) == chosen
	}
	if strings.Contains(wt, chosen) {
		return true
	}
	for _, t := range texts {
		if len([]rune(t)) > 1 && strings.HasPrefix(wt, t) {
			return true
		}
	}
	return false
}

// maxBackingOptions bounds how many option texts a widget is compared with.
const maxBackingOptions = 200

// backingChoice returns the text of sel's chosen option (the one marked
// selected, else the first, as a browser chooses: "" for a placeholder
// option) and the texts of its first options.
func backingChoice(sel *Node) (chosen string, texts []string) {
	first, found, marked := "", false, false
	eachOption(sel, func(o *Node) {
		t := collapseSpace(optionText(o))
		if !found {
			first, found = t, true
		}
		if !marked && ((o.Layout != nil && o.Layout.OptionSelected) || o.HasAttr("selected")) {
			chosen, marked = t, true
		}
		if len(texts) < maxBackingOptions {
			texts = append(texts, t)
		}
	})
	if !marked && !sel.HasAttr("multiple") {
		chosen = first
	}
	return chosen, texts
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
