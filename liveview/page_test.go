package liveview

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestLiveViewPageInABrowser: the live view's own page, opened in a tab of
// a browser, shows the frames in its <img> and forwards a real click on
// that image and real key presses to the session's page (the JS maps the
// image's pixels to the viewport's CSS px); its Done button ends the
// hand-off with the note typed in its box, after which the page closes its
// frame stream.
func TestLiveViewPageInABrowser(t *testing.T) {
	r := newRig(t, "/liveview-login.html")
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	res := make(chan agent.HumanResponse, 1)
	errc := make(chan error, 1)
	started := make(chan struct{})
	h := &Handler{Server: r.v, Announce: func(Announcement) { close(started) }}
	go func() {
		resp, err := h.Handoff(ctx, agent.HumanRequest{Reason: "sign in"})
		res <- resp
		errc <- err
	}()
	<-started

	env := testbrowser.Start(t)
	viewer := env.NewPage(t, "")
	if _, err := cdpproto.Call(ctx, viewer.Session, page.Navigate, page.NavigateParams{URL: r.v.URL()}); err != nil {
		t.Fatal(err)
	}
	eval := func(expr string, out any) error { return testbrowser.Eval(viewer.Session, expr, out) }
	waitFor := func(what, expr string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			var ok bool
			if err := eval(expr, &ok); err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (%s)", what, expr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("a frame in the image and the status", `(() => { const i = document.getElementById("screen"); return !!i && i.naturalWidth > 0 && document.getElementById("state").className === "active"; })()`)

	// Opening the viewer put the session's tab in the background (one
	// browser here; in real use the person's browser is another one).
	if err := r.s.Front(ctx); err != nil {
		t.Fatal(err)
	}
	// Where the fixture's username field is on the viewer's screen.
	st := r.v.Status(ctx)
	var box struct{ X, Y, W, H float64 }
	if err := eval(`(() => { const i = document.getElementById("screen"), b = i.getBoundingClientRect(); return {X: b.left + i.clientLeft, Y: b.top + i.clientTop, W: i.clientWidth, H: i.clientHeight}; })()`, &box); err != nil {
		t.Fatal(err)
	}
	fw, fh := st.FrameWidth, st.FrameHeight
	if fw == 0 {
		fw, fh = float64(st.Width), float64(st.Height)
	}
	cx := box.X + float64(userX)*box.W/fw
	cy := box.Y + float64(userY)*box.H/fh
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		if _, err := cdpproto.Call(ctx, viewer.Session, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: cx, Y: cy, Button: input.MouseButtonLeft, ClickCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range "ada" {
		if err := key(ctx, viewer.Session, string(k)); err != nil {
			t.Fatal(err)
		}
	}
	// The keys reach the session's page through the input endpoint.
	deadline := time.Now().Add(45 * time.Second)
	for {
		var v string
		ps, err := r.s.PageSession("")
		if err != nil {
			t.Fatal(err)
		}
		if err := testbrowser.Eval(ps, `document.getElementById("user").value`, &v); err == nil && v == "ada" {
			break
		}
		if time.Now().After(deadline) {
			var msg string
			_ = eval(`document.getElementById("msg").textContent + " | active=" + document.activeElement.id`, &msg)
			var types []string
			for _, e := range r.logs.FilterMessage("person's input").All() {
				types = append(types, fmt.Sprint(e.ContextMap()))
			}
			var act string
			_ = testbrowser.Eval(ps, `document.activeElement.id + " vis=" + document.visibilityState + " focus=" + document.hasFocus()`, &act)
			t.Fatalf("the username field holds %q, want \"ada\" (the view says %q; inputs %v; click at %g,%g in %+v; page: %s)", v, msg, types, cx, cy, box, act)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := eval(`(() => { document.getElementById("note").value = "typed ada"; document.getElementById("done").click(); return true; })()`, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-res:
		if err := <-errc; err != nil || resp.Note != "typed ada" || resp.Via != ViaLiveView {
			t.Fatalf("Handoff = %+v, %v", resp, err)
		}
	case <-ctx.Done():
		t.Fatal("the page's Done button did not end the hand-off")
	}
	// Outside a hand-off the page closes its frame stream: the screencast
	// stops although the page stays open.
	deadline = time.Now().Add(45 * time.Second)
	for {
		r.v.mu.Lock()
		viewers, casting := len(r.v.viewers), r.v.casting
		r.v.mu.Unlock()
		if viewers == 0 && !casting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Done: %d viewers, casting %v; want the page's stream closed", viewers, casting)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// key presses a printable key on s (keydown with its text, keyup).
func key(ctx context.Context, s *cdp.Session, k string) error {
	if _, err := cdpproto.Call(ctx, s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: k, Text: k, Code: "Key" + strings.ToUpper(k)}); err != nil {
		return fmt.Errorf("keydown %s: %w", k, err)
	}
	_, err := cdpproto.Call(ctx, s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: k, Code: "Key" + strings.ToUpper(k)})
	return err
}
