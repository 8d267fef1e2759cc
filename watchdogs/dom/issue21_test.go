package dom

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
)

// Tests of issue 21: what a person can click, the agent can click.

// element returns the indexed element whose id attribute is id.
func element(t testing.TB, st events.BrowserState, id string) events.ElementInfo {
	t.Helper()
	i, ok := indexOf(st, id)
	if !ok {
		t.Fatalf("%s has no index:\n%s", id, st.DOMText)
	}
	return st.Elements[i]
}

// Elements of same-process iframes (srcdoc and same-site src) carry their
// accessible role and name, on the full-tree path (small pages) and on the
// per-candidate path (large pages).
func TestDOMWAXInSameProcessFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"full", Config{}}, {"partial", Config{FullAXMaxElements: -1}}} {
		t.Run(tc.name, func(t *testing.T) {
			env, s, _ := start(t, tc.cfg)
			ctx := wdtest.Ctx(t)
			wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-frames-ax.html"))
			st := wdtest.State(t, ctx, s)
			for _, want := range []struct{ id, role, name string }{
				{"srcdoc-button", "button", "Srcdoc save"},
				{"srcdoc-input", "textbox", "Srcdoc search"},
				{"inner-button", "button", "Inner save"},
				{"inner-input", "textbox", "Inner email"},
			} {
				e := element(t, st, want.id)
				if e.Role != want.role || e.Name != want.name {
					t.Errorf("%s: role %q name %q, want %q %q", want.id, e.Role, e.Name, want.role, want.name)
				}
				if e.TargetID != s.FocusedTab() {
					t.Errorf("%s: target %q, want the page's (same process)", want.id, e.TargetID)
				}
			}
			if t.Failed() {
				t.Log(st.DOMText)
			}
			// The srcdoc button's index reaches the frame's button.
			clickIndex(t, ctx, s, element(t, st, "srcdoc-button").Index)
			var clicked int
			wdtest.Eval(t, ctx, s, "document.getElementById('srcdoc-frame').contentWindow.clicked || 0", &clicked)
			if clicked != 1 {
				t.Fatalf("srcdoc button clicked %d times", clicked)
			}
		})
	}
}

// The viewport allowance applies sideways too: a button just past the
// right edge of a wide row gets an index (the page info says there is more
// to the right); one far beyond the allowance does not.
func TestDOMWHorizontalAllowance(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-wide.html"))
	st := wdtest.State(t, ctx, s)
	element(t, st, "near")
	e := element(t, st, "just-past")
	if e.Bounds == nil || e.Bounds.X < float64(st.Page.ViewportWidth) {
		t.Fatalf("just-past bounds %+v, viewport %d wide: the fixture should put it past the edge", e.Bounds, st.Page.ViewportWidth)
	}
	if _, ok := indexOf(st, "far"); ok {
		t.Fatalf("a button 5000 px to the right got an index:\n%s", st.DOMText)
	}
	if st.Page.PixelsRight <= 0 || st.Page.PageWidth <= st.Page.ViewportWidth {
		t.Fatalf("page info %+v: more lies to the right", st.Page)
	}
	// Scrolled to the right, the elements left of the viewport keep their
	// index within the allowance too.
	wdtest.Eval(t, ctx, s, "scrollTo(700, 0), scrollX", nil)
	st = wdtest.State(t, ctx, s)
	if e := element(t, st, "near"); e.Bounds == nil || e.Bounds.X+e.Bounds.Width > 0 {
		t.Fatalf("near bounds %+v after scrolling right: should be left of the viewport", e.Bounds)
	}
	clickIndex(t, ctx, s, element(t, st, "just-past").Index)
	var clicked string
	wdtest.Eval(t, ctx, s, "window.clicked || ''", &clicked)
	if clicked != "just-past" {
		t.Fatalf("click on just-past reached %q", clicked)
	}
}

