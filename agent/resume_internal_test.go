package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
)

// The restore's page is the one the agent was on: a switch_tab in the last
// step resolves to the tab the step observed; a tab a last-step click
// opened is opened at its recorded URL, or, when none was recorded,
// passed over, and nothing done after it is re-applied on the page
// before it; a close_tab before the
// last step goes to the page the next step observed; a navigation with no
// URL recorded no longer makes the history unresumable.
func TestPlanRestorePage(t *testing.T) {
	nav := func(u string) ActionRecord {
		p, _ := json.Marshal(NavigateParams{URL: u})
		return ActionRecord{Name: "navigate", Params: p}
	}
	input := func(text string) ActionRecord {
		p, _ := json.Marshal(map[string]any{"index": 1, "text": text})
		return ActionRecord{Name: "input", Params: p}
	}
	tab := func(name, id string) ActionRecord {
		p, _ := json.Marshal(TabParams{TabID: id})
		return ActionRecord{Name: name, Params: p}
	}
	newTab := ActionRecord{Name: "click", Params: json.RawMessage(`{"index":2}`), Verdict: events.VerdictNewTab}
	newTabAt := func(u string) ActionRecord {
		r := newTab
		r.TabURL = u
		return r
	}
	tabs := []events.TabInfo{{TargetID: "AAAA1111", URL: "http://a.test/"}, {TargetID: "BBBB2222", URL: "http://b.test/form"}}
	cases := []struct {
		name   string
		items  []HistoryItem
		url    string
		inputs []string
	}{
		{"switch_tab last", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://a.test/")}},
			{Step: 1, State: StateRecord{URL: "http://a.test/", Tabs: tabs}, Actions: []ActionRecord{input("x"), tab("switch_tab", "2222")}},
		}, "http://b.test/form", nil},
		{"new tab last", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://a.test/")}},
			{Step: 1, State: StateRecord{URL: "http://a.test/"}, Actions: []ActionRecord{input("before"), newTab, input("after")}},
		}, "http://a.test/", []string{"before"}},
		{"new tab last, its URL recorded", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://a.test/")}},
			{Step: 1, State: StateRecord{URL: "http://a.test/"}, Actions: []ActionRecord{input("before"), newTabAt("http://b.test/form"), input("on b")}},
		}, "http://b.test/form", []string{"on b"}},
		{"new tab observed", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://a.test/")}},
			{Step: 1, State: StateRecord{URL: "http://a.test/"}, Actions: []ActionRecord{input("before"), newTab}},
			{Step: 2, State: StateRecord{URL: "http://b.test/form"}, Actions: []ActionRecord{input("on b")}},
		}, "http://b.test/form", []string{"on b"}},
		{"close_tab observed", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://b.test/form")}},
			{Step: 1, State: StateRecord{URL: "http://b.test/form"}, Actions: []ActionRecord{input("on b"), tab("close_tab", "2222")}},
			{Step: 2, State: StateRecord{URL: "http://a.test/"}, Actions: []ActionRecord{input("on a")}},
		}, "http://a.test/", []string{"on a"}},
		{"go_back last, no outcome", []HistoryItem{
			{Step: 0, Actions: []ActionRecord{nav("http://a.test/")}},
			{Step: 1, State: StateRecord{URL: "http://a.test/"}, Actions: []ActionRecord{input("x"), {Name: "go_back"}}},
		}, "http://a.test/", []string{"x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planRestore(&History{Task: "t", Items: tc.items}, ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var url string
			var inputs []string
			for _, it := range p.rec.Items {
				for _, r := range it.Actions {
					var m map[string]any
					_ = json.Unmarshal(r.Params, &m)
					switch r.Name {
					case "navigate":
						url, _ = m["url"].(string)
					case "input":
						inputs = append(inputs, m["text"].(string))
					default:
						t.Fatalf("the restore would run %s", r.Name)
					}
				}
			}
			if url != tc.url || strings.Join(inputs, ",") != strings.Join(tc.inputs, ",") {
				t.Fatalf("restore opens %q and types %v, want %q and %v", url, inputs, tc.url, tc.inputs)
			}
		})
	}
}
