package agent

import (
	"testing"

	"github.com/browseragent/browseragent/events"
)

// A failed action whose evidence shows another page (a POST answering 500
// with an error page) changed the page; one that left it alone did not.
// The marks' viewport is the screenshot's area when its size and scale
// are known (a headful window's scrollbars are in the image, not in the
// page's viewport).
func TestChangedPageAndViewport(t *testing.T) {
	failed := func(b, a string) ActionRecord {
		return ActionRecord{Verdict: events.VerdictFailed, Result: ActionResult{Outcome: &events.ActionOutcome{
			Before: events.Evidence{URL: "http://h/" + b, Fingerprint: b}, After: events.Evidence{URL: "http://h/" + a, Fingerprint: a}}}}
	}
	if !changedPage([]ActionRecord{failed("form", "error")}) || changedPage([]ActionRecord{failed("form", "form")}) ||
		changedPage([]ActionRecord{{Verdict: events.VerdictFailed}}) {
		t.Fatal("failed actions: changed page misjudged")
	}
	if !doneAccepted([]ActionRecord{{Result: ActionResult{Done: true}}}) || doneAccepted([]ActionRecord{{Result: ActionResult{Done: true}, Error: "x"}}) {
		t.Fatal("doneAccepted misjudged")
	}
	st := &events.BrowserState{Page: events.PageInfo{ViewportWidth: 1265, ViewportHeight: 785}, ScreenshotScale: 0.8, ScreenshotWidth: 1024, ScreenshotHeight: 640}
	if v := viewportOf(st); v == nil || v.Width != 1280 || v.Height != 800 {
		t.Fatalf("viewport %+v, want the image's 1280x800 CSS px", v)
	}
	st.ScreenshotScale = 0
	if v := viewportOf(st); v == nil || v.Width != 1265 || v.Height != 785 {
		t.Fatalf("viewport %+v, want the page's", v)
	}
}
