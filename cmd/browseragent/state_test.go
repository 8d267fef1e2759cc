package main

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/events"
)

// The state command prints what the model reads, the requests the URL
// policy refused and the hints included.
func TestFormatStateShowsBlockedAndHints(t *testing.T) {
	out := formatState(events.BrowserState{
		URL: "https://shop.test/", Title: "Shop", DOMText: "[1]<button />\n\tBuy",
		Hints: []string{"The page may still be loading; consider waiting."},
		Blocked: []events.BlockedRequests{
			{Host: "tracker.example", Count: 3, Types: []string{"script", "fetch"}},
			{Host: "evil.test", Count: 1, Types: []string{"image"}},
		},
	})
	for _, want := range []string{
		"<browser_state>\n",
		"Blocked since the last step (refused by the URL policy; do not retry them): 3 requests to tracker.example (script, fetch); 1 request to evil.test (image)\n",
		"The page may still be loading; consider waiting.\n",
		"[1]<button />",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("state output lacks %q:\n%s", want, out)
		}
	}
}
