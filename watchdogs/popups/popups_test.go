package watchdogs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// popRecorder is a test watchdog that records the report events the
// watchdogs of this file set emit.
type popRecorder struct {
	mu  sync.Mutex
	evs []any
}

func (r *popRecorder) Name() string { return "test-recorder" }

func (r *popRecorder) Attach(s *session.Session) error {
	b := s.Bus()
	return popJoin(
		popRecord(r, b, events.DialogOpened),
		popRecord(r, b, events.DialogHandled),
		popRecord(r, b, events.BrowserError),
		popRecord(r, b, events.BrowserReconnecting),
		popRecord(r, b, events.BrowserReconnected),
		popRecord(r, b, events.StorageStateSaved),
		popRecord(r, b, events.StorageStateLoaded),
		popRecord(r, b, events.TargetCrashed),
	)
}

func popJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func popRecord[E any](r *popRecorder, b *bus.Bus, k bus.Kind[E, events.None]) error {
	return register(b, "test-recorder", k, func(_ context.Context, ev E) (events.None, error) {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
		return events.None{}, nil
	})
}

func (r *popRecorder) all() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.evs...)
}

// popWaitEvent waits until an event of type E matching ok was recorded.
func popWaitEvent[E any](t *testing.T, r *popRecorder, timeout time.Duration, ok func(E) bool) E {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ev := range r.all() {
			if e, is := ev.(E); is && ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			var zero E
			t.Fatalf("no %T event within %s; recorded: %+v", zero, timeout, r.all())
			return zero
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// popConnect starts a session on the shared browser with the watchdogs and
// a recorder; the session is stopped at cleanup.
func popConnect(t *testing.T, p session.Profile, ws ...session.Watchdog) (*session.Session, *testbrowser.Env, *popRecorder, context.Context) {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	rec := &popRecorder{}
	if p.CDPURL == "" {
		p.CDPURL = env.Browser.WebSocketURL()
	}
	s := session.New(p, session.WithWatchdogs(append([]session.Watchdog{rec}, ws...)...))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if err := s.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s, env, rec, ctx
}

func popNavigate(t *testing.T, ctx context.Context, s *session.Session, url string) {
	t.Helper()
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: url}); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
}

// popClick clicks the centre of the element with real mouse events.
func popClick(ctx context.Context, cs *cdp.Session, selector string) error {
	var pt struct{ X, Y float64 }
	expr := fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, selector)
	if err := evaluate(ctx, cs, expr, &pt); err != nil {
		return err
	}
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: typ, X: pt.X, Y: pt.Y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1,
		}); err != nil {
			return err
		}
	}
	return nil
}

// popResults reads window.results of the dialogs fixture as JSON text.
func popResults(t *testing.T, ctx context.Context, cs *cdp.Session) string {
	t.Helper()
	var out string
	if err := evaluate(ctx, cs, `JSON.stringify(window.results)`, &out); err != nil {
		t.Fatalf("reading results: %v", err)
	}
	return out
}

