package dom

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

// shotPNG is what the test's screenshot watchdog answers: the DOM
// watchdog must put whatever the Screenshot handler returns into the state.
var shotPNG = []byte("\x89PNG fake image of the dom tests")

// start starts a session with the DOM watchdog and a fake screenshot
// watchdog (plus extra ones) connected to the shared test browser.
func start(t testing.TB, cfg Config, extra ...session.Watchdog) (*testbrowser.Env, *session.Session, *Watchdog) {
	t.Helper()
	w := New(cfg)
	s, env, _, _ := wdtest.Connect(t, session.Profile{}, append([]session.Watchdog{w, wdtest.FakeScreenshot(shotPNG)}, extra...)...)
	return env, s, w
}

// line returns the first line of text containing sub.
func line(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// indexOf returns the index whose element has attribute id=id.
func indexOf(st events.BrowserState, id string) (int, bool) {
	for i, e := range st.Elements {
		if e.Attributes["id"] == id {
			return i, true
		}
	}
	return 0, false
}

func TestDOMWForms(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	st := wdtest.State(t, ctx, s)
	text := st.DOMText
	if !strings.HasSuffix(st.URL, "/dom-forms.html") || st.Title != "DOM forms" || st.FocusedTarget != s.FocusedTab() || len(st.Tabs) == 0 {
		t.Fatalf("url %q title %q focus %q tabs %v", st.URL, st.Title, st.FocusedTarget, st.Tabs)
	}
	if l := line(text, "id=name"); !strings.Contains(l, "value=Ada") {
		t.Fatalf("name input line %q\n%s", l, text)
	}
	if l := line(text, "<select"); !strings.Contains(l, "Red|Green|Blue") {
		t.Fatalf("select line without options preview %q\n%s", l, text)
	}
	if l := line(text, "id=notes"); !strings.Contains(l, `"  two  spaces\nsecond line  "`) {
		t.Fatalf("textarea value not exact %q\n%s", l, text)
	}
	if strings.Contains(text, "hunter2") || strings.Contains(text, "typed-secret") {
		t.Fatalf("password value leaked into DOMText:\n%s", text)
	}
	for _, e := range st.Elements {
		for _, v := range e.Attributes {
			if strings.Contains(v, "typed-secret") || strings.Contains(v, "hunter2") {
				t.Fatalf("password value in element attributes %+v", e)
			}
		}
	}
	i, ok := indexOf(st, "hidden-file")
	if !ok || !strings.Contains(text, "type=file") {
		t.Fatalf("hidden file input has no index:\n%s", text)
	}
	if e, err := s.Element(i); err != nil || e.Tag != "input" || e.SessionID == "" {
		t.Fatalf("selector map entry %+v %v", e, err)
	}
	if sb, ok := indexOf(st, "submit"); !ok || st.Elements[sb].Role != "button" || st.Elements[sb].Name != "Send" || st.Elements[sb].Bounds == nil {
		t.Fatalf("submit element %+v (AX role/name expected)", st.Elements[sb])
	}
	var inner [2]int
	wdtest.Eval(t, ctx, s, "[innerWidth, innerHeight]", &inner)
	if st.Page.ViewportWidth != inner[0] || st.Page.ViewportHeight != inner[1] || st.Page.PageHeight < inner[1] {
		t.Fatalf("page info %+v", st.Page)
	}
	if st.Stats.Interactive != len(st.Elements) || st.Stats.Nodes == 0 || st.Fingerprint == "" {
		t.Fatalf("stats %+v fingerprint %q", st.Stats, st.Fingerprint)
	}
	fp, err := s.Fingerprint(ctx, "")
	if err != nil || fp.String() != st.Fingerprint {
		t.Fatalf("fingerprint %q, session now %q (%v): the mutation fence compares them", st.Fingerprint, fp.String(), err)
	}
}

func TestDOMWModalCoversPage(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-modal.html"))
	st := wdtest.State(t, ctx, s)
	if _, ok := indexOf(st, "accept"); !ok {
		t.Fatalf("modal button has no index:\n%s", st.DOMText)
	}
	for _, id := range []string{"under-1", "under-2"} {
		if _, ok := indexOf(st, id); ok {
			t.Fatalf("%s is covered by the modal but has an index:\n%s", id, st.DOMText)
		}
	}
}

func TestDOMWLinkWrappingSpans(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	st := wdtest.State(t, ctx, s)
	i, ok := indexOf(st, "wrap")
	if !ok {
		t.Fatalf("wrapping link has no index:\n%s", st.DOMText)
	}
	for _, e := range st.Elements {
		if e.Tag == "span" {
			t.Fatalf("span inside the link got its own index %d:\n%s", e.Index, st.DOMText)
		}
	}
	if !strings.Contains(st.DOMText, "Read more") || st.Elements[i].Tag != "a" {
		t.Fatalf("link text missing:\n%s", st.DOMText)
	}
}

func TestDOMWNestedScroll(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-scroll.html"))
	st := wdtest.State(t, ctx, s)
	outer, inner := line(st.DOMText, "id=outer"), line(st.DOMText, "id=inner")
	if !strings.Contains(outer, "|scroll element") || !strings.Contains(inner, "|scroll element") {
		t.Fatalf("scroll containers not marked:\nouter %q\ninner %q\n%s", outer, inner, st.DOMText)
	}
	if !strings.Contains(outer, "pages below") || strings.Count(inner, "\t") <= strings.Count(outer, "\t") {
		t.Fatalf("nesting or scroll info wrong:\n%s", st.DOMText)
	}
}

func TestDOMWShadowRoots(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/shadow.html"))
	st := wdtest.State(t, ctx, s)
	for _, want := range []string{"Open Shadow", "Closed Shadow", "Shadow End", "Open button", "Closed button"} {
		if !strings.Contains(st.DOMText, want) {
			t.Fatalf("%q missing:\n%s", want, st.DOMText)
		}
	}
	for _, id := range []string{"open-button", "closed-button", "open-input"} {
		if _, ok := indexOf(st, id); !ok {
			t.Fatalf("%s has no index:\n%s", id, st.DOMText)
		}
	}
}

func TestDOMWIframesAndCrossSiteClick(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/iframes.html"))
	var st events.BrowserState
	// The cross-site frame's target attaches asynchronously; wait for it
	// to show up in the observation.
	pollUntil(testbrowser.Timeout, func() bool {
		st = wdtest.State(t, ctx, s)
		return strings.Count(st.DOMText, "Frame button") >= 2
	})
	var same, cross *events.ElementInfo
	tab := s.FocusedTab()
	for _, e := range st.Elements {
		if e.Attributes["id"] != "frame-button" {
			continue
		}
		if e.TargetID == tab {
			same = &e
		} else {
			cross = &e
		}
	}
	if same == nil || cross == nil {
		t.Fatalf("frame buttons: same %+v cross %+v\n%s", same, cross, st.DOMText)
	}
	if !strings.Contains(st.DOMText, "|IFRAME|") || cross.SessionID == same.SessionID {
		t.Fatalf("iframe markers or sessions wrong:\n%s", st.DOMText)
	}
	if cross.Bounds == nil || cross.Bounds.Y <= same.Bounds.Y {
		t.Fatalf("cross-site button bounds %+v (same-site %+v)", cross.Bounds, same.Bounds)
	}
	clickIndex(t, ctx, s, cross.Index)

	// The click reached the cross-site document.
	fs := frameSession(t, s, cross.SessionID)
	var clicked int
	if err := pagejs.Evaluate(ctx, fs, "window.clicked || 0", &clicked); err != nil || clicked != 1 {
		t.Fatalf("cross-site button clicked %d times (%v)", clicked, err)
	}
}

func frameSession(t testing.TB, s *session.Session, id string) *cdp.Session {
	t.Helper()
	for _, f := range s.FrameTargets("") {
		if f.Session != nil && string(f.Session.ID()) == id {
			return f.Session
		}
	}
	t.Fatalf("no frame session %s", id)
	return nil
}

// clickIndex clicks the element of index i with raw CDP on the session
// that owns it, at its centre in that frame's own coordinates (the actions
// watchdog is tested elsewhere; this checks that the index resolves to the
// right node and session).
func clickIndex(t testing.TB, ctx context.Context, s *session.Session, i int) {
	t.Helper()
	ref, cs, err := s.Resolve(events.Target{Index: i})
	if err != nil {
		t.Fatalf("resolve %d: %v", i, err)
	}
	box, err := cdpproto.Call(ctx, cs, cdpdom.GetBoxModel, cdpdom.GetBoxModelParams{BackendNodeID: cdpproto.BackendNodeID(ref.BackendNodeID)})
	if err != nil {
		t.Fatalf("box model: %v", err)
	}
	q := box.Model.Content
	x, y := (q[0]+q[4])/2, (q[1]+q[5])/2
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: typ, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1,
		}); err != nil {
			t.Fatalf("mouse %s: %v", typ, err)
		}
	}
}

