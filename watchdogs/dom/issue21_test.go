package dom

import (
	"testing"

	"github.com/browseragent/browseragent/events"
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
