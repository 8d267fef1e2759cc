// Package match finds an element again on a page that changed since it was
// recorded: the element a replayed or cached action targeted, described by
// what an observation showed of it (events.ElementInfo), is looked up among
// a new observation's indexed elements.
//
// Record keeps what identifies an element (tag, role, accessible name, the
// identifying attributes, its XPath, two hashes, its position among
// look-alikes and what told it apart from them) and nothing a person typed.
// Find tries a cascade of strategies, strongest first, and says which one
// singled the element out, how sure it is, and the other candidates when it
// is not.
//
// # The cascade
//
// Only elements with the recorded tag are considered: an element of another
// kind is never the same one. Among them, the first strategy that matches
// any element decides:
//
//   - hash: the same tag path (the XPath without positions), identifying
//     attributes, role and name;
//   - stable_hash: the same, with volatile class tokens (is-open, active,
//     hover, ...) and href query strings and fragments left out;
//   - role_name: a compatible role (the same, or both commands: button,
//     link, menuitem, tab; both check boxes; both radios) and the same
//     accessible name;
//   - attributes: more strong identifying attributes (id, test ids, name,
//     aria-label, placeholder, href path, for, title, alt) agree than
//     differ (a different id does not count against: sites regenerate
//     ids; another accessible name does, unless a test id agrees);
//   - xpath: the same XPath, a consistent name, and no identifying
//     attribute but id and class differs or went missing.
//
// When the strategy leaves several elements, non-positional signals narrow
// them (hashes, each identifying attribute, the exact-case name, the role,
// the tag path). Position is never trusted silently: see Result.Ambiguous.
//
// Names compare after collapsing whitespace runs and ignoring case (CSS
// text-transform and copy edits change case, not meaning); the exact case
// only breaks ties between look-alikes. Hashes use the exact name. A
// recorded name holding the agent's secret placeholder (<secret>k</secret>,
// written where the element showed a secret) matches a name with any
// non-empty text in its place.
//
// # Wrong answers cost more than none
//
// Clicking the wrong "Delete" is worse than stopping, so Find prefers "not
// found" or "ambiguous" to a confident wrong answer:
//
//   - A recorded test id (data-testid, data-test, data-cy, data-qa,
//     data-selenium), input type or href path that the candidate has with
//     another value vetoes it, whatever else agrees (Candidate.Conflict),
//     and so does another frame (Element.Frame). Hrefs compare without
//     query and fragment, a relative one by path against an absolute one;
//     an href naming no target (#, javascript:) is no signal at all.
//   - A strategy's single element is not taken when another element agrees
//     with more of the recording (a higher Candidate.Score: a renamed
//     control and a new one bearing its old name): the result is Ambiguous
//     with no choice. So a Unique choice always has the highest score.
//   - An element that had look-alikes when recorded (same tag, role and
//     name: Element.Similar > 1) is reported Unique only when it agrees on
//     a signal that told it apart from them then (Element.Distinct: an
//     attribute or its tag path). Otherwise the choice is positional: its
//     ordinal among look-alikes when their number is unchanged, else the
//     look-alike at the recorded XPath, else none; the result is Ambiguous
//     and never Unique, and a caller must confirm it (replay asks the
//     approval policy) or give up. An id, name or for that differs from
//     the look-alikes' only in its digits (del-0, del-1) numbers rows by
//     position and tells nothing apart.
//   - A nameless element found at its recorded XPath while more
//     look-alikes (nameless, same role) are there than were recorded is
//     a positional choice: Ambiguous.
//   - A choice scoring under MinUniqueScore is Ambiguous, unless a
//     recorded test id agrees.
//
// # Limits
//
//   - A per-row control recorded on a list with one row (no look-alikes)
//     is found in whatever row is there now: nothing about its row (the
//     row's text) is recorded.
//   - Ids that are real identities but differ only by digits
//     (invoice-42, invoice-43) are taken for row numbers: rows told apart
//     by them alone are Ambiguous.
//   - A frame is named by its document URL (Element.Frame): two iframes
//     showing the same URL are one frame to Find.
//
// The package works on plain observation data: any DOM watchdog that fills
// events.ElementInfo (the built-in one or a replacement) can be matched.
package match

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/browseragent/browseragent/events"
)

