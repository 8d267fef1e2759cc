package watchdogs

import (
	"context"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

var menuItems = []string{"Rename project", "Duplicate project", "Share project", "Delete project"}

// clickByID clicks, through the actions watchdog, the index the last
// observation gave the element with id.
func clickByID(t *testing.T, ctx context.Context, s *session.Session, st events.BrowserState, id string) events.ClickResult {
	t.Helper()
	for _, e := range st.Elements {
		if e.Attributes["id"] == id {
			res, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: e.Index}})
			if err != nil {
				t.Fatalf("click #%s (index %d): %v", id, e.Index, err)
			}
			return res
		}
	}
	t.Fatalf("no indexed #%s:\n%s", id, st.DOMText)
	return events.ClickResult{}
}

// TestMenuToggledByClass: a menu shown by toggling a class (display:none to
// block, fading in with a CSS transition, absolute and z-indexed, spilling
// out of a scrollable sidebar) is a change, and the observation taken right
// after the click lists every item; closing it is a change too; a class no
// rule styles is no change, though the page animates a style and a counter
// attribute meanwhile; opening a <details> by its summary is a change and
// shows its content.
func TestMenuToggledByClass(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, dom.New(dom.Config{}), actions.New(actions.Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/dom-menu-toggle.html"))
	st := wdtest.State(t, ctx, s)
	for _, item := range menuItems {
		if strings.Contains(st.DOMText, item) {
			t.Fatalf("the closed menu's %q is listed:\n%s", item, st.DOMText)
		}
	}

	res := clickByID(t, ctx, s, st, "menu-button")
	if res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("opening the menu: verdict %s (%s), want changed", res.Outcome.Verdict, res.Outcome.Detail)
	}
	st = wdtest.State(t, ctx, s)
	for _, item := range menuItems {
		if !strings.Contains(st.DOMText, item) {
			t.Fatalf("the observation right after opening the menu does not list %q:\n%s", item, st.DOMText)
		}
	}

	res = clickByID(t, ctx, s, st, "noop")
	if res.Outcome.Verdict != events.VerdictNoChange {
		t.Fatalf("a class no rule styles: verdict %s (%s), want no_change", res.Outcome.Verdict, res.Outcome.Detail)
	}

	st = wdtest.State(t, ctx, s)
	res = clickByID(t, ctx, s, st, "menu-button")
	if res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("closing the menu: verdict %s (%s), want changed", res.Outcome.Verdict, res.Outcome.Detail)
	}
	st = wdtest.State(t, ctx, s)
	if strings.Contains(st.DOMText, menuItems[0]) {
		t.Fatalf("the closed menu is still listed:\n%s", st.DOMText)
	}

	var summary int
	for _, e := range st.Elements {
		if e.Tag == "summary" {
			summary = e.Index
		}
	}
	if summary == 0 {
		t.Fatalf("no indexed <summary>:\n%s", st.DOMText)
	}
	res, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: summary}})
	if err != nil {
		t.Fatalf("click the summary: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("opening <details>: verdict %s (%s), want changed", res.Outcome.Verdict, res.Outcome.Detail)
	}
	st = wdtest.State(t, ctx, s)
	if !strings.Contains(st.DOMText, "Ships within three business days") {
		t.Fatalf("the opened <details> content is not listed:\n%s", st.DOMText)
	}
}
