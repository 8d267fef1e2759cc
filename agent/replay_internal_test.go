package agent

import (
	"testing"

	"github.com/browseragent/browseragent/events"
)

// A recorded URL matches the page's when the origin and path agree; path
// segments that look like ids match any id, and the query and fragment do
// not count.
func TestReplaySameRoute(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"http://a.test/apply.html?job=go", "http://a.test/apply.html?job=go&x=1#top", true},
		{"http://a.test/orders/1234/edit", "http://a.test/orders/98/edit", true},
		{"http://a.test/u/550e8400-e29b-41d4-a716-446655440000", "http://a.test/u/123e4567-e89b-12d3-a456-426614174000", true},
		{"http://a.test/jobs/go.html", "http://a.test/jobs/sre.html", false},
		{"http://a.test/orders/1234", "http://a.test/orders/new", false},
		{"http://a.test/", "http://a.test", true},
		{"http://a.test/x", "https://a.test/x", false},
		{"http://a.test/x", "http://b.test/x", false},
		{"", "http://anything.test/", true},
	} {
		if got := sameRoute(c.want, c.got); got != c.ok {
			t.Errorf("sameRoute(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
	if got := rebaseURL("http://127.0.0.1:4000/a?b=1", map[string]string{"http://127.0.0.1:4000/": "http://localhost:9"}); got != "http://localhost:9/a?b=1" {
		t.Errorf("rebase: %q", got)
	}
}

// A recorded tab id names, on replay, the open tab on the page the
// recorded tab showed: ids differ from run to run.
func TestReplayMapTab(t *testing.T) {
	recorded := []events.TabInfo{{TargetID: "AAAA1111", URL: "http://a.test/jobs"}, {TargetID: "BBBB2222", URL: "http://a.test/help"}}
	now := []events.TabInfo{{TargetID: "CCCC3333", URL: "http://a.test/help#faq"}, {TargetID: "DDDD4444", URL: "http://a.test/jobs?page=1"}}
	if id, ok := mapTab("1111", recorded, now); !ok || id != "DDDD4444" {
		t.Errorf("1111 -> %q %v", id, ok)
	}
	if id, ok := mapTab("BBBB2222", recorded, now); !ok || id != "CCCC3333" {
		t.Errorf("BBBB2222 -> %q %v", id, ok)
	}
	if _, ok := mapTab("9999", recorded, now); ok {
		t.Error("an unknown recorded tab was mapped")
	}
	twice := append(now, events.TabInfo{TargetID: "EEEE5555", URL: "http://a.test/help"})
	if _, ok := mapTab("2222", recorded, twice); ok {
		t.Error("a tab open twice was mapped to one of them")
	}
}
