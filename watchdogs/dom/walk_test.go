package dom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// walkPages are the fixture pages the package's tests observe.
var walkPages = []string{
	"/dom-forms.html", "/shadow.html", "/iframes.html", "/nested-iframes.html", "/dom-scroll.html",
	"/dom-modal.html", "/dom-links.html", "/dom-listeners.html", "/dom-rerender.html", "/dom-pending.html",
	"/dom-issue21-checkbox.html", "/dom-issue21-cover.html", "/dom-issue21-editor.html",
	"/dom-issue21-editor-ce.html", "/dom-issue21-frames-ax.html", "/dom-issue21-sticky.html",
	"/dom-issue21-svg.html", "/dom-issue21-wide.html", "/scroll.html", "/form.html",
	"/generated?n=1000", "/generated?n=10000",
}

// TestDOMWWalkerMatchesFullCapture observes every fixture page with the
// viewport walker and with the full capture, on the same loaded page, and
// wants the same text (indexes are real backend ids in both) and the same
// page statistics (what the walk left out is counted).
func TestDOMWWalkerMatchesFullCapture(t *testing.T) {
	// The full capture of the 10k page takes seconds on a busy machine.
	env, s, w := start(t, Config{Timeout: 2 * time.Minute})
	ctx := wdtest.Ctx(t)
	check := func(name string) {
		t.Helper()
		matchFullCapture(t, ctx, s, w, name)
	}
	for _, p := range walkPages {
		wdtest.Navigate(t, ctx, s, env.URL(p))
		check(p)
	}
	// A long page scrolled to its middle.
	wdtest.Navigate(t, ctx, s, env.URL("/generated?n=5000"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var h float64
	if err := pagejs.Evaluate(ctx, cs, "(scrollTo(0, document.documentElement.scrollHeight/2), scrollY)", &h); err != nil || h <= 0 {
		t.Fatalf("scroll: %v %v", h, err)
	}
	check("generated-5000 scrolled to the middle")
}

// TestDOMWWalkerHardPages: the pages where the walker's reading differs
// from what Chrome renders (pseudo-element icons, a closed <details>'
// content and content-visibility:hidden that still report boxes, paint
// order over stacking contexts: a fixed header and a modal overlay over
// content, transformed / translucent / filtered / isolated boxes, flex
// order, a closed shadow root's fixed banner over the page's fixed footer,
// another's button under the page's overlay)
// give the same text as the full capture, and say what they must.
// (The ::before icon is TestDOMWIconHints'.)
func TestDOMWWalkerHardPages(t *testing.T) {
	env, s, w := start(t, Config{Timeout: 2 * time.Minute})
	ctx := wdtest.Ctx(t)
	for _, p := range walkHardPages {
		wdtest.Navigate(t, ctx, s, env.URL(p))
		text := matchFullCapture(t, ctx, s, w, p)
		switch p {
		case "/dom-walk-details.html":
			for _, hidden := range []string{"Hidden inside closed", "Closed details text", "Loose closed text", "Hidden link",
				"Hidden inside nested", "Closed without summary", "Hidden until found", "Hidden by content-visibility",
				"Unslotted light"} {
				if strings.Contains(text, hidden) {
					t.Errorf("%s: %q is not rendered but is in the walker's text", p, hidden)
				}
			}
			for _, shown := range []string{"Shipping options", "Payment", "Visible inside open", "More", "After all",
				"Closed root button"} {
				if !strings.Contains(text, shown) {
					t.Errorf("%s: %q is missing from the walker's text", p, shown)
				}
			}
		case "/dom-walk-stacking.html":
			for _, shown := range []string{"id=home", "id=menu", "id=b-flex-top", "id=b-flex-under", "id=ok", "id=accept-all"} {
				if !strings.Contains(text, shown) {
					t.Errorf("%s: %s is not indexed", p, shown)
				}
			}
			for _, covered := range []string{"id=b-lift", "id=b-veil", "id=b-blur", "id=b-iso", "id=b-modal-2", "id=b-modal-3",
				"id=footer-button", "id=closed-under"} {
				if strings.Contains(text, covered) {
					t.Errorf("%s: %s is covered but indexed", p, covered)
				}
			}
		}
		if t.Failed() {
			t.Logf("%s walker text:\n%s", p, text)
		}
	}
}

// walkHardPages are the fixture pages of TestDOMWWalkerHardPages.
var walkHardPages = []string{"/dom-walk-details.html", "/dom-walk-stacking.html"}

// matchFullCapture observes the focused tab with the full capture and with
// the viewport walker and fails t unless the texts and statistics are the
// same; it returns the walker's text.
func matchFullCapture(t *testing.T, ctx context.Context, s *session.Session, w *Watchdog, name string) string {
	t.Helper()
	{
		tab := s.FocusedTab()
		cs, err := s.PageSession(tab)
		if err != nil {
			t.Fatal(err)
		}
		texts := [2]string{}
		for i, full := range []bool{true, false} {
			w.cfg.FullCapture = full
			obs, err := w.capture(ctx, s, tab, cs)
			if err != nil || obs.res == nil {
				t.Fatalf("%s (full %v): %v", name, full, err)
			}
			if !full && obs.page.wk == nil {
				t.Fatalf("%s: the walker was not used", name)
			}
			ps := obs.res.Stats
			if full {
				// The walker cannot see user-agent shadow roots (an input's
				// inner editor, a file input's button), which the full
				// capture counts as elements (and inputs): the text is the
				// same, and so is the rest of the statistics.
				els, inputs := uaElements(obs.tree)
				ps.TotalElements -= els
				ps.Inputs -= inputs
			}
			texts[i] = obs.res.Text + "\n--- stats: " + ps.String()
		}
		w.cfg.FullCapture = false
		if texts[0] != texts[1] {
			t.Errorf("%s: walker text differs from the full capture's\n--- full\n%s\n--- walker\n%s", name, texts[0], texts[1])
		}
		return texts[1]
	}
}

// TestDOMWWalkerCountsFarElements: an element far below the viewport is
// counted in the walker's totals but not listed.
func TestDOMWWalkerCountsFarElements(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/generated?n=5000"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var far string
	if err := pagejs.Evaluate(ctx, cs, `(() => { const e = document.createElement('button'); e.id = 'far-away'; e.textContent = 'Far away';
		document.body.appendChild(e); return String(e.getBoundingClientRect().top > 3 * innerHeight); })()`, &far); err != nil || far != "true" {
		t.Fatalf("far element: %v %v", far, err)
	}
	wk, err := walkTarget(ctx, cs, 1200, false)
	if err != nil {
		t.Fatal(err)
	}
	defer wk.release(ctx)
	for k := range wk.ref {
		r := wk.rec(k)
		if r.T == 1 && slicesIndex(r.A, "far-away") >= 0 {
			t.Fatalf("the far element is listed")
		}
	}
	if wk.Below == 0 || len(wk.ref) == 0 {
		t.Fatalf("below %d, listed %d", wk.Below, len(wk.ref))
	}
	st := wdtest.State(t, ctx, s)
	if strings.Contains(st.DOMText, "Far away") {
		t.Fatalf("far element in the text:\n%s", st.DOMText)
	}
	t.Logf("listed %d records, %d elements above, %d below", len(wk.ref), wk.Above, wk.Below)
}

func slicesIndex(a []string, v string) int {
	for i, s := range a {
		if s == v {
			return i
		}
	}
	return -1
}

// uaElements counts the elements inside user-agent shadow roots as
// dom's page statistics would count them, and the inputs among them.
func uaElements(t *dom.Tree) (els, inputs int) {
	var rec func(n *dom.Node, ua bool)
	rec = func(n *dom.Node, ua bool) {
		if n.Type == dom.DocumentFragmentNode && n.ShadowRootType == "user-agent" {
			ua = true
		}
		if n.Type == dom.ElementNode {
			if ua {
				els++
				switch n.Tag {
				case "input", "textarea", "select":
					inputs++
				}
			}
			switch n.Tag {
			case "script", "style", "head", "template", "noscript":
				return
			}
		}
		for _, c := range n.ShadowRoots {
			rec(c, ua)
		}
		for _, c := range n.Children {
			rec(c, ua)
		}
		if n.ContentDocument != nil {
			rec(n.ContentDocument, ua)
		}
	}
	if t.Root != nil {
		rec(t.Root, false)
	}
	return els, inputs
}

// TestDOMWWalkerFailureFallsBack: a walk that fails (here a walker that
// throws) does not become an empty page: the target is captured in full,
// with the same text, and FullCapture skips the walker.
func TestDOMWWalkerFailureFallsBack(t *testing.T) {
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	tab := s.FocusedTab()
	cs, err := s.PageSession(tab)
	if err != nil {
		t.Fatal(err)
	}
	good, err := w.capture(ctx, s, tab, cs)
	if err != nil || good.page.wk == nil {
		t.Fatalf("walked capture: %v (walker used %v)", err, err == nil && good.page.wk != nil)
	}
	saved := walkJS
	walkJS = "(root, opts) => { throw new Error('walker broken on purpose'); }"
	defer func() { walkJS = saved }()
	if _, err := walkTarget(ctx, cs, 1200, false); !errors.Is(err, ErrWalk) {
		t.Fatalf("a throwing walker: %v, want ErrWalk", err)
	}
	obs, err := w.capture(ctx, s, tab, cs)
	if err != nil {
		t.Fatalf("capture with a broken walker: %v", err)
	}
	if obs.page.wk != nil {
		t.Fatal("the broken walker's capture was used")
	}
	if obs.res.Text != good.res.Text || !strings.Contains(obs.res.Text, "Send") {
		t.Fatalf("fallback text differs:\n--- walker\n%s\n--- fallback\n%s", good.res.Text, obs.res.Text)
	}
	walkJS = saved
	w.cfg.FullCapture = true
	defer func() { w.cfg.FullCapture = false }()
	obs, err = w.capture(ctx, s, tab, cs)
	if err != nil || obs.page.wk != nil || obs.res.Text != good.res.Text {
		t.Fatalf("FullCapture: %v, walker used %v", err, err == nil && obs.page.wk != nil)
	}
}

// pollUntil calls cond until it holds or timeout has passed, retrying on a
// ticker (the ticker paces the retries, the deadline bounds them: no fixed
// sleep); it reports whether cond held.
func pollUntil(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// TestDOMWWalkerBusyPage: a page whose script holds the main thread during
// a capture does not hold the observation: the walk is bounded by
// Config.Timeout and the capture fails with a timeout error (the full
// capture it falls back to cannot run either); once the script ends, the
// walker is used again.
func TestDOMWWalkerBusyPage(t *testing.T) {
	env, s, w := start(t, Config{Timeout: 3 * time.Second})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	tab := s.FocusedTab()
	cs, err := s.PageSession(tab)
	if err != nil {
		t.Fatal(err)
	}
	// Never answered: the loop runs until terminated below.
	cs.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "for (;;) {}"})
	obs, err := w.capture(ctx, s, tab, cs)
	if err == nil {
		t.Fatalf("a capture of a page stuck in a loop succeeded (walker used %v)", obs.page.wk != nil)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after") {
		t.Fatalf("busy page: %v, want a timeout error", err)
	}
	if _, err := cdpproto.Call(ctx, cs, runtime.TerminateExecution, cdpproto.Empty{}); err != nil {
		t.Fatal(err)
	}
	var obs2 *observation
	if !pollUntil(testbrowser.Timeout, func() bool {
		obs2, err = w.capture(ctx, s, tab, cs)
		return err == nil && obs2.page.wk != nil
	}) {
		t.Fatalf("after the loop ended: %v", err)
	}
	if !strings.Contains(obs2.res.Text, "Send") {
		t.Fatalf("after the loop ended:\n%s", obs2.res.Text)
	}
}
