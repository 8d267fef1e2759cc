package actions

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// BenchmarkTransitionWait measures what Config.TransitionWait adds to a
// click, against the same click with the wait off (TransitionWait < 0) in
// the same run, on pages where the click animates nothing: still; an
// unrelated infinite animation (a spinner: never awaited); an unrelated
// 600 ms transition a timer restarts every 700 ms (a carousel: awaited
// when it started during the click); and one where the click fades a menu
// in over 200 ms (the case the wait is for). Metrics: ns/op is the click;
// transitions-ms/op, the wait's own phase.
func BenchmarkTransitionWait(b *testing.B) {
	const button = `<button id="b" onclick="this.dataset.n = (+this.dataset.n || 0) + 1">Go</button>`
	pages := map[string]string{
		"still":    button,
		"infinite": `<style>@keyframes spin { to { transform: rotate(360deg); } } .spin { width: 20px; height: 20px; animation: spin 1s linear infinite; }</style><div class="spin"></div>` + button,
		"carousel": `<style>.slide { width: 50px; height: 20px; transition: transform 600ms; } .slide.x { transform: translateX(100px); }</style><div class="slide" id="s"></div>` + button +
			`<script>setInterval(() => document.getElementById('s').classList.toggle('x'), 700);</script>`,
		"own-fade": `<style>#m { opacity: 0; transition: opacity 200ms; } #m.open { opacity: 1; }</style><div id="m">Menu</div>` +
			`<button id="b" onclick="document.getElementById('m').classList.toggle('open')">Go</button>`,
	}
	mux := http.NewServeMux()
	for name, body := range pages {
		html := `<!doctype html><html><body>` + body + `</body></html>`
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, html)
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, wait := range []struct {
		name string
		cfg  Config
	}{{"wait=on", Config{}}, {"wait=off", Config{TransitionWait: -1}}} {
		at := start(b, "/actions-click.html", wait.cfg)
		for _, name := range []string{"still", "infinite", "carousel", "own-fade"} {
			b.Run(name+"/"+wait.name, func(b *testing.B) {
				if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL + "/" + name}); err != nil {
					b.Fatal(err)
				}
				target := at.node(at.page(), "#b")
				times := &phaseTimes{sum: map[string]time.Duration{}}
				ctx := session.WithPhases(at.ctx, times.add)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := bus.Call(ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: target}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(times.sum["transitions"].Microseconds())/1000/float64(b.N), "transitions-ms/op")
			})
		}
	}
}
