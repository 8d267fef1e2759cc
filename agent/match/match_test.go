package match

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// The shared browser (demosite_test.go) is torn down, then goleak checks.
func TestMain(m *testing.M) { testbrowser.Main(m) }

// el is a fixture element; attrs as k=v pairs.
func el(tag, role, name, xpath string, attrs ...string) events.ElementInfo {
	a := map[string]string{}
	for i := 0; i+1 < len(attrs); i += 2 {
		a[attrs[i]] = attrs[i+1]
	}
	return events.ElementInfo{Tag: tag, Role: role, Name: name, XPath: xpath, Attributes: a}
}

// page numbers elems 1.. in order, as an observation does.
func page(elems ...events.ElementInfo) map[int]events.ElementInfo {
	m := map[int]events.ElementInfo{}
	for i, e := range elems {
		e.Index = i + 1
		m[i+1] = e
	}
	return m
}

// The careers site's jobs page, version 1: a nav, a search box, a table of
// jobs (a "View" link and a twin "Delete" button per row), an application
// form, a nameless icon button. Indexes: 1 Home, 2 Jobs, 3 search, 4..9
// rows (View, Delete) x3, 10 email, 11 full name, 12 icon, 13 Apply.
type row struct{ slug, title string }

func jobsPage(o pageOpts) map[int]events.ElementInfo {
	root := "/html/body/div[1]"
	if o.banner {
		root = "/html/body/div[2]"
	}
	id := func(s string) string { return o.idPrefix + s }
	cls := func(s string) string { return o.clsPrefix + s }
	rows := []row{{"go-engineer", "Go engineer"}, {"sre", "SRE"}, {"frontend", "Frontend"}}
	if o.reorder {
		rows = []row{rows[2], rows[0], rows[1]}
	}
	var es []events.ElementInfo
	if o.banner {
		// The banner has a form of its own: the old XPath of the search box
		// now names its newsletter field.
		es = append(es,
			el("input", "textbox", "", "/html/body/div[1]/form[1]/input[1]", "type", "email", "placeholder", "Your email", "class", cls("newsletter")),
			el("button", "button", "Subscribe", "/html/body/div[1]/form[1]/button[1]", "type", "submit", "class", cls("btn")))
	}
	es = append(es,
		el("a", "link", "Home", root+"/header[1]/nav[1]/a[1]", "href", "/", "class", cls("nav-link"), "id", id("nav-home")),
		el("a", "link", "Jobs", root+"/header[1]/nav[1]/a[2]", "href", "/jobs", "class", cls("nav-link")+" is-active"),
		el("input", "searchbox", "", root+"/form[1]/input[1]", "type", "search", "placeholder", "Search jobs", "id", id("q"), "class", cls("search")),
	)
	for i, r := range rows {
		tr := fmt.Sprintf("%s/main[1]/table[1]/tbody[1]/tr[%d]", root, i+1)
		del := []string{"type", "button", "class", cls("btn") + " " + cls("btn-danger")}
		if o.testIDs {
			del = append(del, "data-testid", "delete-"+r.slug)
		}
		href := "/jobs/" + r.slug
		if o.queryHrefs {
			href = "/jobs?job=" + r.slug
		}
		es = append(es,
			el("a", "link", "View", tr+"/td[3]/a[1]", "href", href, "class", cls("row-link")),
			el("button", "button", "Delete", tr+"/td[4]/button[1]", del...))
	}
	form := root + "/main[1]/form[1]"
	email := "Email"
	if o.emailLabel != "" {
		email = o.emailLabel
	}
	apply := el("button", "button", "Apply for this job", form+"/button[1]", "type", "submit", "id", id("apply-btn"), "class", cls("btn")+" "+cls("btn-primary"))
	if o.applyName != "" {
		apply.Name = o.applyName
	}
	es = append(es,
		el("input", "textbox", email, form+"/input[1]", "type", "email", "id", id("email"), "name", "email", "placeholder", "you@example.com"),
		el("input", "textbox", "Full name", form+"/input[2]", "type", "text", "id", id("name"), "name", "full_name"),
	)
	// A nameless icon button: only its id, class and place identify it.
	es = append(es, el("button", "button", "", root+"/header[1]/button[1]", "type", "button", "id", id("dismiss"), "class", cls("icon-close")))
	switch o.menu {
	case "":
		es = append(es, apply)
	case "closed":
		es = append(es, el("summary", "button", "More", form+"/details[1]/summary[1]", "class", cls("menu")))
	case "open":
		es = append(es,
			el("summary", "button", "More", form+"/details[1]/summary[1]", "class", cls("menu")+" is-open"),
			el("button", "menuitem", "Apply for this job", form+"/details[1]/div[1]/button[1]", "type", "submit", "id", id("apply-btn"), "class", cls("menu-item")))
	}
	return page(es...)
}

