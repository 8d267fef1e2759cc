package security

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// A page's WebRTC opens UDP sockets of its own, which no proxy carries: in
// a launched browser without a policy, the page's STUN request reaches the
// sink; with a policy that runs the network guard, the browser keeps WebRTC
// to proxied paths (a profile preference), so the refused host (127.0.0.1;
// the page is on localhost) gets nothing and no UDP candidate is gathered.
func TestRequestsScopeKeepsWebRTCToTheGuard(t *testing.T) {
	srv, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	title := func(h *harness) string {
		var s string
		if ps, err := h.s.PageSession(""); err == nil {
			_ = pagejs.Evaluate(h.ctx, ps, `document.title`, &s)
		}
		return s
	}

	t.Run("no policy", func(t *testing.T) {
		sink := testbrowser.NewUDPSink(t)
		h := launch(t, session.Profile{}, Config{})
		if _, err := h.navigate(srv.URL2 + "/webrtc.html?stun=" + sink.Addr); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a datagram at the STUN sink", func() bool { return sink.Datagrams() > 0 })
	})
	t.Run("guard", func(t *testing.T) {
		sink := testbrowser.NewUDPSink(t)
		h := launch(t, session.Profile{AllowedDomains: []string{"localhost"}}, Config{})
		if _, err := h.navigate(srv.URL2 + "/webrtc.html?stun=" + sink.Addr); err != nil {
			t.Fatal(err)
		}
		var got string
		waitFor(t, "ICE gathering complete", func() bool { got = title(h); return strings.HasPrefix(got, "complete:") })
		if n := sink.Datagrams(); n != 0 || strings.Contains(got, "udp") {
			t.Fatalf("%d datagrams reached the refused STUN server; candidates %q", n, strings.TrimPrefix(got, "complete:"))
		}
	})
}

// BrowserPreferences asks for WebRTC on proxied paths exactly when a
// session with the profile would run the guard.
func TestBrowserPreferences(t *testing.T) {
	for _, tc := range []struct {
		p    session.Profile
		want bool
	}{
		{session.Profile{}, false},
		{session.Profile{AllowedDomains: []string{"example.com"}}, true},
		{session.Profile{BlockIPAddresses: true}, true},
		{session.Profile{PolicyScope: "requests"}, true},
		{session.Profile{AllowedDomains: []string{"example.com"}, PolicyScope: "navigations"}, false},
		{session.Profile{AllowedDomains: []string{"example.com"}, ExtraFlags: []string{"--proxy-server=http://corp:3128"}}, false},
		{session.Profile{PolicyScope: "bogus"}, false},
	} {
		got := BrowserPreferences(tc.p)
		if (got[webRTCPolicyPref] == webRTCProxiedOnly) != tc.want || (!tc.want && got != nil) {
			t.Errorf("%+v: %v, want WebRTC kept to proxied paths: %v", tc.p, got, tc.want)
		}
	}
}
