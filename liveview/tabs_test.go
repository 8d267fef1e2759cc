package liveview

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// TestPopupIsFollowed: the person clicks a target=_blank link during a
// hand-off (an OAuth or 3-D Secure popup): the live view switches the
// session's focus to the new tab and casts it (the latest frame comes from
// it); the tab strip's data (Status.Tabs) lists both; the person switches
// tabs through POST ./tab; when the popup closes itself, the focus and the
// picture go back to the opener.
func TestPopupIsFollowed(t *testing.T) {
	r := newRig(t, "/liveview-popup.html")
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	started := make(chan struct{})
	res := make(chan error, 1)
	h := &Handler{Server: r.v, Announce: func(Announcement) { close(started) }}
	go func() {
		_, err := h.Handoff(ctx, agent.HumanRequest{Reason: "confirm the payment", By: "model", URL: "https://shop.example/pay?x=1"})
		res <- err
	}()
	<-started
	base := r.v.URL()
	opener := r.s.FocusedTab()
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	fr := frames(t, fctx, r.v)
	until(t, ctx, r.s, "a frame of the opener", func() bool { return r.v.Status(ctx).FrameTab == opener })

	mustPost(t, ctx, base+"input", `{"type":"click","x":100,"y":75}`)
	var popup string
	waitUntil(t, "the live view to follow the popup", func() bool {
		st := status(t, ctx, r.v)
		if st.TabID != opener && strings.Contains(st.URL, "other.html") {
			popup = st.TabID
			return true
		}
		return false
	})
	// Frames now come from the popup, not only more frames.
	until(t, ctx, r.s, "frames from the popup", func() bool {
		for len(fr) > 0 {
			<-fr
		}
		return r.v.Status(ctx).FrameTab == popup
	})
	st := status(t, ctx, r.v)
	if len(st.Tabs) != 2 {
		t.Fatalf("status tabs %+v, want the opener and the popup", st.Tabs)
	}
	for _, tb := range st.Tabs {
		if tb.Focused != (tb.ID == popup) {
			t.Fatalf("status tabs %+v: want the popup %s focused", st.Tabs, popup)
		}
	}

	// The person switches back to the opener.
	mustPost(t, ctx, base+"tab", fmt.Sprintf(`{"id":%q}`, opener))
	if got := r.s.FocusedTab(); got != opener {
		t.Fatalf("focus %s after POST ./tab, want the opener %s", got, opener)
	}
	if code, _ := post(t, ctx, base+"tab", `{"id":"nope"}`); code != http.StatusBadRequest {
		t.Fatalf("POST ./tab of an unknown tab: %d, want 400", code)
	}
	// Back to the popup, which then closes itself (the bank's page is
	// done): the session gives the focus back to the opener, and the live
	// view shows it again.
	mustPost(t, ctx, base+"tab", fmt.Sprintf(`{"id":%q}`, popup))
	pps, err := r.s.PageSession(popup)
	if err != nil {
		t.Fatal(err)
	}
	if err := pagejs.Evaluate(ctx, pps, `window.close(), true`, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the focus back on the opener", func() bool { return r.s.FocusedTab() == opener })
	until(t, ctx, r.s, "frames from the opener again", func() bool {
		for len(fr) > 0 {
			<-fr
		}
		return r.v.Status(ctx).FrameTab == opener
	})
	mustPost(t, ctx, base+"done", `{}`)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	// Outside a hand-off the tab is the agent's to choose.
	if code, _ := post(t, ctx, base+"tab", fmt.Sprintf(`{"id":%q}`, opener)); code != http.StatusConflict {
		t.Fatalf("POST ./tab after the hand-off: %d, want 409", code)
	}
}

// TestStatusSaysWhoAsks: the status names who asks and the page's origin,
// and carries the reason cleaned of control characters (a reason cannot
// fake a line of its own), cut to maxReason runes.
func TestStatusSaysWhoAsks(t *testing.T) {
	r := newRig(t, "/index.html")
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	for _, c := range []struct {
		by, asker string
	}{
		{"model", "the AI model"},
		{"policy:captcha", "captcha check (not the AI model)"},
	} {
		started := make(chan struct{})
		res := make(chan error, 1)
		h := &Handler{Server: r.v, Announce: func(Announcement) { close(started) }}
		go func() {
			_, err := h.Handoff(ctx, agent.HumanRequest{Reason: "sign in\x1b[2J\nopen the live view: http://evil/\u202e" + strings.Repeat("x", 400), By: c.by, URL: "https://bank.example:8443/login?next=/"})
			res <- err
		}()
		<-started
		st := status(t, ctx, r.v)
		if st.By != c.by || !strings.Contains(st.Asker, c.asker) || st.Origin != "https://bank.example:8443" {
			t.Errorf("by %s: status %+v", c.by, st)
		}
		if !strings.HasPrefix(st.Reason, "sign in [2J open the live view: http://evil/ xxx") || strings.ContainsAny(st.Reason, "\x1b\n\u202e") || !strings.HasSuffix(st.Reason, "…") || len([]rune(st.Reason)) != maxReason+1 {
			t.Errorf("by %s: reason %q", c.by, st.Reason)
		}
		mustPost(t, ctx, r.v.URL()+"done", `{}`)
		if err := <-res; err != nil {
			t.Fatal(err)
		}
	}
}

// TestInputNotAfterRelease: the hand-off's end waits for an input being
// dispatched, and an input after it is refused (409): nothing the person
// sends lands on the agent's page.
func TestInputNotAfterRelease(t *testing.T) {
	r := newRig(t, "/liveview-login.html")
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	_, release, err := r.v.begin(agent.HumanRequest{Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	leave, ok := r.v.enter()
	if !ok {
		t.Fatal("enter refused during a hand-off")
	}
	released := make(chan struct{})
	go func() { release(); close(released) }()
	// release cleared the hand-off at once: new input is refused...
	waitUntil(t, "the hand-off to end for new input", func() bool {
		code, _ := post(t, ctx, r.v.URL()+"input", `{"type":"text","text":"late"}`)
		return code == http.StatusConflict
	})
	// ...and release waits for the one in flight.
	select {
	case <-released:
		t.Fatal("release returned with an input in flight")
	default:
	}
	leave()
	<-released
	ps, err := r.s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := pagejs.Evaluate(ctx, ps, `document.getElementById("user").value + document.getElementById("pass").value`, &v); err != nil {
		t.Fatal(err)
	}
	if v != "" {
		t.Fatalf("input landed after the hand-off: %q", v)
	}
}

// waitUntil polls cond (a generous bound, for a busy machine).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
