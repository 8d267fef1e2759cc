package watchdogs

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/popups"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
	"github.com/chromedp/cdproto/target"
)

// These tests compose several watchdogs, as Defaults does: each watchdog's
// own package tests it alone (with fakes for what it asks of others).

// The defaults together: an observation carries the real screenshot
// watchdog's image, taken of the observed tab.
func TestDefaultsObservationWithScreenshot(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, Defaults()...)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-links.html"))
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil || st.Error != "" {
		t.Fatalf("state: %v %q", err, st.Error)
	}
	img, err := png.Decode(bytes.NewReader(st.Screenshot))
	if err != nil || img.Bounds().Dx() == 0 {
		t.Fatalf("screenshot in the state is not a PNG (%d bytes): %v", len(st.Screenshot), err)
	}
}

// TestClickElementCrossSite clicks, through events.ClickElement and the
// actions watchdog, the index that the DOM watchdog's observation gave to
// the button inside the cross-site iframe, and checks that the click
// reached that document.
func TestClickElementCrossSite(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, dom.New(dom.Config{}), actions.New(actions.Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/iframes.html"))
	var st events.BrowserState
	for deadline := time.Now().Add(testbrowser.Timeout); ; {
		st = wdtest.State(t, ctx, s)
		if strings.Count(st.DOMText, "Frame button") >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var cross *events.ElementInfo
	for _, e := range st.Elements {
		if e.Attributes["id"] == "frame-button" && e.TargetID != s.FocusedTab() {
			cross = &e
		}
	}
	if cross == nil {
		t.Fatalf("no cross-site button:\n%s", st.DOMText)
	}
	res, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: cross.Index}})
	if err != nil {
		t.Fatalf("click index %d: %v", cross.Index, err)
	}
	conn := s.Conn()
	fs, ok := conn.Session(targetSession(cross.SessionID))
	if !ok {
		t.Fatalf("frame session %s gone", cross.SessionID)
	}
	var clicked int
	if err := pagejs.Evaluate(ctx, fs, "window.clicked || 0", &clicked); err != nil || clicked != 1 {
		t.Fatalf("cross-site button clicked %d times (%v); result %+v", clicked, err, res)
	}
}

// A click that opens an alert, next to the real popups watchdog: popups
// answers it from its own goroutine while the click's mouse event is
// blocked, the click reports the dialog, and the next observation lists
// the dialog (DOM learns it from popups' DialogHandled event).
func TestClickDialogWithPopups(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, actions.New(actions.Config{}), popups.New(popups.Config{}), dom.New(dom.Config{}), screenshot.New(screenshot.Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/actions-click.html"))
	st := wdtest.State(t, ctx, s)
	idx := -1
	for i, e := range st.Elements {
		if e.Attributes["id"] == "alert" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no #alert button:\n%s", st.DOMText)
	}
	res, err := bus.Call(ctx, s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: idx}})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictDialog || !strings.Contains(res.Outcome.Detail, "alert dialog") {
		t.Fatalf("verdict %s (%s), want dialog", res.Outcome.Verdict, res.Outcome.Detail)
	}
	st = wdtest.State(t, ctx, s)
	if len(st.ClosedDialogs) != 1 || st.ClosedDialogs[0].Type != "alert" || !st.ClosedDialogs[0].Accepted {
		t.Fatalf("closed dialogs %+v, want the accepted alert", st.ClosedDialogs)
	}
}

func targetSession(id string) target.SessionID { return target.SessionID(id) }