type pageOpts struct {
	idPrefix, clsPrefix string
	banner, reorder     bool
	testIDs, queryHrefs bool
	emailLabel          string
	applyName           string
	menu                string // "", "closed", "open"
}

// indexOf is the index of the element with name (and, when not "", an
// attribute containing sub) on p; it fails the test if not exactly one.
func indexOf(t *testing.T, p map[int]events.ElementInfo, tag, name, sub string) int {
	t.Helper()
	found := 0
	for i, e := range p {
		if e.Tag != tag || e.Name != name {
			continue
		}
		if sub != "" {
			ok := false
			for _, v := range e.Attributes {
				if strings.Contains(v, sub) {
					ok = true
				}
			}
			if !ok {
				continue
			}
		}
		if found != 0 {
			t.Fatalf("fixture: two %s %q %q", tag, name, sub)
		}
		found = i
	}
	if found == 0 {
		t.Fatalf("fixture: no %s %q %q", tag, name, sub)
	}
	return found
}

func record(t *testing.T, p map[int]events.ElementInfo, idx int) Element {
	t.Helper()
	e, ok := Record(idx, p)
	if !ok {
		t.Fatalf("Record(%d): no element", idx)
	}
	return e
}

// checkInvariants holds for every Result.
func checkInvariants(t *testing.T, r Result) {
	t.Helper()
	checkResult(t, r, false)
}

// checkResult is checkInvariants; testIDFound allows a Unique choice by a
// test id under MinUniqueScore.
func checkResult(t *testing.T, r Result, testIDFound bool) {
	t.Helper()
	if r.Unique && r.Ambiguous {
		t.Errorf("result both Unique and Ambiguous: %+v", r)
	}
	if r.Unique && !r.Found() {
		t.Errorf("Unique without an element: %+v", r)
	}
	if r.Found() && r.Strategy == "" {
		t.Errorf("found without a strategy: %+v", r)
	}
	if len(r.Candidates) > MaxCandidates {
		t.Errorf("%d candidates, max %d", len(r.Candidates), MaxCandidates)
	}
	for i, c := range r.Candidates {
		if c.Score < 0 || c.Score > 1 {
			t.Errorf("candidate %d score %v outside 0..1", c.Index, c.Score)
		}
		if i > 0 && c.Score > r.Candidates[i-1].Score {
			t.Errorf("candidates not best first: %+v", r.Candidates)
		}
	}
	if r.Found() {
		if len(r.Candidates) == 0 {
			t.Fatalf("found %d but no candidates", r.Index)
		}
		in := false
		for _, c := range r.Candidates {
			in = in || c.Index == r.Index
		}
		if !in {
			t.Errorf("chosen %d not among candidates %+v", r.Index, r.Candidates)
		}
		if r.Score <= 0 || r.Score > 1 {
			t.Errorf("chosen score %v outside (0,1]", r.Score)
		}
	}
	if r.Unique && r.Score < MinUniqueScore && !testIDFound {
		t.Errorf("unique choice %d scores %v, under %v", r.Index, r.Score, MinUniqueScore)
	}
	if r.Unique && r.Candidates[0].Index != r.Index {
		t.Errorf("unique choice %d (score %v) is not the best candidate %+v", r.Index, r.Score, r.Candidates[0])
	}
}