func TestDOMWListenerScan(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-listeners.html"))
	st := wdtest.State(t, ctx, s)
	if _, ok := indexOf(st, "js-card"); !ok {
		t.Fatalf("div with a JS click listener has no index:\n%s", st.DOMText)
	}
	if _, ok := indexOf(st, "plain-card"); ok {
		t.Fatalf("plain div got an index:\n%s", st.DOMText)
	}
}

func TestDOMWRerenderMarksNew(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-rerender.html"))
	st1 := wdtest.State(t, ctx, s)
	if strings.Contains(st1.DOMText, "*[") {
		t.Fatalf("first observation marks elements new:\n%s", st1.DOMText)
	}
	wdtest.Eval(t, ctx, s, "render(2), true", nil)
	st2 := wdtest.State(t, ctx, s)
	for i := 0; i < 3; i++ {
		idx, ok := indexOf(st2, "item-2-"+string(rune('0'+i)))
		if !ok {
			t.Fatalf("re-rendered item %d missing:\n%s", i, st2.DOMText)
		}
		if l := line(st2.DOMText, "id=item-2-"+string(rune('0'+i))); !strings.Contains(l, "*[") {
			t.Fatalf("re-rendered item %d (index %d) not marked new: %q\n%s", i, idx, l, st2.DOMText)
		}
	}
	if l := line(st2.DOMText, "id=refresh"); strings.Contains(l, "*[") {
		t.Fatalf("unchanged button marked new: %q", l)
	}
	if st1.Fingerprint == st2.Fingerprint {
		t.Fatalf("fingerprint unchanged across a re-render: %q", st1.Fingerprint)
	}
	// Old indexes are gone from the session's map.
	old, _ := indexOf(st1, "item-1-0")
	if _, err := s.Element(old); !errors.Is(err, session.ErrElementNotFound) {
		t.Fatalf("stale index %d still resolves: %v", old, err)
	}
}

