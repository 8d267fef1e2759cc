// Package match finds an element again on a page that changed since it was
// recorded: the element a replayed or cached action targeted, described by
// what an observation showed of it (events.ElementInfo), is looked up among
// a new observation's indexed elements.
//
// Record keeps what identifies an element (tag, role, accessible name, the
// identifying attributes, its XPath, two hashes and its position among
// look-alikes) and nothing a person typed. Find tries a cascade of
// strategies, strongest first, and says which one singled the element out,
// how sure it is, and the other candidates when it is not.
//
// The package works on plain observation data: any DOM watchdog that fills
// events.ElementInfo (the built-in one or a replacement) can be matched.
package match

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/events"
)

// Element is what a recording keeps of an element an action targeted.
// It never holds a form field's value.
type Element struct {
	Tag  string `json:"tag"`
	Role string `json:"role,omitempty"`
	// Name is the accessible name: a link's or button's text, a field's
	// label.
	Name  string `json:"name,omitempty"`
	XPath string `json:"xpath,omitempty"`
	// Attrs are the identifying attributes present (IdentifyingAttrs).
	Attrs map[string]string `json:"attrs,omitempty"`
	// Hash digests the tag path (the XPath without positions), the
	// identifying attributes and the name; StableHash the same with
	// volatile class tokens (state, animation) left out.
	Hash       string `json:"hash,omitempty"`
	StableHash string `json:"stable_hash,omitempty"`
	// Ordinal is the element's 1-based position, in index order, among the
	// observation's elements with the same tag, role and name; Similar is
	// how many such elements there were (1: it was unique).
	Ordinal int `json:"ordinal,omitempty"`
	Similar int `json:"similar,omitempty"`
	// Bounds is the element's box in viewport CSS pixels, when known.
	Bounds *events.Rect `json:"bounds,omitempty"`
}

// Strategy names how Find singled an element out.
type Strategy string

// The cascade, strongest first.
const (
	ByHash       Strategy = "hash"        // same tag path, attributes and name
	ByStableHash Strategy = "stable_hash" // the same, volatile classes aside
	ByRoleName   Strategy = "role_name"   // same tag, role and accessible name
	ByAttributes Strategy = "attributes"  // same id, name, test id, placeholder, label or href
	ByXPath      Strategy = "xpath"       // same position in the document, name consistent
	ByPosition   Strategy = "position"    // the same ordinal among look-alikes
)

// Candidate is one element Find considered.
type Candidate struct {
	Index int    `json:"index"`
	Tag   string `json:"tag"`
	Role  string `json:"role,omitempty"`
	Name  string `json:"name,omitempty"`
	XPath string `json:"xpath,omitempty"`
	// Score is the share (0..1) of the recorded element's signals this
	// element agrees with.
	Score float64 `json:"score"`
}

