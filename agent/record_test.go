package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/agent/match"
)

const recordURL = "https://jobs.test/apply"

// recordSite has one element for each element action, a secret in a
// link's name and title, and a password field.
func recordSite() []agenttest.Page {
	return []agenttest.Page{{
		URL: recordURL, Title: "Apply",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "input", Attrs: map[string]string{"type": "text", "id": "name", "name": "full_name", "aria-label": "Full name"}},
			{Index: 2, Tag: "input", Attrs: map[string]string{"type": "password", "id": "pw", "aria-label": "Password"}},
			{Index: 3, Tag: "select", Attrs: map[string]string{"name": "plan", "aria-label": "Plan"}, Options: []string{"Basic", "Pro"}},
			{Index: 4, Tag: "input", Attrs: map[string]string{"type": "file", "id": "cv", "aria-label": "CV"}},
			{Index: 5, Text: "Menu", Attrs: map[string]string{"aria-haspopup": "true", "class": "menu is-open"}},
			{Index: 6, Tag: "div", Attrs: map[string]string{"aria-label": "Results", "class": "scroller"}},
			{Index: 7, Tag: "a", Text: "Reference tok-SECRET-42", Attrs: map[string]string{"href": "/ref?t=tok-SECRET-42", "title": "ref tok-SECRET-42"}},
			{Index: 8, Text: "Apply", Attrs: map[string]string{"type": "submit", "id": "apply"}},
		},
	}}
}

// Every element action of a run records the element it targeted as the
// step observed it; other actions record none; secrets are scrubbed from
// names and attributes; no field's value is kept; history.json round-trips
// through LoadHistory.
func TestRecordElementOfEveryElementAction(t *testing.T) {
	b := agenttest.New(t, recordSite()...)
	cv := filepath.Join(t.TempDir(), "cv.pdf")
	if err := os.WriteFile(cv, []byte("%PDF"), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(name string, p map[string]any) scripted.Step { return scripted.Step{Action: name, Params: p} }
	model := scripted.New([]scripted.Step{
		step("input", map[string]any{"index": 1, "text": "Ada Lovelace"}),
		step("input", map[string]any{"index": 2, "text": "<secret>pw</secret>"}),
		step("dropdown_options", map[string]any{"index": 3}),
		step("select_dropdown", map[string]any{"index": 3, "text": "Pro"}),
		step("upload_file", map[string]any{"index": 4, "path": cv}),
		step("hover", map[string]any{"index": 5}),
		step("scroll", map[string]any{"index": 6, "down": true}),
		step("scroll", map[string]any{"down": true}),
		step("send_keys", map[string]any{"keys": "Escape"}),
		step("click", map[string]any{"index": 7}),
		step("click", map[string]any{"index": 8}),
		step("done", map[string]any{"text": "applied", "success": true}),
	})
	set := settings(t)
	set.SensitiveData = map[string]string{"pw": "hunter2-pass", "tok": "tok-SECRET-42"}
	set.AvailableFilePaths = []string{cv}
	a := newAgent(t, "Apply at "+recordURL, model, b, set)
	res := run(t, a, model)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}

	want := map[string]match.Element{ // by action and index
		"input 1":            {Tag: "input", Name: "Full name", Attrs: map[string]string{"type": "text", "id": "name", "name": "full_name", "aria-label": "Full name"}},
		"input 2":            {Tag: "input", Name: "Password", Attrs: map[string]string{"type": "password", "id": "pw", "aria-label": "Password"}},
		"dropdown_options 3": {Tag: "select", Name: "Plan"},
		"select_dropdown 3":  {Tag: "select", Name: "Plan"},
		"upload_file 4":      {Tag: "input", Name: "CV"},
		"hover 5":            {Tag: "button", Name: "Menu"},
		"scroll 6":           {Tag: "div", Name: "Results"},
		"click 7": {Tag: "a", Name: "Reference <secret>tok</secret>",
			Attrs: map[string]string{"href": "/ref?t=<secret>tok</secret>", "title": "ref <secret>tok</secret>"}},
		"click 8": {Tag: "button", Name: "Apply"},
	}
	seen := map[string]bool{}
	h := a.History()
	for _, it := range h.Items {
		for _, ar := range it.Actions {
			var p struct{ Index *int }
			_ = json.Unmarshal(ar.Params, &p)
			key := ar.Name
			if p.Index != nil {
				key += " " + itoa(*p.Index)
			}
			w, isElem := want[key]
			if !isElem {
				if ar.Element != nil {
					t.Errorf("%s (step %d) recorded an element: %+v", key, it.Step, ar.Element)
				}
				continue
			}
			seen[key] = true
			e := ar.Element
			if e == nil {
				t.Errorf("%s (step %d): no element recorded", key, it.Step)
				continue
			}
			if e.Tag != w.Tag || e.Name != w.Name || e.Ordinal != 1 || e.Similar != 1 {
				t.Errorf("%s: element %+v, want tag %q name %q, 1 of 1", key, e, w.Tag, w.Name)
			}
			// The hashes digest name and attributes: none is kept for an
			// element that showed a secret.
			if hasHash, secret := e.Hash != "" && e.StableHash != "", strings.Contains(fmt.Sprint(e.Name, e.Attrs), "<secret>"); hasHash == secret {
				t.Errorf("%s: hashes %q %q with a secret shown %v", key, e.Hash, e.StableHash, secret)
			}
			if w.Attrs != nil && !reflect.DeepEqual(e.Attrs, w.Attrs) {
				t.Errorf("%s: attrs %v, want %v", key, e.Attrs, w.Attrs)
			}
			if _, ok := e.Attrs["value"]; ok {
				t.Errorf("%s: a field's value was recorded: %v", key, e.Attrs)
			}
			if ar.Match != nil {
				t.Errorf("%s: the model chose the element, yet a match is recorded: %+v", key, ar.Match)
			}
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("action %s did not run", k)
		}
	}

	path := filepath.Join(t.TempDir(), "history.json")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2-pass", "tok-SECRET-42"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("history.json holds the secret %q", secret)
		}
	}
	back, err := agent.LoadHistory(path)
	if err != nil {
		t.Fatalf("LoadHistory: %v", err)
	}
	if len(back.Items) != len(h.Items) {
		t.Fatalf("%d items loaded, %d saved", len(back.Items), len(h.Items))
	}
	for i := range h.Items {
		for j := range h.Items[i].Actions {
			if got, w := back.Items[i].Actions[j].Element, h.Items[i].Actions[j].Element; !reflect.DeepEqual(got, w) {
				t.Fatalf("step %d action %d: element %+v loaded, %+v saved", i, j, got, w)
			}
		}
	}
}