func TestFindAcrossSiteVersions(t *testing.T) {
	v1 := jobsPage(pageOpts{})
	type want struct {
		tag, name, sub string // the element that must be chosen; tag "" = none
		strategy       Strategy
		unique         bool
		ambiguous      bool
	}
	cases := []struct {
		name     string
		from     pageOpts // recorded on
		tag      string   // recorded element
		elName   string
		sub      string
		to       pageOpts // found on
		want     want
		minCands int
	}{
		{name: "same page: hash", tag: "button", elName: "Apply for this job",
			want: want{"button", "Apply for this job", "", ByHash, true, false}},
		{name: "ids and classes renamed: role and name", tag: "button", elName: "Apply for this job",
			to:   pageOpts{idPrefix: "k9-", clsPrefix: "x-"},
			want: want{"button", "Apply for this job", "", ByRoleName, true, false}},
		{name: "ids and classes renamed, nameless search box: placeholder", tag: "input", sub: "Search jobs",
			to:   pageOpts{idPrefix: "k9-", clsPrefix: "x-"},
			want: want{"input", "", "Search jobs", ByAttributes, true, false}},
		// Only its place agrees (score 0.57): chosen, to be confirmed.
		{name: "ids and classes renamed, nameless icon button: xpath, weak", tag: "button", sub: "dismiss",
			to:   pageOpts{idPrefix: "k9-", clsPrefix: "x-"},
			want: want{"button", "", "dismiss", ByXPath, false, true}},
		{name: "banner inserted, ids and classes renamed, nameless icon button: none", tag: "button", sub: "dismiss",
			to:   pageOpts{idPrefix: "k9-", clsPrefix: "x-", banner: true},
			want: want{}},
		{name: "banner inserted: hash without positions", tag: "button", elName: "Apply for this job",
			to:   pageOpts{banner: true},
			want: want{"button", "Apply for this job", "", ByHash, true, false}},
		{name: "banner inserted: the old xpath names the banner's field, not taken", tag: "input", sub: "Search jobs",
			to:   pageOpts{banner: true},
			want: want{"input", "", "Search jobs", ByHash, true, false}},
		{name: "banner and renames: search box by placeholder, weak", tag: "input", sub: "Search jobs",
			to:   pageOpts{banner: true, idPrefix: "k9-", clsPrefix: "x-"},
			want: want{"input", "", "Search jobs", ByAttributes, false, true}},
		{name: "rows reordered: the row's link by href", tag: "a", elName: "View", sub: "/jobs/sre",
			to:   pageOpts{reorder: true},
			want: want{"a", "View", "/jobs/sre", ByHash, true, false}},
		{name: "rows reordered and renamed: role and name narrowed by href", tag: "a", elName: "View", sub: "/jobs/sre",
			to:   pageOpts{reorder: true, clsPrefix: "x-"},
			want: want{"a", "View", "/jobs/sre", ByRoleName, true, false}},
		{name: "rows reordered, ids in the query: the full href tells them apart", tag: "a", elName: "View", sub: "job=sre",
			from: pageOpts{queryHrefs: true}, to: pageOpts{queryHrefs: true, reorder: true, clsPrefix: "x-"},
			want: want{"a", "View", "job=sre", ByRoleName, true, false}},
		{name: "twin Delete buttons, rows reordered: position, ambiguous", tag: "button", elName: "Delete", sub: "",
			to: pageOpts{reorder: true},
			// The recorded second Delete (SRE's row) is chosen by its
			// ordinal: now the Go engineer's row. Exactly why it is Ambiguous.
			want: want{"button", "", "", ByPosition, false, true}},
		{name: "Delete buttons with test ids, rows reordered: the test id", tag: "button", elName: "Delete", sub: "delete-sre",
			from: pageOpts{testIDs: true}, to: pageOpts{testIDs: true, reorder: true, clsPrefix: "x-"},
			want: want{"button", "Delete", "delete-sre", ByRoleName, true, false}},
		{name: "control moved into a closed menu: none, candidates listed", tag: "button", elName: "Apply for this job",
			to:       pageOpts{menu: "closed"},
			want:     want{},
			minCands: 1},
		{name: "control in the opened menu: role and name", tag: "button", elName: "Apply for this job",
			to:   pageOpts{menu: "open"},
			want: want{"button", "Apply for this job", "", ByRoleName, true, false}},
		{name: "name changed in case and whitespace only", tag: "button", elName: "Apply for this job",
			to:   pageOpts{clsPrefix: "x-", applyName: "  APPLY for\n this   Job "},
			want: want{"button", "  APPLY for\n this   Job ", "", ByRoleName, true, false}},
		{name: "label changed, id, name and placeholder kept: attributes", tag: "input", elName: "Email",
			to:   pageOpts{emailLabel: "Your email address"},
			want: want{"input", "Your email address", "", ByAttributes, true, false}},
		{name: "label changed and ids renamed: name and placeholder, weak", tag: "input", elName: "Email",
			to:   pageOpts{emailLabel: "Work email", idPrefix: "k9-", banner: true},
			want: want{"input", "Work email", "", ByAttributes, false, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := jobsPage(tc.from)
			if tc.from == (pageOpts{}) {
				from = v1
			}
			recIdx := 0
			if tc.tag == "button" && tc.elName == "Delete" && tc.sub == "" {
				// The second of the twins.
				recIdx = 7
				if from[recIdx].Name != "Delete" {
					t.Fatalf("fixture: %d is %q", recIdx, from[recIdx].Name)
				}
			} else {
				recIdx = indexOf(t, from, tc.tag, tc.elName, tc.sub)
			}
			rec := record(t, from, recIdx)
			to := jobsPage(tc.to)
			r := Find(rec, to)
			checkInvariants(t, r)
			if r.Unique != tc.want.unique || r.Ambiguous != tc.want.ambiguous || r.Strategy != tc.want.strategy {
				t.Fatalf("got strategy %q unique %v ambiguous %v (index %d, candidates %+v); want %q unique %v ambiguous %v",
					r.Strategy, r.Unique, r.Ambiguous, r.Index, r.Candidates, tc.want.strategy, tc.want.unique, tc.want.ambiguous)
			}
			switch {
			case tc.want.tag == "":
				if r.Found() {
					t.Fatalf("found %d (%+v), want none", r.Index, to[r.Index])
				}
			case tc.want.name == "" && tc.want.sub == "":
				// Positional: the twin at the recorded ordinal.
				if to[r.Index].Name != "Delete" || to[r.Index].XPath != from[recIdx].XPath {
					t.Fatalf("positional choice %d %+v, want the Delete at %s", r.Index, to[r.Index], from[recIdx].XPath)
				}
			default:
				if w := indexOf(t, to, tc.want.tag, tc.want.name, tc.want.sub); r.Index != w {
					t.Fatalf("found %d %+v, want %d %+v", r.Index, to[r.Index], w, to[w])
				}
			}
			if len(r.Candidates) < tc.minCands {
				t.Fatalf("%d candidates, want at least %d", len(r.Candidates), tc.minCands)
			}
		})
	}
}