func TestDOMWLargePageTruncated(t *testing.T) {
	// With the viewport test off every element of a 10k-element page is
	// visible (well over 40,000 characters of text),
	// so the text must be cut at 40,000 characters with a notice. The
	// machine is shared: allow far more than the default 20 s. Roles and
	// names of 30,000 candidates are not what this tests (AXWait -1).
	env, s, _ := start(t, Config{Timeout: 3 * time.Minute, AXWait: -1, Build: dom.Options{ViewportThreshold: -1}})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/generated?n=10000"))
	st := wdtest.State(t, ctx, s)
	notice := line(st.DOMText, "page truncated")
	if notice == "" || !strings.HasSuffix(strings.TrimSpace(st.DOMText), notice) {
		t.Fatalf("no truncation notice at the end (len %d): ...%s", len(st.DOMText), st.DOMText[max(0, len(st.DOMText)-300):])
	}
	if len(st.DOMText) > 40000+len(notice)+1 {
		t.Fatalf("DOMText is %d chars", len(st.DOMText))
	}
	if st.Stats.Nodes < 10000 || len(st.Elements) < 5000 {
		t.Fatalf("stats %+v elements %d: indexes cut from the text must still resolve", st.Stats, len(st.Elements))
	}

	// With the default viewport test the text covers what is near the
	// viewport, and the page geometry tells how much lies below.
	env2, s2, _ := start(t, Config{Timeout: 3 * time.Minute})
	wdtest.Navigate(t, ctx, s2, env2.URL("/generated?n=10000"))
	st2 := wdtest.State(t, ctx, s2)
	if len(st2.DOMText) == 0 || len(st2.DOMText) > 40000+len(notice)+1 || st2.Page.PixelsBelow <= st2.Page.ViewportHeight {
		t.Fatalf("default view: %d chars, page %+v", len(st2.DOMText), st2.Page)
	}
}

