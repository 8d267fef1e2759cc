package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/liveview"
	"github.com/browseragent/browseragent/mcpserver"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// handoffLauncher starts a browser whose Driver hands off through a live
// view announced by elicitation, as the CLI's mcp command does.
type handoffLauncher struct {
	dir string
	mu  sync.Mutex
	s   *session.Session
	d   *agent.Driver
}

func (l *handoffLauncher) start(ctx context.Context) (*mcpserver.Browser, error) {
	s := watchdogs.NewSession(session.Profile{})
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	v, err := liveview.New(s, liveview.Config{})
	if err != nil {
		return nil, errors.Join(err, stop(s))
	}
	closeView := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return v.Close(ctx)
	}
	h := &liveview.Handler{Server: v, Ask: func(ctx context.Context, a liveview.Announcement) (agent.HumanResponse, error) {
		return mcpserver.AskHuman(ctx, a.Request, a.URL)
	}}
	dir, err := os.MkdirTemp(l.dir, "run")
	if err != nil {
		return nil, errors.Join(err, closeView(), stop(s))
	}
	d, err := agent.NewDriver(s, agent.Settings{RunDir: dir, Vision: agent.VisionOff, Human: h, HumanTimeout: 2 * time.Minute})
	if err != nil {
		return nil, errors.Join(err, closeView(), stop(s))
	}
	l.mu.Lock()
	l.s, l.d = s, d
	l.mu.Unlock()
	return &mcpserver.Browser{Driver: d, Ready: s.Ready, Close: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return errors.Join(closeView(), d.Close(ctx), stop(s))
	}}, nil
}

func (l *handoffLauncher) handoffs() []agent.Handoff {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []agent.Handoff
	for _, it := range l.d.History().Items {
		out = append(out, it.Handoffs...)
	}
	return out
}

var liveURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/[0-9a-f]{32}/`)

// person plays the person through the live view at base: signs in on the
// login wall (fields at the fixture's known positions).
func person(base string) error {
	for _, body := range []string{
		`{"type":"click","x":140,"y":75}`, `{"type":"text","text":"ada"}`,
		`{"type":"click","x":140,"y":125}`, `{"type":"text","text":"correct horse 42"}`,
		`{"type":"click","x":100,"y":175}`,
	} {
		resp, err := http.Post(base+"input", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("input %s: %d %s", body, resp.StatusCode, msg)
		}
	}
	return nil
}

// TestRunTaskHandsOffByElicitation: run_task's model asks for a person;
// the client's user is asked by elicitation with the live view's URL, signs
// in through it, and accepts with a note, which the model reads. A user who
// declines is reported as declined; a client without elicitation, or on
// the 2026-07-28 protocol, is not offered request_human.
func TestRunTaskHandsOffByElicitation(t *testing.T) {
	web := site(t)
	l := &handoffLauncher{dir: t.TempDir()}
	model := &swapModel{}
	srv := newServer(t, mcpserver.Config{Start: l.start, Model: model, MaxSteps: 6})
	script := func(note string) {
		model.set(
			scripted.Step{Action: "navigate", Params: map[string]any{"url": web.URL1 + "/liveview-login.html"}},
			scripted.Step{Action: "request_human", Params: map[string]any{"reason": "sign in as ada"}},
			scripted.Step{WaitFor: note, MaxWaits: 1, Action: "done", Params: map[string]any{"text": "after the person", "success": true}},
		)
	}

	t.Run("accept", func(t *testing.T) {
		var asked []string
		var mu sync.Mutex
		cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			u := liveURL.FindString(r.Params.Message)
			if u == "" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if err := person(u); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "signed in as ada"}}, nil
		}}, "2025-11-25")
		script("signed in as ada")
		text := mustCall(t, cs, "run_task", map[string]any{"task": "Sign in"})
		if !strings.Contains(text, "Done (success)") {
			t.Fatalf("run_task: %s", text)
		}
		mu.Lock()
		if len(asked) != 1 || !strings.Contains(asked[0], "sign in as ada") || !liveURL.MatchString(asked[0]) {
			t.Fatalf("questions: %q", asked)
		}
		mu.Unlock()
		var body string
		if err := testbrowser.Eval(mustPage(t, l), `document.body.innerText`, &body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, "Welcome, ada") {
			t.Fatalf("page after the hand-off: %q", body)
		}
		hs := l.handoffs()
		if len(hs) != 1 || hs[0].Via != liveview.ViaLiveView && hs[0].Via != mcpserver.ViaElicitation || hs[0].Note != "signed in as ada" || hs[0].Error != "" || !hs[0].Changed {
			t.Fatalf("hand-offs: %+v", hs)
		}
	})

	for _, c := range []struct {
		name, version string
		handler       func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want          func(agent.Handoff) bool
	}{
		{"decline", "2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}, func(h agent.Handoff) bool { return h.Declined && h.Error == "" }},
		// A client that cannot be asked: request_human is not offered.
		{"no elicitation", "2025-11-25", nil, nil},
		{"new protocol", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts *mcp.ClientOptions
			if c.handler != nil {
				opts = &mcp.ClientOptions{ElicitationHandler: c.handler}
			}
			cs := connect(t, srv, opts, c.version)
			before := len(l.handoffs())
			script("")
			mustCall(t, cs, "run_task", map[string]any{"task": "Sign in"})
			hs := l.handoffs()
			if c.want == nil {
				if n := model.humanOffers(); len(hs) != before || n != 0 {
					t.Fatalf("a client that cannot be asked: hand-offs %+v, %d model requests offering request_human", hs[before:], n)
				}
				return
			}
			if len(hs) != before+1 || !c.want(hs[len(hs)-1]) {
				t.Fatalf("hand-offs: %+v", hs[before:])
			}
			if model.humanOffers() == 0 {
				t.Fatal("request_human was not offered to a client that can be asked")
			}
		})
	}
}

func mustPage(t *testing.T, l *handoffLauncher) *cdp.Session {
	t.Helper()
	l.mu.Lock()
	s := l.s
	l.mu.Unlock()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