func TestFindNeverConfidentlyWrong(t *testing.T) {
	t.Run("tag mismatch never matches", func(t *testing.T) {
		from := page(el("button", "button", "Apply", "/html/body/form[1]/button[1]", "id", "apply"))
		to := page(el("a", "button", "Apply", "/html/body/form[1]/button[1]", "id", "apply"))
		r := Find(record(t, from, 1), to)
		checkInvariants(t, r)
		if r.Found() || r.Unique || len(r.Candidates) != 0 {
			t.Fatalf("an <a> matched a recorded <button>: %+v", r)
		}
	})
	t.Run("one twin left: no choice", func(t *testing.T) {
		twin := func(tr int) events.ElementInfo {
			return el("button", "button", "Delete", fmt.Sprintf("/html/body/table[1]/tr[%d]/td[1]/button[1]", tr), "class", "btn")
		}
		from := page(twin(1), twin(2))
		rec := record(t, from, 2)
		if rec.Similar != 2 || rec.Ordinal != 2 || len(rec.Distinct) != 0 {
			t.Fatalf("twins recorded as %+v", rec)
		}
		r := Find(rec, page(twin(1)))
		checkInvariants(t, r)
		if r.Found() || r.Unique || !r.Ambiguous || len(r.Candidates) != 1 {
			t.Fatalf("the one twin left was taken for the recorded one: %+v", r)
		}
	})
	t.Run("twins, same count: position, ambiguous", func(t *testing.T) {
		twin := func(tr int) events.ElementInfo {
			return el("button", "button", "Delete", fmt.Sprintf("/html/body/table[1]/tr[%d]/td[1]/button[1]", tr), "class", "btn")
		}
		rec := record(t, page(twin(1), twin(2)), 1)
		r := Find(rec, page(el("a", "link", "Home", "/html/body/a[1]"), twin(1), twin(2)))
		checkInvariants(t, r)
		if r.Index != 2 || r.Strategy != ByPosition || r.Unique || !r.Ambiguous || r.Outscored {
			t.Fatalf("got %+v, want the first twin (2) by position, ambiguous", r)
		}
	})
	t.Run("the recorded row's Delete is gone: another test id vetoes the look-alike", func(t *testing.T) {
		from := jobsPage(pageOpts{testIDs: true})
		rec := record(t, from, indexOf(t, from, "button", "Delete", "delete-sre"))
		to := page(el("button", "button", "Delete", "/html/body/div[1]/main[1]/table[1]/tbody[1]/tr[2]/td[4]/button[1]",
			"type", "button", "class", "btn btn-danger", "data-testid", "delete-frontend"))
		r := Find(rec, to)
		checkInvariants(t, r)
		if r.Found() {
			t.Fatalf("another row's Delete was chosen: %+v", r)
		}
		if len(r.Candidates) != 1 || r.Candidates[0].Conflict != "data-testid" {
			t.Fatalf("candidates %+v, want the look-alike with conflict data-testid", r.Candidates)
		}
	})
	t.Run("the recorded link's target is gone: another href path vetoes", func(t *testing.T) {
		from := page(el("a", "link", "Apply", "/html/body/a[1]", "href", "/apply/go"))
		r := Find(record(t, from, 1), page(el("a", "link", "Apply", "/html/body/a[1]", "href", "/apply/sre")))
		checkInvariants(t, r)
		if r.Found() || r.Candidates[0].Conflict != "href" {
			t.Fatalf("a link to elsewhere was chosen: %+v", r)
		}
	})
	t.Run("input type differs: vetoed", func(t *testing.T) {
		from := page(el("input", "textbox", "Email", "/html/body/form[1]/input[1]", "type", "email", "name", "email"))
		r := Find(record(t, from, 1), page(el("input", "checkbox", "Email", "/html/body/form[1]/input[1]", "type", "checkbox", "name", "email")))
		checkInvariants(t, r)
		if r.Found() {
			t.Fatalf("a checkbox was taken for an email field: %+v", r)
		}
	})
	t.Run("a new look-alike: told apart by its tag path", func(t *testing.T) {
		from := page(el("button", "button", "Apply", "/html/body/main[1]/button[1]", "class", "btn"))
		rec := record(t, from, 1)
		to := page(
			el("button", "button", "Apply", "/html/body/header[1]/button[1]", "class", "promo"),
			el("button", "button", "Apply", "/html/body/main[1]/button[1]", "class", "btn-x"))
		r := Find(rec, to)
		checkInvariants(t, r)
		if r.Index != 2 || !r.Unique || r.Strategy != ByRoleName {
			t.Fatalf("got %+v, want 2 by role_name narrowed by its path", r)
		}
	})
	t.Run("a new identical look-alike: ambiguous, never unique", func(t *testing.T) {
		from := page(el("button", "button", "Apply", "/html/body/main[1]/button[1]", "class", "btn"))
		rec := record(t, from, 1)
		to := page(
			el("button", "button", "Apply", "/html/body/main[1]/button[1]", "class", "btn"),
			el("button", "button", "Apply", "/html/body/main[1]/button[2]", "class", "btn"))
		r := Find(rec, to)
		checkInvariants(t, r)
		if r.Unique || !r.Ambiguous || r.Index != 1 || r.Strategy != ByXPath {
			t.Fatalf("got %+v, want 1 at the recorded xpath, ambiguous", r)
		}
	})
	t.Run("a renamed control and a new one with its old name: no choice", func(t *testing.T) {
		from := page(el("button", "button", "Apply", "/html/body/main[1]/form[1]/button[1]", "type", "submit", "id", "apply-btn", "name", "apply", "class", "btn primary"))
		to := page(
			el("button", "button", "Apply", "/html/body/header[1]/button[1]", "type", "submit", "id", "promo-apply", "class", "promo"),
			el("button", "button", "Apply now", "/html/body/main[1]/form[1]/button[1]", "type", "submit", "id", "apply-btn", "name", "apply", "class", "btn primary"))
		r := Find(record(t, from, 1), to)
		checkInvariants(t, r)
		if r.Found() || r.Unique || !r.Ambiguous || !r.Outscored || len(r.Candidates) != 2 || r.Candidates[0].Index != 2 {
			t.Fatalf("got %+v, want no choice, ambiguous, the renamed control first", r)
		}
	})
	// One shared attribute and another name: another control (finding:
	// the attributes strategy took these, Unique, about 0.5).
	sharedAttr := []struct {
		name     string
		from, to events.ElementInfo
	}{
		{"submit buttons sharing name=action",
			el("button", "button", "Save", "/html/body/form[1]/button[1]", "type", "submit", "name", "action", "class", "btn"),
			el("button", "button", "Delete", "/html/body/form[1]/button[1]", "type", "submit", "name", "action", "class", "btn-x")},
		{"rails submit inputs sharing name=commit",
			el("input", "button", "Save draft", "/html/body/form[1]/input[3]", "type", "submit", "name", "commit"),
			el("input", "button", "Publish", "/html/body/form[1]/input[3]", "type", "submit", "name", "commit")},
		{"a wizard's one button id",
			el("button", "button", "Save", "/html/body/div[1]/button[1]", "id", "wizard-next", "class", "btn"),
			el("button", "button", "Delete", "/html/body/div[1]/button[1]", "id", "wizard-next", "class", "btn danger")},
		{"links to one page",
			el("a", "link", "Cancel subscription", "/html/body/main[1]/a[1]", "href", "/account/subscription"),
			el("a", "link", "Upgrade subscription", "/html/body/main[1]/a[1]", "href", "/account/subscription")},
		{"href=#",
			el("a", "link", "Remove", "/html/body/ul[1]/li[1]/a[1]", "href", "#", "title", "Remove"),
			el("a", "link", "Archive", "/html/body/ul[1]/li[1]/a[1]", "href", "#")},
		{"javascript: links",
			el("a", "link", "Remove", "/html/body/ul[1]/li[1]/a[1]", "href", "javascript:void(0)", "class", "act"),
			el("a", "link", "Archive", "/html/body/ul[1]/li[1]/a[1]", "href", "javascript:void(0)", "class", "act2")},
	}
	for _, c := range sharedAttr {
		t.Run(c.name+": another name is another control", func(t *testing.T) {
			r := Find(record(t, page(c.from), 1), page(c.to))
			checkInvariants(t, r)
			if r.Found() || r.Unique {
				t.Fatalf("%q taken for %q: %+v", c.to.Name, c.from.Name, r)
			}
		})
	}
	t.Run("a shared test id outweighs a renamed control", func(t *testing.T) {
		from := page(el("button", "button", "Save", "/html/body/form[1]/button[1]", "data-testid", "save", "name", "action"))
		r := Find(record(t, from, 1), page(el("button", "button", "Save changes", "/html/body/div[1]/button[1]", "data-testid", "save", "name", "action")))
		checkResult(t, r, true)
		if !r.Unique || r.Strategy != ByAttributes {
			t.Fatalf("got %+v, want the button by its test id", r)
		}
	})
	t.Run("ids numbered by row: reordered rows are not told apart by them", func(t *testing.T) {
		row := func(tr int, id string) events.ElementInfo {
			return el("button", "button", "Delete", fmt.Sprintf("/html/body/table[1]/tbody[1]/tr[%d]/td[2]/button[1]", tr), "id", id, "class", "btn")
		}
		rec := record(t, page(row(1, "del-0"), row(2, "del-1")), 1)
		if slices.Contains(rec.Distinct, "id") {
			t.Fatalf("a positional id recorded as distinguishing: %+v", rec)
		}
		// Rows reordered: the new first row's button owns del-0 now.
		r := Find(rec, page(row(1, "del-0"), row(2, "del-1")))
		checkInvariants(t, r)
		if r.Unique || !r.Ambiguous {
			t.Fatalf("got %+v, want a positional choice, ambiguous", r)
		}
		// Ids that are names, not positions, still tell rows apart.
		named := record(t, page(row(1, "del-go"), row(2, "del-sre")), 2)
		if !slices.Contains(named.Distinct, "id") {
			t.Fatalf("a named id not recorded as distinguishing: %+v", named)
		}
		r = Find(named, page(row(1, "del-sre"), row(2, "del-go")))
		checkInvariants(t, r)
		if !r.Unique || r.Index != 1 {
			t.Fatalf("got %+v, want the del-sre row (1)", r)
		}
	})
	t.Run("a nameless icon with a new icon before it: not by its place", func(t *testing.T) {
		from := page(el("button", "button", "", "/html/body/header[1]/button[1]", "type", "button", "class", "sc-a1 trash"))
		r := Find(record(t, from, 1), page(
			el("button", "button", "", "/html/body/header[1]/button[1]", "type", "button", "class", "sc-b7 share"),
			el("button", "button", "", "/html/body/header[1]/button[2]", "type", "button", "class", "sc-b8 trash2")))
		checkInvariants(t, r)
		if r.Unique || !r.Ambiguous {
			t.Fatalf("the icon now at the recorded place taken for sure: %+v", r)
		}
	})
	t.Run("an element in another frame is never the one", func(t *testing.T) {
		consent := el("button", "button", "Accept", "/html/body/div[1]/button[1]", "class", "btn")
		consent.Frame = "https://consent.example/banner"
		own := el("button", "button", "Accept", "/html/body/div[1]/button[1]", "class", "btn")
		r := Find(record(t, page(consent, el("a", "link", "Home", "/html/body/a[1]")), 1), page(own))
		checkInvariants(t, r)
		if r.Found() || len(r.Candidates) != 1 || r.Candidates[0].Conflict != "frame" {
			t.Fatalf("the page's own Accept taken for the frame's: %+v", r)
		}
		rec := record(t, page(own, consent), 1)
		if rec.Similar != 1 || rec.Frame != "" {
			t.Fatalf("a look-alike in another frame counted: %+v", rec)
		}
		r = Find(rec, page(consent, own))
		checkInvariants(t, r)
		if !r.Unique || r.Index != 2 || r.Strategy != ByHash {
			t.Fatalf("got %+v, want the page's own Accept (2) by hash", r)
		}
	})
	t.Run("relative and absolute hrefs to one page agree; two origins do not", func(t *testing.T) {
		from := page(el("a", "link", "Apply", "/html/body/a[1]", "href", "/apply/go?ref=1"))
		r := Find(record(t, from, 1), page(el("a", "link", "Apply", "/html/body/a[1]", "href", "http://127.0.0.1:5555/apply/go")))
		checkInvariants(t, r)
		if !r.Unique || r.Index != 1 {
			t.Fatalf("an absolute link to the same path: %+v", r)
		}
		from = page(el("a", "link", "Apply", "/html/body/a[1]", "href", "https://jobs.example/apply/go"))
		r = Find(record(t, from, 1), page(el("a", "link", "Apply", "/html/body/a[1]", "href", "https://evil.example/apply/go")))
		checkInvariants(t, r)
		if r.Found() || r.Candidates[0].Conflict != "href" {
			t.Fatalf("a link to another origin: %+v", r)
		}
	})
	t.Run("a name recorded with a scrubbed secret matches around any secret", func(t *testing.T) {
		rec := Element{Tag: "a", Role: "link", Name: "Account <secret>mail</secret> (<secret>plan</secret>)", Attrs: map[string]string{"href": "/account"}}
		for name, want := range map[string]bool{
			"Account ada@example.org (Pro)": true, "ACCOUNT x (y)": true,
			"Account  (Pro)": false, "Billing ada (Pro)": false, "Account ada": false,
		} {
			r := Find(rec, page(el("a", "link", name, "/html/body/a[1]", "href", "/account")))
			checkInvariants(t, r)
			if got := r.Unique && r.Strategy == ByRoleName; got != want {
				t.Errorf("%q: %+v, want found by role_name %v", name, r, want)
			}
		}
	})
	t.Run("xpath with an inconsistent name is not a match", func(t *testing.T) {
		from := page(el("button", "button", "Withdraw", "/html/body/main[1]/button[2]", "id", "w"))
		r := Find(record(t, from, 1), page(el("button", "button", "More actions", "/html/body/main[1]/button[2]", "id", "m")))
		checkInvariants(t, r)
		if r.Found() {
			t.Fatalf("another button at the same xpath was chosen: %+v", r)
		}
	})
}