// Element is what a recording keeps of an element an action targeted.
// It never holds a form field's value.
type Element struct {
	Tag  string `json:"tag"`
	Role string `json:"role,omitempty"`
	// Name is the accessible name: a link's or button's text, a field's
	// label; whitespace runs collapsed.
	Name  string `json:"name,omitempty"`
	XPath string `json:"xpath,omitempty"`
	// Attrs are the identifying attributes present (IdentifyingAttrs).
	Attrs map[string]string `json:"attrs,omitempty"`
	// Hash digests the tag path (the XPath without positions), the
	// identifying attributes, the role and the name; StableHash the same
	// with volatile class tokens (state, animation) and href query strings
	// and fragments left out. Empty when not recorded: the agent leaves
	// them out for an element whose name or attributes showed a secret,
	// whose value they digest; Find then skips both strategies.
	Hash       string `json:"hash,omitempty"`
	StableHash string `json:"stable_hash,omitempty"`
	// Ordinal is the element's 1-based position, in index order, among the
	// observation's elements in its frame with the same tag, role and
	// name (ignoring case); Similar is how many such elements there were
	// (1: it was unique).
	Ordinal int `json:"ordinal,omitempty"`
	Similar int `json:"similar,omitempty"`
	// Distinct names what told the element apart from its look-alikes
	// when it was recorded (only when Similar > 1): identifying attributes
	// whose value no look-alike shared, and "path" when its tag path was
	// its own. Empty with Similar > 1: only its position did.
	Distinct []string `json:"distinct,omitempty"`
	// Bounds is the element's box in viewport CSS pixels, when known.
	Bounds *events.Rect `json:"bounds,omitempty"`
	// Frame names the frame whose document holds the element
	// (events.ElementInfo.Frame): "" for the page's own document. An
	// element in another frame is never the same one.
	Frame string `json:"frame,omitempty"`
}

// Strategy names how Find singled an element out.
type Strategy string

// The cascade, strongest first.
const (
	ByHash       Strategy = "hash"        // same tag path, attributes, role and name
	ByStableHash Strategy = "stable_hash" // the same, volatile classes and href queries aside
	ByRoleName   Strategy = "role_name"   // same tag, compatible role and accessible name
	ByAttributes Strategy = "attributes"  // strong identifying attributes agree
	ByXPath      Strategy = "xpath"       // same position in the document, nothing contradicting
	ByPosition   Strategy = "position"    // the same ordinal among look-alikes (always Ambiguous)
)

// Candidate is one element Find considered.
type Candidate struct {
	Index int    `json:"index"`
	Tag   string `json:"tag"`
	Role  string `json:"role,omitempty"`
	Name  string `json:"name,omitempty"`
	XPath string `json:"xpath,omitempty"`
	// Score (0..1) is the weighted share of the recorded element's signals
	// this element agrees with: the name weighs most, then the strong
	// attributes, then role, tag path, XPath and the other attributes.
	Score float64 `json:"score"`
	// Conflict names the recorded attribute this element contradicts
	// (a test id, type or href path), which rules it out; "" when none.
	Conflict string `json:"conflict,omitempty"`
}

