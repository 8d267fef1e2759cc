package session

import (
	"fmt"
	"testing"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/browseragent/browseragent/cdp"
)

func netEvent(method, params string) cdp.Event {
	return cdp.Event{Method: method, Params: jsonv2.Value(params)}
}

// TestNetLogRedirectChain: a POST answered 302 is one entry with status
// 302, the GET it led to another (the same request id in CDP).
func TestNetLogRedirectChain(t *testing.T) {
	l := newNetLog()
	l.record(netEvent("Network.requestWillBeSent", `{"requestId":"1","type":"Document","request":{"url":"http://h/prg","method":"POST","headers":{"Cookie":"x"}}}`))
	l.record(netEvent("Network.requestWillBeSent", `{"requestId":"1","type":"Document","request":{"url":"http://h/thanks","method":"GET"},"redirectResponse":{"status":302}}`))
	l.record(netEvent("Network.responseReceived", `{"requestId":"1","type":"Document","response":{"status":200}}`))
	l.record(netEvent("Network.loadingFinished", `{"requestId":"1"}`))
	if len(l.entries) != 2 {
		t.Fatalf("entries %d, want 2", len(l.entries))
	}
	post, get := l.entries[0].req, l.entries[1].req
	if post.Method != "POST" || post.Status != 302 || post.Pending || get.Method != "GET" || get.Status != 200 || get.Pending {
		t.Fatalf("chain %+v, %+v", post, get)
	}
	if len(l.current) != 0 {
		t.Fatalf("current %v, want empty after loadingFinished", l.current)
	}
}

// TestNetLogBounded: the log keeps the last requestLogSize requests, with
// sequence numbers that only grow, and forgets the in-flight ones it drops.
func TestNetLogBounded(t *testing.T) {
	l := newNetLog()
	for i := 0; i < requestLogSize+100; i++ {
		l.record(netEvent("Network.requestWillBeSent", fmt.Sprintf(`{"requestId":"%d","type":"Image","request":{"url":"http://h/%d","method":"GET"}}`, i, i)))
	}
	if len(l.entries) != requestLogSize || len(l.current) != requestLogSize {
		t.Fatalf("entries %d, current %d, want %d", len(l.entries), len(l.current), requestLogSize)
	}
	if first, last := l.entries[0].seq, l.entries[len(l.entries)-1].seq; first != 101 || last != uint64(requestLogSize+100) || l.mark() != last {
		t.Fatalf("seq %d..%d mark %d", first, last, l.mark())
	}
	l.forget()
	for _, e := range l.entries {
		if !e.done || !e.req.Pending {
			t.Fatalf("after forget: %+v, want given up on and still pending", e)
		}
	}
}

// TestNetLogFailures: a network error, a block by the session's own
// interception and a cancel.
func TestNetLogFailures(t *testing.T) {
	l := newNetLog()
	for i, f := range []string{
		`{"requestId":"0","errorText":"net::ERR_CONNECTION_REFUSED"}`,
		`{"requestId":"1","errorText":"net::ERR_BLOCKED_BY_CLIENT.Inspector","blockedReason":"inspector"}`,
		`{"requestId":"2","errorText":"net::ERR_ABORTED","canceled":true}`,
	} {
		l.record(netEvent("Network.requestWillBeSent", fmt.Sprintf(`{"requestId":"%d","type":"Fetch","request":{"url":"http://h/api","method":"POST"}}`, i)))
		l.record(netEvent("Network.loadingFailed", f))
	}
	refused, blocked, canceled := l.entries[0].req, l.entries[1].req, l.entries[2].req
	if !refused.Failed() || refused.Error != "net::ERR_CONNECTION_REFUSED" {
		t.Errorf("refused %+v", refused)
	}
	if !blocked.Failed() || !blocked.Blocked || blocked.Describe() != "POST http://h/api was blocked by policy" {
		t.Errorf("blocked %+v (%s)", blocked, blocked.Describe())
	}
	if canceled.Failed() || !canceled.Unconfirmed() {
		t.Errorf("canceled %+v", canceled)
	}
}
