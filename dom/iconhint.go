package dom

import (
	"strings"
	"unicode"
)

// Hints for nameless icon controls. A class list mixes what a control is
// (ui-spinner-up, btn-close, fa-trash) with how it looks (ui-corner-tr,
// ui-button-icon-only, btn-sm, mt-2, css-1x9f3a): tokens are ranked by
// meaning, and other things that name an icon are read — an <svg><title>,
// <use href="#icon-trash">, an icon font's class, a title or aria-label
// inside, the file name of a background image or content:url() (also on
// ::before/::after).

// meaningWords are words that say what an icon control does or points at.
var meaningWords = wordSet(`up down left right top bottom close trash delete remove more next prev previous
back forward search menu hamburger edit add plus minus new save settings gear cog home cart basket user account
profile share download upload print refresh reload play pause stop mute volume expand collapse filter sort help
info question star heart like favorite bell notification mail email message chat phone calendar date clock time
copy paste cut undo redo zoom check ok cancel arrow caret chevron first last dots ellipsis kebab
options send attach attachment link lock unlock logout login signout signin camera image photo video map location
pin bookmark flag folder file eye fullscreen maximize minimize
increment decrement`)

// utilityWords make a token about layout, size, state or styling.
var utilityWords = wordSet(`corner icon icons iconic only btn sm md lg xl xs xxl small large mini tiny big active
disabled enabled state default primary secondary tertiary success danger warning light dark outline solid
regular fw flex inline block clearfix pull float fixed sticky relative absolute col cols row rows gap mt mb ml mr
mx my pt pb pl pr px py m p w h d text bg border rounded shadow align justify items self order wrap nowrap hidden
visible sr screen reader no js has is tr tl br bl widget helper reset clickable pointer transparent round circle
square ripple waves effect theme variant size color fade in out show slide animated`)

// layoutWords place or align a box: a token with one is layout even with a
// direction in it (pull-right, text-left, ui-corner-tr, mt-2).
var layoutWords = wordSet(`corner pull float text align justify col offset fixed sticky border rounded mt mb ml
mr mx my pt pb pl pr px py ms me ps pe m p gap order flex items self position inset margin padding`)

// iconSets are icon-font and sprite prefixes: fa-trash names trash.
var iconSets = wordSet(`fa fas far fab fal fad glyphicon bi icon icons ico ic ion ionicons mdi ti la las lab
material oi octicon feather lucide ph bx bxs uil gg dashicons i svg sprite`)

// iconStyleWords, first after an icon set's prefix, make the token one of
// the set's styling classes (fa-solid, fa-2x, fa-spin, fa-pull-right,
// material-symbols-outlined), not an icon's name.
var iconStyleWords = wordSet(`solid regular light thin duotone sharp brands kit fw lg sm xs xl spin pulse
rotate flip inverse stack beat bounce shake fade border pull li ul symbols outlined filled round rounded two
tone twotone only`)

