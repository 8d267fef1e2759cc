package pool

import (
	"context"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// In the shared browser a lease's network guard is its context's proxy,
// which UDP does not take: the pool launches that browser with WebRTC kept
// to proxied paths, so a page's STUN request to a host the policy refuses
// (127.0.0.1; the page is on localhost) sends nothing, and no UDP
// candidate is gathered. (The security package's tests show the same page
// reaching the sink without a policy.)
func TestSharedBrowserKeepsWebRTCToTheGuard(t *testing.T) {
	srv := fixtures(t)
	sink := testbrowser.NewUDPSink(t)
	p := newPool(t, Config{Profile: session.Profile{AllowedDomains: []string{"localhost"}}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l := acquire(t, ctx, p)
	defer l.Release(ctx)
	if _, err := bus.Call(ctx, l.Session().Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL2 + "/webrtc.html?stun=" + sink.Addr}); err != nil {
		t.Fatal(err)
	}
	var title string
	eventually(t, "ICE gathering complete", func() bool {
		ps, err := l.Session().PageSession("")
		if err != nil {
			return false
		}
		return pagejs.Evaluate(ctx, ps, `document.title`, &title) == nil && strings.HasPrefix(title, "complete:")
	})
	if n := sink.Datagrams(); n != 0 || strings.Contains(title, "udp") {
		t.Fatalf("%d datagrams reached the refused STUN server; candidates %q", n, strings.TrimPrefix(title, "complete:"))
	}
}
