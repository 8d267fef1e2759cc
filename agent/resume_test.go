package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// signupSite is a three-page sign-up whose server counts the submissions
// of each page (a resumed run must not submit a page twice).
type signupSite struct {
	*httptest.Server
	mu    sync.Mutex
	posts map[string][]url.Values
	// noEmail serves page 2 without its field (the site changed).
	noEmail atomic.Bool
}

func newSignupSite(t *testing.T) *signupSite {
	s := &signupSite{posts: map[string][]url.Values{}}
	page := func(path, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				if err := r.ParseForm(); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				s.mu.Lock()
				s.posts[path] = append(s.posts[path], r.PostForm)
				s.mu.Unlock()
				next := map[string]string{"/p1": "/p2", "/p2": "/p3", "/p3": "/thanks"}[path]
				http.Redirect(w, r, next, http.StatusSeeOther)
				return
			}
			b := body
			if path == "/p2" && s.noEmail.Load() {
				b = `<p>The email step is closed for maintenance.</p>`
			}
			fmt.Fprintf(w, `<!doctype html><title>Sign up %s</title><form method="post" action="%s">%s</form>`, path, path, b)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/p1", page("/p1", `<input name="name" placeholder="Full name" aria-label="Full name"><button>Next</button>`))
	mux.HandleFunc("/p2", page("/p2", `<input name="email" placeholder="Email" aria-label="Email"><button>Continue</button>`))
	mux.HandleFunc("/p3", page("/p3", `<select name="plan" aria-label="Plan"><option>Basic</option><option>Pro</option></select><button>Finish</button>`))
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Start</title><a href="/p1" target="_blank">Sign up in a new tab</a>`)
	})
	mux.HandleFunc("/thanks", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Done</title><p>Thank you for signing up</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// submitted returns the forms posted to path.
func (s *signupSite) submitted(path string) []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.posts[path]...)
}

func (s *signupSite) task() string {
	return "Open " + s.URL + "/p1 and sign up Ada (ada@example.com) on the Pro plan."
}

// secureSession is newSession with the URL policy's watchdog and profile.
func secureSession(t *testing.T, p session.Profile) *session.Session {
	t.Helper()
	env := testbrowser.Start(t)
	p.CDPURL, p.ConnectTab = env.Browser.WebSocketURL(), session.ConnectTabNew
	s := session.New(p, session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{}), security.New(security.Config{})))
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

// recordTwoSteps runs the sign-up for step 0 (the task's URL opened) and
// two model steps (page 1 typed and submitted, page 2's email typed) with
// Step, then ends the run as a worker that goes away would: the items are
// what a workflow would have collected.
func recordTwoSteps(t *testing.T, site *signupSite) []agent.HistoryItem {
	t.Helper()
	_, s := newSession(t)
	model := scripted.New([]scripted.Step{
		{Memory: "Typed Ada's name on page 1 and submitted it.", Actions: []scripted.Action{
			{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada"}},
			{Name: "click", Label: "Next"},
		}},
		{WaitForLabel: "Continue", Memory: "Typed the email on page 2.", Action: "input", Label: "Email", Params: map[string]any{"text": "ada@example.com"}},
	})
	a, err := agent.New(site.task(), model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var items []agent.HistoryItem
	for i := 0; i < 3; i++ {
		item, res, err := a.Step(ctx)
		if err != nil || res != nil {
			t.Fatalf("step %d: %v (result %+v; model errors %v)", i, err, res, model.Errors())
		}
		if item.Step != i || item.Error != "" {
			t.Fatalf("step %d: item %+v", i, item)
		}
		items = append(items, item)
	}
	res := a.EndRun(ctx, errors.New("worker lost"))
	if res == nil || res.Steps != 3 || !strings.Contains(strings.Join(res.Errors, "; "), "worker lost") {
		t.Fatalf("EndRun: %+v", res)
	}
	if again := a.EndRun(ctx, nil); again != nil {
		t.Fatalf("second EndRun: %+v, want nil", again)
	}
	if _, _, err := a.Step(ctx); !errors.Is(err, agent.ErrRunEnded) {
		t.Fatalf("Step after EndRun: %v, want ErrRunEnded", err)
	}
	if n := len(site.submitted("/p1")); n != 1 {
		t.Fatalf("page 1 submitted %d times while recording", n)
	}
	return items
}

// finishScript is the model's part after a resume on page 2: submit it,
// choose the plan, finish.
func finishScript() []scripted.Step {
	return []scripted.Step{
		{WaitForLabel: "Continue", Action: "click", Label: "Continue"},
		{WaitForLabel: "Finish", Action: "select_dropdown", Label: "Plan", Tag: "select", Params: map[string]any{"text": "Pro"}},
		{Action: "click", Label: "Finish"},
		{WaitFor: "Thank you", Action: "done", Params: map[string]any{"text": "Ada signed up on Pro", "success": true}},
	}
}

// A run stopped after two steps resumes on a new session: the restore
// opens page 2 again and re-types the email without the model, page 1 is
// not submitted again, and the model finishes the sign-up.
func TestResumeContinuesOnANewSession(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)

	_, s2 := newSession(t)
	model := scripted.New(finishScript())
	b, err := agent.Resume("", model, s2, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	item, res, err := b.Step(ctx)
	if err != nil || res != nil {
		t.Fatalf("restore step: %v (result %+v, item %+v)", err, res, item)
	}
	if item.Source != agent.SourceResume || item.Step != 3 || item.Error != "" {
		t.Fatalf("restore item: %+v", item)
	}
	var names []string
	for _, r := range item.Actions {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "navigate,input" {
		t.Fatalf("restore ran %v, want navigate,input (the click on page 1 is not repeated)", names)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the restore asked the model %d times", n)
	}
	res, err = b.Run(ctx)
	if err != nil || !res.Done || !res.Success {
		t.Fatalf("resumed run: %v %+v; model errors %v", err, res, model.Errors())
	}
	if n := len(model.Requests()); n != 4 {
		t.Fatalf("model calls %d, want 4 (none for the restore)", n)
	}
	// The model's first prompt after the restore remembers the recorded steps.
	first := userText(model.Requests()[0])
	if !strings.Contains(first, "Typed Ada's name on page 1") || !strings.Contains(first, "Typed the email on page 2") {
		t.Fatalf("the resumed prompt lost the recorded memory:\n%s", first)
	}
	p1, p2, p3 := site.submitted("/p1"), site.submitted("/p2"), site.submitted("/p3")
	if len(p1) != 1 || len(p2) != 1 || len(p3) != 1 {
		t.Fatalf("submissions p1=%d p2=%d p3=%d, want one each", len(p1), len(p2), len(p3))
	}
	if got := p2[0].Get("email"); got != "ada@example.com" {
		t.Fatalf("page 2 submitted email %q: the restored value was lost", got)
	}
	h := b.History()
	for i, it := range h.Items {
		if it.Step != i {
			t.Fatalf("history item %d has step %d", i, it.Step)
		}
	}
	if h.Items[3].Source != agent.SourceResume || len(h.Items) != 8 {
		t.Fatalf("history: %d items, item 3 source %q", len(h.Items), h.Items[3].Source)
	}
}

// A resumed run that stops again resumes again from its own history, the
// first restore included; nothing is submitted twice.
func TestResumeTwice(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)

	_, s2 := newSession(t)
	model := scripted.New(finishScript()[:1])
	b, err := agent.Resume("", model, s2, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := 0; i < 2; i++ { // the restore, then page 2 submitted
		if item, res, err := b.Step(ctx); err != nil || res != nil || item.Error != "" {
			t.Fatalf("step %d: %v %+v %+v", i, err, res, item)
		}
	}
	if r := b.EndRun(ctx, nil); r == nil || !errors.Is(r.Err, agent.ErrEndedEarly) {
		t.Fatalf("EndRun: %+v", r)
	}

	_, s3 := newSession(t)
	model3 := scripted.New(finishScript()[1:])
	c, err := agent.Resume("", model3, s3, settings(t), b.History(), agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	item, res, err := c.Step(ctx)
	if err != nil || res != nil || item.Source != agent.SourceResume || item.Step != 5 {
		t.Fatalf("second restore: %v %+v %+v", err, res, item)
	}
	if len(item.Actions) != 1 || item.Actions[0].Name != "navigate" {
		t.Fatalf("second restore ran %+v, want only the navigation to page 3", item.Actions)
	}
	res, err = c.Run(ctx)
	if err != nil || !res.Done || !res.Success {
		t.Fatalf("resumed run: %v %+v; model errors %v", err, res, model3.Errors())
	}
	if p1, p2, p3 := len(site.submitted("/p1")), len(site.submitted("/p2")), len(site.submitted("/p3")); p1 != 1 || p2 != 1 || p3 != 1 {
		t.Fatalf("submissions p1=%d p2=%d p3=%d, want one each", p1, p2, p3)
	}
}

// A restore that cannot find a recorded element ends the resumed run with
// a *ResumeError naming the step, without asking the model; with
// ContinueOnFailure the model goes on from the page as it is.
func TestResumeRestoreFails(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)
	site.noEmail.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opt := agent.ResumeOptions{SettleTimeout: 3 * time.Second}

	t.Run("strict", func(t *testing.T) {
		_, s := newSession(t)
		model := scripted.New(finishScript())
		b, err := agent.Resume("", model, s, settings(t), &agent.History{Task: site.task(), Items: items}, opt)
		if err != nil {
			t.Fatal(err)
		}
		item, res, err := b.Step(ctx)
		var re *agent.ResumeError
		if !errors.Is(err, agent.ErrResume) || !errors.Is(err, agent.ErrReplayNoMatch) || !errors.As(err, &re) {
			t.Fatalf("restore error %v (%T), want a *ResumeError with ErrReplayNoMatch", err, err)
		}
		if re.Step != 2 || re.Action != 0 || re.Name != "input" {
			t.Fatalf("ResumeError names step %d action %d %q, want recorded step 2's input", re.Step, re.Action, re.Name)
		}
		if res == nil || !errors.Is(res.Err, agent.ErrResume) || item.Source != agent.SourceResume || item.Error == "" {
			t.Fatalf("result %+v, item %+v", res, item)
		}
		if n := len(model.Requests()); n != 0 {
			t.Fatalf("model asked %d times", n)
		}
		if _, _, err := b.Step(ctx); !errors.Is(err, agent.ErrRunEnded) {
			t.Fatalf("Step after the failed restore: %v", err)
		}
	})
	t.Run("continue", func(t *testing.T) {
		_, s := newSession(t)
		model := scripted.New([]scripted.Step{{Action: "done", Params: map[string]any{"text": "the email step is closed", "success": false}}})
		o := opt
		o.ContinueOnFailure = true
		b, err := agent.Resume("", model, s, settings(t), &agent.History{Task: site.task(), Items: items}, o)
		if err != nil {
			t.Fatal(err)
		}
		item, res, err := b.Step(ctx)
		if err != nil || res != nil || item.Source != agent.SourceResume || !strings.Contains(item.Error, "could not be restored") {
			t.Fatalf("restore: %v %+v %+v", err, res, item)
		}
		res, err = b.Run(ctx)
		if err != nil || !res.Done || res.Success {
			t.Fatalf("run: %v %+v", err, res)
		}
		if reqs := model.Requests(); len(reqs) != 1 || !strings.Contains(userText(reqs[0]), "could not be restored") {
			t.Fatalf("the model was not told the restore failed (%d calls)", len(reqs))
		}
	})
	if n := len(site.submitted("/p1")); n != 1 {
		t.Fatalf("page 1 submitted %d times", n)
	}
}

func TestResumeEdgeCases(t *testing.T) {
	site := newSignupSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, s := newSession(t)

	t.Run("nothing recorded", func(t *testing.T) {
		model := scripted.New(nil)
		a, err := agent.Resume(site.task(), model, s, settings(t), &agent.History{}, agent.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		item, res, err := a.Step(ctx)
		if err != nil || res != nil || item.Step != 0 || item.Source != agent.SourceModel || len(item.Actions) != 1 || item.Actions[0].Name != "navigate" {
			t.Fatalf("first step %v %+v %+v, want New's step 0 opening the task's URL", err, res, item)
		}
		if r := a.EndRun(ctx, nil); r == nil {
			t.Fatal("EndRun returned nil for an open run")
		}
	})
	t.Run("ended with done", func(t *testing.T) {
		h := &agent.History{Task: "t", Items: []agent.HistoryItem{{Step: 0, Actions: []agent.ActionRecord{{Name: "done", Result: agent.ActionResult{Done: true, Text: "ok"}}}}}}
		if _, err := agent.Resume("", scripted.New(nil), s, settings(t), h, agent.ResumeOptions{}); !errors.Is(err, agent.ErrResume) {
			t.Fatalf("err %v, want ErrResume", err)
		}
	})
	t.Run("no model", func(t *testing.T) {
		if _, err := agent.Resume("t", nil, s, settings(t), nil, agent.ResumeOptions{}); !errors.Is(err, agent.ErrNoModel) {
			t.Fatalf("err %v, want ErrNoModel", err)
		}
	})
	t.Run("unknown variable", func(t *testing.T) {
		h := &agent.History{Task: "t", Items: []agent.HistoryItem{{Step: 0, Actions: []agent.ActionRecord{{Name: "navigate", Params: []byte(`{"url":"` + site.URL + `/p1"}`)}}}}}
		_, err := agent.Resume("", scripted.New(nil), s, settings(t), h, agent.ResumeOptions{Vars: map[string]string{"nope": "x"}})
		if !errors.Is(err, agent.ErrResume) || !errors.Is(err, agent.ErrReplayVars) {
			t.Fatalf("err %v, want ErrResume and ErrReplayVars", err)
		}
	})
	t.Run("tab opened in the last step", func(t *testing.T) {
		// Recorded: the start page opened, its link clicked (a new tab
		// the agent follows), the name typed there; the run stops there.
		_, rec := newSession(t)
		model := scripted.New([]scripted.Step{
			{Action: "click", Label: "Sign up in a new tab"},
		})
		a, err := agent.New("Open "+site.URL+"/start and sign up Ada.", model, rec, settings(t))
		if err != nil {
			t.Fatal(err)
		}
		var items []agent.HistoryItem
		for i := 0; i < 2; i++ {
			item, res, err := a.Step(ctx)
			if err != nil || res != nil || item.Error != "" {
				t.Fatalf("step %d: %v %+v %+v (model errors %v)", i, err, res, item, model.Errors())
			}
			items = append(items, item)
		}
		a.EndRun(ctx, errors.New("worker lost"))
		click := items[1].Actions[0]
		if click.TabURL != site.URL+"/p1" {
			t.Fatalf("the click's record: verdict %s, tab_url %q, want %s/p1", click.Verdict, click.TabURL, site.URL)
		}
		r, err := agent.Resume("", scripted.New(nil), s, settings(t), &agent.History{Task: "Open " + site.URL + "/start and sign up Ada.", Items: items}, agent.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		item, _, err := r.Step(ctx)
		if err != nil || item.Source != agent.SourceResume || len(item.Actions) != 1 || item.Actions[0].Name != "navigate" {
			t.Fatalf("restore %v %+v", err, item)
		}
		if got := item.Actions[0].Result.Outcome; got == nil || got.After.URL != site.URL+"/p1" {
			t.Fatalf("restore opened %+v, want the new tab's page %s/p1", got, site.URL)
		}
		r.EndRun(ctx, nil)
	})
	t.Run("policy refuses the page", func(t *testing.T) {
		items := recordTwoSteps(t, site)
		host := strings.TrimPrefix(site.URL, "http://")
		host = host[:strings.LastIndex(host, ":")]
		s2 := secureSession(t, session.Profile{ProhibitedDomains: []string{host}})
		model := scripted.New(finishScript())
		a, err := agent.Resume("", model, s2, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{SettleTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		item, res, err := a.Step(ctx)
		var re *agent.ResumeError
		if !errors.As(err, &re) || !errors.Is(err, agent.ErrResume) || re.Name != "navigate" || re.Step != 1 {
			t.Fatalf("restore error %v, want a *ResumeError on recorded step 1's navigation", err)
		}
		if res == nil || !strings.Contains(item.Actions[0].Error, "blocked") {
			t.Fatalf("result %+v; the refusal is not the navigation's error: %+v", res, item.Actions)
		}
		if len(model.Requests()) != 0 || len(site.submitted("/p2")) != 0 {
			t.Fatal("the model was asked, or page 2 submitted")
		}
	})
}

// FromStart replays every recorded action, the submit of page 1 included
// (for state that lives in the browser), then the model goes on.
func TestResumeFromStart(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)
	_, s := newSession(t)
	model := scripted.New(finishScript())
	b, err := agent.Resume("", model, s, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	item, res, err := b.Step(ctx)
	if err != nil || res != nil || item.Source != agent.SourceResume || item.Error != "" {
		t.Fatalf("restore: %v %+v %+v", err, res, item)
	}
	var names []string
	for _, r := range item.Actions {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "navigate,input,click,input" {
		t.Fatalf("FromStart restore ran %v, want every recorded action", names)
	}
	if n := len(site.submitted("/p1")); n != 2 {
		t.Fatalf("page 1 submitted %d times, want 2 (FromStart repeats the submit)", n)
	}
	res, err = b.Run(ctx)
	if err != nil || !res.Done || !res.Success || len(model.Requests()) != 4 {
		t.Fatalf("run: %v %+v (%d model calls)", err, res, len(model.Requests()))
	}
	if p2 := site.submitted("/p2"); len(p2) != 1 || p2[0].Get("email") != "ada@example.com" {
		t.Fatalf("page 2 submissions %v", p2)
	}
}

// A history summary the recorded run made stays in force: the resumed
// prompt shows it instead of the steps it folded, without a new summary.
func TestResumeKeepsTheSummary(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)
	items[2].Compaction = &agent.Compaction{FromStep: 1, ToStep: 1, Summary: "SUMMARY: page 1 is done."}
	_, s := newSession(t)
	model := scripted.New(finishScript()[:1])
	b, err := agent.Resume("", model, s, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := 0; i < 2; i++ { // the restore, then the model's step
		if item, res, err := b.Step(ctx); err != nil || res != nil || item.Error != "" {
			t.Fatalf("step %d: %v %+v %+v", i, err, res, item)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model calls %d, want 1", len(reqs))
	}
	p := userText(reqs[0])
	if !strings.Contains(p, "SUMMARY: page 1 is done.") || strings.Contains(p, "Typed Ada's name on page 1") || !strings.Contains(p, "Typed the email on page 2") {
		t.Fatalf("the resumed prompt does not keep the recorded summary:\n%s", p)
	}
	b.EndRun(ctx, nil)
}

// A run that stops again right after its restore resumes from the restore
// step: the value it re-typed is re-typed again, nothing is submitted.
// Vars take the names ReplayVariables gives the history (the re-typed
// email is email_2 there, email in the restore's own recording); a
// variable typed on an earlier page is not re-applied and is ignored.
func TestResumeAfterARestore(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, s2 := newSession(t)
	b, err := agent.Resume("", scripted.New(nil), s2, settings(t), &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if item, res, err := b.Step(ctx); err != nil || res != nil || item.Error != "" {
		t.Fatalf("first restore: %v %+v %+v", err, res, item)
	}
	b.EndRun(ctx, nil)

	h := b.History()
	vars := map[string]string{}
	for _, v := range agent.ReplayVariables(h) {
		vars[v.Name] = fmt.Sprint(v.Step)
	}
	if vars["email"] != "2" || vars["email_2"] != "3" || vars["name"] != "1" {
		t.Fatalf("ReplayVariables: %v, want name (step 1), email (2), email_2 (3)", vars)
	}
	if _, err := agent.Resume("", scripted.New(nil), s2, settings(t), h, agent.ResumeOptions{Vars: map[string]string{"emial": "x"}}); !errors.Is(err, agent.ErrReplayVars) || !errors.Is(err, agent.ErrResume) || !strings.Contains(err.Error(), "email_2") {
		t.Fatalf("unknown variable: %v, want ErrResume and ErrReplayVars listing h's names", err)
	}

	_, s3 := newSession(t)
	model := scripted.New(finishScript())
	c, err := agent.Resume("", model, s3, settings(t), h, agent.ResumeOptions{Vars: map[string]string{"email_2": "grace@example.com", "name": "Bob"}})
	if err != nil {
		t.Fatal(err)
	}
	item, res, err := c.Step(ctx)
	if err != nil || res != nil || item.Step != 4 || len(item.Actions) != 2 || item.Actions[1].Name != "input" {
		t.Fatalf("second restore: %v %+v %+v", err, res, item)
	}
	res, err = c.Run(ctx)
	if err != nil || !res.Done || !res.Success {
		t.Fatalf("run: %v %+v; model errors %v", err, res, model.Errors())
	}
	p1, p2 := site.submitted("/p1"), site.submitted("/p2")
	if len(p1) != 1 || len(p2) != 1 || p2[0].Get("email") != "grace@example.com" {
		t.Fatalf("submissions p1=%d p2=%v, want one each, email from Vars", len(p1), p2)
	}
}

// A resumed run's budget counts what the recorded steps used: a MaxTokens
// that a fresh run's first call fits in, but not on top of the recorded
// usage, stops the resumed run before its first model call, and the
// Result's usage is the task's.
func TestResumeCarriesTheBudget(t *testing.T) {
	site := newSignupSite(t)
	items := recordTwoSteps(t, site)
	recorded := 0
	for _, it := range items {
		recorded += it.Usage.PromptTokens + it.Usage.CompletionTokens
	}
	if recorded == 0 {
		t.Fatal("the recorded steps report no usage")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, s2 := newSession(t)
	model := scripted.New(finishScript())
	set := settings(t)
	set.MaxTokens = recorded + 100 // below any call's estimate (its output alone is 500)
	b, err := agent.Resume("", model, s2, set, &agent.History{Task: site.task(), Items: items}, agent.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(ctx)
	var be *agent.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, agent.ErrBudgetExceeded) || be.Budget != "tokens" || be.SpentTokens != recorded || be.Step != 4 {
		t.Fatalf("resumed run: %v (%+v), want a token budget stop before step 4 with %d spent", err, be, recorded)
	}
	if res == nil || res.Steps != 2 || res.Usage.PromptTokens+res.Usage.CompletionTokens != recorded {
		t.Fatalf("result %+v, want the restore and the stopped step 4, and the recorded usage", res)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model was called %d times over the budget", n)
	}
	if n := len(site.submitted("/p2")); n != 0 {
		t.Fatalf("page 2 submitted %d times", n)
	}
}
