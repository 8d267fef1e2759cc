package dom

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// staticAttrs are the attributes that take part in element hashes: ones
// that identify an element rather than its momentary state.
var staticAttrs = map[string]bool{
	"class": true, "id": true, "name": true, "type": true, "placeholder": true,
	"aria-label": true, "title": true, "role": true, "data-testid": true,
	"data-test": true, "data-cy": true, "data-selenium": true, "for": true,
	"required": true, "disabled": true, "readonly": true, "checked": true,
	"selected": true, "multiple": true, "accept": true, "href": true,
	"target": true, "rel": true, "aria-describedby": true, "aria-labelledby": true,
	"aria-controls": true, "aria-owns": true, "aria-live": true, "aria-atomic": true,
	"aria-busy": true, "aria-disabled": true, "aria-hidden": true, "aria-pressed": true,
	"aria-autocomplete": true, "aria-checked": true, "aria-selected": true,
	"list": true, "tabindex": true, "alt": true, "src": true, "lang": true,
	"itemscope": true, "itemtype": true, "itemprop": true, "pseudo": true,
	"aria-valuemin": true, "aria-valuemax": true, "aria-valuenow": true,
	"aria-placeholder": true,
}

// volatileClassParts: class tokens containing these describe transient UI
// state and are left out of the stable hash.
var volatileClassParts = []string{
	"focus", "hover", "active", "selected", "disabled", "animation", "transition",
	"loading", "open", "closed", "expanded", "collapsed", "visible", "hidden",
	"pressed", "checked", "highlighted", "current", "entering", "leaving",
}

// stableClasses returns up to max class tokens (max<=0: all) without
// volatile ones, sorted.
func stableClasses(class string, max int) string {
	toks := strings.Fields(class)
	out := toks[:0:0]
	for _, t := range toks {
		lt := strings.ToLower(t)
		if containsAny(lt, volatileClassParts) {
			continue
		}
		out = append(out, t)
	}
	sort.Strings(out)
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return strings.Join(out, " ")
}

// Identity describes an element for history and replay: matchers try Hash,
// then StableHash, then XPath, then AXName, then KeyAttrs.
type Identity struct {
	XPath      string
	Hash       uint64 // branch path + static attributes + accessible name
	StableHash uint64 // same, with volatile class tokens removed
	AXName     string
	// KeyAttrs holds id, name, aria-label, type, placeholder, href and
	// data-testid when present.
	KeyAttrs map[string]string
	Tag      string
}

// IdentityOf computes n's identity.
func IdentityOf(n *Node) Identity {
	id := Identity{XPath: XPath(n), Tag: n.Tag}
	if n.AX != nil {
		id.AXName = n.AX.Name
	}
	branch := branchPath(n)
	id.Hash = elemHash(branch, n, false)
	id.StableHash = elemHash(branch, n, true)
	for _, k := range []string{"id", "name", "aria-label", "type", "placeholder", "href", "data-testid"} {
		if v := n.Attr(k); v != "" {
			if id.KeyAttrs == nil {
				id.KeyAttrs = map[string]string{}
			}
			id.KeyAttrs[k] = v
		}
	}
	return id
}

func branchPath(n *Node) string {
	var tags []string
	for c := n; c != nil; c = c.Parent {
		if c.Type == ElementNode {
			tags = append(tags, c.Tag)
		}
	}
	for i, j := 0, len(tags)-1; i < j; i, j = i+1, j-1 {
		tags[i], tags[j] = tags[j], tags[i]
	}
	return strings.Join(tags, "/")
}

func elemHash(branch string, n *Node, stable bool) uint64 {
	keys := make([]string, 0, n.NumAttrs())
	n.EachAttr(func(k, _ string) {
		if staticAttrs[k] {
			keys = append(keys, k)
		}
	})
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(branch)
	b.WriteByte('|')
	for _, k := range keys {
		v := n.Attr(k)
		if stable && k == "class" {
			if v = stableClasses(v, 0); v == "" {
				continue
			}
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	if n.AX != nil && n.AX.Name != "" {
		b.WriteString("|ax_name=")
		b.WriteString(n.AX.Name)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return binary.BigEndian.Uint64(sum[:8])
}

// XPath returns a positional XPath of n inside its own document; it passes
// through shadow roots and stops at the iframe that hosts the document. For
// many nodes of one tree use an XPaths, which remembers sibling positions.
func XPath(n *Node) string { return NewXPaths().Of(n) }

// XPaths computes XPaths of the nodes of one tree, remembering the position
// of each parent's children: computing them for every element anew scans
// all siblings each time, which is quadratic on wide pages (60,000 children
// of <body> took minutes). It is the one XPath implementation; not safe for
// concurrent use.
type XPaths struct {
	pos map[*Node]string // "[k]" or ""
}

// NewXPaths returns an empty XPaths.
func NewXPaths() *XPaths { return &XPaths{pos: map[*Node]string{}} }

// Of returns the positional XPath of n (see XPath).
func (x *XPaths) Of(n *Node) string {
	var segs []string
	for c := n; c != nil; c = c.Parent {
		if c.Type == DocumentFragmentNode {
			continue
		}
		if c.Type != ElementNode {
			break
		}
		segs = append(segs, c.Tag+x.position(c))
		if c.Parent != nil && c.Parent.Type == ElementNode && (c.Parent.Tag == "iframe" || c.Parent.Tag == "frame") {
			break
		}
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/")
}

// position is "[k]" when n's parent has more than one element child with
// n's tag, n being the k-th; "" otherwise (and for a shadow root's host,
// which is not among its parent's children).
func (x *XPaths) position(n *Node) string {
	p := n.Parent
	if p == nil {
		return ""
	}
	if s, ok := x.pos[n]; ok {
		return s
	}
	same := map[string]int{}
	for _, c := range p.Children {
		if c.Type == ElementNode {
			same[c.Tag]++
		}
	}
	seen := map[string]int{}
	for _, c := range p.Children {
		if c.Type != ElementNode {
			continue
		}
		seen[c.Tag]++
		if same[c.Tag] > 1 {
			x.pos[c] = "[" + strconv.Itoa(seen[c.Tag]) + "]"
		} else {
			x.pos[c] = ""
		}
	}
	if s, ok := x.pos[n]; ok {
		return s
	}
	x.pos[n] = ""
	return ""
}
