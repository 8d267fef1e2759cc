package watchdogs

import (
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestDOMWClickElementCrossSite clicks, through events.ClickElement and the
// actions watchdog, the index that this watchdog's observation gave to the
// button inside the cross-site iframe, and checks that the click reached
// that document.
func TestDOMWClickElementCrossSite(t *testing.T) {
	env, s, _ := domwStart(t, DOMConfig{}, NewActions(ActionsConfig{}))
	ctx := domwCtx(t)
	domwNavigate(t, ctx, s, env.URL("/iframes.html"))
	var st events.BrowserState
	for deadline := time.Now().Add(testbrowser.Timeout); ; {
		st = domwState(t, ctx, s)
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
	fs := domwFrameSession(t, s, cross.SessionID)
	var clicked int
	if err := evaluate(ctx, fs, "window.clicked || 0", &clicked); err != nil || clicked != 1 {
		t.Fatalf("cross-site button clicked %d times (%v); result %+v", clicked, err, res)
	}
}
