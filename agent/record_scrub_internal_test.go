package agent

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
)

// A secret the target showed is scrubbed from the recorded element where
// the observation changed it: a name's whitespace runs collapsed, an
// attribute value cut at the watchdog's limit in the middle of the
// secret. Either way the hashes, which digest the value, are dropped.
func TestRecordElementScrubsCollapsedAndCutSecrets(t *testing.T) {
	const secret = "abc  def-123456"
	a := &Agent{secrets: newSecrets(map[string]string{"tok": secret}, nil, nil)}
	title := strings.Repeat("x", observedAttrCut-10) + secret[:10] // cut inside the secret
	st := &events.BrowserState{Elements: map[int]events.ElementInfo{
		1: {Index: 1, Tag: "a", Role: "link", Name: "Token abc \n def-123456 here", XPath: "/html/body/a[1]",
			Attributes: map[string]string{"href": "/tokens", "title": title}},
		2: {Index: 2, Tag: "a", Role: "link", Name: "Plain", XPath: "/html/body/a[2]",
			Attributes: map[string]string{"href": "/plain", "title": strings.Repeat("y", observedAttrCut)}},
	}}
	rec := func(idx int) *struct {
		name, title, hash string
	} {
		e := a.recordElement(ActionSpec{TargetsIndex: true}, ActionCall{Name: "click", Params: json.RawMessage(`{"index":` + strconv.Itoa(idx) + `}`)}, st)
		if e == nil {
			t.Fatalf("element %d not recorded", idx)
		}
		return &struct{ name, title, hash string }{e.Name, e.Attrs["title"], e.Hash + e.StableHash}
	}
	e := rec(1)
	if e.name != "Token <secret>tok</secret> here" {
		t.Errorf("name %q", e.name)
	}
	if strings.Contains(e.title, "abc") || !strings.HasSuffix(e.title, "<secret>tok</secret>") {
		t.Errorf("title %q keeps the secret's beginning", e.title)
	}
	if e.hash != "" {
		t.Errorf("hashes kept: %q", e.hash)
	}
	// A long value without a secret is kept whole, hashes too.
	if p := rec(2); p.title != strings.Repeat("y", observedAttrCut) || p.hash == "" {
		t.Errorf("plain element recorded as %+v", p)
	}
}
