package dom

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestBlockedLogSummary(t *testing.T) {
	var l blockedLog
	for _, ev := range []events.RequestBlockedEvent{
		{URL: "https://evil.test/ws", Host: "evil.test", ResourceType: "WebSocket"},
		{URL: "https://tracker.example/a.js", Host: "tracker.example", ResourceType: "Script"},
		{URL: "https://tracker.example/collect", Host: "tracker.example", ResourceType: "Fetch"},
		{URL: "https://tracker.example/b.js", Host: "tracker.example", ResourceType: "Script"},
		// No canonical host: derived from the URL, lower-cased.
		{URL: "wss://Beacon.Test:8443", ResourceType: "Connection"},
		{URL: "https://beacon.test/x", Host: "beacon.test", ResourceType: "XHR"},
		{URL: "data:text/html,hi", ResourceType: "Document"},
		{URL: "https://ads.test/p", Host: "ads.test"}, // no type: counted, no type listed
	} {
		l.add(ev)
	}
	got, hint := l.take()
	want := []events.BlockedRequests{
		{Host: "tracker.example", Count: 3, Types: []string{"script", "fetch"}},
		{Host: "beacon.test", Count: 2, Types: []string{"connection", "xhr"}},
		{Host: "ads.test", Count: 1},
		{Host: "data:", Count: 1, Types: []string{"document"}},
		{Host: "evil.test", Count: 1, Types: []string{"websocket"}},
	}
	if !reflect.DeepEqual(got, want) || hint != "" {
		t.Fatalf("summary %+v hint %q, want %+v", got, hint, want)
	}
	if again, hint := l.take(); again != nil || hint != "" {
		t.Fatalf("a second take returned %+v %q, want nothing: take must clear", again, hint)
	}
}

func TestBlockedLogBounded(t *testing.T) {
	var l blockedLog
	for i := range MaxBlockedHosts + 7 {
		l.add(events.RequestBlockedEvent{Host: fmt.Sprintf("h%03d.test", i), ResourceType: "Image"})
	}
	l.add(events.RequestBlockedEvent{Host: "h000.test", ResourceType: "Image"}) // a listed host still counts
	l.add(events.RequestBlockedEvent{Host: "late.test", ResourceType: "Image"})
	got, hint := l.take()
	if len(got) != MaxBlockedHosts || got[0].Host != "h000.test" || got[0].Count != 2 {
		t.Fatalf("%d hosts, first %+v; want %d, h000.test counted twice", len(got), got[0], MaxBlockedHosts)
	}
	if hint != "The URL policy also refused 8 requests to other hosts (not listed)." {
		t.Fatalf("hint %q", hint)
	}
}

// The watchdog takes the summary into every state it returns and starts
// afresh: the RequestBlocked events before an observation are in it, and
// only those.
func TestDOMWBlockedRequestsInState(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	wdtest.State(t, ctx, s) // whatever came before
	for _, ev := range []events.RequestBlockedEvent{
		{TargetID: s.FocusedTab(), URL: "https://tracker.example/a.js", Host: "tracker.example", ResourceType: "Script", Layer: "interception"},
		{TargetID: s.FocusedTab(), URL: "https://tracker.example/c", Host: "tracker.example", ResourceType: "Ping", Layer: "interception"},
		{TabID: s.FocusedTab(), URL: "wss://evil.test:443", Host: "evil.test", ResourceType: "WebSocket", Layer: "interception"},
		// Not the model's business: the guard cannot name the tab.
		{URL: "https://update.example:443/", Host: "update.example", ResourceType: "Connection", Layer: "guard"},
	} {
		// Called, not emitted: the test needs them handled before the state.
		if _, err := bus.Call(ctx, s.Bus(), events.RequestBlocked, ev); err != nil {
			t.Fatal(err)
		}
	}
	st := wdtest.State(t, ctx, s)
	want := []events.BlockedRequests{
		{Host: "tracker.example", Count: 2, Types: []string{"script", "ping"}},
		{Host: "evil.test", Count: 1, Types: []string{"websocket"}},
	}
	if !reflect.DeepEqual(st.Blocked, want) {
		t.Fatalf("Blocked %+v, want %+v", st.Blocked, want)
	}
	// A state without the DOM takes the summary too.
	if _, err := bus.Call(ctx, s.Bus(), events.RequestBlocked, events.RequestBlockedEvent{Host: "late.test", ResourceType: "Image"}); err != nil {
		t.Fatal(err)
	}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Blocked) != 1 || st.Blocked[0].Host != "late.test" {
		t.Fatalf("Blocked of a state without DOM: %+v", st.Blocked)
	}
	if st := wdtest.State(t, ctx, s); st.Blocked != nil || strings.Contains(strings.Join(st.Hints, "|"), "URL policy") {
		t.Fatalf("a later state repeats the refusals: %+v %q", st.Blocked, st.Hints)
	}
}

// TestDOMWConcealedTabShowsNothing: a tab the URL policy concealed gives
// the model neither its text, its elements nor a screenshot.
func TestDOMWConcealedTabShowsNothing(t *testing.T) {
	env, s, _ := start(t, Config{})
	ctx := wdtest.Ctx(t)
	wdtest.Navigate(t, ctx, s, env.URL("/dom-forms.html"))
	tab := s.FocusedTab()
	s.ConcealTab(tab, "(refused by the URL policy)")
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.DOMText != "" || len(st.Elements) != 0 || st.Screenshot != nil || st.URL != "" {
		t.Fatalf("concealed tab observed: url %q, %d elements, %d bytes of text, screenshot %v", st.URL, len(st.Elements), len(st.DOMText), st.Screenshot != nil)
	}
	if !strings.Contains(strings.Join(st.Hints, "|"), "concealed") {
		t.Errorf("hints %q do not say the tab is concealed", st.Hints)
	}
	if r, err := bus.Call(ctx, s.Bus(), events.PageText, events.PageTextEvent{}); !errors.Is(err, session.ErrTabConcealed) {
		t.Errorf("page text of a concealed tab: %q, %v", r.Text, err)
	}
	s.ConcealTab(tab, "")
	if st := wdtest.State(t, ctx, s); len(st.Elements) == 0 {
		t.Fatal("the tab shown again has no elements")
	}
}
