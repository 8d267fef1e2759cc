package session

import (
	"fmt"
	"testing"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
)

func netEvent(method, params string) cdp.Event {
	return cdp.Event{Method: method, Params: jsonv2.Value(params)}
}

// TestNetLogRedirectChain: a POST answered 302 is one entry with status
// 302, the GET it led to another (the same request id in CDP).
func TestNetLogRedirectChain(t *testing.T) {
	l := newNetLog()
	l.record("P", netEvent("Network.requestWillBeSent", `{"requestId":"1","type":"Document","request":{"url":"http://h/prg","method":"POST","headers":{"Cookie":"x"}}}`))
	l.record("P", netEvent("Network.requestWillBeSent", `{"requestId":"1","type":"Document","request":{"url":"http://h/thanks","method":"GET"},"redirectResponse":{"status":302}}`))
	l.record("P", netEvent("Network.responseReceived", `{"requestId":"1","type":"Document","response":{"status":200}}`))
	l.record("P", netEvent("Network.loadingFinished", `{"requestId":"1"}`))
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

// TestNetLogBounded: the log keeps the last requestLogSize requests at
// least (trimming when it holds twice as many), with sequence numbers that
// start at 1 and only grow, and forgets the in-flight ones it drops.
func TestNetLogBounded(t *testing.T) {
	l := newNetLog()
	if l.mark() != 1 {
		t.Fatalf("first mark %d, want 1 (0 is no mark)", l.mark())
	}
	n := 2*requestLogSize + 1
	for i := 0; i < n; i++ {
		l.record("P", netEvent("Network.requestWillBeSent", fmt.Sprintf(`{"requestId":"%d","type":"Image","request":{"url":"http://h/%d","method":"GET"}}`, i, i)))
	}
	if len(l.entries) != requestLogSize || len(l.current) != requestLogSize {
		t.Fatalf("entries %d, current %d, want %d", len(l.entries), len(l.current), requestLogSize)
	}
	if first, last := l.entries[0].seq, l.entries[len(l.entries)-1].seq; first != uint64(n-requestLogSize+2) || last != uint64(n+1) || l.mark() != last {
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
		l.record("P", netEvent("Network.requestWillBeSent", fmt.Sprintf(`{"requestId":"%d","type":"Fetch","request":{"url":"http://h/api","method":"POST"}}`, i)))
		l.record("P", netEvent("Network.loadingFailed", f))
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

// TestNetLogRecordsWhatTheActionOwns: the recorded URL keeps the query's
// names, not its values, nor the fragment or credentials; a request is the
// page's own when it goes to the site of the document that sent it; a
// navigation is the main frame's document alone; the favicon is not
// recorded.
func TestNetLogRecordsWhatTheActionOwns(t *testing.T) {
	l := newNetLog()
	for _, ev := range []string{
		`{"requestId":"L1","loaderId":"L1","frameId":"P","documentURL":"https://a.example.com/next","type":"Document","request":{"url":"https://a.example.com/next","method":"GET"}}`,
		`{"requestId":"L2","loaderId":"L2","frameId":"F","documentURL":"https://t.other.org/f","type":"Document","request":{"url":"https://t.other.org/f","method":"GET"}}`,
		`{"requestId":"3","loaderId":"L1","frameId":"P","documentURL":"https://a.example.com/next","type":"Fetch","request":{"url":"https://api.example.com/suggest?q=my+secret&lang=en#frag","method":"GET"}}`,
		`{"requestId":"4","loaderId":"L1","frameId":"P","documentURL":"https://a.example.com/next","type":"Fetch","request":{"url":"https://collect.tracker.net/v1/t","method":"POST"}}`,
		`{"requestId":"5","loaderId":"L1","frameId":"P","documentURL":"http://127.0.0.1:8080/p","type":"XHR","request":{"url":"http://localhost:8080/api","method":"POST"}}`,
		`{"requestId":"6","loaderId":"L1","frameId":"P","documentURL":"http://127.0.0.1:8080/p","type":"Other","request":{"url":"http://127.0.0.1:8080/favicon.ico","method":"GET"}}`,
		`{"requestId":"7","loaderId":"L1","frameId":"P","documentURL":"http://u:pw@127.0.0.1:8080/p","type":"XHR","request":{"url":"http://u:pw@127.0.0.1:9090/api?flag","method":"POST"}}`,
	} {
		l.record("P", netEvent("Network.requestWillBeSent", ev))
	}
	want := []events.Request{
		{Method: "GET", URL: "https://a.example.com/next", Type: "Document", Pending: true, Own: true, Navigation: true},
		{Method: "GET", URL: "https://t.other.org/f", Type: "Document", Pending: true, Own: true},
		{Method: "GET", URL: "https://api.example.com/suggest?q=…&lang=…", Type: "Fetch", Pending: true, Own: true},
		{Method: "POST", URL: "https://collect.tracker.net/v1/t", Type: "Fetch", Pending: true},
		{Method: "POST", URL: "http://localhost:8080/api", Type: "XHR", Pending: true},
		{Method: "POST", URL: "http://127.0.0.1:9090/api?flag", Type: "XHR", Pending: true, Own: true},
	}
	if len(l.entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(l.entries), len(want))
	}
	for i, w := range want {
		if got := l.entries[i].req; got != w {
			t.Errorf("entry %d = %+v, want %+v", i, got, w)
		}
	}
}
