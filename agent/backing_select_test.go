package agent_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
)

// backingRE finds the index of the hidden backing select with id=country.
var backingRE = regexp.MustCompile(`\[(\d+)\]<select id=country [^\n]*hidden-backing=true`)

// Issue 13, case 1, at the agent's level: the model reads a select2-style
// dropdown's backing select (hidden-backing=true), lists its options with
// dropdown_options and picks one with select_dropdown on that index; the
// next observation shows the drawn widget's new text.
func TestAgentSelectBehindCustomDropdown(t *testing.T) {
	env, s := newSession(t)
	backing := func(txt string) int {
		m := backingRE.FindStringSubmatch(txt)
		if m == nil {
			t.Errorf("no hidden-backing select in:\n%s", txt)
			return 0
		}
		i, _ := strconv.Atoi(m[1])
		return i
	}
	model := dynModel(
		func(txt string) string { return act("dropdown_options", map[string]any{"index": backing(txt)}) },
		func(txt string) string {
			return act("select_dropdown", map[string]any{"index": backing(txt), "text": "Denmark"})
		},
		func(txt string) string { return act("done", map[string]any{"text": "ok", "success": true}) },
	)
	a, err := agent.New("Open "+env.URL("/dom-custom-select.html"), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	for _, it := range a.History().Items {
		for _, r := range it.Actions {
			if r.Error != "" {
				t.Errorf("step %d %s: %s", it.Step, r.Name, r.Error)
			}
		}
	}
	reqs := model.reqs
	if txt := userText(reqs[1]); !strings.Contains(txt, `"Denmark"`) {
		t.Errorf("options not in read_state:\n%s", txt)
	}
	if txt := userText(reqs[2]); !regexp.MustCompile(`<select id=country [^\n]*widget_text=Denmark`).MatchString(txt) {
		t.Errorf("the drawn widget's new text is not in the next observation:\n%s", txt)
	}
}
