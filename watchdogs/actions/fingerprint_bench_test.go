package actions

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// BenchmarkEvidenceAnimated measures one evidence read (the fingerprint
// an action reads before and after it) on pages of n elements: still;
// with a transform the page animates every frame (a style change that
// cannot show or hide anything: not checked); with a class toggled every
// frame (every read then follows a class change, so the fingerprint
// measures the body's rendered text, a walk of the page: the worst case).
// Compare each with still in the same run.
func BenchmarkEvidenceAnimated(b *testing.B) {
	anims := map[string]string{
		"still":     "",
		"transform": `<script>let k = 0; (function f() { document.getElementById('ticker').style.transform = 'rotate(' + (k++ % 360) + 'deg)'; requestAnimationFrame(f); })();</script>`,
		"class":     `<script>(function f() { document.getElementById('ticker').classList.toggle('on'); requestAnimationFrame(f); })();</script>`,
	}
	page := func(n int, script string) string {
		var sb strings.Builder
		sb.WriteString(`<!doctype html><html><body><div id="ticker" style="width:10px;height:10px"></div>`)
		for i := 0; i < n/4; i++ {
			fmt.Fprintf(&sb, `<div class="row"><span>Item %d</span><a href="#i%d">open</a><b>%d</b></div>`, i, i, i*7)
		}
		sb.WriteString(script)
		sb.WriteString(`</body></html>`)
		return sb.String()
	}
	mux := http.NewServeMux()
	for _, n := range []int{1000, 10000, 50000} {
		for anim, script := range anims {
			body := page(n, script)
			mux.HandleFunc(fmt.Sprintf("/p%d-%s", n, anim), func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, body)
			})
		}
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	at := start(b, "/actions-click.html", Config{})
	for _, n := range []int{1000, 10000, 50000} {
		for _, anim := range []string{"still", "transform", "class"} {
			b.Run(fmt.Sprintf("elements=%d/%s", n, anim), func(b *testing.B) {
				if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: fmt.Sprintf("%s/p%d-%s", srv.URL, n, anim)}); err != nil {
					b.Fatal(err)
				}
				// The baseline read, and the first layout of a long page.
				at.s.Evidence(at.ctx)
				at.s.Evidence(at.ctx)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if ev := at.s.Evidence(at.ctx); ev.Fingerprint == "" {
						b.Fatal("no fingerprint")
					}
				}
			})
		}
	}
}
