package actions

import (
	"errors"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// An HTML5 drag list: the drop zone's listeners see dragstart, dragenter,
// drop with the DataTransfer the source set, and the source its dragend.
func TestDragHTML5ToDropZone(t *testing.T) {
	at := start(t, "/actions-drag.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.el("#pear"), To: at.el("#zone")})
	if err != nil {
		t.Fatalf("drag: %v", err)
	}
	if res.Method != methodHTML5 || res.Outcome.Verdict != events.VerdictChanged {
		t.Errorf("method %q verdict %q (%s), want html5 changed", res.Method, res.Outcome.Verdict, res.Outcome.Detail)
	}
	if got := at.str("document.getElementById('drops').textContent"); got != "1" {
		t.Errorf("drops = %s, want 1", got)
	}
	if got := at.str("document.getElementById('payload').textContent"); got != "pear" {
		t.Errorf("payload = %q, want pear (the DataTransfer the source set)", got)
	}
	log := at.str("document.getElementById('log').textContent")
	for _, want := range []string{"dragstart:pear", "dragenter", "drop", "dragend:pear"} {
		if !strings.Contains(log, want) {
			t.Errorf("events %q lack %s", log, want)
		}
	}
	// A second drag works too: nothing of the first was left open.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.el("#apple"), To: at.el("#zone")}); err != nil {
		t.Fatalf("second drag: %v", err)
	}
	if got := at.str("document.getElementById('drops').textContent + document.getElementById('payload').textContent"); got != "2apple" {
		t.Errorf("after the second drag: %q, want 2apple", got)
	}
}

// A slider that listens to pointer events only: the drag by an offset
// moves it with real pointer moves, in steps.
func TestDragPointerSliderByOffset(t *testing.T) {
	at := start(t, "/actions-drag.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.el("#thumb"), DX: 135, DY: 0, Steps: 8})
	if err != nil {
		t.Fatalf("drag: %v", err)
	}
	if res.Method != methodMouse || res.Outcome.Verdict != events.VerdictChanged {
		t.Errorf("method %q verdict %q (%s), want mouse changed", res.Method, res.Outcome.Verdict, res.Outcome.Detail)
	}
	if d := res.To.X - res.From.X; d != 135 {
		t.Errorf("dragged %v px, want 135", d)
	}
	// The thumb's centre started 15 px in; 135 more of the 270 px travel is 50.
	if got := at.str("document.getElementById('value').textContent"); got != "50" {
		t.Errorf("slider value %s, want 50", got)
	}
	if log := at.str("document.getElementById('log').textContent"); !strings.Contains(log, "slider-moves:8") {
		t.Errorf("log %q: want 8 pointer moves", log)
	}
	// From a point: the same slider, back by 135.
	var x, y float64
	at.eval(at.page(), "(() => { const r = document.getElementById('thumb').getBoundingClientRect(); return r.left + r.width / 2; })()", &x)
	at.eval(at.page(), "(() => { const r = document.getElementById('thumb').getBoundingClientRect(); return r.top + r.height / 2; })()", &y)
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{FromPoint: &events.Point{X: x, Y: y}, DX: -135}); err != nil {
		t.Fatalf("drag from a point: %v", err)
	}
	if got := at.str("document.getElementById('value').textContent"); got != "0" {
		t.Errorf("slider value %s after dragging back, want 0", got)
	}
}

// A kanban board: a card moves from one column to the other.
func TestDragKanbanCardBetweenColumns(t *testing.T) {
	at := start(t, "/actions-drag.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.el("#card2"), To: at.el("#done")})
	if err != nil {
		t.Fatalf("drag: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictChanged {
		t.Errorf("verdict %q (%s), want changed", res.Outcome.Verdict, res.Outcome.Detail)
	}
	if got := at.str("document.getElementById('card2').parentElement.id"); got != "done" {
		t.Errorf("card2 is in %s, want done", got)
	}
	if got := at.str("document.getElementById('card1').parentElement.id"); got != "todo" {
		t.Errorf("card1 is in %s, want todo (untouched)", got)
	}
}

// Bad drags are refused before the page is touched, with errors.Is-able
// errors: a covered start, a stale element, no end, an end off screen.
func TestDragErrors(t *testing.T) {
	at := start(t, "/actions-drag.html", Config{})
	cases := []struct {
		name string
		ev   events.DragEvent
		want error
	}{
		{"covered", events.DragEvent{From: at.el("#covered"), To: at.el("#zone")}, ErrCovered},
		{"no end", events.DragEvent{From: at.el("#apple")}, ErrBadDrag},
		{"no start", events.DragEvent{To: at.el("#zone")}, ErrBadDrag},
		{"both ends", events.DragEvent{From: at.el("#apple"), To: at.el("#zone"), DX: 5}, ErrBadDrag},
		{"off screen", events.DragEvent{From: at.el("#apple"), DX: -5000}, ErrBadDrag},
		{"stale index", events.DragEvent{From: events.Target{Index: 4242}, To: at.el("#zone")}, session.ErrElementNotFound},
	}
	for _, c := range cases {
		res, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, c.ev)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
			continue
		}
		if res.Outcome.Verdict != events.VerdictFailed {
			t.Errorf("%s: verdict %q, want failed", c.name, res.Outcome.Verdict)
		}
	}
	if got := at.str("document.getElementById('drops').textContent + document.getElementById('log').textContent"); got != "0" {
		t.Errorf("the page saw %q, want nothing", got)
	}
}

// In a cross-site iframe (its own target) the drag runs on the frame's
// session at its local coordinates, as a click does: the HTML5 drop and
// the pointer slider both work there.
func TestDragInCrossSiteFrame(t *testing.T) {
	at := start(t, "/actions-drag-frame.html", Config{})
	fs := at.frame("/actions-drag.html")
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.node(fs, "#apple"), To: at.node(fs, "#zone")})
	if err != nil {
		t.Fatalf("drag in the frame: %v", err)
	}
	if res.Method != methodHTML5 {
		t.Errorf("method %q, want html5", res.Method)
	}
	var got string
	at.eval(fs, "document.getElementById('drops').textContent + document.getElementById('payload').textContent", &got)
	if got != "1apple" {
		t.Errorf("the frame's drop zone shows %q, want 1apple", got)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.node(fs, "#thumb"), DX: 270}); err != nil {
		t.Fatalf("slider in the frame: %v", err)
	}
	at.eval(fs, "document.getElementById('value').textContent", &got)
	if got != "100" {
		t.Errorf("the frame's slider is at %s, want 100", got)
	}
	// The frame's element and the page's heading are in different targets.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Drag, events.DragEvent{From: at.node(fs, "#apple"), To: at.el("h1")}); !errors.Is(err, ErrBadDrag) {
		t.Errorf("a drag across targets: %v, want ErrBadDrag", err)
	}
}