// Result is Find's answer.
type Result struct {
	// Index is the chosen element's index in the new observation; 0 when
	// none was found.
	Index int `json:"index,omitempty"`
	// Strategy is the strategy that singled the element out, or ByPosition
	// or ByXPath for a positional choice among look-alikes ("" when none
	// was chosen).
	Strategy Strategy `json:"strategy,omitempty"`
	// Score is the chosen element's Candidate.Score.
	Score float64 `json:"score,omitempty"`
	// Unique reports that the element was singled out by what identifies
	// it (and scored highest, at least MinUniqueScore). Ambiguous reports
	// that it was not, in one of two ways:
	//   - a choice to confirm: several elements matched equally and only
	//     position could choose, or the one found agrees with too little
	//     of the recording (under MinUniqueScore); Index is the choice,
	//     which a caller must confirm, or 0 when position could not
	//     choose either;
	//   - the signals disagreed: another element agrees with more of the
	//     recording than the one the strategy singled out (Index 0;
	//     Candidates[0] is that other element).
	// Never both.
	Unique    bool `json:"unique,omitempty"`
	Ambiguous bool `json:"ambiguous,omitempty"`
	// Outscored tells the second kind of Ambiguous: the signals
	// disagreed (Index 0, Candidates[0] agrees with more).
	Outscored bool `json:"outscored,omitempty"`
	// Candidates are the best elements considered, best first (at most
	// MaxCandidates; the chosen one always among them), for error messages
	// and the trace.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Found reports whether an element was chosen.
func (r Result) Found() bool { return r.Index > 0 }

// MaxCandidates caps Result.Candidates.
const MaxCandidates = 5

// MinUniqueScore is the lowest Score a Unique result has, unless a
// recorded test id agrees: an element a strategy singled out while
// agreeing with less of the recording is reported Ambiguous (chosen, to
// be confirmed). WeakScore is where a report starts calling a Unique
// match weak.
const (
	MinUniqueScore = 0.6
	WeakScore      = 0.75
)

// IdentifyingAttrs are the attributes that identify an element rather than
// its momentary state; only these are recorded and hashed. Values of form
// fields are never among them.
var IdentifyingAttrs = []string{
	"id", "name", "class", "type", "role", "href", "for", "placeholder",
	"aria-label", "title", "alt", "data-testid", "data-test", "data-cy",
	"data-qa", "data-selenium", "aria-controls", "aria-haspopup",
}

// identifying is IdentifyingAttrs as a set.
var identifying = func() map[string]bool {
	m := make(map[string]bool, len(IdentifyingAttrs))
	for _, k := range IdentifyingAttrs {
		m[k] = true
	}
	return m
}()

// testAttrs are attributes written for tests and automation: a different
// value is a different element.
var testAttrs = []string{"data-testid", "data-test", "data-cy", "data-qa", "data-selenium"}

// strongAttrs identify an element on their own, strongest first (the
// order narrowing tries them in).
var strongAttrs = []string{
	"data-testid", "data-test", "data-cy", "data-qa", "data-selenium",
	"id", "name", "aria-label", "placeholder", "href", "for", "title", "alt",
}

// narrowAttrs are all identifying attributes in the order narrowing tries
// them: the strong ones first.
var narrowAttrs = func() []string {
	out := slices.Clone(strongAttrs)
	for _, k := range IdentifyingAttrs {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}()

// volatileClassWords mark class tokens that describe transient UI state; a
// token is volatile when one of its words (split at - and _) starts with
// one of these.
var volatileClassWords = []string{
	"focus", "hover", "active", "selected", "disabled", "animat", "transition",
	"loading", "open", "closed", "expanded", "collapsed", "visible", "hidden",
	"pressed", "checked", "highlight", "current", "entering", "leaving", "show",
	"fade", "dirty", "touched", "pristine", "invalid", "valid",
}

// roleFamilies group roles one control takes in different layouts (a
// button that moved into a menu becomes a menuitem).
var roleFamilies = map[string]int{
	"button": 1, "link": 1, "menuitem": 1, "tab": 1,
	"checkbox": 2, "switch": 2, "menuitemcheckbox": 2,
	"radio": 3, "menuitemradio": 3,
}

func rolesCompatible(a, b string) bool {
	if a == b || a == "" || b == "" {
		return true
	}
	fa, fb := roleFamilies[a], roleFamilies[b]
	return fa != 0 && fa == fb
}

// desc is an observed element as Find compares it, computed once per
// observation.
type desc struct {
	idx                   int
	tag, role, name, fold string
	xpath, path           string
	frame                 string
	attrs                 map[string]string
	// h holds the hashes, computed on first use: only elements on the
	// recorded tag path can match them, so most are never computed.
	h *lazyHashes
	// stableClass and hrefPath are the class's stable tokens and the
	// href without query and fragment, as compared.
	stableClass, hrefPath string
}

// norm is d's value of attribute k as compared: class by its stable
// tokens.
func (d *desc) norm(k string) (string, bool) {
	v, ok := d.attrs[k]
	if k == "class" {
		return d.stableClass, ok
	}
	return v, ok
}

func describeInfo(info events.ElementInfo) desc {
	d := desc{
		idx: info.Index, tag: strings.ToLower(info.Tag), role: info.Role, name: normSpace(info.Name),
		xpath: info.XPath, path: stripPositions(info.XPath), frame: info.Frame,
	}
	d.fold = strings.ToLower(d.name)
	// An element has a few attributes: look each up, rather than every
	// identifying one in its map.
	for k, v := range info.Attributes {
		if v != "" && identifying[k] {
			if d.attrs == nil {
				d.attrs = make(map[string]string, len(info.Attributes))
			}
			d.attrs[k] = v
		}
	}
	d.stableClass = stableClasses(d.attrs["class"])
	d.hrefPath = stripQuery(d.attrs["href"])
	d.h = &lazyHashes{}
	return d
}

// stripPositions is an XPath without its [n] positions: the tag path.
func stripPositions(xpath string) string {
	if !strings.Contains(xpath, "[") {
		return xpath
	}
	b := make([]byte, 0, len(xpath))
	for i := 0; i < len(xpath); i++ {
		if xpath[i] == '[' {
			j := i + 1
			for j < len(xpath) && xpath[j] >= '0' && xpath[j] <= '9' {
				j++
			}
			if j > i+1 && j < len(xpath) && xpath[j] == ']' {
				i = j
				continue
			}
		}
		b = append(b, xpath[i])
	}
	return string(b)
}

// lazyHashes are a desc's hashes, computed once (Finds on an Index may
// run concurrently).
type lazyHashes struct {
	once         sync.Once
	hash, stable string
}

// hashes returns d's Hash and StableHash.
func (d *desc) hashes() (hash, stable string) {
	d.h.once.Do(func() { d.h.hash, d.h.stable = hashOf(d, false), hashOf(d, true) })
	return d.h.hash, d.h.stable
}

// hashIs and stableIs report whether d has rec's hashes; both digest the
// tag path, so an element elsewhere is not hashed at all.
func (q query) hashIs(d *desc) bool {
	if q.rec.Hash == "" || d.path != q.path {
		return false
	}
	h, _ := d.hashes()
	return h == q.rec.Hash
}

func (q query) stableIs(d *desc) bool {
	if q.rec.StableHash == "" || d.path != q.path {
		return false
	}
	_, h := d.hashes()
	return h == q.rec.StableHash
}

// hashOf digests d's tag path, tag, role, name, frame (when not the
// page's own) and identifying attributes. One buffer and one Sum256: a
// worst-case Find hashes every element of a big page.
func hashOf(d *desc, stable bool) string {
	n := len(d.path) + len(d.tag) + len(d.role) + len(d.name) + len(d.frame) + 16
	for _, v := range d.attrs {
		n += len(v) + 16
	}
	b := make([]byte, 0, n)
	b = append(b, d.path...)
	b = append(b, '|')
	b = append(b, d.tag...)
	b = append(b, '|')
	b = append(b, d.role...)
	b = append(b, '|')
	b = append(b, d.name...)
	if d.frame != "" {
		// Only framed elements carry it: hashes recorded before frames
		// were told apart still match the page's own elements.
		b = append(b, "|frame="...)
		b = append(b, d.frame...)
	}
	for _, k := range sortedAttrs {
		v, ok := d.attrs[k]
		if !ok {
			continue
		}
		if stable {
			switch k {
			case "class":
				v = d.stableClass
			case "href":
				v = d.hrefPath
			}
		}
		b = append(b, '|')
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, v...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// sortedAttrs are IdentifyingAttrs in the order hashes take them.
var sortedAttrs = func() []string {
	out := slices.Clone(IdentifyingAttrs)
	sort.Strings(out)
	return out
}()

// stableClasses is class without its volatile tokens, sorted.
func stableClasses(class string) string {
	var out []string
	for _, t := range strings.Fields(class) {
		if !volatileClass(t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func volatileClass(token string) bool {
	volatile := false
	classWords(token, func(w string) bool {
		for _, p := range volatileClassWords {
			if len(w) >= len(p) && strings.EqualFold(w[:len(p)], p) {
				volatile = true
				return false
			}
		}
		return true
	})
	return volatile
}

// classWords calls f with each word of a class token, split at -, _ and
// a lower-to-upper case change (is-open, menu__item--active, btnActive),
// until f returns false.
func classWords(token string, f func(w string) bool) {
	start := 0
	prevLower := false
	for i, r := range token {
		switch {
		case r == '-' || r == '_':
			if i > start && !f(token[start:i]) {
				return
			}
			start, prevLower = i+1, false
			continue
		case unicode.IsUpper(r) && prevLower:
			if !f(token[start:i]) {
				return
			}
			start = i
		}
		prevLower = unicode.IsLower(r)
	}
	if start < len(token) {
		f(token[start:])
	}
}

// stripQuery is href without its query string and fragment.
func stripQuery(href string) string {
	if i := strings.IndexAny(href, "?#"); i >= 0 {
		return href[:i]
	}
	return href
}

// splitOrigin splits an href path (stripQuery) into its origin
// ("https://host:port", lower-cased; "" for a relative href) and its path
// ("/" when the URL has none).
func splitOrigin(p string) (origin, path string) {
	i := strings.Index(p, "://")
	if i <= 0 {
		return "", p
	}
	scheme := strings.ToLower(p[:i])
	if scheme != "http" && scheme != "https" {
		return "", p
	}
	rest := p[i+3:]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return strings.ToLower(p), "/"
	}
	return strings.ToLower(p[:i+3+j]), rest[j:]
}

// hrefIdentifying reports whether an href path names a target: "" (the
// href was empty, "#" or "?...") and javascript: links do not, and any
// two such links would agree.
func hrefIdentifying(p string) bool {
	return p != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "javascript:")
}

// hrefSame reports whether two href paths (stripQuery) name the same
// page: equal, or equal paths when one of them is relative (a site
// writing absolute links for its own origin, or a recording rebased to
// another host). Two absolute hrefs on different origins differ.
func hrefSame(a, b string) bool {
	if a == b {
		return true
	}
	oa, pa := splitOrigin(a)
	ob, pb := splitOrigin(b)
	if oa != "" && ob != "" {
		return false
	}
	return pa == pb
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// sameAttr reports whether two values of attribute k say the same: class
// by its stable tokens, anything else exactly.
func sameAttr(k, a, b string) bool {
	if k == "class" {
		return stableClasses(a) == stableClasses(b)
	}
	return a == b
}

// lookAlike reports whether a and b look the same to a reader: same tag,
// role and name (ignoring case), in the same frame.
func lookAlike(a, b desc) bool {
	return a.tag == b.tag && a.role == b.role && a.fold == b.fold && a.frame == b.frame
}

// Index is one observation's elements, described once, for many Finds.
// It is read-only after NewIndex and safe for concurrent Finds.
type Index struct {
	all   []desc           // in index order
	byTag map[string][]int // tag -> positions in all
	pos   map[int]int      // element index -> position in all
}

// NewIndex describes elems (an observation's elements) for Find.
func NewIndex(elems map[int]events.ElementInfo) *Index {
	x := &Index{byTag: map[string][]int{}, pos: make(map[int]int, len(elems))}
	idxs := make([]int, 0, len(elems))
	for i := range elems {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	x.all = make([]desc, 0, len(idxs))
	for _, i := range idxs {
		info := elems[i]
		info.Index = i
		d := describeInfo(info)
		x.pos[i] = len(x.all)
		x.byTag[d.tag] = append(x.byTag[d.tag], len(x.all))
		x.all = append(x.all, d)
	}
	return x
}

// Len is the number of elements indexed.
func (x *Index) Len() int { return len(x.all) }

// Record describes the element at index in elems for a recording; ok is
// false when elems has no such element.
func Record(index int, elems map[int]events.ElementInfo) (Element, bool) {
	info, ok := elems[index]
	if !ok {
		return Element{}, false
	}
	info.Index = index
	self := describeInfo(info)
	// Look-alikes only need tag, role and name: no hashing of the rest.
	var others []desc
	e := self.element()
	e.Bounds = info.Bounds
	idxs := make([]int, 0, len(elems))
	for i := range elems {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		o := elems[i]
		if !strings.EqualFold(o.Tag, info.Tag) || o.Role != info.Role || o.Frame != info.Frame || strings.ToLower(normSpace(o.Name)) != self.fold {
			continue
		}
		e.Similar++
		if i == index {
			e.Ordinal = e.Similar
			continue
		}
		o.Index = i
		others = append(others, describeInfo(o))
	}
	e.Distinct = distinct(self, others)
	return e, true
}

// Record is the package's Record on the indexed observation.
func (x *Index) Record(index int) (Element, bool) {
	p, ok := x.pos[index]
	if !ok {
		return Element{}, false
	}
	self := &x.all[p]
	e := self.element()
	var others []desc
	for _, q := range x.byTag[self.tag] {
		o := x.all[q]
		if !lookAlike(o, *self) {
			continue
		}
		e.Similar++
		if o.idx == index {
			e.Ordinal = e.Similar
			continue
		}
		others = append(others, o)
	}
	e.Distinct = distinct(*self, others)
	return e, true
}

func (d *desc) element() Element {
	e := Element{Tag: d.tag, Role: d.role, Name: d.name, XPath: d.xpath, Frame: d.frame}
	e.Hash, e.StableHash = d.hashes()
	if len(d.attrs) > 0 {
		e.Attrs = make(map[string]string, len(d.attrs))
		for k, v := range d.attrs {
			e.Attrs[k] = v
		}
	}
	return e
}

// distinct lists what no look-alike in others shared with self.
func distinct(self desc, others []desc) []string {
	if len(others) == 0 {
		return nil
	}
	var out []string
	for _, k := range narrowAttrs {
		v, ok := self.attrs[k]
		if !ok {
			continue
		}
		shared := false
		for _, o := range others {
			if w, ok := o.attrs[k]; ok && sameAttr(k, v, w) {
				shared = true
				break
			}
		}
		switch {
		case shared:
		case k == "class" && stableClasses(v) == "":
		case k == "href" && !hrefIdentifying(self.hrefPath):
		case positional[k] && numbered(k, v, others):
			// del-0, del-1, ...: ids given by row position, which the
			// next row to stand there takes over.
		default:
			out = append(out, k)
		}
	}
	own := true
	for _, o := range others {
		if o.path == self.path {
			own = false
			break
		}
	}
	if own {
		out = append(out, "path")
	}
	return out
}

// positional are the attributes sites number by position (id="del-0",
// name="items[1][qty]", for= naming such an id).
var positional = map[string]bool{"id": true, "name": true, "for": true}

// numbered reports whether v and every look-alike's value of k are equal
// once digits are removed: a position, not an identity.
func numbered(k, v string, others []desc) bool {
	base := strings.Map(dropDigit, v)
	if base == v {
		return false
	}
	for _, o := range others {
		w, ok := o.attrs[k]
		if !ok || strings.Map(dropDigit, w) != base {
			return false
		}
	}
	return true
}

func dropDigit(r rune) rune {
	if r >= '0' && r <= '9' {
		return -1
	}
	return r
}

// Find looks rec up among elems (a new observation's elements): the
// simple form of NewIndex(elems).Find(rec). Callers matching several
// elements against one observation should build the Index once.
func Find(rec Element, elems map[int]events.ElementInfo) Result {
	if rec.Tag == "" {
		return NewIndex(elems).Find(rec)
	}
	// Only elements with rec's tag can match: describe no others.
	same := make(map[int]events.ElementInfo)
	for i, e := range elems {
		if strings.EqualFold(e.Tag, rec.Tag) {
			same[i] = e
		}
	}
	return NewIndex(same).Find(rec)
}

// query is one Find: rec with the values it is compared by, computed once.
type query struct {
	rec   Element
	name  string // rec.Name, whitespace collapsed
	fold  string // name, lower-cased
	path  string // rec's tag path
	attrs []recAttr
	// secretParts is fold split at its secret placeholders (the agent
	// scrubs a secret the name showed): the live name matches when it
	// holds them in order around any non-empty text. Nil without one.
	secretParts []string
}

// secretRE matches the placeholder the agent writes for a scrubbed
// secret.
var secretRE = regexp.MustCompile(`<secret>[^<>]*</secret>`)

// sameName reports whether d's name is the recorded one, ignoring case:
// equal, or around a scrubbed secret (see secretParts).
func (q query) sameName(d *desc) bool {
	if q.secretParts == nil {
		return d.fold == q.fold
	}
	rest := d.fold
	last := len(q.secretParts) - 1
	for i, part := range q.secretParts {
		switch {
		case i == 0:
			if !strings.HasPrefix(rest, part) {
				return false
			}
			rest = rest[len(part):]
		case i == last:
			// The secret before this part: at least one byte.
			return len(rest) > len(part) && strings.HasSuffix(rest, part)
		default:
			// A secret (at least one byte), then this part.
			if rest == "" {
				return false
			}
			j := strings.Index(rest[1:], part)
			if j < 0 {
				return false
			}
			rest = rest[1+j+len(part):]
		}
	}
	return true
}

// recAttr is one recorded attribute as compared.
type recAttr struct {
	k, v   string // v: as compared (class: stable tokens)
	path   string // href: without query and fragment
	weight float64
	strong bool
	// vague: an href naming no target (#, javascript:): never a signal
	// of identity nor of difference.
	vague bool
}

func newQuery(rec Element) query {
	q := query{rec: rec, name: normSpace(rec.Name), path: stripPositions(rec.XPath)}
	q.fold = strings.ToLower(q.name)
	if secretRE.MatchString(q.fold) {
		q.secretParts = secretRE.Split(q.fold, -1)
	}
	for _, k := range narrowAttrs {
		v, ok := rec.Attrs[k]
		if !ok {
			continue
		}
		a := recAttr{k: k, v: v, weight: wWeak, strong: slices.Contains(strongAttrs, k)}
		if a.strong {
			a.weight = wStrong
		}
		switch k {
		case "class":
			a.v = stableClasses(v)
			if a.v == "" {
				continue // only volatile tokens: nothing to compare
			}
		case "href":
			a.path = stripQuery(v)
			a.vague = !hrefIdentifying(a.path)
		}
		q.attrs = append(q.attrs, a)
	}
	return q
}

// Find looks rec up among the indexed elements (see the package doc for
// the cascade and the rules that keep it from a confident wrong answer).
// Its cost is linear in the number of elements with rec's tag.
func (x *Index) Find(rec Element) Result {
	q := newQuery(rec)
	tag := strings.ToLower(rec.Tag)
	var pool []int
	if tag != "" {
		pool = x.byTag[tag]
	} else {
		pool = make([]int, len(x.all))
		for i := range pool {
			pool[i] = i
		}
	}
	scores := make([]float64, len(pool))
	conflicts := make([]string, len(pool))
	eligible := make([]int, 0, len(pool)) // positions in pool
	for i, p := range pool {
		d := &x.all[p]
		scores[i] = q.score(d)
		conflicts[i] = q.conflict(d)
		if conflicts[i] == "" {
			eligible = append(eligible, i)
		}
	}
	tests := []struct {
		s  Strategy
		ok func(d *desc) bool
	}{
		{ByHash, q.hashIs},
		{ByStableHash, q.stableIs},
		{ByRoleName, func(d *desc) bool { return q.fold != "" && q.sameName(d) && rolesCompatible(rec.Role, d.role) }},
		{ByAttributes, q.attrsAgree},
		{ByXPath, q.xpathAgrees},
	}
	res := Result{}
	chosen := -1 // position in pool
	for _, t := range tests {
		var set []int
		for _, i := range eligible {
			if t.ok(&x.all[pool[i]]) {
				set = append(set, i)
			}
		}
		if len(set) == 0 {
			continue
		}
		set = q.narrow(x, pool, set)
		if t.s == ByXPath && q.fold == "" && q.alikes(x, pool) > max(rec.Similar, 1) {
			// A nameless control (an icon) at its old place, with more
			// look-alikes than recorded: one was inserted before it, or
			// it moved, and the place proves nothing.
			res.Ambiguous = true
			chosen, res.Strategy = set[0], ByXPath
			break
		}
		if len(set) == 1 && q.distinguished(&x.all[pool[set[0]]]) {
			if outscored(scores, eligible, set[0]) {
				// Signals disagree: another element agrees with more of
				// the recording than the one this strategy singled out
				// (a renamed control and a new one with its old name).
				res.Ambiguous, res.Outscored = true, true
				break
			}
			chosen, res.Strategy = set[0], t.s
			if scores[chosen] < MinUniqueScore && !q.testIDAgrees(&x.all[pool[chosen]]) {
				// Singled out, but on little of what was recorded (a
				// test id is written to identify: it is enough).
				res.Ambiguous = true
			} else {
				res.Unique = true
			}
			break
		}
		// Only position is left to choose by.
		res.Ambiguous = true
		chosen, res.Strategy = q.byPosition(x, pool, set, conflicts)
		break
	}
	if chosen >= 0 {
		res.Index = x.all[pool[chosen]].idx
		res.Score = round(scores[chosen])
	}
	res.Candidates = topCandidates(x, pool, scores, conflicts, chosen)
	return res
}

// alikes counts the elements in pool that look like rec (same role and
// name, ignoring case) in its frame.
func (q query) alikes(x *Index, pool []int) int {
	n := 0
	for _, p := range pool {
		d := &x.all[p]
		if d.role == q.rec.Role && q.sameName(d) && d.frame == q.rec.Frame {
			n++
		}
	}
	return n
}

// outscored reports whether an eligible element other than c scores
// higher than c.
func outscored(scores []float64, eligible []int, c int) bool {
	for _, i := range eligible {
		if i != c && scores[i] > scores[c]+1e-9 {
			return true
		}
	}
	return false
}

// narrow shrinks set by the non-positional signals, strongest first,
// while more than one element is left; a signal that would leave none is
// skipped.
func (q query) narrow(x *Index, pool, set []int) []int {
	if len(set) <= 1 {
		return set
	}
	rec := q.rec
	preds := []func(d *desc) bool{
		q.hashIs,
		q.stableIs,
	}
	for _, a := range q.attrs {
		if a.vague {
			continue
		}
		preds = append(preds, func(d *desc) bool { w, ok := d.norm(a.k); return ok && w == a.v })
		if a.k == "href" {
			preds = append(preds, func(d *desc) bool { return hrefSame(d.hrefPath, a.path) })
		}
	}
	preds = append(preds,
		func(d *desc) bool { return q.name != "" && q.secretParts == nil && d.name == q.name },
		func(d *desc) bool { return d.role == rec.Role },
		func(d *desc) bool { return q.path != "" && d.path == q.path },
	)
	for _, p := range preds {
		if len(set) <= 1 {
			break
		}
		var n []int
		for _, i := range set {
			if p(&x.all[pool[i]]) {
				n = append(n, i)
			}
		}
		if len(n) > 0 && len(n) < len(set) {
			set = n
		}
	}
	return set
}

// distinguished reports whether d agrees with what told the recorded
// element apart from its look-alikes (always true when it had none).
func (q query) distinguished(d *desc) bool {
	if q.rec.Similar <= 1 {
		return true
	}
	for _, k := range q.rec.Distinct {
		if k == "path" {
			if q.path != "" && d.path == q.path {
				return true
			}
			continue
		}
		for _, a := range q.attrs {
			if a.k == k {
				if w, ok := d.norm(k); ok && w == a.v {
					return true
				}
			}
		}
	}
	return false
}

// byPosition chooses among set (which only position can tell apart): the
// recorded ordinal among today's look-alikes when their number is the
// recorded one, else the one at the recorded XPath; -1 when neither is in
// set.
func (q query) byPosition(x *Index, pool, set []int, conflicts []string) (int, Strategy) {
	rec := q.rec
	if rec.Ordinal > 0 && rec.Similar > 0 {
		var alike []int // positions in pool, in index order
		for i, p := range pool {
			d := &x.all[p]
			if d.role == rec.Role && q.sameName(d) && d.frame == rec.Frame {
				alike = append(alike, i)
			}
		}
		if len(alike) == rec.Similar && rec.Ordinal <= len(alike) {
			c := alike[rec.Ordinal-1]
			if conflicts[c] == "" && slices.Contains(set, c) {
				return c, ByPosition
			}
		}
	}
	if rec.XPath != "" {
		at := -1
		for _, i := range set {
			if x.all[pool[i]].xpath == rec.XPath {
				if at >= 0 {
					return -1, ""
				}
				at = i
			}
		}
		if at >= 0 {
			return at, ByXPath
		}
	}
	return -1, ""
}

// conflict names the recorded attribute d contradicts in a way that rules
// it out: a test id, the input type or the href's path.
func (q query) conflict(d *desc) string {
	if d.frame != q.rec.Frame {
		return "frame"
	}
	for _, a := range q.attrs {
		w, ok := d.attrs[a.k]
		if !ok {
			continue
		}
		switch {
		case a.k == "type":
			if !strings.EqualFold(a.v, w) {
				return a.k
			}
		case a.k == "href":
			if !a.vague && hrefIdentifying(d.hrefPath) && !hrefSame(a.path, d.hrefPath) {
				return a.k
			}
		case slices.Contains(testAttrs, a.k):
			if a.v != w {
				return a.k
			}
		}
	}
	return ""
}

// attrsAgree: more of rec's strong attributes agree with d than differ. An
// id that differs does not count against: versions of a site regenerate
// ids more often than anything else. Another accessible name counts
// against, unless a test id agrees: submit buttons sharing name="action"
// or name="commit", or a wizard's "Save" and "Delete" with one id, share
// an attribute and are still different controls.
func (q query) attrsAgree(d *desc) bool {
	agree, differ := 0, 0
	for _, a := range q.attrs {
		if !a.strong || a.vague {
			continue
		}
		w, ok := d.attrs[a.k]
		if !ok {
			continue
		}
		same := w == a.v
		if a.k == "href" {
			same = hrefSame(d.hrefPath, a.path)
		}
		switch {
		case same:
			agree++
		case a.k != "id":
			differ++
		}
	}
	if q.fold != "" && d.fold != "" && !q.sameName(d) && !q.testIDAgrees(d) {
		differ++
	}
	return agree > 0 && agree > differ
}

// testIDAgrees reports whether d has one of rec's test ids, same value.
func (q query) testIDAgrees(d *desc) bool {
	for _, a := range q.attrs {
		if slices.Contains(testAttrs, a.k) && d.attrs[a.k] == a.v {
			return true
		}
	}
	return false
}

// xpathAgrees: d is at rec's XPath, its name is consistent, and no
// identifying attribute but id and class differs or went missing.
func (q query) xpathAgrees(d *desc) bool {
	if q.rec.XPath == "" || d.xpath != q.rec.XPath {
		return false
	}
	if q.fold != "" && !q.sameName(d) {
		return false
	}
	for _, a := range q.attrs {
		if a.k == "id" || a.k == "class" {
			continue
		}
		w, ok := d.attrs[a.k]
		if !ok {
			return false
		}
		if a.k == "href" {
			if !a.vague && !hrefSame(d.hrefPath, a.path) {
				return false
			}
		} else if w != a.v {
			return false
		}
	}
	return true
}

// Signal weights for score.
const (
	wName   = 4.0
	wStrong = 2.0
	wRole   = 1.0
	wPath   = 1.0
	wXPath  = 1.0
	wWeak   = 1.0
)

// score is the weighted share of rec's signals d agrees with (0..1).
func (q query) score(d *desc) float64 {
	rec := q.rec
	total, agree := 0.0, 0.0
	add := func(w float64, ok bool) {
		total += w
		if ok {
			agree += w
		}
	}
	if q.fold != "" {
		add(wName, q.sameName(d))
	}
	if rec.Role != "" {
		add(wRole, d.role == rec.Role)
	}
	if q.path != "" {
		add(wPath, d.path == q.path)
	}
	if rec.XPath != "" {
		add(wXPath, d.xpath == rec.XPath)
	}
	for _, a := range q.attrs {
		if a.vague {
			continue
		}
		got, ok := d.norm(a.k)
		switch {
		case ok && got == a.v:
			add(a.weight, true)
		case ok && a.k == "href" && !a.vague && hrefSame(d.hrefPath, a.path):
			// The same page with another query: half.
			total += a.weight
			agree += a.weight / 2
		default:
			add(a.weight, false)
		}
	}
	if total == 0 {
		return 0
	}
	return agree / total
}

func round(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

// topCandidates keeps the best MaxCandidates elements with a positive
// score, best first, the chosen one first among equals and always kept.
func topCandidates(x *Index, pool []int, scores []float64, conflicts []string, chosen int) []Candidate {
	better := func(i, j int) bool { // is pool position i ranked before j
		if scores[i] != scores[j] {
			return scores[i] > scores[j]
		}
		if (i == chosen) != (j == chosen) {
			return i == chosen
		}
		return i < j
	}
	top := make([]int, 0, MaxCandidates+1)
	for i := range pool {
		if scores[i] <= 0 && i != chosen {
			continue
		}
		pos := len(top)
		for pos > 0 && better(i, top[pos-1]) {
			pos--
		}
		if pos >= MaxCandidates {
			continue
		}
		top = slices.Insert(top, pos, i)
		if len(top) > MaxCandidates {
			top = top[:MaxCandidates]
		}
	}
	if chosen >= 0 && !slices.Contains(top, chosen) {
		top[len(top)-1] = chosen
	}
	out := make([]Candidate, 0, len(top))
	for _, i := range top {
		d := &x.all[pool[i]]
		out = append(out, Candidate{Index: d.idx, Tag: d.tag, Role: d.role, Name: d.name, XPath: d.xpath,
			Score: round(scores[i]), Conflict: conflicts[i]})
	}
	return out
}
