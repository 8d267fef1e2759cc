package scripted

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Element is one indexed element of a serialized page (browser-use format:
// "\t[42]<input type=text name=email placeholder=Email />", "*[43]" for new
// elements, text on the lines below at a deeper indent).
type Element struct {
	Index int
	Tag   string
	Attrs map[string]string
	// Text is the element's own text lines (joined by a space); AllText also
	// includes the text of nested elements.
	Text, AllText string
	New           bool
	Depth         int // leading tabs
	Line          int // 1-based line number in the parsed text
}

// elemLine matches an element line; a prefix such as "|scroll element" or
// "|SHADOW(open)|" may precede the index.
var elemLine = regexp.MustCompile(`^(\t*)([^\[<\t]*?)(\*?)\[(\d+)\]<([A-Za-z][A-Za-z0-9:_-]*)(.*)$`)

var attrKey = regexp.MustCompile(`(?:^|\s)([A-Za-z_:@][-A-Za-z0-9_:.]*)=`)

// ParseElements extracts the indexed elements from serialized page text. Lines
// that are neither element lines nor indented below one are ignored, so the
// whole user message (task, history, state) can be passed.
func ParseElements(text string) []Element {
	var out []Element
	type open struct{ depth, i int }
	var stack []open
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r ")
		depth := len(line) - len(strings.TrimLeft(line, "\t"))
		for len(stack) > 0 && stack[len(stack)-1].depth >= depth {
			stack = stack[:len(stack)-1]
		}
		if m := elemLine.FindStringSubmatch(line); m != nil {
			idx, err := strconv.Atoi(m[4])
			if err != nil {
				continue
			}
			e := Element{Index: idx, Tag: strings.ToLower(m[5]), New: m[3] == "*", Depth: depth, Line: n + 1,
				Attrs: parseAttrs(m[6])}
			out = append(out, e)
			stack = append(stack, open{depth, len(out) - 1})
			continue
		}
		t := strings.TrimSpace(line)
		if t == "" || len(stack) == 0 {
			continue
		}
		owner := &out[stack[len(stack)-1].i]
		owner.Text = join(owner.Text, t)
		for _, o := range stack {
			out[o.i].AllText = join(out[o.i].AllText, t)
		}
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// parseAttrs reads "k=v k2=some words />" (values are unquoted and may hold
// spaces; k=” is an empty value).
func parseAttrs(s string) map[string]string {
	if i := strings.Index(s, "/>"); i >= 0 {
		s = s[:i]
	} else if i := strings.LastIndex(s, ">"); i >= 0 {
		s = s[:i]
	}
	locs := attrKey.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return nil
	}
	attrs := make(map[string]string, len(locs))
	for i, l := range locs {
		key := s[l[2]:l[3]]
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		v := strings.TrimSpace(s[l[1]:end])
		if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
			v = v[1 : len(v)-1]
		}
		attrs[key] = v
	}
	return attrs
}

// LabelAttrs are the attributes a label is matched against, in order.
var LabelAttrs = []string{"aria-label", "placeholder", "name", "id", "label", "value", "title", "alt"}

// Find resolves a visible label to an element. Matching is case-insensitive
// with whitespace collapsed, and goes by tiers, the first non-empty tier
// winning and, within it, the first element in page order:
//  1. the element's own text equals the label;
//  2. one of LabelAttrs equals it;
//  3. the text including nested elements equals it;
//  4. the own text contains it; 5. one of LabelAttrs contains it;
//  6. the text including nested elements contains it.
//
// tag, when non-empty, restricts the search to elements with that tag.
// The error lists the elements that were on the page.
func Find(elems []Element, label, tag string) (Element, error) {
	want := norm(label)
	if want == "" {
		return Element{}, fmt.Errorf("empty label")
	}
	tag = strings.ToLower(tag)
	tiers := []func(e *Element) bool{
		func(e *Element) bool { return norm(e.Text) == want },
		func(e *Element) bool {
			for _, k := range LabelAttrs {
				if v, ok := e.Attrs[k]; ok && norm(v) == want {
					return true
				}
			}
			return false
		},
		func(e *Element) bool { return norm(e.AllText) == want },
		func(e *Element) bool { return strings.Contains(norm(e.Text), want) },
		func(e *Element) bool {
			for _, k := range LabelAttrs {
				if strings.Contains(norm(e.Attrs[k]), want) {
					return true
				}
			}
			return false
		},
		func(e *Element) bool { return strings.Contains(norm(e.AllText), want) },
	}
	for _, match := range tiers {
		for i := range elems {
			if tag != "" && elems[i].Tag != tag {
				continue
			}
			if match(&elems[i]) {
				return elems[i], nil
			}
		}
	}
	return Element{}, notFound(elems, label, tag)
}

func notFound(elems []Element, label, tag string) error {
	var b strings.Builder
	what := "element"
	if tag != "" {
		what = "<" + tag + "> element"
	}
	fmt.Fprintf(&b, "no %s labelled %q on the page", what, label)
	if len(elems) == 0 {
		b.WriteString(" (the latest user message has no indexed elements)")
		return fmt.Errorf("%w: %s", ErrLabelNotFound, b.String())
	}
	b.WriteString(" (elements:")
	for i, e := range elems {
		if i == 12 {
			fmt.Fprintf(&b, " … %d more", len(elems)-i)
			break
		}
		name := e.Text
		for _, k := range LabelAttrs {
			if name == "" {
				name = e.Attrs[k]
			}
		}
		fmt.Fprintf(&b, " [%d]<%s>%q", e.Index, e.Tag, clip(name, 40))
	}
	b.WriteString(")")
	return fmt.Errorf("%w: %s", ErrLabelNotFound, b.String())
}

func norm(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