func TestVolatileStateIgnored(t *testing.T) {
	from := page(
		el("a", "link", "Jobs", "/html/body/nav[1]/a[2]", "href", "/jobs?utm_source=mail&s=abc#top", "class", "nav-link is-active hover"),
		el("button", "button", "Filters", "/html/body/main[1]/button[1]", "class", "toggle menu--expanded btnActive focus-visible", "aria-controls", "f"))
	to := page(
		el("a", "link", "Jobs", "/html/body/nav[1]/a[2]", "href", "/jobs?utm_source=web", "class", "nav-link"),
		el("button", "button", "Filters", "/html/body/main[1]/button[1]", "class", "toggle", "aria-controls", "f"))
	for idx := 1; idx <= 2; idx++ {
		r := Find(record(t, from, idx), to)
		checkInvariants(t, r)
		if r.Index != idx || r.Strategy != ByStableHash || !r.Unique {
			t.Fatalf("element %d: got %+v, want it by stable_hash", idx, r)
		}
	}
	if got := stableClasses("text-center btn is-open Active col-6 fade-in"); got != "btn col-6 text-center" {
		t.Fatalf("stableClasses kept %q", got)
	}
}

func TestRecord(t *testing.T) {
	p := jobsPage(pageOpts{testIDs: true})
	e := record(t, p, indexOf(t, p, "button", "Delete", "delete-sre"))
	if e.Similar != 3 || e.Ordinal != 2 {
		t.Fatalf("Delete of the 2nd row: ordinal %d of %d, want 2 of 3", e.Ordinal, e.Similar)
	}
	if len(e.Distinct) != 1 || e.Distinct[0] != "data-testid" {
		t.Fatalf("Distinct = %v, want [data-testid]", e.Distinct)
	}
	link := record(t, p, indexOf(t, p, "a", "View", "/jobs/sre"))
	if !strings.Contains(strings.Join(link.Distinct, ","), "href") {
		t.Fatalf("a row link's Distinct %v lacks href", link.Distinct)
	}
	apply := record(t, p, indexOf(t, p, "button", "Apply for this job", ""))
	if apply.Similar != 1 || apply.Ordinal != 1 || apply.Distinct != nil || apply.Hash == "" || apply.StableHash == "" {
		t.Fatalf("unique button recorded as %+v", apply)
	}

	// A field's value and attributes that are not identifying are never
	// kept; whitespace in the name collapses.
	in := page(el("input", "textbox", "  Card\n number ", "/html/body/form[1]/input[1]",
		"type", "text", "value", "4111 1111", "name", "card", "data-secret", "x", "style", "color:red"))
	rec := record(t, in, 1)
	if _, ok := rec.Attrs["value"]; ok || len(rec.Attrs) != 2 || rec.Name != "Card number" {
		t.Fatalf("recorded %+v", rec)
	}
	if _, ok := Record(99, in); ok {
		t.Fatal("Record of a missing index succeeded")
	}

	// The Index records alike.
	x := NewIndex(p)
	for i := range p {
		a, _ := Record(i, p)
		b, _ := x.Record(i)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("index %d: Record %+v, Index.Record %+v", i, a, b)
		}
	}
	if x.Len() != len(p) {
		t.Fatalf("Len %d, want %d", x.Len(), len(p))
	}
	if _, ok := x.Record(99); ok {
		t.Fatal("Index.Record of a missing index succeeded")
	}
}

