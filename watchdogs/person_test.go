package watchdogs

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// TestWhatAPersonCanClick goes from the observation to the page's own
// state for the controls a person uses and an agent once could not: each
// element must get an index from the DOM watchdog, and acting on that index
// through the actions watchdog must change what the page holds.
func TestWhatAPersonCanClick(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, dom.New(dom.Config{}), actions.New(actions.Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/person-controls.html"))
	st := wdtest.State(t, ctx, s)

	t.Run("custom checkbox through its label", func(t *testing.T) {
		label := findElement(t, st, func(e events.ElementInfo) bool { return e.Tag == "label" && e.Attributes["for"] == "terms" })
		if !strings.Contains(lineOf(st.DOMText, label.Index), "checked=false") {
			t.Errorf("the label's line does not say the box is unchecked: %q", lineOf(st.DOMText, label.Index))
		}
		clickIndex(t, ctx, s, label.Index)
		if !evalBool(t, ctx, s, "document.getElementById('terms').checked") {
			t.Fatal("the hidden checkbox is still unchecked after clicking its label's index")
		}
	})

	t.Run("svg shape with onclick", func(t *testing.T) {
		dot := findElement(t, st, func(e events.ElementInfo) bool { return e.Tag == "circle" })
		clickIndex(t, ctx, s, dot.Index)
		if n := evalInt(t, ctx, s, "window.svgClicks || 0"); n != 1 {
			t.Fatalf("the circle's onclick ran %d times, want 1", n)
		}
	})

	t.Run("editable body of an iframe editor", func(t *testing.T) {
		body := findElement(t, st, func(e events.ElementInfo) bool { return e.Tag == "body" })
		res, err := bus.Call(ctx, s.Bus(), events.TypeText, events.TypeTextEvent{Target: events.Target{Index: body.Index}, Text: " Thanks!"})
		if err != nil {
			t.Fatalf("type into the editor: %v", err)
		}
		got := evalString(t, ctx, s, "document.getElementById('editor').contentDocument.body.innerText")
		if !strings.Contains(got, "Thanks!") {
			t.Fatalf("the editor holds %q after typing (result %+v)", got, res.Outcome)
		}
	})

	t.Run("special inputs report the change", func(t *testing.T) {
		for id, value := range map[string]string{"volume": "7", "start": "2026-12-24"} {
			el := findElement(t, st, func(e events.ElementInfo) bool { return e.Attributes["id"] == id })
			res, err := bus.Call(ctx, s.Bus(), events.TypeText, events.TypeTextEvent{Target: events.Target{Index: el.Index}, Text: value})
			if err != nil {
				t.Fatalf("set %s: %v", id, err)
			}
			if got := evalString(t, ctx, s, "document.getElementById('"+id+"').value"); got != value {
				t.Errorf("%s holds %q, want %q", id, got, value)
			}
			if res.Outcome.Verdict != events.VerdictChanged {
				t.Errorf("%s: verdict %s, want changed", id, res.Outcome.Verdict)
			}
		}
	})

	t.Run("accessible names inside a same-process frame", func(t *testing.T) {
		inner := findElement(t, st, func(e events.ElementInfo) bool { return e.Attributes["id"] == "inner" })
		if inner.Role != "button" || inner.Name != "Save draft" {
			t.Errorf("button in a srcdoc frame: role %q name %q, want button \"Save draft\"", inner.Role, inner.Name)
		}
		clickIndex(t, ctx, s, inner.Index)
		if n := evalInt(t, ctx, s, "document.getElementById('same').contentWindow.innerClicks || 0"); n != 1 {
			t.Fatalf("the framed button ran %d times, want 1", n)
		}
	})

	t.Run("just past the right edge", func(t *testing.T) {
		edge := findElement(t, st, func(e events.ElementInfo) bool { return e.Attributes["id"] == "edge" })
		clickIndex(t, ctx, s, edge.Index)
		if n := evalInt(t, ctx, s, "window.edgeClicks || 0"); n != 1 {
			t.Fatalf("the button past the edge ran %d times, want 1", n)
		}
	})

	t.Run("hidden after the observation", func(t *testing.T) {
		btn := findElement(t, st, func(e events.ElementInfo) bool { return e.Attributes["id"] == "vanishing" })
		evalBool(t, ctx, s, "(document.getElementById('vanishing').style.display = 'none', true)")
		_, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: btn.Index}})
		if err == nil {
			t.Fatal("clicking a button that is no longer displayed succeeded")
		}
		if n := evalInt(t, ctx, s, "window.vanishClicks || 0"); n != 0 {
			t.Fatalf("the hidden button's handler ran %d times: a click no person could make", n)
		}
	})

	t.Run("under the fixed header", func(t *testing.T) {
		evalBool(t, ctx, s, "(scrollTo(0, document.getElementById('under').getBoundingClientRect().top + scrollY - 20), true)")
		st := wdtest.State(t, ctx, s)
		under := findElement(t, st, func(e events.ElementInfo) bool { return e.Attributes["id"] == "under" })
		res, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: under.Index}})
		if err != nil {
			t.Fatalf("click under the header: %v", err)
		}
		if n := evalInt(t, ctx, s, "window.underClicks || 0"); n != 1 || !evalBool(t, ctx, s, "window.underTrusted === true") {
			t.Fatalf("the button under the header ran %d times (trusted: %v); method %q, detail %q", n, evalBool(t, ctx, s, "window.underTrusted === true"), res.Method, res.Outcome.Detail)
		}
		if res.Method != "mouse" {
			t.Errorf("clicked by %q, want a real mouse click after uncovering", res.Method)
		}
	})
}

func findElement(t *testing.T, st events.BrowserState, ok func(events.ElementInfo) bool) events.ElementInfo {
	t.Helper()
	for _, e := range st.Elements {
		if ok(e) {
			return e
		}
	}
	t.Fatalf("no such element has an index:\n%s", st.DOMText)
	return events.ElementInfo{}
}

// lineOf returns the line of text that shows index i.
func lineOf(text string, i int) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "["+strconv.Itoa(i)+"]<") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func clickIndex(t *testing.T, ctx context.Context, s *session.Session, i int) {
	t.Helper()
	if _, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: i}}); err != nil {
		t.Fatalf("click index %d: %v", i, err)
	}
}

func evalBool(t *testing.T, ctx context.Context, s *session.Session, expr string) bool {
	t.Helper()
	var v bool
	wdtest.Eval(t, ctx, s, expr, &v)
	return v
}

func evalInt(t *testing.T, ctx context.Context, s *session.Session, expr string) int {
	t.Helper()
	var v int
	wdtest.Eval(t, ctx, s, expr, &v)
	return v
}

func evalString(t *testing.T, ctx context.Context, s *session.Session, expr string) string {
	t.Helper()
	var v string
	wdtest.Eval(t, ctx, s, expr, &v)
	return v
}
