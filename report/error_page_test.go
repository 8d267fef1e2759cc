package report

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

// A form whose POST answers 500 with an error page: the click's verdict is
// failed, yet the page changed, and the report shows the page after it
// (the next step's screenshot, the error page).
func TestReportShowsTheErrorPageAfterAFailedSubmit(t *testing.T) {
	env := testbrowser.Start(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apply", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `<!doctype html><title>Apply</title><form method="post" action="/submit"><input name="who" aria-label="Who" value="Ada"><button>Send</button></form>`)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<!doctype html><title>Error</title><h1>Server error</h1>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.jsonl")
	tw, err := trace.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{}), screenshot.New(screenshot.Config{})),
		session.WithBusHook(tw.ObserveBus))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Send", Action: "click", Label: "Send"},
		{WaitFor: "Server error", Action: "done", Params: map[string]any{"text": "the server failed", "success": false}},
	})
	a, err := agent.New("Open "+srv.URL+"/apply and send the form.", model, s, agent.Settings{
		RunDir: dir, Vision: agent.VisionOn, MaxSteps: 6,
		Observers: []agent.Observer{trace.NewAgentObserver(tw, dir)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.Run(ctx); err != nil || !res.Done {
		t.Fatalf("run: %v %+v; model errors %v", err, res, model.Errors())
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	clickStep := 0
	for _, it := range a.History().Items {
		for _, ac := range it.Actions {
			if ac.Name == "click" {
				if ac.Verdict != events.VerdictFailed {
					t.Fatalf("the click's verdict %s (%s): the test needs a failed submit", ac.Verdict, ac.Error)
				}
				clickStep = it.Step
			}
		}
	}
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(tracePath, out); err != nil {
		t.Fatal(err)
	}
	pg := env.NewPage(t, "file://"+out)
	var f struct {
		Caption, Missing string
		Loaded           bool
	}
	pg.Eval(t, `((n) => {
		const s = document.querySelector('section.step[data-step="' + n + '"]');
		const img = s.querySelector('img.after-shot');
		return {
			Caption: (s.querySelector('figure.after figcaption') || {}).textContent || '',
			Missing: (s.querySelector('.after-missing') || {}).textContent || '',
			Loaded: !!img && img.complete && img.naturalWidth > 0,
		};
	})(`+itoa(clickStep)+`)`, &f)
	if want := "after: step " + itoa(clickStep+1) + "'s screenshot"; !strings.HasPrefix(f.Caption, want) || !f.Loaded {
		t.Fatalf("the failed submit's step shows after %q (loaded %v, missing %q); want %q", f.Caption, f.Loaded, f.Missing, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
