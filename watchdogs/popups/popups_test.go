package popups

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

const wait = 30 * time.Second

// results reads window.results of the dialogs fixture as JSON text.
func results(t *testing.T, ctx context.Context, cs *cdp.Session) string {
	t.Helper()
	var out string
	if err := pagejs.Evaluate(ctx, cs, `JSON.stringify(window.results)`, &out); err != nil {
		t.Fatalf("reading results: %v", err)
	}
	return out
}

// dialogsPage starts a session with the watchdogs on the dialogs fixture.
func dialogsPage(t *testing.T, ws ...session.Watchdog) (*session.Session, *cdp.Session, *wdtest.Recorder, context.Context) {
	t.Helper()
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, ws...)
	wdtest.Navigate(t, ctx, s, env.URL("/popups-dialogs.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	return s, cs, rec, ctx
}

// click clicks selector with real mouse events; it returns once a dialog it
// opened was answered.
func click(t *testing.T, ctx context.Context, cs *cdp.Session, selector string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := wdtest.Click(cctx, cs, selector); err != nil {
		t.Fatalf("click %s: %v", selector, err)
	}
}

// handled returns the recorded DialogHandled events, in dispatch order.
func handled(rec *wdtest.Recorder) []events.DialogHandledEvent {
	var out []events.DialogHandledEvent
	for _, ev := range rec.All() {
		if e, ok := ev.(events.DialogHandledEvent); ok {
			out = append(out, e)
		}
	}
	return out
}

// waitHandled waits until n dialogs were reported handled.
func waitHandled(t *testing.T, rec *wdtest.Recorder, n int) []events.DialogHandledEvent {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		h := handled(rec)
		if len(h) >= n {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dialogs handled, want %d; recorded: %+v", len(h), n, rec.All())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPopupsDefaultPolicy(t *testing.T) {
	_, cs, rec, ctx := dialogsPage(t, New(Config{}))
	for _, id := range []string{"#alert", "#confirm", "#prompt"} {
		click(t, ctx, cs, id)
	}
	// alert returns undefined (null in JSON), a dismissed confirm false, a
	// dismissed prompt null.
	if got, want := results(t, ctx, cs), `[["alert",null],["confirm",false],["prompt",null]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	want := []events.DialogHandledEvent{
		{Type: "alert", Message: "Hello alert", Accepted: true},
		{Type: "confirm", Message: "Delete everything?", Accepted: false},
		{Type: "prompt", Message: "Your name?", Accepted: false},
	}
	h := waitHandled(t, rec, len(want))
	if len(h) != len(want) {
		t.Fatalf("handled = %+v, want %d dialogs", h, len(want))
	}
	for i, w := range want {
		if h[i].Type != w.Type || h[i].Message != w.Message || h[i].Accepted != w.Accepted || h[i].DecidedBy != "default" ||
			h[i].PromptText != "" || h[i].TargetID != string(cs.TargetID()) || !strings.HasSuffix(h[i].URL, "/popups-dialogs.html") {
			t.Errorf("handled[%d] = %+v, want %+v decided by default in %s, with the page's URL", i, h[i], w, cs.TargetID())
		}
	}
	// Each dialog is reported opened (with its frame's URL) before it is
	// reported handled.
	opened := 0
	for _, ev := range rec.All() {
		switch e := ev.(type) {
		case events.DialogOpenedEvent:
			if e.TargetID != string(cs.TargetID()) || e.URL == "" || e.FrameID == "" {
				t.Errorf("opened %+v: want the target, frame and URL", e)
			}
			if e.Type == "prompt" && e.DefaultPrompt != "default name" {
				t.Errorf("prompt opened with default %q", e.DefaultPrompt)
			}
			opened++
		case events.DialogHandledEvent:
			if opened == 0 {
				t.Fatalf("%s handled before it was reported opened", e.Type)
			}
			opened--
		}
	}
}

func TestPopupsCustomPolicy(t *testing.T) {
	var mu sync.Mutex
	var seen []Dialog
	p := New(Config{
		PolicyName: "yes-man",
		Policy: DialogPolicyFunc(func(_ context.Context, d Dialog) DialogDecision {
			mu.Lock()
			seen = append(seen, d)
			mu.Unlock()
			return DialogDecision{Accept: true, PromptText: "Ada"}
		}),
	})
	_, cs, rec, ctx := dialogsPage(t, p)
	for _, id := range []string{"#confirm", "#prompt"} {
		click(t, ctx, cs, id)
	}
	if got, want := results(t, ctx, cs), `[["confirm",true],["prompt","Ada"]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	h := waitHandled(t, rec, 2)
	if len(h) != 2 || !h[0].Accepted || h[0].Message != "Delete everything?" || h[0].PromptText != "" ||
		!h[1].Accepted || h[1].Type != "prompt" || h[1].PromptText != "Ada" || h[1].DecidedBy != "yes-man" {
		t.Fatalf("handled = %+v", h)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[1].DefaultPrompt != "default name" || seen[1].TargetID == "" || seen[1].URL == "" {
		t.Errorf("policy saw %+v", seen)
	}
}

func TestPopupsDialogDuringLoad(t *testing.T) {
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/popups-onload.html"))
	var after bool
	wdtest.Eval(t, ctx, s, `window.after === true`, &after)
	if !after {
		t.Fatal("page script did not continue after the alert")
	}
	h := waitHandled(t, rec, 1)
	if len(h) != 1 || h[0].Type != "alert" || h[0].Message != "Welcome during load" || !h[0].Accepted {
		t.Fatalf("handled = %+v", h)
	}
}

func TestPopupsPolicyTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // before the session's Stop (a cleanup)
	p := New(Config{
		DecisionTimeout: 300 * time.Millisecond,
		Policy: DialogPolicyFunc(func(ctx context.Context, d Dialog) DialogDecision {
			<-release // ignores ctx on purpose: the watchdog must not wait for it
			return DialogDecision{Accept: true, PromptText: "late"}
		}),
	})
	_, cs, rec, ctx := dialogsPage(t, p)
	click(t, ctx, cs, "#confirm")
	if got, want := results(t, ctx, cs), `[["confirm",false]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	wdtest.WaitEvent(t, rec, wait, func(e events.DialogHandledEvent) bool {
		return e.Type == "confirm" && !e.Accepted && e.DecidedBy == "custom (timeout)"
	})
	ev := wdtest.WaitEvent(t, rec, wait, func(e events.BrowserErrorEvent) bool {
		return e.Type == "DialogPolicyFailed" && e.Details["dialog_type"] == "confirm"
	})
	if !strings.Contains(ev.Message, "within 300ms") {
		t.Errorf("message = %q, want the timeout", ev.Message)
	}
}

func TestPopupsPolicyPanic(t *testing.T) {
	p := New(Config{
		PolicyName: "broken",
		Policy: DialogPolicyFunc(func(context.Context, Dialog) DialogDecision {
			panic("policy bug")
		}),
	})
	_, cs, rec, ctx := dialogsPage(t, p)
	click(t, ctx, cs, "#confirm")
	if got, want := results(t, ctx, cs), `[["confirm",false]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	wdtest.WaitEvent(t, rec, wait, func(e events.DialogHandledEvent) bool {
		return e.Type == "confirm" && !e.Accepted && e.DecidedBy == "broken (panic)"
	})
	ev := wdtest.WaitEvent(t, rec, wait, func(e events.BrowserErrorEvent) bool {
		return e.Type == "DialogPolicyFailed" && e.Details["watchdog"] == Name
	})
	if !strings.Contains(ev.Message, "policy bug") || !strings.Contains(ev.Message, "broken") {
		t.Errorf("message = %q, want the policy and its panic", ev.Message)
	}
	// The watchdog survived: the next dialog is handled too.
	click(t, ctx, cs, "#alert")
	waitHandled(t, rec, 2)
}

// A policy that ignores its context makes Detach fail, naming it, once
// Detach's context ends; released, it lets a later Detach succeed.
func TestPopupsDetachNamesStubbornPolicy(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	p := New(Config{
		PolicyName:      "stubborn",
		DecisionTimeout: 200 * time.Millisecond,
		Policy: DialogPolicyFunc(func(context.Context, Dialog) DialogDecision {
			<-release
			return DialogDecision{}
		}),
	})
	_, cs, rec, ctx := dialogsPage(t, p)
	click(t, ctx, cs, "#confirm")
	waitHandled(t, rec, 1)

	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := p.Detach(dctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "dialog policy stubborn") {
		t.Fatalf("Detach = %v, want a deadline error naming the policy", err)
	}
	free()
	if err := p.Detach(ctx); err != nil {
		t.Fatalf("Detach after the policy returned = %v", err)
	}
}

func TestPopupsBeforeUnload(t *testing.T) {
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/popups-beforeunload.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	// Chrome shows beforeunload only after a user gesture on the page.
	click(t, ctx, cs, "#touch")
	// A page-initiated navigation runs the beforeunload handler.
	if err := pagejs.Evaluate(ctx, cs, `location.href = "/index.html"; true`, nil); err != nil {
		t.Fatal(err)
	}
	h := waitHandled(t, rec, 1)
	if len(h) != 1 || h[0].Type != "beforeunload" || !h[0].Accepted {
		t.Fatalf("handled = %+v, want one accepted beforeunload", h)
	}
	// Accepted: the navigation went through.
	deadline := time.Now().Add(wait)
	for {
		var path string
		err := pagejs.Evaluate(ctx, cs, `location.pathname`, &path)
		if err == nil && path == "/index.html" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("page did not leave after beforeunload was accepted: %q %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPopupsCrossSiteFrameAndNewTab(t *testing.T) {
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, New(Config{}))
	wdtest.Navigate(t, ctx, s, env.URL("/popups-frames.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	// A confirm in the cross-site (out-of-process) iframe.
	var frame *cdp.Session
	deadline := time.Now().Add(wait)
	for frame == nil {
		for _, f := range s.FrameTargets("") {
			frame = f.Session
		}
		if time.Now().After(deadline) {
			t.Fatal("the cross-site iframe never attached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ready bool
	for !ready {
		_ = pagejs.Evaluate(ctx, frame, `!!document.querySelector("#confirm")`, &ready)
		if time.Now().After(deadline) {
			t.Fatal("iframe content never loaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := pagejs.Evaluate(ctx, frame, `document.querySelector("#confirm").click(); true`, nil); err != nil {
		t.Fatal(err)
	}
	if got := results(t, ctx, frame); got != `[["confirm",false]]` {
		t.Fatalf("iframe saw %s", got)
	}
	// Chrome reports the dialog of a cross-site iframe on its tab's
	// session; the frame is named by FrameID (an OOPIF's frame id is its
	// target id).
	if h := waitHandled(t, rec, 1); len(h) != 1 || h[0].Type != "confirm" || h[0].TargetID != string(cs.TargetID()) || !strings.HasPrefix(h[0].URL, env.Server.URL2) {
		t.Fatalf("handled = %+v, want one confirm in tab %s from %s", h, cs.TargetID(), env.Server.URL2)
	}
	wdtest.WaitEvent(t, rec, wait, func(e events.DialogOpenedEvent) bool {
		return e.Type == "confirm" && strings.HasPrefix(e.URL, env.Server.URL2) && e.FrameID == string(frame.TargetID())
	})
	// An alert in a tab the page opened, during its load.
	click(t, ctx, cs, "#open")
	h := waitHandled(t, rec, 2)
	if len(h) != 2 || h[1].Message != "Welcome during load" || h[1].TargetID == string(cs.TargetID()) {
		t.Fatalf("handled = %+v", h)
	}
}

// An action that opens a dialog completes after the dialog's DialogHandled
// was queued, so the next event finds it (as the DOM watchdog's next
// observation does).
func TestPopupsHandledQueuedBeforeActionCompletes(t *testing.T) {
	const fake = "fake-actions"
	var mu sync.Mutex
	var closed []events.DialogInfo
	observed := make(chan struct{})
	p := New(Config{})
	// The watchdog goes on after the answer only once the next observation
	// was made: DialogHandled must not depend on what follows the answer.
	p.answer = func(ctx context.Context, cs *cdp.Session, accept bool, text string) error {
		err := answer(ctx, cs, accept, text)
		select {
		case <-observed:
		case <-ctx.Done():
		}
		return err
	}
	w := session.NewWatchdog(fake, func(s *session.Session) error {
		if err := session.Handle(s, events.DialogHandled, fake, func(_ context.Context, e events.DialogHandledEvent) (events.None, error) {
			mu.Lock()
			closed = append(closed, events.DialogInfo{Type: e.Type, Message: e.Message, Accepted: e.Accepted})
			mu.Unlock()
			return events.None{}, nil
		}); err != nil {
			return err
		}
		if err := session.Handle(s, events.Hover, fake, func(ctx context.Context, _ events.HoverEvent) (events.HoverResult, error) {
			cs, err := s.PageSession("")
			if err != nil {
				return events.HoverResult{}, err
			}
			return events.HoverResult{}, wdtest.Click(ctx, cs, "#confirm")
		}); err != nil {
			return err
		}
		return session.Handle(s, events.BrowserStateRequest, fake, func(context.Context, events.BrowserStateRequestEvent) (events.BrowserState, error) {
			mu.Lock()
			defer mu.Unlock()
			st := events.BrowserState{ClosedDialogs: closed}
			closed = nil
			close(observed)
			return st, nil
		})
	})
	s, _, _, ctx := dialogsPage(t, p, w)
	if _, err := bus.Call(ctx, s.Bus(), events.Hover, events.HoverEvent{}); err != nil {
		t.Fatalf("hover: %v", err)
	}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ClosedDialogs) != 1 || st.ClosedDialogs[0].Type != "confirm" || st.ClosedDialogs[0].Accepted {
		t.Fatalf("the observation after the action shows %+v, want the dismissed confirm", st.ClosedDialogs)
	}
}

// A failed answer is reported, after DialogHandled; a dialog that is gone
// already is not a failure.
func TestPopupsAnswerFailed(t *testing.T) {
	p := New(Config{})
	injected := errors.New("injected failure")
	p.answer = func(ctx context.Context, cs *cdp.Session, accept bool, text string) error {
		if err := answer(ctx, cs, accept, text); err != nil {
			return err
		}
		return injected
	}
	_, cs, rec, ctx := dialogsPage(t, p)
	click(t, ctx, cs, "#confirm")
	ev := wdtest.WaitEvent(t, rec, wait, func(e events.BrowserErrorEvent) bool { return e.Type == "DialogAnswerFailed" })
	if !strings.Contains(ev.Message, "injected failure") || !strings.Contains(ev.Message, "dismissing a confirm") ||
		ev.Details["target_id"] != string(cs.TargetID()) || ev.Details["watchdog"] != Name {
		t.Fatalf("error = %+v", ev)
	}
	handledFirst := false
	for _, e := range rec.All() {
		if _, ok := e.(events.DialogHandledEvent); ok {
			handledFirst = true
		}
		if e, ok := e.(events.BrowserErrorEvent); ok && e.Type == "DialogAnswerFailed" && !handledFirst {
			t.Fatal("DialogAnswerFailed before DialogHandled")
		}
	}

	// No dialog showing: Chrome's error counts as gone.
	err := answer(ctx, cs, true, "")
	if err == nil || !dialogGone(err) {
		t.Fatalf("answer without a dialog = %v, want an error dialogGone accepts", err)
	}
}

// A dialog whose tab closes while the policy decides is still reported
// handled; the failed answer is classified as gone, not reported.
func TestPopupsDialogGoneWhileDeciding(t *testing.T) {
	var sess atomic.Pointer[session.Session]
	answerErr := make(chan error, 1)
	p := New(Config{
		Policy: DialogPolicyFunc(func(ctx context.Context, d Dialog) DialogDecision {
			if err := sess.Load().Conn().CloseTarget(ctx, target.ID(d.TargetID)); err != nil {
				t.Errorf("closing the tab: %v", err)
			}
			return DialogDecision{Accept: true}
		}),
	})
	p.answer = func(ctx context.Context, cs *cdp.Session, accept bool, text string) error {
		err := answer(ctx, cs, accept, text)
		answerErr <- err
		return err
	}
	s, env, rec, ctx := wdtest.Connect(t, session.Profile{}, p)
	sess.Store(s)
	wdtest.Navigate(t, ctx, s, env.URL("/index.html"))
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: env.URL("/popups-dialogs.html"), NewTab: true}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	// Not awaited: the tab closes under the dialog.
	if err := pagejs.Evaluate(ctx, cs, `setTimeout(() => confirm("Delete everything?"), 0); true`, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-answerErr:
		t.Logf("answer after the tab closed: %v", err)
		if err == nil || !dialogGone(err) {
			t.Fatalf("answer = %v, want an error dialogGone accepts", err)
		}
	case <-time.After(wait):
		t.Fatal("the dialog was never answered")
	}
	wdtest.WaitEvent(t, rec, wait, func(e events.DialogHandledEvent) bool { return e.Type == "confirm" && e.Accepted })
}