// A recorded element is found again on the same page by its hash (what
// replay and the action cache rely on).
func TestRecordedElementIsFoundAgain(t *testing.T) {
	b := agenttest.New(t, recordSite()...)
	model := scripted.New([]scripted.Step{
		{Action: "click", Params: map[string]any{"index": 8}},
		{Action: "done", Params: map[string]any{"text": "ok", "success": true}},
	})
	a := newAgent(t, "Apply at "+recordURL, model, b, settings(t))
	run(t, a, model)
	var rec *match.Element
	for _, it := range a.History().Items {
		for _, ar := range it.Actions {
			if ar.Name == "click" {
				rec = ar.Element
			}
		}
	}
	if rec == nil {
		t.Fatal("no element recorded for the click")
	}
	d, err := agent.NewDriver(b, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := d.State(ctx, agent.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := match.Find(*rec, obs.State.Elements)
	if r.Index != 8 || !r.Unique || r.Strategy != match.ByHash {
		t.Fatalf("found %+v, want 8 by hash", r)
	}
}

// Driver.Do (MCP, the shell) records the element an action targeted the
// same way a run does.
func TestDriverDoRecordsElement(t *testing.T) {
	b := agenttest.New(t, recordSite()...)
	set := settings(t)
	set.SensitiveData = map[string]string{"tok": "tok-SECRET-42"}
	d, err := agent.NewDriver(b, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Do(ctx, "navigate", json.RawMessage(`{"url":"`+recordURL+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.State(ctx, agent.StateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, err := d.Do(ctx, "click", json.RawMessage(`{"index":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := rec.Element; e == nil || e.Tag != "a" || e.Name != "Reference <secret>tok</secret>" || e.Attrs["title"] != "ref <secret>tok</secret>" {
		t.Fatalf("Do's record element %+v", rec.Element)
	}
	rec, err = d.Do(ctx, "send_keys", json.RawMessage(`{"keys":"Escape"}`))
	if err != nil || rec.Element != nil {
		t.Fatalf("send_keys: %+v, %v", rec, err)
	}
	var clicks int
	for _, it := range d.History().Items {
		for _, ar := range it.Actions {
			if ar.Name == "click" {
				clicks++
				if ar.Element == nil || ar.Element.Name != "Reference <secret>tok</secret>" {
					t.Fatalf("history's click element %+v", ar.Element)
				}
			}
		}
	}
	if clicks != 1 {
		t.Fatalf("%d clicks in the history", clicks)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// A cached action's match names its candidates from the live page: a
// secret the page shows is scrubbed from them in the history, as from the
// recorded element (which, having shown it, has no hashes and is found
// again by its name around the secret).
func TestCachedMatchCandidatesScrubbed(t *testing.T) {
	const secret = "ada@secret.example"
	pages := []agenttest.Page{{
		URL: recordURL, Title: "Apply", Text: "Apply",
		Elements: []agenttest.Element{
			{Index: 1, Tag: "a", Text: "Account " + secret, Href: "https://jobs.test/account", Attrs: map[string]string{"href": "/account", "id": "acct"}},
		},
	}, {URL: "https://jobs.test/account", Title: "Account", Text: "Your account"}}
	cache, err := agent.NewDirCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	click := scripted.Step{Action: "click", Params: map[string]any{"index": 1}}
	done := scripted.Step{WaitFor: "Your account", Action: "done", Params: map[string]any{"text": "ok", "success": true}}
	runWith := func(steps ...scripted.Step) *agent.History {
		model := scripted.New(steps)
		set := settings(t)
		set.Cache = cache
		set.SensitiveData = map[string]string{"mail": secret}
		a := newAgent(t, "Open "+recordURL+" and open the account.", model, agenttest.New(t, pages...), set)
		if res := run(t, a, model); !res.Success {
			t.Fatalf("result %+v", res)
		}
		return a.History()
	}
	first := runWith(click, done)
	var rec *match.Element
	for _, it := range first.Items {
		for _, ar := range it.Actions {
			if ar.Name == "click" {
				rec = ar.Element
			}
		}
	}
	if rec == nil || rec.Name != "Account <secret>mail</secret>" || rec.Hash != "" || rec.StableHash != "" {
		t.Fatalf("recorded element %+v", rec)
	}
	h := runWith(done)
	var m *match.Result
	for _, it := range h.Items {
		for _, ar := range it.Actions {
			if ar.Name == "click" && it.Source == agent.SourceCache {
				m = ar.Match
			}
		}
	}
	if m == nil || !m.Unique || m.Strategy != match.ByRoleName || len(m.Candidates) == 0 {
		t.Fatalf("the cached click's match %+v", m)
	}
	if m.Candidates[0].Name != "Account <secret>mail</secret>" {
		t.Fatalf("candidate name %q", m.Candidates[0].Name)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Fatal("the history holds the secret")
	}
}
