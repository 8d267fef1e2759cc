package agent_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
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
