package liveview

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// maxReason bounds a hand-off's reason as shown to the person, in runes.
const maxReason = 300

// watchTabs follows the person to a tab they open during a hand-off (a
// target=_blank link, an OAuth or 3-D Secure popup): a tab the page opens
// does not move the session's focus, and the live view shows the focused
// tab. The session's focus history brings the opener back when the popup
// closes. known are the tabs open when the hand-off began; it returns when
// stop is closed or ctx ends.
func (v *Server) watchTabs(ctx context.Context, stop <-chan struct{}, known map[string]bool) {
	tick := time.NewTicker(focusPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
		var fresh string
		for _, t := range v.s.Tabs() {
			if !known[t.TargetID] {
				known[t.TargetID] = true
				fresh = t.TargetID // the newest of several
			}
		}
		if fresh == "" || fresh == v.s.FocusedTab() {
			continue
		}
		if err := v.switchTab(ctx, fresh); err != nil && ctx.Err() == nil {
			v.log.Debug("following a new tab", zap.String("target", fresh), zap.Error(err))
		}
	}
}

// switchTab focuses a tab through the session (which brings it to the
// front and tells the watchdogs).
func (v *Server) switchTab(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout)
	defer cancel()
	_, err := bus.Call(ctx, v.s.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: id})
	return err
}

// tab handles POST ./tab {"id":"..."}: the person switches to one of the
// session's tabs (400 for an unknown one, 409 outside a hand-off).
func (v *Server) tab(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body struct {
		ID string `json:"id"`
	}
	if err := decodeBody(r, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	found := false
	for _, t := range v.s.Tabs() {
		found = found || (body.ID != "" && t.TargetID == body.ID)
	}
	if !found {
		http.Error(w, "unknown tab id (see tabs in ./status)", http.StatusBadRequest)
		return
	}
	leave, ok := v.enter()
	if !ok {
		http.Error(w, "no hand-off is active: the agent has the page", http.StatusConflict)
		return
	}
	defer leave()
	if err := v.switchTab(r.Context(), body.ID); err != nil {
		http.Error(w, "switching tabs: "+err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// Asker words HumanRequest.By for the person: who asks for them.
func Asker(by string) string {
	switch {
	case by == "model":
		return "the AI model driving the browser (the page may have misled it)"
	case by == "initial":
		return "the run's initial actions"
	case strings.HasPrefix(by, "policy:"):
		return "browseragent's " + CleanText(strings.TrimPrefix(by, "policy:"), 40) + " check (not the AI model)"
	case by == "":
		return "the agent"
	}
	return CleanText(by, 40)
}

// Origin returns the scheme and host of rawURL ("https://shop.example"),
// or "" when it has none.
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// CleanText makes untrusted text (a hand-off's reason, in the model's
// words) safe to print among trusted lines: control characters (C0, C1:
// terminal escapes, newlines) and bidirectional overrides become spaces,
// runs of spaces one, and it is cut to max runes with "…".
func CleanText(s string, max int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= max {
			b.WriteString("…")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