// iconSetPrefix returns how many leading words of a class token are an
// icon set's prefix (fa-, bi-, mdi-, ui-icon-, material-icons-): the set
// word first, or second after jQuery UI's ui or another set's word; 0 when
// none or nothing follows.
func iconSetPrefix(words []string) int {
	switch {
	case len(words) < 2:
		return 0
	case iconSets[words[0]] && !(iconSets[words[1]] && len(words) > 2):
		return 1
	case len(words) > 2 && iconSets[words[1]] && (words[0] == "ui" || iconSets[words[0]]):
		return 2
	}
	return 0
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// classWords splits a class token into lower-case words at '-', '_' and
// camel-case humps.
func classWords(tok string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range tok {
		switch {
		case r == '-' || r == '_' || r == '.' || r == ' ':
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}

// hashedToken reports a generated class name (CSS modules, styled
// components, emotion): a known prefix, or a word mixing letters with two
// or more digits.
func hashedToken(tok string) bool {
	lt := strings.ToLower(tok)
	for _, p := range []string{"css-", "sc-", "jsx-", "svelte-", "emotion-", "ng-", "_ngcontent", "data-v-"} {
		if strings.HasPrefix(lt, p) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(tok, func(r rune) bool { return r == '-' || r == '_' }) {
		digits, letters := 0, 0
		for _, r := range w {
			switch {
			case unicode.IsDigit(r):
				digits++
			case unicode.IsLetter(r):
				letters++
			}
		}
		if len(w) >= 5 && digits >= 2 && letters >= 1 {
			return true
		}
	}
	return false
}

// classMeaning ranks one class token: 2 names what the control does (a
// meaning word, or an icon set's prefix followed by a name), 1 is a plain
// noun-ish token, 0 is layout/state/utility or generated (dropped).
func classMeaning(tok string) int {
	lt := strings.ToLower(tok)
	if containsAny(lt, volatileClassParts) || hashedToken(tok) {
		return 0
	}
	words := classWords(tok)
	if len(words) == 0 {
		return 0
	}
	if p := iconSetPrefix(words); p > 0 {
		// An icon set's class names its icon after the prefix, whatever
		// words it uses (fa-pen-to-square, ui-icon-closethick), unless the
		// first of them styles the set's icons.
		if first := words[p]; iconStyleWords[first] || iconSets[first] || isSizeWord(first) {
			return 0
		}
		return 2
	}
	utility, meaning, numeric := false, false, false
	for _, w := range words {
		if layoutWords[w] {
			return 0
		}
	}
	for _, w := range words {
		switch {
		case meaningWords[w]:
			meaning = true
		case utilityWords[w]:
			utility = true
		case isSizeWord(w):
			numeric = true
		}
	}
	if meaning {
		return 2
	}
	if utility || numeric {
		return 0
	}
	if iconSets[words[0]] {
		return 0 // fa, glyphicon, material-icons alone
	}
	return 1
}

// isSizeWord reports 2, 24px, 2x, h1-like words: sizes and grid steps.
func isSizeWord(w string) bool {
	w = strings.TrimSuffix(strings.TrimSuffix(w, "px"), "x")
	if w == "" {
		return true
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// rankedClasses returns up to max class tokens of class with the best
// meaning rank present (2 before 1), in document order; "" when every
// token is layout, state, utility or generated.
func rankedClasses(class string, max int) (string, int) {
	toks := strings.Fields(class)
	best := 0
	for _, t := range toks {
		if r := classMeaning(t); r > best {
			best = r
		}
	}
	if best == 0 {
		return "", 0
	}
	var out []string
	for _, t := range toks {
		if classMeaning(t) == best && len(out) < max {
			out = append(out, t)
		}
	}
	return strings.Join(out, " "), best
}

// iconWord turns an icon's id, class or file name into its name:
// "#icon-trash" → trash, "ic_more_vert_24px.svg" → more-vert.
func iconWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "/#"); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexAny(s, "?"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, "@2x")
	var keep []string
	words := classWords(s)
	p := iconSetPrefix(words)
	for _, w := range words[p:] {
		// After an icon set's prefix every word is the icon's name
		// (fa-circle-xmark, fa-pen-to-square).
		if isSizeWord(w) || p == 0 && utilityWords[w] && !meaningWords[w] {
			continue
		}
		keep = append(keep, w)
	}
	return strings.Join(keep, "-")
}

// cssURL returns the file-name icon word of a url() in a computed
// content or background-image value; "" for none, gradients and data URLs.
func cssURL(v string) string {
	i := strings.Index(v, "url(")
	if i < 0 {
		return ""
	}
	u := strings.Trim(strings.TrimSpace(v[i+4:]), `"')`)
	if j := strings.IndexAny(u, `"')`); j >= 0 {
		u = u[:j]
	}
	if strings.HasPrefix(strings.ToLower(u), "data:") {
		return ""
	}
	return iconWord(u)
}

// styleIcon names an icon drawn by CSS on n: its own content:url() or
// background image, then its pseudo elements'.
func styleIcon(n *Node) string {
	l := n.Layout
	if l == nil {
		return ""
	}
	if w := cssURL(l.Styles.ImageURL); w != "" {
		return w
	}
	return cssURL(l.PseudoImageURL)
}

// maxIconScan bounds the descendants of a control searched for an icon.
const maxIconScan = 32

// iconName names the icon a control shows: its own CSS image, then, among
// its descendants in document order, an <svg><title>, a <use> reference,
// a title or aria-label, an icon class, a CSS image.
func iconName(n *Node) string {
	if w := styleIcon(n); w != "" {
		return w
	}
	budget := maxIconScan
	var found string
	var rec func(c *Node)
	rec = func(c *Node) {
		if found != "" || budget <= 0 || c.Type != ElementNode && c.Type != DocumentFragmentNode {
			return
		}
		budget--
		if c.Type == ElementNode {
			if interactiveTags[c.Tag] || c.Tag == "label" {
				return // another control's icon names that control
			}
			found = ownIcon(c)
			if found != "" {
				return
			}
		}
		for _, k := range c.ShadowRoots {
			rec(k)
		}
		for _, k := range c.Children {
			rec(k)
		}
	}
	for _, c := range n.ShadowRoots {
		rec(c)
	}
	for _, c := range n.Children {
		rec(c)
	}
	return found
}

// ownIcon names the icon element c itself shows ("" if none).
func ownIcon(c *Node) string {
	switch c.Tag {
	case "title":
		if c.Parent != nil && c.Parent.Tag == "svg" {
			return collapseSpace(capText(textOf(c), 60))
		}
	case "use":
		for _, k := range []string{"href", "xlink:href"} {
			if v := c.Attr(k); v != "" {
				if w := iconWord(v); w != "" {
					return w
				}
			}
		}
	}
	for _, k := range []string{"title", "aria-label"} {
		if v := collapseSpace(c.Attr(k)); v != "" {
			return v
		}
	}
	if cls, rank := rankedClasses(c.Attr("class"), 1); rank == 2 {
		if w := iconWord(cls); w != "" {
			return w
		}
	}
	return styleIcon(c)
}
