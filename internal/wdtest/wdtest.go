// Package wdtest is the test harness of the watchdog packages: a session on
// the package's shared test browser with the watchdogs under test and a
// Recorder of the report events they emit, and small helpers to navigate,
// evaluate, click and observe. Tests only.
package wdtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// RecorderName is the Recorder's watchdog and handler name.
const RecorderName = "test-recorder"

// Recorder is a watchdog that records the report events watchdogs emit
// (dialogs, errors, reconnects, storage state, crashes, downloads, tabs).
type Recorder struct {
	mu  sync.Mutex
	evs []any
}

// Name implements session.Watchdog.
func (r *Recorder) Name() string { return RecorderName }

// Attach implements session.Watchdog.
func (r *Recorder) Attach(s *session.Session) error {
	for _, err := range []error{
		record(r, s, events.DialogOpened),
		record(r, s, events.DialogHandled),
		record(r, s, events.BrowserError),
		record(r, s, events.BrowserReconnecting),
		record(r, s, events.BrowserReconnected),
		record(r, s, events.StorageStateSaved),
		record(r, s, events.StorageStateLoaded),
		record(r, s, events.TargetCrashed),
		record(r, s, events.DownloadStarted),
		record(r, s, events.DownloadProgress),
		record(r, s, events.FileDownloaded),
		record(r, s, events.TabCreated),
		record(r, s, events.TabClosed),
		record(r, s, events.RequestBlocked),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func record[E any](r *Recorder, s *session.Session, k bus.Kind[E, events.None]) error {
	return session.Handle(s, k, RecorderName, func(_ context.Context, ev E) (events.None, error) {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
		return events.None{}, nil
	})
}

// All returns the recorded events, oldest first.
func (r *Recorder) All() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.evs...)
}

// WaitEvent waits until an event of type E matching ok was recorded, and
// returns it; it fails the test after timeout.
func WaitEvent[E any](t testing.TB, r *Recorder, timeout time.Duration, ok func(E) bool) E {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ev := range r.All() {
			if e, is := ev.(E); is && ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			var zero E
			t.Fatalf("no %T event within %s; recorded: %+v", zero, timeout, r.All())
			return zero
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ctx returns a context for one test's calls, cancelled at its cleanup.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Connect starts a session with the watchdogs and a Recorder (attached
// first) on the shared test browser, unless p names another CDPURL; it is
// stopped at the test's cleanup.
func Connect(t testing.TB, p session.Profile, ws ...session.Watchdog) (*session.Session, *testbrowser.Env, *Recorder, context.Context) {
	t.Helper()
	env := testbrowser.Start(t)
	if p.CDPURL == "" {
		p.CDPURL = env.Browser.WebSocketURL()
	}
	if p.ConnectTab == "" {
		p.ConnectTab = session.ConnectTabNew // the shared browser's tabs belong to no test
	}
	s, rec, ctx := start(t, p, ws)
	return s, env, rec, ctx
}

// Launch is Connect with a browser of the session's own (the profile's
// launch settings apply), killed on Stop.
func Launch(t testing.TB, p session.Profile, ws ...session.Watchdog) (*session.Session, *Recorder, context.Context) {
	t.Helper()
	p.CDPURL = ""
	return start(t, p, ws)
}

func start(t testing.TB, p session.Profile, ws []session.Watchdog) (*session.Session, *Recorder, context.Context) {
	ctx := Ctx(t)
	rec := &Recorder{}
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
	return s, rec, ctx
}

// Navigate loads url in the focused tab through the bus, with a timeout
// far above the default (large fixture pages on a busy machine).
func Navigate(t testing.TB, ctx context.Context, s *session.Session, url string) {
	t.Helper()
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: url}, bus.WithTimeout(2*testbrowser.Timeout)); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
}

// Eval evaluates expr in the focused tab and decodes its value into out.
func Eval(t testing.TB, ctx context.Context, s *session.Session, expr string, out any) {
	t.Helper()
	cs, err := s.PageSession("")
	if err != nil {
		t.Fatal(err)
	}
	if err := pagejs.Evaluate(ctx, cs, expr, out); err != nil {
		t.Fatalf("evaluate %q: %v", expr, err)
	}
}

// State requests an observation with the DOM and fails the test on an
// error or a DOM build failure.
func State(t testing.TB, ctx context.Context, s *session.Session) events.BrowserState {
	t.Helper()
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true},
		bus.WithTimeout(2*testbrowser.Timeout))
	if err != nil {
		t.Fatalf("browser state: %v", err)
	}
	if st.Error != "" {
		t.Fatalf("browser state error: %s", st.Error)
	}
	return st
}

// Click clicks the centre of the element matching selector with real
// mouse events, bypassing every watchdog (for tests of what a page does).
func Click(ctx context.Context, cs *cdp.Session, selector string) error {
	var pt struct{ X, Y float64 }
	expr := fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, selector)
	if err := pagejs.Evaluate(ctx, cs, expr, &pt); err != nil {
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

// FakeScreenshot returns a watchdog named "screenshot" that answers
// events.Screenshot with png (for tests of watchdogs that ask for one);
// Calls counts its calls.
func FakeScreenshot(png []byte) *Fake {
	f := &Fake{}
	f.w = session.NewWatchdog("screenshot", func(s *session.Session) error {
		return session.Handle(s, events.Screenshot, "screenshot", func(_ context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
			f.mu.Lock()
			f.calls++
			f.mu.Unlock()
			id := ev.TargetID
			if id == "" {
				id = s.FocusedTab()
			}
			return events.ScreenshotResult{Data: png, MediaType: "image/png", TargetID: id}, nil
		})
	})
	return f
}

// Fake is a watchdog made for a test.
type Fake struct {
	w     session.Watchdog
	mu    sync.Mutex
	calls int
}

// Name implements session.Watchdog.
func (f *Fake) Name() string { return f.w.Name() }

// Attach implements session.Watchdog.
func (f *Fake) Attach(s *session.Session) error { return f.w.Attach(s) }

// Calls returns how often the fake handled its event.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