func TestIndexFindsLikeFind(t *testing.T) {
	from, to := jobsPage(pageOpts{}), jobsPage(pageOpts{reorder: true, clsPrefix: "x-", banner: true})
	x := NewIndex(to)
	for i := range from {
		rec := record(t, from, i)
		a, b := Find(rec, to), x.Find(rec)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("element %d: Find %+v, Index.Find %+v", i, a, b)
		}
		checkInvariants(t, a)
	}
}

func TestRolesCompatible(t *testing.T) {
	for _, c := range []struct {
		a, b string
		ok   bool
	}{
		{"button", "button", true}, {"button", "menuitem", true}, {"link", "menuitem", true},
		{"checkbox", "switch", true}, {"", "button", true},
		{"button", "checkbox", false}, {"textbox", "combobox", false}, {"radio", "checkbox", false},
	} {
		if got := rolesCompatible(c.a, c.b); got != c.ok {
			t.Errorf("rolesCompatible(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// bigPage is an observation of n elements: table rows of look-alike links
// and buttons, with the target near the end.
func bigPage(n int) map[int]events.ElementInfo {
	m := make(map[int]events.ElementInfo, n)
	for i := 1; i <= n; i++ {
		tr := fmt.Sprintf("/html/body/div[1]/main[1]/table[1]/tbody[1]/tr[%d]", i/3+1)
		var e events.ElementInfo
		switch i % 3 {
		case 0:
			e = el("a", "link", "View", tr+"/td[1]/a[1]", "href", fmt.Sprintf("/items/%d", i), "class", "row-link")
		case 1:
			e = el("button", "button", "Delete", tr+"/td[2]/button[1]", "type", "button", "class", "btn btn-danger", "data-testid", fmt.Sprintf("del-%d", i))
		default:
			e = el("input", "checkbox", fmt.Sprintf("Select item %d", i), tr+"/td[3]/input[1]", "type", "checkbox", "name", "sel")
		}
		e.Index = i
		m[i] = e
	}
	return m
}

func benchFind(b *testing.B, n int, indexed bool) {
	p := bigPage(n)
	target := n - n%3 - 2 // a Delete button near the end
	rec, ok := Record(target, p)
	if !ok {
		b.Fatal("no target")
	}
	// The next version: classes renamed, so the hashes miss.
	to := maps.Clone(p)
	for i, e := range to {
		a := maps.Clone(e.Attributes)
		a["class"] = "v2-" + a["class"]
		e.Attributes = a
		to[i] = e
	}
	x := NewIndex(to)
	b.ResetTimer()
	for b.Loop() {
		var r Result
		if indexed {
			r = x.Find(rec)
		} else {
			r = Find(rec, to)
		}
		if r.Index != target || !r.Unique {
			b.Fatalf("found %+v, want %d", r, target)
		}
	}
}

func BenchmarkFind1k(b *testing.B)       { benchFind(b, 1000, false) }
func BenchmarkFind10k(b *testing.B)      { benchFind(b, 10000, false) }
func BenchmarkIndexFind1k(b *testing.B)  { benchFind(b, 1000, true) }
func BenchmarkIndexFind10k(b *testing.B) { benchFind(b, 10000, true) }

// The worst case: n look-alike links all on the recorded tag path (one
// table), none with a test id, classes renamed since the recording, so
// both hashes are computed for every one and only the href tells the
// recorded link apart.
func worstPage(n int, class string) map[int]events.ElementInfo {
	m := make(map[int]events.ElementInfo, n)
	for i := 1; i <= n; i++ {
		e := el("a", "link", "View", fmt.Sprintf("/html/body/div[1]/main[1]/table[1]/tbody[1]/tr[%d]/td[1]/a[1]", i),
			"href", fmt.Sprintf("/items/%d", i), "class", class)
		e.Index = i
		m[i] = e
	}
	return m
}

func benchWorst(b *testing.B, n int, indexed bool) {
	target := n - 1
	rec, ok := Record(target, worstPage(n, "row-link"))
	if !ok {
		b.Fatal("no target")
	}
	to := worstPage(n, "v2-row-link")
	b.ResetTimer()
	for b.Loop() {
		var r Result
		if indexed {
			// A fresh Index each time: its hashes are cached.
			r = NewIndex(to).Find(rec)
		} else {
			r = Find(rec, to)
		}
		if r.Index != target || !r.Unique {
			b.Fatalf("found %+v, want %d", r, target)
		}
	}
}

func BenchmarkFindWorst1k(b *testing.B)  { benchWorst(b, 1000, false) }
func BenchmarkFindWorst10k(b *testing.B) { benchWorst(b, 10000, false) }

func BenchmarkRecord10k(b *testing.B) {
	p := worstPage(10000, "row-link")
	b.ResetTimer()
	for b.Loop() {
		if e, ok := Record(9999, p); !ok || e.Similar != 10000 {
			b.Fatalf("recorded %+v", e)
		}
	}
}

// Finds on one Index may run at once (the hashes are computed lazily).
func TestIndexConcurrentFinds(t *testing.T) {
	from, to := jobsPage(pageOpts{}), jobsPage(pageOpts{banner: true})
	x := NewIndex(to)
	want := map[int]Result{}
	for i := range from {
		want[i] = Find(record(t, from, i), to)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(from)*4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range from {
				rec, _ := Record(i, from)
				if got := x.Find(rec); fmt.Sprint(got) != fmt.Sprint(want[i]) {
					errs <- fmt.Sprintf("element %d: %+v, want %+v", i, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