// Result is Find's answer.
type Result struct {
	// Index is the chosen element's index in the new observation; 0 when
	// none was found.
	Index int `json:"index,omitempty"`
	// Strategy is the strategy that singled the element out ("" when none
	// did).
	Strategy Strategy `json:"strategy,omitempty"`
	// Score is the chosen element's Candidate.Score.
	Score float64 `json:"score,omitempty"`
	// Unique reports that exactly one element matched; Ambiguous that
	// several did and the choice fell back on a weak signal (position),
	// which a caller should confirm (replay asks the approval policy).
	Unique    bool `json:"unique,omitempty"`
	Ambiguous bool `json:"ambiguous,omitempty"`
	// Candidates are the best elements considered, best first (at most
	// MaxCandidates), for error messages and the trace.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Found reports whether an element was chosen.
func (r Result) Found() bool { return r.Index > 0 }

// MaxCandidates caps Result.Candidates.
const MaxCandidates = 5

// IdentifyingAttrs are the attributes that identify an element rather than
// its momentary state; only these are recorded and hashed. Values of form
// fields are never among them.
var IdentifyingAttrs = []string{
	"id", "name", "class", "type", "role", "href", "for", "placeholder",
	"aria-label", "title", "alt", "data-testid", "data-test", "data-cy",
	"data-qa", "data-selenium", "aria-controls", "aria-haspopup",
}

// volatileClassParts mark class tokens that describe transient UI state.
var volatileClassParts = []string{
	"focus", "hover", "active", "selected", "disabled", "animat", "transition",
	"loading", "open", "closed", "expanded", "collapsed", "visible", "hidden",
	"pressed", "checked", "highlight", "current", "enter", "leav", "show",
}

// Record describes the element at index in elems for a recording; ok is
// false when elems has no such element.
func Record(index int, elems map[int]events.ElementInfo) (Element, bool) {
	info, ok := elems[index]
	if !ok {
		return Element{}, false
	}
	e := describe(info)
	e.Bounds = info.Bounds
	for _, idx := range sortedIndexes(elems) {
		o := elems[idx]
		if sameLook(o, info) {
			e.Similar++
			if idx == index {
				e.Ordinal = e.Similar
			}
		}
	}
	return e, true
}

// describe is info's Element without the position among look-alikes.
func describe(info events.ElementInfo) Element {
	e := Element{Tag: strings.ToLower(info.Tag), Role: info.Role, Name: normSpace(info.Name), XPath: info.XPath}
	for _, k := range IdentifyingAttrs {
		if v, ok := info.Attributes[k]; ok && v != "" {
			if e.Attrs == nil {
				e.Attrs = map[string]string{}
			}
			e.Attrs[k] = v
		}
	}
	e.Hash = hashOf(e, false)
	e.StableHash = hashOf(e, true)
	return e
}

var xpathPos = regexp.MustCompile(`\[\d+\]`)

func hashOf(e Element, stable bool) string {
	var b strings.Builder
	b.WriteString(xpathPos.ReplaceAllString(e.XPath, ""))
	b.WriteString("|" + e.Tag + "|" + e.Role + "|" + e.Name)
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := e.Attrs[k]
		if k == "class" && stable {
			v = stableClasses(v)
		}
		if k == "href" {
			v = stripQuery(v)
		}
		b.WriteString("|" + k + "=" + v)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

func stableClasses(class string) string {
	var out []string
	for _, t := range strings.Fields(class) {
		lt := strings.ToLower(t)
		volatile := false
		for _, p := range volatileClassParts {
			if strings.Contains(lt, p) {
				volatile = true
				break
			}
		}
		if !volatile {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func stripQuery(href string) string {
	if i := strings.IndexAny(href, "?#"); i >= 0 {
		return href[:i]
	}
	return href
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func sameLook(a, b events.ElementInfo) bool {
	return strings.EqualFold(a.Tag, b.Tag) && a.Role == b.Role && normSpace(a.Name) == normSpace(b.Name)
}

func sortedIndexes(elems map[int]events.ElementInfo) []int {
	idx := make([]int, 0, len(elems))
	for i := range elems {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx
}

// Find looks rec up among elems (a new observation's elements). The
// cascade: the first strategy whose matches, narrowed by the strategies
// after it, leave exactly one element decides; position among look-alikes
// decides only when nothing else can, and marks the result Ambiguous.
func Find(rec Element, elems map[int]events.ElementInfo) Result {
	type cand struct {
		idx  int
		info events.ElementInfo
		e    Element
	}
	var all []cand
	for _, idx := range sortedIndexes(elems) {
		info := elems[idx]
		if rec.Tag != "" && !strings.EqualFold(info.Tag, rec.Tag) {
			continue // an element of another kind is never the same one
		}
		all = append(all, cand{idx, info, describe(info)})
	}
	tests := []struct {
		s  Strategy
		ok func(c cand) bool
	}{
		{ByHash, func(c cand) bool { return rec.Hash != "" && c.e.Hash == rec.Hash }},
		{ByStableHash, func(c cand) bool { return rec.StableHash != "" && c.e.StableHash == rec.StableHash }},
		{ByRoleName, func(c cand) bool { return rec.Name != "" && c.e.Role == rec.Role && c.e.Name == rec.Name }},
		{ByAttributes, func(c cand) bool { return attrsAgree(rec, c.e) }},
		{ByXPath, func(c cand) bool {
			return rec.XPath != "" && c.e.XPath == rec.XPath && (rec.Name == "" || c.e.Name == rec.Name)
		}},
	}
	score := func(c cand) float64 { return agreement(rec, c.e) }
	res := Result{}
	for i, t := range tests {
		var set []cand
		for _, c := range all {
			if t.ok(c) {
				set = append(set, c)
			}
		}
		if len(set) == 0 {
			continue
		}
		// Narrow by the later strategies while more than one is left.
		for _, u := range tests[i+1:] {
			if len(set) == 1 {
				break
			}
			var narrowed []cand
			for _, c := range set {
				if u.ok(c) {
					narrowed = append(narrowed, c)
				}
			}
			if len(narrowed) > 0 {
				set = narrowed
			}
		}
		if len(set) == 1 {
			res.Index, res.Strategy, res.Unique = set[0].idx, t.s, true
			res.Score = score(set[0])
		} else if rec.Ordinal > 0 && rec.Ordinal <= len(set) && rec.Similar == len(set) {
			c := set[rec.Ordinal-1]
			res.Index, res.Strategy, res.Ambiguous = c.idx, ByPosition, true
			res.Score = score(c)
		}
		break
	}
	cs := make([]Candidate, 0, len(all))
	for _, c := range all {
		s := score(c)
		if s <= 0 {
			continue
		}
		cs = append(cs, Candidate{Index: c.idx, Tag: c.e.Tag, Role: c.e.Role, Name: c.e.Name, XPath: c.e.XPath, Score: s})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Score > cs[j].Score })
	if len(cs) > MaxCandidates {
		cs = cs[:MaxCandidates]
	}
	res.Candidates = cs
	return res
}

// attrsAgree reports whether a strong identifying attribute of rec has the
// same value on e.
func attrsAgree(rec, e Element) bool {
	for _, k := range []string{"id", "data-testid", "data-test", "data-cy", "data-qa", "name", "placeholder", "aria-label", "href"} {
		v := rec.Attrs[k]
		if v == "" {
			continue
		}
		w := e.Attrs[k]
		if k == "href" {
			v, w = stripQuery(v), stripQuery(w)
		}
		if w == v {
			return true
		}
	}
	return false
}

// agreement is the share of rec's signals that e agrees with.
func agreement(rec, e Element) float64 {
	total, agree := 0, 0
	check := func(want, got string) {
		if want == "" {
			return
		}
		total++
		if want == got {
			agree++
		}
	}
	check(rec.Tag, e.Tag)
	check(rec.Role, e.Role)
	check(rec.Name, e.Name)
	check(rec.XPath, e.XPath)
	for k, v := range rec.Attrs {
		check(v, e.Attrs[k])
	}
	if total == 0 {
		return 0
	}
	return float64(agree) / float64(total)
}
