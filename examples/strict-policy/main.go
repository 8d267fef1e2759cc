// Command strict-policy shows a stricter deployment: pages may load only
// from one host, destructive confirms are refused by a dialog policy of our
// own, and page scripts need an approval that this deployment never grants.
// Each refusal reaches the model as what it is.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/popups"
)

const page = `<!doctype html><title>Account</title>
<h1>Your account</h1>
<button onclick="document.getElementById('s').textContent = confirm('Delete your account for good?') ? 'Account deleted' : 'Account kept'">Delete account</button>
<p id=s>Account active</p>`

func main() {
	if err := run(context.Background(), os.Stdout, ""); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer, runDir string) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, page) }))
	defer srv.Close()
	// The same server under another host name: not allowed by the profile.
	elsewhere := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	// A dialog policy: never accept a confirm, and keep a record. The
	// popups watchdog given to the session replaces the default one (same
	// name); the DOM watchdog learns the decisions from its events.
	var mu sync.Mutex
	var decided []string
	dialogs := popups.New(popups.Config{
		PolicyName: "deployment",
		Policy: popups.DialogPolicyFunc(func(_ context.Context, d popups.Dialog) popups.DialogDecision {
			mu.Lock()
			decided = append(decided, d.Type+": "+d.Message)
			mu.Unlock()
			if d.Type == "alert" {
				return popups.DialogDecision{Accept: true}
			}
			return popups.DialogDecision{Accept: false, Reason: "confirms need a person in this deployment"}
		}),
	})
	profile := session.Profile{AllowedDomains: []string{"127.0.0.1"}}
	s := watchdogs.NewSession(profile, session.WithWatchdogs(dialogs))
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer s.Stop(context.Background())

	model := scripted.New([]scripted.Step{
		{NextGoal: "Delete the account.", Actions: []scripted.Action{{Name: "click", Label: "Delete account", Tag: "button"}}},
		{NextGoal: "Try the other site.", Actions: []scripted.Action{{Name: "navigate", Params: map[string]any{"url": elsewhere + "/"}}}},
		{NextGoal: "Read the title with a script.", Actions: []scripted.Action{{Name: "evaluate", Params: map[string]any{"code": "document.title"}}}},
		{NextGoal: "Give up.", Actions: []scripted.Action{{Name: "done", Params: map[string]any{"success": false, "text": "Not allowed here."}}}},
	})
	a, err := agent.New("Delete my account at "+srv.URL+"/", model, s, agent.Settings{
		Approver: agent.DenyRisks{agent.RiskScript: "page scripts are not approved in this deployment"},
		RunDir:   runDir, MaxSteps: 8, StepTimeout: time.Minute,
	})
	if err != nil {
		return err
	}
	res, err := a.Run(ctx)
	if err != nil {
		return err
	}
	for _, it := range a.History().Items {
		for _, ac := range it.Actions {
			msg := ac.Result.Text
			if ac.Error != "" {
				msg = ac.Error
			}
			fmt.Fprintf(out, "step %d %s: %s\n", it.Step, ac.Name, firstLine(msg))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "dialogs decided by the policy: %q\nresult: success=%v %s\n", decided, res.Success, res.FinalText)
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
