package watchdogs

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// Issue 13, case 1: a native <select> behind a custom dropdown is indexed
// (hidden-backing=true), and dropdown_options / select_dropdown on that
// index work: the page's own change handler sees the choice, the drawn
// widget redraws, and the next observation shows the new widget text.
func TestSelectBehindCustomDropdown(t *testing.T) {
	s, env, _, ctx := wdtest.Connect(t, session.Profile{}, dom.New(dom.Config{}), actions.New(actions.Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/dom-custom-select.html"))
	st := wdtest.State(t, ctx, s)
	for _, c := range []struct{ id, pick, value, drawn string }{
		{"country", "Sweden", "se", ".s2-selection__rendered"},
		{"size", "Medium", "m", ".chz-single span"},
		{"shipping", "Pick-up", "pick", ".nice-select .current"},
	} {
		idx := -1
		for _, e := range st.Elements {
			if e.Attributes["id"] == c.id {
				idx = e.Index
			}
		}
		if idx < 0 {
			t.Fatalf("%s has no index:\n%s", c.id, st.DOMText)
		}
		opts, err := bus.Call(ctx, s.Bus(), events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: events.Target{Index: idx}})
		if err != nil || len(opts.Options) < 3 {
			t.Fatalf("%s options: %v %+v", c.id, err, opts.Options)
		}
		res, err := bus.Call(ctx, s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: events.Target{Index: idx}, Text: c.pick})
		if err != nil || res.Selected.Value != c.value {
			t.Fatalf("%s select %q: %v %+v", c.id, c.pick, err, res.Selected)
		}
		var drawn string
		wdtest.Eval(t, ctx, s, "document.querySelector('"+c.drawn+"').textContent", &drawn)
		if drawn != c.pick {
			t.Errorf("%s: the drawn widget shows %q, want %q", c.id, drawn, c.pick)
		}
	}
	var changes []string
	wdtest.Eval(t, ctx, s, "window.changes", &changes)
	if strings.Join(changes, ",") != "country=se,size=m,shipping=pick" {
		t.Errorf("page change handler saw %v", changes)
	}
	st = wdtest.State(t, ctx, s)
	for _, want := range []string{"widget_text=Sweden", "widget_text=Medium", "widget_text=Pick-up"} {
		if !strings.Contains(st.DOMText, want) {
			t.Errorf("next observation lacks %q:\n%s", want, st.DOMText)
		}
	}
}
