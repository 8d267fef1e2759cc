package dom

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func reusedCount(w *Watchdog) int {
	w.unch.mu.Lock()
	defer w.unch.mu.Unlock()
	return w.unch.reused
}

// ids maps each index of an observation to its element's backend id.
func ids(st events.BrowserState) map[int]int64 {
	out := map[int]int64{}
	for i, e := range st.Elements {
		out[i] = e.BackendNodeID
	}
	return out
}

// observeExpect observes once and fails unless the observation was served
// again (reused) or captured (!reused), as wanted.
func observeExpect(t *testing.T, ctx context.Context, s *session.Session, w *Watchdog, reused bool, why string) (events.BrowserState, time.Duration) {
	t.Helper()
	before := reusedCount(w)
	start := time.Now()
	st := wdtest.State(t, ctx, s)
	took := time.Since(start)
	if got := reusedCount(w) > before; got != reused {
		t.Fatalf("%s: served again = %v, want %v", why, got, reused)
	}
	return st, took
}

// crossFrameSession waits for the tab's one cross-site frame target.
func crossFrameSession(t *testing.T, s *session.Session) *cdp.Session {
	t.Helper()
	deadline := time.Now().Add(testbrowser.Timeout)
	for {
		for _, f := range s.FrameTargets(s.FocusedTab()) {
			if f.Session != nil {
				return f.Session
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no cross-site frame target")
		}
		select {
		case <-time.After(20 * time.Millisecond): // poll the session's target list
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// TestDOMWUnchanged: an unchanged page is served again from the probe,
// with the same text and indexes, and each kind of change — a class
// toggle, a value typed by the user, one set by script, a scroll inside a
// container, a change inside an open shadow root and one inside a
// cross-site iframe — produces a fresh capture that shows it.
func TestDOMWUnchanged(t *testing.T) {
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-unchanged.html"))
	fs := crossFrameSession(t, s)
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}

	first, full := observeExpect(t, ctx, s, w, false, "first observation")
	again, fast := observeExpect(t, ctx, s, w, true, "nothing changed")
	t.Logf("full observation %v, unchanged re-observe %v", full, fast)
	if again.DOMText != first.DOMText {
		t.Fatalf("served text differs:\n%s\n---\n%s", first.DOMText, again.DOMText)
	}
	if !maps.Equal(ids(first), ids(again)) || len(again.Elements) == 0 {
		t.Fatalf("indexes differ: %v vs %v", ids(first), ids(again))
	}
	if again.URL != first.URL || again.Title != first.Title || again.Fingerprint != first.Fingerprint {
		t.Fatalf("page facts differ: %+v vs %+v", first, again)
	}

	eval := func(cs *cdp.Session, expr string) {
		t.Helper()
		if err := pagejs.Evaluate(ctx, cs, expr, nil); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
	}
	// change runs the change, then expects a fresh capture whose text
	// contains want (when given), then the page served again.
	change := func(why, want string, do func()) {
		t.Helper()
		do()
		st, _ := observeExpect(t, ctx, s, w, false, why)
		if want != "" && !strings.Contains(st.DOMText, want) {
			t.Fatalf("%s: text lacks %q:\n%s", why, want, st.DOMText)
		}
		st2, _ := observeExpect(t, ctx, s, w, true, why+", then nothing")
		// Served again, nothing is new since: the same text without the
		// new-element marks.
		if st2.DOMText != strings.ReplaceAll(st.DOMText, "*[", "[") || strings.Contains(st2.DOMText, "*[") || !maps.Equal(ids(st), ids(st2)) {
			t.Fatalf("%s: served again differs:\n%s\n---\n%s", why, st.DOMText, st2.DOMText)
		}
	}
	change("class toggle", "Menu item one", func() { eval(cs, `document.getElementById('menu').classList.toggle('open')`) })
	change("focus", "", func() { eval(cs, `document.getElementById('name').focus()`) })
	change("typed value", "Ada", func() {
		if _, err := cdpproto.Call(ctx, cs, input.InsertText, input.InsertTextParams{Text: "Ada"}); err != nil {
			t.Fatal(err)
		}
	})
	change("value set by script", "Grace", func() { eval(cs, `document.getElementById('name').value = 'Grace'`) })
	change("inner scroll", "", func() { eval(cs, `document.getElementById('box').scrollTop = 600`) })
	change("open shadow root", "Shadow changed", func() {
		eval(cs, `document.getElementById('host').shadowRoot.getElementById('inner').textContent = 'Shadow changed'`)
	})
	change("cross-site iframe", "Frame changed", func() {
		eval(fs, `document.getElementById('framed').textContent = 'Frame changed'`)
	})
	change("window scroll", "", func() { eval(cs, `window.scrollTo(0, 40)`) })
	change("multiple select's first option by script", "", func() {
		eval(cs, `document.getElementById('multi').options[0].selected = true`)
	})
	change("multiple select's second option by script", "", func() {
		eval(cs, `document.getElementById('multi').options[2].selected = true`)
	})
	change("indeterminate by script", "", func() { eval(cs, `document.getElementById('tri').indeterminate = true`) })
	change("details toggle", "Details body", func() { eval(cs, `document.getElementById('det').open = true`) })
	change("same-process frame added", "Same frame", func() {
		eval(cs, `const f = document.createElement('iframe'); f.id = 'same'; f.srcdoc = '<p>Same frame</p>';
			new Promise((ok) => { f.onload = ok; document.body.prepend(f); })`)
	})
	change("same-process frame's text", "Same changed", func() {
		eval(cs, `document.getElementById('same').contentDocument.querySelector('p').textContent = 'Same changed'`)
	})
}

// TestDOMWUnchangedConcurrent: two observations of an unchanged tab at
// once both serve the cached capture (run with -race: they serialize the
// same tree together).
func TestDOMWUnchangedConcurrent(t *testing.T) {
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-unchanged.html"))
	first, _ := observeExpect(t, ctx, s, w, false, "first observation")
	before := reusedCount(w)
	type answer struct {
		st  events.BrowserState
		err error
	}
	out := make(chan answer, 2)
	for range 2 {
		go func() {
			st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true},
				bus.WithTimeout(2*testbrowser.Timeout))
			out <- answer{st, err}
		}()
	}
	for range 2 {
		a := <-out
		if a.err != nil || a.st.Error != "" {
			t.Fatalf("concurrent observation: %v %s", a.err, a.st.Error)
		}
		if a.st.DOMText != first.DOMText || !maps.Equal(ids(first), ids(a.st)) {
			t.Fatalf("concurrent observation differs:\n%s\n---\n%s", first.DOMText, a.st.DOMText)
		}
	}
	if got := reusedCount(w) - before; got != 2 {
		t.Fatalf("served again %d times, want 2", got)
	}
}

// TestDOMWUnchangedClosedShadow: a page with a closed shadow root is
// captured every time (no observer sees inside it), so a change there
// shows.
func TestDOMWUnchangedClosedShadow(t *testing.T) {
	env, s, w := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-unchanged-closed.html"))
	observeExpect(t, ctx, s, w, false, "first observation")
	observeExpect(t, ctx, s, w, false, "closed shadow root, unchanged")
	wdtest.Eval(t, ctx, s, `window.closedRoot.querySelector('button').textContent = 'Closed changed'`, nil)
	st, _ := observeExpect(t, ctx, s, w, false, "closed shadow root, changed")
	if !strings.Contains(st.DOMText, "Closed changed") {
		t.Fatalf("text lacks the closed root's change:\n%s", st.DOMText)
	}
}

// TestDOMWAlwaysCapture: the switch turns the re-observe off.
func TestDOMWAlwaysCapture(t *testing.T) {
	env, s, w := start(t, Config{AlwaysCapture: true})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-unchanged.html"))
	observeExpect(t, ctx, s, w, false, "first observation")
	observeExpect(t, ctx, s, w, false, "AlwaysCapture")
}
