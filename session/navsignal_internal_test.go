package session

import (
	"testing"
	"time"
)

// TestNetLogNavigationSignals: the main frame's navigation events mark the
// tab after the mark taken before them (an iframe's do not), take a
// sequence number of their own without listing a request, and a
// navigation request recorded after the mark is found.
func TestNetLogNavigationSignals(t *testing.T) {
	l := newNetLog()
	mark := l.mark()
	l.record("P", netEvent("Page.frameRequestedNavigation", `{"frameId":"F","reason":"scriptInitiated","url":"http://h/x"}`))
	if l.navigationSince("P", mark) {
		t.Fatal("an iframe's navigation signalled the tab's")
	}
	for _, m := range []string{"Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameStartedLoading"} {
		mark := l.mark()
		l.record("P", netEvent(m, `{"frameId":"P"}`))
		if !l.navigationSince("P", mark) || l.navigationSince("Q", mark) || l.navigationSince("P", l.mark()) {
			t.Fatalf("%s: navigationSince wrong (mark %d, now %d)", m, mark, l.mark())
		}
	}
	if len(l.entries) != 0 {
		t.Fatalf("navigation signals listed as requests: %+v", l.entries)
	}
	if l.documentSince("P", mark) {
		t.Fatal("a document found before any request")
	}
	l.record("P", netEvent("Network.requestWillBeSent", `{"requestId":"L1","loaderId":"L1","frameId":"P","type":"Document","request":{"url":"http://h/next","method":"GET"}}`))
	if !l.documentSince("P", mark) || l.documentSince("P", l.mark()) {
		t.Fatal("documentSince wrong")
	}
}

// TestNetLogQuiet: a tab is quiet when its requests since the mark are
// answered and read and nothing was recorded for the quiet window, nor
// since from; an unfinished request of another tab does not count.
func TestNetLogQuiet(t *testing.T) {
	l := newNetLog()
	mark := l.mark()
	l.record("P", netEvent("Network.requestWillBeSent", `{"requestId":"1","type":"Fetch","request":{"url":"http://h/data","method":"GET"}}`))
	l.record("Q", netEvent("Network.requestWillBeSent", `{"requestId":"2","type":"Fetch","request":{"url":"http://h/poll","method":"GET"}}`))
	if ok, wake, _ := l.quiet("P", mark, time.Time{}, 0); ok || wake == nil {
		t.Fatal("quiet with a request unanswered")
	}
	l.record("P", netEvent("Network.responseReceived", `{"requestId":"1","type":"Fetch","response":{"status":200}}`))
	if ok, _, _ := l.quiet("P", mark, time.Time{}, 0); ok {
		t.Fatal("quiet with a body not read")
	}
	l.record("P", netEvent("Network.loadingFinished", `{"requestId":"1"}`))
	if ok, _, _ := l.quiet("P", mark, time.Time{}, 0); !ok {
		t.Fatal("not quiet with every request of the tab read (another tab's pending)")
	}
	if ok, _, left := l.quiet("P", mark, time.Time{}, time.Hour); ok || left <= 0 || left > time.Hour {
		t.Fatalf("quiet right after an event with an hour's window (left %v)", left)
	}
	if ok, _, left := l.quiet("P", mark, time.Now().Add(time.Hour), time.Millisecond); ok || left <= 0 {
		t.Fatalf("quiet before from (left %v)", left)
	}
}
