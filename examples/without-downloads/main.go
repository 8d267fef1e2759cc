// Command without-downloads runs the agent in a deployment that does not
// want the downloads watchdog (files must never be written on this host):
// the default set minus one, by name. Nothing else depends on it — the
// watchdogs talk only through events — so the run completes as usual.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/downloads"
)

const form = `<!doctype html><title>Contact</title>
<form action="/sent"><input name=msg placeholder="Message"><button>Send</button></form>
<a href="/report.pdf" download>Annual report (PDF)</a>`

func main() {
	if err := run(context.Background(), os.Stdout, ""); err != nil {
		log.Fatal(err)
	}
}

// run sends a message through a form with the downloads watchdog removed;
// runDir "" means a temporary folder.
func run(ctx context.Context, out io.Writer, runDir string) error {
	received := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, form) })
	mux.HandleFunc("/sent", func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- r.URL.Query().Get("msg"):
		default:
		}
		fmt.Fprintf(w, "<!doctype html><title>Sent</title><p>Message received: %q</p>", r.URL.Query().Get("msg"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	s := watchdogs.NewSession(session.Profile{}, session.WithoutWatchdogs(downloads.Name))
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer s.Stop(context.Background())

	model := scripted.New([]scripted.Step{
		{NextGoal: "Send the message.", Actions: []scripted.Action{
			{Name: "input", Label: "Message", Params: map[string]any{"text": "hello"}},
			{Name: "click", Label: "Send"},
		}},
		{NextGoal: "Finish.", Actions: []scripted.Action{{Name: "done", Params: map[string]any{"success": true, "text": "message sent"}}}},
	})
	a, err := agent.New("Send the message hello through the form at "+srv.URL, model, s,
		agent.Settings{RunDir: runDir, MaxSteps: 5, StepTimeout: time.Minute})
	if err != nil {
		return err
	}
	res, err := a.Run(ctx)
	if err != nil {
		return err
	}
	attached := slices.Contains(s.Bus().Handlers(events.BrowserConnected.Name), downloads.Name)
	got := "nothing"
	select {
	case m := <-received:
		got = fmt.Sprintf("%q", m)
	default:
	}
	fmt.Fprintf(out, "downloads watchdog attached: %v\nserver received: %s\nresult: %s (success %v)\n", attached, got, res.FinalText, res.Success)
	return nil
}
