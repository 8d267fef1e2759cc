package liveview

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/recording"
)

// repaint changes the focused page a few times (headless Chrome sends a
// screencast frame only when the page paints).
func repaint(t *testing.T, ctx context.Context, s *session.Session) {
	t.Helper()
	ps, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	const script = `new Promise(done => {
		let i = 0;
		const step = () => {
			document.body.style.background = ["#c33", "#3c3", "#33c"][i % 3];
			if (++i >= 4) { setTimeout(() => done(true), 100); return; }
			setTimeout(step, 100);
		};
		step();
	})`
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pagejs.Evaluate(ctx, ps, script, nil); err != nil {
		t.Fatalf("repaint: %v", err)
	}
}

// until repaints until cond holds, failing after a generous bound.
func until(t *testing.T, ctx context.Context, s *session.Session, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		repaint(t, ctx, s)
	}
}

// TestScreencastBesideRecordingFollowsFocus: the live view's screencast
// and the recording watchdog's run at once on the same tab (the live view
// has a CDP session of its own), the live view follows the focus to a new
// tab, and it stops when the last viewer leaves.
func TestScreencastBesideRecordingFollowsFocus(t *testing.T) {
	rec := recording.New(recording.Config{Dir: t.TempDir()})
	r := newRig(t, "/index.html", rec)
	ctx := r.ctx
	sctx, stop := context.WithCancel(ctx)
	fr := frames(t, sctx, r.v)
	got := 0
	drain := func() {
		for {
			select {
			case _, ok := <-fr:
				if !ok {
					return
				}
				got++
			default:
				return
			}
		}
	}
	recBefore := rec.Frames()
	until(t, ctx, r.s, "frames on both screencasts", func() bool {
		drain()
		return got >= 2 && rec.Frames() >= recBefore+2
	})

	first := r.s.FocusedTab()
	if _, err := bus.Call(ctx, r.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: "about:blank#second", NewTab: true}, bus.WithTimeout(time.Minute)); err != nil {
		t.Fatal(err)
	}
	second := r.s.FocusedTab()
	if second == first || second == "" {
		t.Fatalf("focus did not move to the new tab (%s → %s)", first, second)
	}
	if st := status(t, ctx, r.v); st.TabID != second {
		t.Fatalf("status names tab %s, want the focused %s", st.TabID, second)
	}
	// Frames of the new tab arrive (the old tab no longer paints).
	n := r.v.Status(ctx).Frames
	until(t, ctx, r.s, "frames from the new tab", func() bool { return r.v.Status(ctx).Frames >= n+2 })

	// The last viewer leaves: the screencast stops.
	stop()
	for range fr { // the reader ends with the request
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		r.v.mu.Lock()
		casting, viewers := r.v.casting, len(r.v.viewers)
		r.v.mu.Unlock()
		if !casting && viewers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("screencast still running: casting %v, viewers %d", casting, viewers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseEndsStreams: Close ends an open frame stream and the
// screencast; the package's TestMain then finds no goroutine left
// (goleak).
func TestCloseEndsStreams(t *testing.T) {
	r := newRig(t, "/index.html")
	fr := frames(t, r.ctx, r.v)
	until(t, r.ctx, r.s, "a frame", func() bool { return r.v.Status(r.ctx).Frames >= 1 })
	cctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	if err := r.v.Close(cctx); err != nil {
		t.Fatal(err)
	}
	for range fr { // ends when the server ends the response
	}
	r.v.mu.Lock()
	casting := r.v.casting
	r.v.mu.Unlock()
	if casting {
		t.Fatal("the screencast still runs after Close")
	}
	if _, err := (&Handler{Server: r.v}).Handoff(r.ctx, agent.HumanRequest{Reason: "r"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Handoff after Close: %v, want ErrClosed", err)
	}
}
