package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent/match"

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
}

// Rebase origins compare case-insensitively and survive a userinfo; keys
// and targets that are not origins are refused with ErrReplay.
func TestReplayRebaseURL(t *testing.T) {
	rb, err := parseRebase(map[string]string{"http://127.0.0.1:4000/": "http://localhost:9", "https://Jobs.Test": "http://127.0.0.1:7"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:4000/a?b=1", "http://localhost:9/a?b=1"},
		{"https://jobs.test/jobs/go#x", "http://127.0.0.1:7/jobs/go#x"},
		{"https://JOBS.test/", "http://127.0.0.1:7/"},
		{"https://ada@jobs.test/p", "http://ada@127.0.0.1:7/p"},
		{"https://other.test/p", "https://other.test/p"},
		{"/relative", "/relative"},
	} {
		if got := rebaseURL(c.in, rb); got != c.want {
			t.Errorf("rebaseURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []map[string]string{
		{"127.0.0.1:4000": "http://localhost:9"},
		{"jobs.test": "http://localhost:9"},
		{"http://a.test/app": "http://localhost:9"},
		{"http://a.test": "localhost:9"},
		{"http://a.test": "http://b.test/x?y=1"},
	} {
		if _, err := parseRebase(bad); !errors.Is(err, ErrReplay) {
			t.Errorf("parseRebase(%v) = %v, want ErrReplay", bad, err)
		}
	}
}

// Plain variables get unused names (a recorded name_2 does not collide
// with the second "name"), and a secret keeps its placeholder's name even
// when a plain value would be named alike.
func TestReplayVariableNames(t *testing.T) {
	el := func(name string) *match.Element {
		return &match.Element{Tag: "input", Attrs: map[string]string{"name": name}}
	}
	in := func(name, text string) ActionRecord {
		return ActionRecord{Name: "input", Params: json.RawMessage(`{"index":1,"text":"` + text + `"}`), Element: el(name)}
	}
	h := &History{Items: []HistoryItem{{Step: 1, Actions: []ActionRecord{
		in("email_2", "a"), in("email", "b"), in("email", "c"),
		in("password", "plain"), in("pw", "<secret>password</secret>"), in("pw", "<secret>password</secret>"),
	}}}}
	var got []string
	for _, v := range replayVariables(h) {
		got = append(got, fmt.Sprintf("%s:%v", v.Name, v.Secret))
	}
	want := "email_2:false email:false email_3:false password_2:false password:true"
	if strings.Join(got, " ") != want {
		t.Errorf("variables %q, want %q", strings.Join(got, " "), want)
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

// The step budget gives every recorded action its own step (a fence may
// cut any batch) and every recorded step its heals.
func TestReplayBudget(t *testing.T) {
	steps := []recStep{{actions: make([]recAction, 3)}, {actions: make([]recAction, 1)}}
	if got, want := replayBudget(steps, 3), (3+3+1)+(1+3+1)+2; got != want {
		t.Fatalf("budget %d, want %d", got, want)
	}
}

// A replayed action's verdict agrees with the recorded one by the rules of
// compatibleVerdict; a navigate in a browser already at its URL reloads
// the page without a URL change and still did what was recorded.
func TestReplayCompatibleVerdict(t *testing.T) {
	for _, c := range []struct {
		action    string
		want, got events.Verdict
		ok        bool
	}{
		{"click", events.VerdictNavigated, events.VerdictNavigated, true},
		{"click", events.VerdictNavigated, events.VerdictNoChange, false},
		{"click", events.VerdictChanged, events.VerdictNavigated, true},
		{"click", events.VerdictChanged, events.VerdictNoChange, false},
		{"input", events.VerdictChanged, events.VerdictNoChange, true},
		{"click", events.VerdictNoChange, events.VerdictChanged, true},
		{"click", events.VerdictNoChange, events.VerdictFailed, false},
		{"navigate", events.VerdictNavigated, events.VerdictNoChange, true},
		{"navigate", events.VerdictNavigated, events.VerdictChanged, true},
		{"navigate", events.VerdictNavigated, events.VerdictFailed, false},
	} {
		if got := compatibleVerdict(c.action, c.want, c.got); got != c.ok {
			t.Errorf("compatibleVerdict(%s, want %s, got %s) = %v, want %v", c.action, c.want, c.got, got, c.ok)
		}
	}
}