func TestDOMWHonestFailure(t *testing.T) {
	env, s, _ := start(t, Config{Timeout: time.Nanosecond})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	s.SetSelectorMap(&session.SelectorMap{Elements: map[int]events.ElementInfo{7: {Index: 7, ElementRef: events.ElementRef{BackendNodeID: 7}}}})
	if _, err := bus.Call(ctx, s.Bus(), events.RequestBlocked, events.RequestBlockedEvent{Host: "tracker.example", ResourceType: "Script"}); err != nil {
		t.Fatal(err)
	}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest,
		events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil {
		t.Fatalf("a failed DOM build must still return a state, got %v", err)
	}
	if !strings.Contains(st.Error, "DOM build failed") || !strings.Contains(st.Error, "no element indexes are valid") {
		t.Fatalf("error %q", st.Error)
	}
	if st.DOMText != "" || len(st.Elements) != 0 {
		t.Fatalf("failed build presented content: %q %v", st.DOMText, st.Elements)
	}
	if !strings.HasSuffix(st.URL, "/dom-forms.html") || len(st.Tabs) == 0 || string(st.Screenshot) != string(shotPNG) {
		t.Fatalf("url %q tabs %v screenshot %d bytes", st.URL, st.Tabs, len(st.Screenshot))
	}
	if _, err := s.Element(7); !errors.Is(err, session.ErrElementNotFound) {
		t.Fatalf("selector map not cleared: %v", err)
	}
	// The refusals are news whether or not the DOM could be read.
	if len(st.Blocked) != 1 || st.Blocked[0].Host != "tracker.example" {
		t.Fatalf("a failed observation lost the blocked summary: %+v", st.Blocked)
	}
}

func TestDOMWBlankPageAndScreenshot(t *testing.T) {
	_, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, "about:blank")
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest,
		events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil || st.Error != "" {
		t.Fatalf("about:blank: %v %q", err, st.Error)
	}
	if !strings.Contains(st.DOMText, "about") || len(st.Elements) != 0 || string(st.Screenshot) != string(shotPNG) {
		t.Fatalf("about:blank state text %q elements %d shot %d", st.DOMText, len(st.Elements), len(st.Screenshot))
	}
	if m := s.SelectorMap(); m == nil || len(m.Elements) != 0 {
		t.Fatalf("selector map %+v", m)
	}
}

