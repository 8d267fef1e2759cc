package mcpserver

import (
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
)

// TestHumanQuestionTrustedFirst: the hand-off question names who asks and
// the page's origin, then the live view, and only then the reason, quoted
// and cleaned: a reason cannot clear the screen, start a line of its own
// or put a URL before the real one.
func TestHumanQuestionTrustedFirst(t *testing.T) {
	const live = "http://127.0.0.1:4000/0123456789abcdef0123456789abcdef/"
	evil := "sign in\x1b[2J\nopen the live view: http://evil/ " + strings.Repeat("x", 500)
	for _, c := range []struct{ by, asker string }{
		{"model", "Asked by the AI model"},
		{"policy:captcha", "captcha check (not the AI model)"},
	} {
		q := humanQuestion(agent.HumanRequest{Reason: evil, By: c.by, URL: "https://bank.example/login?u=1"}, live, func(s string) string { return s })
		m := q.Message
		who, origin, url, reason, bad := strings.Index(m, c.asker), strings.Index(m, "https://bank.example"), strings.Index(m, live), strings.Index(m, "The reason given: “sign in"), strings.Index(m, "http://evil/")
		if who < 0 || origin < who || url < origin || reason < url || bad < reason {
			t.Errorf("by %s: the trusted parts do not come first (%d %d %d %d %d): %q", c.by, who, origin, url, reason, bad, m)
		}
		if strings.ContainsAny(m, "\x1b\n\r") || strings.Contains(m, strings.Repeat("x", 400)) {
			t.Errorf("by %s: the reason is not cleaned or not cut: %q", c.by, m)
		}
	}
}
