package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

// saveSite serves a page whose Save button POSTs with fetch and is
// answered 422, the page unchanged: only the network says it failed.
func saveSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/save", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>Profile</title></head><body><h1>Profile</h1>`+
			`<button id="save" onclick="fetch('/api/profile', {method: 'POST', body: 'name=Ada'}).catch(() => {})">Save</button></body></html>`)
	})
	mux.HandleFunc("/api/profile", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// doneRecords returns the done records of the run's history, in order.
func doneRecords(h *agent.History) []agent.ActionRecord {
	var out []agent.ActionRecord
	for _, it := range h.Items {
		for _, r := range it.Actions {
			if r.Name == "done" {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestDoneAfterFailedWriteIsWarnedOnce(t *testing.T) {
	srv := saveSite(t)
	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved the profile", "success": true}},
		// Only once the warning reached the model does it confirm.
		{WaitFor: "call done again to confirm", MaxWaits: 1, Action: "done", Params: map[string]any{"text": "Saved the profile", "success": true}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, settings(t))
	res := runAgent(t, a)
	if !res.Done || !res.Success || len(model.Errors()) > 0 {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	h := a.History()
	var click *agent.ActionRecord
	for i := range h.Items {
		for j, r := range h.Items[i].Actions {
			if r.Name == "click" {
				click = &h.Items[i].Actions[j]
			}
		}
	}
	if click == nil || !strings.Contains(click.Error, "answered 422") || len(click.Requests) == 0 || click.Requests[0].Status != 422 {
		t.Fatalf("click record %+v", click)
	}
	dones := doneRecords(h)
	if len(dones) != 2 {
		t.Fatalf("done records %+v, want 2", dones)
	}
	if dones[0].Result.Done || !strings.Contains(dones[0].Result.Text, "POST "+srv.URL+"/api/profile answered 422") || dones[0].Error != "" {
		t.Fatalf("first done %+v, want held back with the warning", dones[0])
	}
	if !dones[1].Result.Done {
		t.Fatalf("second done %+v, want accepted", dones[1])
	}
	// The held-back done's step is not a failure, and its note is kept.
	for _, it := range h.Items {
		if len(it.Actions) > 0 && it.Actions[0].Name == "done" && !it.Actions[0].Result.Done {
			if it.Failed || len(it.Notes) == 0 || !strings.Contains(it.Notes[len(it.Notes)-1], "call done again") {
				t.Fatalf("warned step %+v", it)
			}
		}
	}
}

func TestDoneFalseAfterFailedWriteIsAccepted(t *testing.T) {
	srv := saveSite(t)
	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "The server refused the profile", "success": false}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, settings(t))
	res := runAgent(t, a)
	if !res.Done || res.Success || res.FinalText != "The server refused the profile" {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	if d := doneRecords(a.History()); len(d) != 1 {
		t.Fatalf("done records %+v", d)
	}
}

func TestForcedDoneAfterFailedWriteIsAcceptedWithNote(t *testing.T) {
	srv := saveSite(t)
	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
	})
	set := settings(t)
	set.MaxSteps = 2 // the done comes on the last step, when only done is offered
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, set)
	res := runAgent(t, a)
	if !res.Done || !res.Success {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	h := a.History()
	last := h.Items[len(h.Items)-1]
	if len(last.Notes) == 0 || !strings.Contains(strings.Join(last.Notes, " "), "accepted on the last step") {
		t.Fatalf("last step notes %q, want the warning recorded", last.Notes)
	}
}

// TestActionWatchdogWithoutRequestErrorStillFails: a replacement click
// handler that computes its verdict with Session.Evidence and
// Session.Outcome but returns no error still makes the agent's record an
// error when a write request the click caused failed.
func TestActionWatchdogWithoutRequestErrorStillFails(t *testing.T) {
	srv := saveSite(t)
	lazy := session.NewWatchdog("lazyclick", func(s *session.Session) error {
		return bus.Replace(s.Bus(), events.ClickElement, actions.Name, func(ctx context.Context, _ events.ClickElementEvent) (events.ClickResult, error) {
			before := s.Evidence(ctx)
			_, err := bus.Call(ctx, s.Bus(), events.Evaluate, events.EvaluateEvent{Code: `document.querySelector('#save').click()`})
			// No session.RequestError: the outcome says failed, the
			// error stays nil.
			return events.ClickResult{Outcome: s.Outcome(ctx, before, err)}, nil
		})
	})
	s := startSession(t, session.Profile{}, lazy)
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "The server refused it", "success": false}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, settings(t))
	runAgent(t, a)
	var click *agent.ActionRecord
	for _, it := range a.History().Items {
		for j, r := range it.Actions {
			if r.Name == "click" {
				click = &it.Actions[j]
			}
		}
	}
	if click == nil || click.Verdict != events.VerdictFailed || !strings.Contains(click.Error, "POST "+srv.URL+"/api/profile answered 422") {
		t.Fatalf("click record %+v, want failed with the request's error", click)
	}
}

// startSession starts a session on the test browser with profile p and the
// default watchdogs of the agent tests, plus extra ones.
func startSession(t *testing.T, p session.Profile, extra ...session.Watchdog) *session.Session {
	t.Helper()
	env := testbrowser.Start(t)
	p.CDPURL, p.ConnectTab = env.Browser.WebSocketURL(), session.ConnectTabNew
	w := append([]session.Watchdog{actions.New(actions.Config{}), dom.New(dom.Config{}), screenshot.New(screenshot.Config{})}, extra...)
	s := session.New(p, session.WithWatchdogs(w...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	return s
}

// TestDoneAfterUnconfirmedWriteIsWarned: a write still unanswered when the
// click's outcome was read holds back a done(success=true) once.
func TestDoneAfterUnconfirmedWriteIsWarned(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/save", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><body><button id="save" onclick="fetch('/api/hang', {method: 'POST', body: 'x'}).catch(() => {})">Save</button></body></html>`)
	})
	mux.HandleFunc("/api/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	s := startSession(t, session.Profile{RequestWait: 300 * time.Millisecond})
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
		{WaitFor: "call done again to confirm", MaxWaits: 1, Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save.", model, s, settings(t))
	res := runAgent(t, a)
	if !res.Done || len(model.Errors()) > 0 {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	dones := doneRecords(a.History())
	if len(dones) != 2 || dones[0].Result.Done || !strings.Contains(dones[0].Result.Text, "POST "+srv.URL+"/api/hang has no answer yet (unconfirmed)") {
		t.Fatalf("done records %+v, want the first held back naming the unanswered POST", dones)
	}
}

// TestNewFailedWriteAfterWarningIsWarnedAgain: the warning is per write: a
// write that failed after a warning was given gets a warning of its own.
func TestNewFailedWriteAfterWarningIsWarnedAgain(t *testing.T) {
	srv := saveSite(t)
	s := startSession(t, session.Profile{})
	model := scripted.New([]scripted.Step{
		{WaitForLabel: "Save", Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
		{WaitFor: "call done again to confirm", MaxWaits: 1, Action: "click", Label: "Save"},
		{Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
		{WaitFor: "call done again to confirm", MaxWaits: 1, Action: "done", Params: map[string]any{"text": "Saved", "success": true}},
	})
	a := newAgent(t, "Open "+srv.URL+"/save and save the profile.", model, s, settings(t))
	res := runAgent(t, a)
	if !res.Done || len(model.Errors()) > 0 {
		t.Fatalf("result %+v; model errors %v", res, model.Errors())
	}
	dones := doneRecords(a.History())
	if len(dones) != 3 || dones[0].Result.Done || dones[1].Result.Done || !dones[2].Result.Done {
		t.Fatalf("done records %+v, want two held back, the third accepted", dones)
	}
	if !strings.Contains(dones[1].Result.Text, "answered 422") {
		t.Fatalf("second warning %q", dones[1].Result.Text)
	}
}