// Custom checkboxes and radios: the real control is visually hidden (opacity
// 0, clip to 1 px, display:none, appearance:none at zero size) and its label
// is drawn. The label gets the index and tells the control's kind and state;
// the hidden control gets none; a label of a visible control stays unindexed.
func TestDOMWCustomCheckboxLabels(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-checkbox.html"))
	st := wdtest.State(t, ctx, s)
	want := map[string]string{ // label id → what its line must say
		"terms-label":  "role=checkbox checked=false",
		"news-label":   "role=checkbox checked=true",
		"plan-a-label": "role=radio checked=false",
		"plan-b-label": "role=radio checked=false",
		"wrap-label":   "role=checkbox checked=false",
	}
	for id, state := range want {
		e := element(t, st, id)
		if l := line(st.DOMText, "id="+id+" "); e.Tag != "label" || !strings.Contains(l, state) {
			t.Errorf("%s: tag %q line %q, want %q", id, e.Tag, l, state)
		}
	}
	if e := element(t, st, "terms-label"); e.Role != "checkbox" || e.Name != "I accept the terms" {
		t.Errorf("terms label element role %q name %q: the control's", e.Role, e.Name)
	}
	for _, id := range []string{"terms", "news", "plan-a", "plan-b", "wrapped", "plain-label"} {
		if _, ok := indexOf(st, id); ok {
			t.Errorf("%s got an index (the label stands in, or the control is visible)", id)
		}
	}
	element(t, st, "plain")
	if t.Failed() {
		t.Fatalf("\n%s", st.DOMText)
	}

	// Clicking the labels toggles the hidden controls, and the next
	// observation shows the new state.
	for _, id := range []string{"terms-label", "news-label", "plan-b-label", "wrap-label"} {
		clickIndex(t, ctx, s, element(t, st, id).Index)
	}
	var got []bool
	wdtest.Eval(t, ctx, s, "['terms','news','plan-a','plan-b','wrapped'].map(id => document.getElementById(id).checked)", &got)
	if len(got) != 5 || !got[0] || got[1] || got[2] || !got[3] || !got[4] {
		t.Fatalf("checked after the clicks %v, want [true false false true true]", got)
	}
	st = wdtest.State(t, ctx, s)
	for id, state := range map[string]string{"terms-label": "checked=true", "news-label": "checked=false", "plan-b-label": "checked=true", "wrap-label": "checked=true"} {
		if l := line(st.DOMText, "id="+id+" "); !strings.Contains(l, state) {
			t.Errorf("%s after the click: %q, want %s", id, l, state)
		}
	}
}

// Shapes of an inline SVG with an onclick attribute or a JS click listener
// get an index under their (still collapsed) <svg>; an SVG with nothing
// clickable inside stays one collapsed line.
func TestDOMWSVGShapes(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-svg.html"))
	st := wdtest.State(t, ctx, s)
	ids := []string{"dot", "bar", "tri", "grp"}
	for _, id := range ids {
		element(t, st, id)
	}
	if _, ok := indexOf(st, "inert"); ok {
		t.Fatalf("a shape without a handler got an index:\n%s", st.DOMText)
	}
	if l := line(st.DOMText, "id=deco"); !strings.Contains(l, "collapsed") {
		t.Fatalf("decorative svg line %q\n%s", l, st.DOMText)
	}
	chart, dot := line(st.DOMText, "<svg id=chart"), line(st.DOMText, "<circle id=dot")
	if chart == "" || strings.Count(dot, "\t") != strings.Count(chart, "\t")+1 {
		t.Fatalf("shapes not listed under their svg:\n%s", st.DOMText)
	}
	if g := line(st.DOMText, "<g id=grp"); !strings.Contains(st.DOMText, g+"\n"+strings.Repeat("\t", strings.Count(g, "\t")+1)+"Go") {
		t.Fatalf("the group's text does not follow it:\n%s", st.DOMText)
	}
	for _, id := range ids {
		clickIndex(t, ctx, s, element(t, st, id).Index)
	}
	var hits []string
	wdtest.Eval(t, ctx, s, "window.hits", &hits)
	if strings.Join(hits, ",") != "dot,bar,tri,grp" {
		t.Fatalf("clicks reached %v", hits)
	}
}