// Closed dialogs reach the observation from DialogHandled events, whoever
// emits them, once each; a focus change drops the previous maps.
func TestDOMWDialogsAndFocusChange(t *testing.T) {
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	if _, err := bus.Call(ctx, s.Bus(), events.DialogHandled, events.DialogHandledEvent{Type: "alert", Message: "hi", URL: "http://x/", Accepted: true}); err != nil {
		t.Fatal(err)
	}
	st := wdtest.State(t, ctx, s)
	if len(st.ClosedDialogs) != 1 || st.ClosedDialogs[0] != (events.DialogInfo{Type: "alert", Message: "hi", URL: "http://x/", Accepted: true}) {
		t.Fatalf("closed dialogs %+v", st.ClosedDialogs)
	}
	if st2 := wdtest.State(t, ctx, s); len(st2.ClosedDialogs) != 0 {
		t.Fatalf("dialogs reported twice %+v", st2.ClosedDialogs)
	}
	// A page looping on alert() does not grow the list without bound.
	for i := 0; i < 3*MaxClosedDialogs; i++ {
		if _, err := bus.Call(ctx, s.Bus(), events.DialogHandled, events.DialogHandledEvent{Type: "alert", Message: "loop"}); err != nil {
			t.Fatal(err)
		}
	}
	if st3 := wdtest.State(t, ctx, s); len(st3.ClosedDialogs) != MaxClosedDialogs {
		t.Fatalf("%d closed dialogs kept, want %d", len(st3.ClosedDialogs), MaxClosedDialogs)
	}
	if _, err := bus.Call(ctx, s.Bus(), events.AgentFocusChanged, events.AgentFocusChangedEvent{TargetID: s.FocusedTab()}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	n := len(w.prev)
	w.mu.Unlock()
	if n != 0 {
		t.Fatalf("previous maps kept across a focus change: %d", n)
	}
}

// The screenshot of an observation comes from whichever watchdog answers
// events.Screenshot, asked for the observed tab; without one, the state
// says why it has no image.
func TestDOMWScreenshotThroughTheBus(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil || string(st.Screenshot) != string(shotPNG) {
		t.Fatalf("state screenshot %q, %v; want the fake's image", st.Screenshot, err)
	}

	w := New(Config{})
	s2, env2, _, ctx2 := wdtest.Connect(t, session.Profile{}, w) // no screenshot watchdog at all
	wdtest.Navigate(t, ctx2, s2, env2.URL("/dom-links.html"))
	st2, err := bus.Call(ctx2, s2.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil || st2.Error != "" || len(st2.Elements) == 0 {
		t.Fatalf("state without a screenshot watchdog: %v %q", err, st2.Error)
	}
	if st2.Screenshot != nil || !strings.Contains(strings.Join(st2.Hints, " "), "No screenshot") {
		t.Fatalf("screenshot %d bytes, hints %q; want none and a hint saying why", len(st2.Screenshot), st2.Hints)
	}
}

// PageText reads the tab's text fresh, after the page changed.
func TestDOMWPageText(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	var ignored any
	wdtest.Eval(t, ctx, s, `document.body.insertAdjacentHTML('beforeend', '<p>added after load</p>')`, &ignored)
	pt, err := bus.Call(ctx, s.Bus(), events.PageText, events.PageTextEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pt.URL, "/dom-links.html") || pt.Title == "" || !strings.Contains(pt.Text, "added after load") {
		t.Fatalf("page text %+v", pt)
	}
	if _, err := bus.Call(ctx, s.Bus(), events.PageText, events.PageTextEvent{TargetID: "NO-SUCH-TAB"}); !errors.Is(err, session.ErrTabNotFound) {
		t.Fatalf("unknown tab: %v", err)
	}
}

func TestDOMWPendingRequests(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-pending.html"))
	// The image starts after the load event; observe until it shows (the
	// server holds it for 20 s).
	var st events.BrowserState
	found := pollUntil(15*time.Second, func() bool {
		st = wdtest.State(t, ctx, s)
		for _, u := range st.PendingRequests {
			if strings.Contains(u, "/slow?ms=20000") {
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("pending requests %v: the slow image is still loading", st.PendingRequests)
	}
	if len(st.PendingRequests) > 20 {
		t.Fatalf("unbounded: %d", len(st.PendingRequests))
	}
}

// The observation carries the page's counts and the hints the model needs
// (an empty page says so instead of showing nothing).
func TestDOMWStatsAndHints(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/links.html"))
	st := wdtest.State(t, ctx, s)
	if st.Stats.Links < 5 || st.Stats.Interactive < 5 || st.Stats.Nodes == 0 {
		t.Fatalf("stats on links.html: %+v", st.Stats)
	}
	if slices.Contains(st.Hints, "The page appears empty.") {
		t.Fatalf("links.html hinted as empty: %v", st.Hints)
	}
	wdtest.Eval(t, ctx, s, `document.body.replaceChildren()`, nil)
	st = wdtest.State(t, ctx, s)
	if !slices.Contains(st.Hints, "The page appears empty.") {
		t.Fatalf("empty body without the empty hint: %v (stats %+v)", st.Hints, st.Stats)
	}
}

// The observation lists the page's frames with their URLs and whether they
// are shown (the agent's CAPTCHA policy reads them).
func TestDOMWFramesListed(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/agent-captcha.html"))
	var shown, hidden *events.FrameInfo
	// The frames load on their own.
	if !pollUntil(testbrowser.Timeout, func() bool {
		shown, hidden = nil, nil
		for _, f := range wdtest.State(t, ctx, s).Frames {
			switch {
			case strings.HasPrefix(f.URL, env.Server.URL2+"/recaptcha/api2/anchor?k=fixture&size=normal"):
				shown = &f
			case strings.HasPrefix(f.URL, env.Server.URL2+"/recaptcha/api2/anchor?k=fixture&hidden=1"):
				hidden = &f
			}
		}
		return shown != nil && hidden != nil
	}) {
		t.Fatalf("frames %+v", wdtest.State(t, ctx, s).Frames)
	}
	if !shown.Visible || hidden.Visible {
		t.Fatalf("shown %+v, hidden %+v", shown, hidden)
	}
}

// A frame far below the fold is listed as shown (the CAPTCHA policy must
// see a widget at the end of a long form before it is scrolled to), and a
// relative src is made absolute against the page's URL (a lazy frame not
// loaded yet is known by its src alone).
func TestDOMWFrameBelowFoldAndRelative(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/links.html"))
	wdtest.Eval(t, ctx, s, `(() => {
		const spacer = document.createElement('div');
		spacer.style.height = '20000px';
		const f = document.createElement('iframe');
		f.loading = 'lazy';
		f.width = 304; f.height = 78;
		f.src = 'recaptcha/api2/anchor?k=below';
		document.body.append(spacer, f);
		return true;
	})()`, nil)
	want := env.URL("/recaptcha/api2/anchor?k=below")
	var got *events.FrameInfo
	for _, f := range wdtest.State(t, ctx, s).Frames {
		if f.URL == want {
			got = &f
		}
	}
	if got == nil || !got.Visible {
		t.Fatalf("frame %s: %+v in %+v", want, got, wdtest.State(t, ctx, s).Frames)
	}
}
