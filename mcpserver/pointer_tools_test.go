package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/mcpserver"
)

// The drag tool end to end: an MCP client drags a kanban card to the other
// column by an offset (real mouse input, the page's HTML5 drag); a drag
// without an end, and one whose end is off screen (no auto-scroll), are
// tool errors that say why, and move nothing.
func TestDragTool(t *testing.T) {
	web := site(t)
	l := newLauncher(t, nil)
	cs := connect(t, newServer(t, mcpserver.Config{Start: l.start}), nil, "")
	mustCall(t, cs, "navigate", map[string]any{"url": web.URL1 + "/actions-drag.html"})
	card := index(t, mustCall(t, cs, "state", nil), "Write report")
	parent := func() string {
		t.Helper()
		ps, err := l.session(0).PageSession("")
		if err != nil {
			t.Fatal(err)
		}
		var id string
		if err := testbrowser.Eval(ps, "document.getElementById('card1').parentElement.id", &id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	if text, isErr := call(t, cs, "drag", map[string]any{"index": card}); !isErr || !strings.Contains(text, "dx") {
		t.Fatalf("a drag without an end: error %v, %q", isErr, text)
	}
	if text, isErr := call(t, cs, "drag", map[string]any{"index": card, "dx": -5000}); !isErr || !strings.Contains(text, "outside") || !strings.Contains(text, "does not scroll") {
		t.Fatalf("a drag off screen: error %v, %q", isErr, text)
	}
	if p := parent(); p != "todo" {
		t.Fatalf("after refused drags the card is in %q", p)
	}
	// One column over: 160 px wide, 8 padding, 2 border, 20 margin.
	got := mustCall(t, cs, "drag", map[string]any{"index": card, "dx": 190, "dy": 0})
	if p := parent(); p != "done" {
		t.Fatalf("after the drag the card is in %q; the tool said:\n%s", p, got)
	}
}