func popDialogsPage(t *testing.T, ws ...session.Watchdog) (*session.Session, *cdp.Session, *popRecorder, context.Context) {
	t.Helper()
	s, env, rec, ctx := popConnect(t, session.Profile{}, ws...)
	popNavigate(t, ctx, s, env.URL("/popups-dialogs.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	return s, cs, rec, ctx
}

func TestPopupsDefaultPolicy(t *testing.T) {
	p := NewPopups(PopupsConfig{})
	_, cs, rec, ctx := popDialogsPage(t, p)
	for _, id := range []string{"#alert", "#confirm", "#prompt"} {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := popClick(cctx, cs, id)
		cancel()
		if err != nil {
			t.Fatalf("click %s: %v", id, err)
		}
	}
	// alert returns undefined (null in JSON), a dismissed confirm false, a
	// dismissed prompt null.
	if got, want := popResults(t, ctx, cs), `[["alert",null],["confirm",false],["prompt",null]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	h := p.TakeHandled()
	want := []events.DialogInfo{
		{Type: "alert", Message: "Hello alert", Accepted: true},
		{Type: "confirm", Message: "Delete everything?", Accepted: false},
		{Type: "prompt", Message: "Your name?", Accepted: false},
	}
	if len(h) != len(want) {
		t.Fatalf("handled = %+v, want %d dialogs", h, len(want))
	}
	for i, w := range want {
		if h[i].Type != w.Type || h[i].Message != w.Message || h[i].Accepted != w.Accepted || h[i].URL == "" {
			t.Errorf("handled[%d] = %+v, want %+v with a URL", i, h[i], w)
		}
	}
	if again := p.TakeHandled(); len(again) != 0 {
		t.Errorf("TakeHandled did not forget: %+v", again)
	}
	popWaitEvent(t, rec, 30*time.Second, func(e events.DialogOpenedEvent) bool {
		return e.Type == "confirm" && e.Message == "Delete everything?" && e.TargetID != ""
	})
	popWaitEvent(t, rec, 30*time.Second, func(e events.DialogHandledEvent) bool {
		return e.Type == "confirm" && !e.Accepted && e.DecidedBy == "default"
	})
	popWaitEvent(t, rec, 30*time.Second, func(e events.DialogHandledEvent) bool {
		return e.Type == "alert" && e.Accepted
	})
}

func TestPopupsCustomPolicy(t *testing.T) {
	var mu sync.Mutex
	var seen []Dialog
	p := NewPopups(PopupsConfig{
		PolicyName: "yes-man",
		Policy: DialogPolicyFunc(func(_ context.Context, d Dialog) DialogDecision {
			mu.Lock()
			seen = append(seen, d)
			mu.Unlock()
			return DialogDecision{Accept: true, PromptText: "Ada"}
		}),
	})
	_, cs, rec, ctx := popDialogsPage(t, p)
	for _, id := range []string{"#confirm", "#prompt"} {
		if err := popClick(ctx, cs, id); err != nil {
			t.Fatalf("click %s: %v", id, err)
		}
	}
	if got, want := popResults(t, ctx, cs), `[["confirm",true],["prompt","Ada"]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	h := p.TakeHandled()
	if len(h) != 2 || !h[0].Accepted || h[0].Message != "Delete everything?" || !h[1].Accepted || h[1].Type != "prompt" {
		t.Fatalf("handled = %+v", h)
	}
	mu.Lock()
	if len(seen) != 2 || seen[1].DefaultPrompt != "default name" || seen[1].TargetID == "" {
		t.Errorf("policy saw %+v", seen)
	}
	mu.Unlock()
	popWaitEvent(t, rec, 30*time.Second, func(e events.DialogHandledEvent) bool {
		return e.Type == "prompt" && e.Accepted && e.PromptText == "Ada" && e.DecidedBy == "yes-man"
	})
}

func TestPopupsDialogDuringLoad(t *testing.T) {
	p := NewPopups(PopupsConfig{})
	s, env, _, ctx := popConnect(t, session.Profile{}, p)
	popNavigate(t, ctx, s, env.URL("/popups-onload.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	var after bool
	if err := evaluate(ctx, cs, `window.after === true`, &after); err != nil || !after {
		t.Fatalf("page script did not continue after the alert: %v %v", after, err)
	}
	h := p.TakeHandled()
	if len(h) != 1 || h[0].Type != "alert" || h[0].Message != "Welcome during load" || !h[0].Accepted {
		t.Fatalf("handled = %+v", h)
	}
}

func TestPopupsPolicyTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := NewPopups(PopupsConfig{
		DecisionTimeout: 300 * time.Millisecond,
		Policy: DialogPolicyFunc(func(ctx context.Context, d Dialog) DialogDecision {
			<-release // ignores ctx on purpose: the watchdog must not wait for it
			return DialogDecision{Accept: true, PromptText: "late"}
		}),
	})
	_, cs, rec, ctx := popDialogsPage(t, p)
	if err := popClick(ctx, cs, "#confirm"); err != nil {
		t.Fatal(err)
	}
	if got, want := popResults(t, ctx, cs), `[["confirm",false]]`; got != want {
		t.Fatalf("page saw %s, want %s", got, want)
	}
	h := p.TakeHandled()
	if len(h) != 1 || h[0].Accepted {
		t.Fatalf("handled = %+v", h)
	}
	popWaitEvent(t, rec, 30*time.Second, func(e events.DialogHandledEvent) bool {
		return e.Type == "confirm" && !e.Accepted && e.DecidedBy == "custom (timeout)"
	})
	popWaitEvent(t, rec, 30*time.Second, func(e events.BrowserErrorEvent) bool {
		return e.Type == "DialogPolicyFailed" && e.Details["dialog_type"] == "confirm"
	})
}

func TestPopupsBeforeUnload(t *testing.T) {
	p := NewPopups(PopupsConfig{})
	s, env, _, ctx := popConnect(t, session.Profile{}, p)
	popNavigate(t, ctx, s, env.URL("/popups-beforeunload.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	// Chrome shows beforeunload only after a user gesture on the page.
	if err := popClick(ctx, cs, "#touch"); err != nil {
		t.Fatal(err)
	}
	// A page-initiated navigation runs the beforeunload handler.
	if err := evaluate(ctx, cs, `location.href = "/index.html"; true`, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var h []events.DialogInfo
	for time.Now().Before(deadline) {
		h = append(h, p.TakeHandled()...)
		if len(h) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(h) != 1 || h[0].Type != "beforeunload" || !h[0].Accepted {
		t.Fatalf("handled = %+v, want one accepted beforeunload", h)
	}
	// Accepted: the navigation went through.
	for {
		var path string
		err := evaluate(ctx, cs, `location.pathname`, &path)
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
	p := NewPopups(PopupsConfig{})
	s, env, _, ctx := popConnect(t, session.Profile{}, p)
	popNavigate(t, ctx, s, env.URL("/popups-frames.html"))
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	// A confirm in the cross-site (out-of-process) iframe.
	var frame *cdp.Session
	deadline := time.Now().Add(30 * time.Second)
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
		_ = evaluate(ctx, frame, `!!document.querySelector("#confirm")`, &ready)
		if time.Now().After(deadline) {
			t.Fatal("iframe content never loaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := evaluate(ctx, frame, `document.querySelector("#confirm").click(); true`, nil); err != nil {
		t.Fatal(err)
	}
	if got := popResults(t, ctx, frame); got != `[["confirm",false]]` {
		t.Fatalf("iframe saw %s", got)
	}
	if h := p.TakeHandled(); len(h) != 1 || h[0].Type != "confirm" || !strings.HasPrefix(h[0].URL, env.Server.URL2) {
		t.Fatalf("handled = %+v, want one confirm from %s", h, env.Server.URL2)
	}
	// An alert in a tab the page opened, during its load.
	if err := popClick(ctx, cs, "#open"); err != nil {
		t.Fatal(err)
	}
	var h []events.DialogInfo
	for len(h) == 0 {
		h = append(h, p.TakeHandled()...)
		if time.Now().After(deadline) {
			t.Fatal("the new tab's alert was not handled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(h) != 1 || h[0].Message != "Welcome during load" {
		t.Fatalf("handled = %+v", h)
	}
}
