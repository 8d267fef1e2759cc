package agenttest

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/browseragent/browseragent/events"
)

// Page is a document the fake can show. New copies it: every load of a URL
// starts from the Page as given (typed values and re-renders are lost, as
// on a real reload).
type Page struct {
	// URL identifies the page: navigations, links (Element.Href) and new
	// tabs (Element.NewTab) to it load it. A URL no page has loads an empty
	// page with no title.
	URL   string
	Title string
	// Text is the page's static text, one line of the DOM text per line,
	// shown above the elements; PageText returns it with the elements'
	// texts.
	Text string
	// Elements are the indexed elements, in page order.
	Elements []Element
	// Eval answers Evaluate with the JSON text of the value of code. An
	// error fails the action. Nil: every Evaluate fails.
	Eval func(code string) (string, error)
}

// Element is one indexed element of a Page. It is rendered in the DOM
// serializer's format, the attributes in its order, the text on the line
// below at one more tab of indent:
//
//	[3]<button type=submit />
//		Next
//
// so that the scripted model finds it by label (scripted.Find) as on a real
// page.
type Element struct {
	// Index is the index the model sees; it must be positive and unique on
	// its page.
	Index int
	// Tag is the element's tag; default "button". Input and upload need
	// "input" or "textarea" (and type=file for upload).
	Tag string
	// Attrs are shown on the element's line, in the serializer's order
	// (attrOrder), then the others by name. "value" is
	// replaced by what was typed or selected; a type=password field never
	// shows it.
	Attrs map[string]string
	// Text is the visible text, shown on the line below the element.
	Text string
	// Options make the element a dropdown: GetDropdownOptions lists them,
	// SelectDropdownOption selects one by its text.
	Options []string

	// What clicking does. Href, NewTab and Dialog are exclusive, in this
	// order of precedence.
	//
	// Href loads a page in the tab: verdict navigated.
	Href string
	// NewTab opens a page in a new tab, which does not take focus (the
	// agent follows it): verdict new_tab, with the tab in Outcome.NewTabs.
	NewTab string
	// Dialog opens a JavaScript alert with this message, which the fake
	// accepts (as the popups watchdog does): verdict dialog, and the next
	// observation lists it in ClosedDialogs.
	Dialog string
	// Rerender replaces the page's nodes in place, as a framework does: the
	// fingerprint changes (verdict changed) and the indexes stay.
	Rerender bool

	// Fail makes every action on the element fail with this error, after
	// its effect above happened: the failure's evidence then shows that the
	// page changed. The error is an *events.ActionError wrapping Fail.
	Fail error
}

// doc is a loaded page: a copy of its Page with its live state.
type doc struct {
	url, title, text string
	elems            []Element
	eval             func(string) (string, error)
	values           map[int]string // typed, selected or uploaded values by index
	mutations        int64
}

func newDoc(p Page) *doc {
	d := &doc{url: p.URL, title: p.Title, text: p.Text, eval: p.Eval, values: map[int]string{}}
	d.elems = slices.Clone(p.Elements)
	for i := range d.elems {
		d.elems[i].Attrs = cloneMap(d.elems[i].Attrs)
		d.elems[i].Options = slices.Clone(d.elems[i].Options)
	}
	return d
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (e *Element) tag() string {
	if e.Tag == "" {
		return "button"
	}
	return strings.ToLower(e.Tag)
}

func (d *doc) element(index int) (*Element, bool) {
	for i := range d.elems {
		if d.elems[i].Index == index {
			return &d.elems[i], true
		}
	}
	return nil, false
}

func (d *doc) fingerprint() events.PageFingerprint {
	return events.PageFingerprint{URL: d.url, Mutations: d.mutations, Elements: int64(len(d.elems)), Title: d.title}
}

// value is the element's current value: what was typed or selected, else
// its value attribute.
func (d *doc) value(e *Element) string {
	if v, ok := d.values[e.Index]; ok {
		return v
	}
	return e.Attrs["value"]
}

// domText renders the page the way dom.Serialize does.
func (d *doc) domText() string {
	var b strings.Builder
	for _, line := range strings.Split(d.text, "\n") {
		if t := collapse(line); t != "" {
			b.WriteString(t + "\n")
		}
	}
	for i := range d.elems {
		e := &d.elems[i]
		fmt.Fprintf(&b, "[%d]<%s", e.Index, e.tag())
		if a := d.attrs(e); a != "" {
			b.WriteString(" " + a)
		}
		b.WriteString(" />\n")
		if t := collapse(e.Text); t != "" {
			b.WriteString("\t" + t + "\n")
		}
	}
	return b.String()
}

// attrOrder is the order of the common attributes in the real serializer's
// output (dom.DefaultIncludeAttributes begins so); the fake does not import
// the perception package, which would tie the agent's tests to CDP types.
var attrOrder = []string{"title", "type", "checked", "id", "name", "role", "value", "placeholder", "alt", "aria-label", "aria-expanded"}

// attrs renders an element's attributes in attrOrder, then any others by
// name.
func (d *doc) attrs(e *Element) string {
	vals := cloneMap(e.Attrs)
	if vals == nil {
		vals = map[string]string{}
	}
	delete(vals, "value")
	if v := d.value(e); v != "" && !strings.EqualFold(e.Attrs["type"], "password") {
		vals["value"] = v
	}
	if strings.EqualFold(vals["type"], e.tag()) {
		delete(vals, "type")
	}
	var keys []string
	for _, k := range attrOrder {
		if _, ok := vals[k]; ok {
			keys = append(keys, k)
			delete(vals, k)
		}
	}
	rest := make([]string, 0, len(vals))
	for k := range vals {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := e.Attrs[k]
		if k == "value" {
			v = d.value(e)
		}
		switch {
		case v == "":
			v = "''"
		case v != strings.TrimSpace(v) || strings.ContainsAny(v, "\n\r\t\"") || strings.Contains(v, "  "):
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// pageText is what PageText returns: the static text, then each element's
// text, one per line.
func (d *doc) pageText() string {
	var lines []string
	if t := strings.TrimSpace(d.text); t != "" {
		lines = append(lines, t)
	}
	for i := range d.elems {
		if t := collapse(d.elems[i].Text); t != "" {
			lines = append(lines, t)
		}
	}
	return strings.Join(lines, "\n")
}

func (d *doc) stats() events.DOMStats {
	s := events.DOMStats{Nodes: 1 + len(d.elems), Interactive: len(d.elems)}
	for i := range d.elems {
		switch d.elems[i].tag() {
		case "a":
			s.Links++
		case "input", "textarea", "select":
			s.Inputs++
		}
	}
	return s
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