// The editable body of a rich-text editor's iframe is the field: it gets
// an index (contenteditable attribute or design mode, same-process srcdoc
// and src frames and a cross-site frame), and the paragraphs inside it do
// not. Clicking the index focuses the editor.
func TestDOMWEditableBodyInIframes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"full", Config{}}, {"partial", Config{FullAXMaxElements: -1}}} {
		t.Run(tc.name, func(t *testing.T) {
			env, s, _ := start(t, tc.cfg)
			ctx := wdtest.Ctx(t)
			wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-editor.html"))
			tab := s.FocusedTab()
			var st events.BrowserState
			var cross *events.ElementInfo
			// The cross-site frame's target attaches asynchronously.
			pollUntil(testbrowser.Timeout, func() bool {
				st = wdtest.State(t, ctx, s)
				for _, e := range st.Elements {
					if e.Attributes["id"] == "ce-body" && e.TargetID != tab {
						cross = &e
					}
				}
				return cross != nil
			})
			if cross == nil {
				t.Fatalf("the cross-site editor's body has no index:\n%s", st.DOMText)
			}
			same := map[string]events.ElementInfo{}
			for _, e := range st.Elements {
				if e.Tag == "p" {
					t.Errorf("a paragraph inside an editor got index %d", e.Index)
				}
				if e.Tag == "body" && e.TargetID == tab {
					same[e.Attributes["id"]] = e
				}
			}
			for _, id := range []string{"srcdoc-body", "ce-body", "design-body"} {
				if _, ok := same[id]; !ok {
					t.Errorf("%s has no index", id)
					continue
				}
				if l := line(st.DOMText, "id="+id+" "); !strings.Contains(l, "contenteditable=true") {
					t.Errorf("%s line %q does not say it is editable", id, l)
				}
			}
			if t.Failed() {
				t.Fatalf("\n%s", st.DOMText)
			}

			clickIndex(t, ctx, s, same["design-body"].Index)
			var focused string
			wdtest.Eval(t, ctx, s, `(() => { const d = document.getElementById('design-editor').contentDocument;
				return d.hasFocus() ? d.activeElement.id : 'no focus' })()`, &focused)
			if focused != "design-body" {
				t.Fatalf("after clicking the design-mode body, focus is on %q", focused)
			}
			clickIndex(t, ctx, s, cross.Index)
			fs := frameSession(t, s, cross.SessionID)
			if err := pagejs.Evaluate(ctx, fs, "document.hasFocus() ? document.activeElement.id : 'no focus'", &focused); err != nil || focused != "ce-body" {
				t.Fatalf("after clicking the cross-site body, focus is on %q (%v)", focused, err)
			}
		})
	}
}

// A fixed header or footer band, or a sticky pane header, does not hide what
// is scrolled under it when scrolling can bring it clear; it does hide what
// no scrolling can clear (the top of the page under a fixed header).
func TestDOMWBandCovers(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-cover.html"))
	st := wdtest.State(t, ctx, s)
	if _, ok := indexOf(st, "stuck-under-top"); ok {
		t.Fatalf("a button under the fixed header at the top of the page got an index:\n%s", st.DOMText)
	}
	if e := element(t, st, "under-cookie"); e.Bounds == nil || e.Bounds.Y < float64(st.Page.ViewportHeight-100) {
		t.Fatalf("under-cookie bounds %+v: the fixture should put it under the cookie band", e.Bounds)
	}
	element(t, st, "cookie-ok")

	// Scrolled so that the button sits under the fixed header.
	wdtest.Eval(t, ctx, s, "scrollTo(0, document.getElementById('under-fixed').getBoundingClientRect().top + scrollY - 30), scrollY", nil)
	st = wdtest.State(t, ctx, s)
	e := element(t, st, "under-fixed")
	if e.Bounds == nil || e.Bounds.Y < 0 || e.Bounds.Y+e.Bounds.Height > 80 {
		t.Fatalf("under-fixed bounds %+v: the fixture should put it under the 80 px header", e.Bounds)
	}
	if !strings.Contains(st.DOMText, "Scrolled under the header") {
		t.Fatalf("the covered button's text is missing:\n%s", st.DOMText)
	}

	// A sticky header inside a scrolling pane.
	wdtest.Navigate(t, ctx, s, env.URL("/dom-issue21-sticky.html"))
	wdtest.Eval(t, ctx, s, `(p => { p.scrollTop += document.getElementById('item-4').getBoundingClientRect().top - p.getBoundingClientRect().top - 5; return p.scrollTop })(document.getElementById('pane'))`, nil)
	st = wdtest.State(t, ctx, s)
	var head [2]float64
	wdtest.Eval(t, ctx, s, `(r => [r.top, r.bottom])(document.getElementById('pane-head').getBoundingClientRect())`, &head)
	e = element(t, st, "item-4")
	if e.Bounds == nil || e.Bounds.Y < head[0] || e.Bounds.Y+e.Bounds.Height > head[1] {
		t.Fatalf("item-4 bounds %+v, sticky header %v: the fixture should put it under the header", e.Bounds, head)
	}
	if !strings.Contains(st.DOMText, "Item 4") {
		t.Fatalf("the covered item's text is missing:\n%s", st.DOMText)
	}
}
