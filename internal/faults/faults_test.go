package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/crash"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is the fixture site of one test.
func fixture(t *testing.T) *testbrowser.Server {
	t.Helper()
	srv, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// chromiumTemps lists the Chromium entries of the system temp directory.
func chromiumTemps(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	matches, err := filepath.Glob(filepath.Join(os.TempDir(), "org.chromium.Chromium.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		out[m] = true
	}
	return out
}

// owned is a browser a test launched, with what it must leave behind: no
// process of its group, no profile, no new Chromium temp entry.
type owned struct {
	pid     int
	profile string
	temps   map[string]bool
}

func ownedBy(t *testing.T, b *cdp.Browser, temps map[string]bool) owned {
	return owned{pid: b.PID(), profile: b.UserDataDir(), temps: temps}
}

// assertClean polls (killed helpers may stay zombies until init reaps
// them) until nothing of the browser is left, and fails after a bound.
func (o owned) assertClean(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for testbrowser.GroupExists(o.pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the browser's process group %d is still there", o.pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(o.profile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary profile %s is still there (%v)", o.profile, err)
	}
	for e := range chromiumTemps(t) {
		if !o.temps[e] {
			t.Fatalf("a Chromium temp entry appeared: %s", e)
		}
	}
}

// hooked is a scripted model that calls onCall(n) at its n-th call (from
// 1), before answering: the moment a test injects its fault.
type hooked struct {
	*scripted.Model
	mu     sync.Mutex
	calls  int
	onCall func(n int)
}

func (m *hooked) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	if m.onCall != nil {
		m.onCall(n)
	}
	return m.Model.Generate(ctx, req)
}

func settings(t *testing.T) agent.Settings {
	return agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff, MaxSteps: 8, StepTimeout: 2 * time.Minute}
}

func startSession(t *testing.T, p session.Profile, opts ...session.Option) *session.Session {
	t.Helper()
	if os.Getenv("FAULTS_LOG") != "" {
		l, _ := zap.NewDevelopment()
		opts = append(opts, session.WithLogger(l))
	}
	s := watchdogs.NewSession(p, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func stop(t *testing.T, s *session.Session) {
	t.Helper()
	if err := s.Stop(context.Background()); err != nil {
		t.Logf("Stop: %v", err)
	}
}

// The browser killed while the model thinks: the step's actions fail, the
// next step finds the browser gone, and the run ends with ErrBrowserGone.
func TestKillMidStep(t *testing.T) {
	srv := fixture(t)
	temps := chromiumTemps(t)
	s := startSession(t, session.Profile{})
	o := ownedBy(t, s.Browser(), temps)
	var killed time.Time
	model := &hooked{
		Model: scripted.New([]scripted.Step{
			{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
			{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
			{Action: "done", Params: map[string]any{"text": "never", "success": true}},
		}),
		onCall: func(n int) {
			if n == 2 {
				killed = time.Now()
				if err := testbrowser.KillProcess(o.pid); err != nil {
					t.Errorf("kill: %v", err)
				}
			}
		},
	}
	a, err := agent.New("Press hello on "+srv.URL1+"/fault-busy-free.html", model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	ended := time.Since(killed)
	if !errors.Is(err, events.ErrBrowserGone) || !errors.Is(res.Err, events.ErrBrowserGone) {
		t.Fatalf("run after the kill: %v (result %+v)", err, res)
	}
	if ended > 10*time.Second {
		t.Fatalf("the run ended %s after the kill", ended)
	}
	t.Logf("killed mid-step: the run ended %s after the kill: %v", ended.Round(time.Millisecond), err)
	stop(t, s)
	o.assertClean(t)
}

// The browser killed while a navigation loads: the load wait ends at once
// (not at its 8 s bound) and the run ends with ErrBrowserGone.
func TestKillMidNavigation(t *testing.T) {
	srv := fixture(t)
	temps := chromiumTemps(t)
	s := startSession(t, session.Profile{})
	o := ownedBy(t, s.Browser(), temps)
	model := scripted.New([]scripted.Step{
		{Action: "navigate", Params: map[string]any{"url": srv.URL1 + "/slow?ms=20000"}},
		{Action: "done", Params: map[string]any{"text": "never", "success": true}},
	})
	var killed time.Time
	stopKiller := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		// Kill when the browser asked the server for the slow page.
		for srv.Hits(testbrowser.Site1, "/slow") == 0 {
			select {
			case <-stopKiller:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		killed = time.Now()
		if err := testbrowser.KillProcess(o.pid); err != nil {
			t.Errorf("kill: %v", err)
		}
	}()
	a, err := agent.New("Read the slow page", model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	close(stopKiller)
	<-killerDone
	if killed.IsZero() {
		t.Fatal("the slow page was never requested")
	}
	ended := time.Since(killed)
	if !errors.Is(err, events.ErrBrowserGone) {
		t.Fatalf("run after the kill: %v (result %+v)", err, res)
	}
	if ended > 10*time.Second {
		t.Fatalf("the run ended %s after the kill", ended)
	}
	t.Logf("killed mid-navigation: the run ended %s after the kill: %v", ended.Round(time.Millisecond), err)
	stop(t, s)
	o.assertClean(t)
}

// launchBehindProxy launches a browser the test owns and returns it with a
// proxy in front of its DevTools endpoint.
func launchBehindProxy(t *testing.T) (*cdp.Browser, *testbrowser.Proxy, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("closing the browser: %v", err)
		}
	})
	ws := b.WebSocketURL()
	host := strings.TrimPrefix(ws, "ws://")
	host = host[:strings.IndexByte(host, '/')]
	p := testbrowser.NewProxy(t, host)
	return b, p, p.Through(ws)
}

// The websocket dropped between two steps: the crash watchdog reconnects,
// the agent waits for it before the next step instead of failing it, and
// the run completes.
func TestWebsocketDropReconnects(t *testing.T) {
	srv := fixture(t)
	temps := chromiumTemps(t)
	b, p, endpoint := launchBehindProxy(t)
	o := ownedBy(t, b, temps)
	s := startSession(t, session.Profile{CDPURL: endpoint, ConnectTab: session.ConnectTabNew})
	var reconnects sync.WaitGroup
	reconnects.Add(1)
	var once sync.Once
	obs := s.Bus().Observe(busRecorder(func(kind string) {
		if kind == events.BrowserReconnected.Name {
			once.Do(reconnects.Done)
		}
	}))
	defer obs.Stop()
	model := &hooked{
		Model: scripted.New([]scripted.Step{
			{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
			{Action: "done", Params: map[string]any{"text": "pressed", "success": true}},
		}),
	}
	set := settings(t)
	var cut time.Time
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) {
		if it.Step == 1 {
			cut = time.Now()
			p.Cut()
		}
	}
	a, err := agent.New("Press hello on "+srv.URL1+"/fault-busy-free.html", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	if err != nil || !res.Done || !res.Success || res.Err != nil {
		t.Fatalf("run across a dropped websocket: %v (result %+v)", err, res)
	}
	reconnects.Wait()
	t.Logf("websocket dropped: the run waited for the reconnect and ended %s after the cut", time.Since(cut).Round(time.Millisecond))
	stop(t, s)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.assertClean(t)
}

// A stalled websocket (nothing forwarded, sockets open) is noticed by the
// connection itself after Profile.StallTimeout; with reconnecting off the
// crash watchdog gives the browser up and the run ends with ErrBrowserGone.
func TestStallEndsTheRun(t *testing.T) {
	srv := fixture(t)
	temps := chromiumTemps(t)
	b, p, endpoint := launchBehindProxy(t)
	o := ownedBy(t, b, temps)
	s := startSession(t, session.Profile{CDPURL: endpoint, ConnectTab: session.ConnectTabNew, StallTimeout: 4 * time.Second},
		session.WithWatchdogs(crash.New(crash.Config{ReconnectAttempts: -1})))
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
		{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
		{Action: "done", Params: map[string]any{"text": "never", "success": true}},
	})
	set := settings(t)
	var stalled time.Time
	set.OnStepEnd = func(_ context.Context, it agent.HistoryItem) {
		if it.Step == 1 {
			stalled = time.Now()
			p.Stall(true)
		}
	}
	a, err := agent.New("Press hello on "+srv.URL1+"/fault-busy-free.html", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	if stalled.IsZero() {
		t.Fatalf("the run ended before the stall: %v (result %+v)", err, res)
	}
	ended := time.Since(stalled)
	if !errors.Is(err, events.ErrBrowserGone) || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("run on a stalled websocket: %v (result %+v)", err, res)
	}
	if ended > 20*time.Second {
		t.Fatalf("the run ended %s after the stall (stall timeout 4 s)", ended)
	}
	t.Logf("websocket stalled: the run ended %s after the stall: %v", ended.Round(time.Millisecond), err)
	p.Stall(false)
	stop(t, s)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.assertClean(t)
}

// busRecorder calls f with the kind of every completed event.
type busRecorder func(kind string)

func (f busRecorder) Observe(r bus.Record) {
	if r.Phase == bus.Completed {
		f(r.Kind)
	}
}

// pageRun runs "press hello" on a page that stops yielding as soon as it
// has loaded (the navigation is ready at load, so a page that waited longer
// could be observed before it turned bad), and returns the result, the
// prompts and how long the run took.
func pageRun(t *testing.T, page string) (*agent.Result, []llm.Request, time.Duration) {
	t.Helper()
	srv := fixture(t)
	temps := chromiumTemps(t)
	s := startSession(t, session.Profile{ScriptBudget: 2 * time.Second})
	o := ownedBy(t, s.Browser(), temps)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
		{Action: "done", Params: map[string]any{"text": "pressed", "success": true}},
	})
	set := settings(t)
	set.InitialActions = []agent.ActionCall{{Name: "navigate", Params: []byte(`{"url":"` + srv.URL1 + page + `"}`)}, {Name: "wait", Params: []byte(`{"seconds":1}`)}}
	a, err := agent.New("Press hello", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := a.Run(context.Background())
	took := time.Since(began)
	if err != nil {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
	// The click of the first step went through: the page was usable again.
	for _, it := range a.History().Items {
		if it.Step == 1 && (len(it.Actions) != 1 || it.Actions[0].Error != "") {
			t.Fatalf("the click on the recovered page: %+v", it.Actions)
		}
	}
	if len(res.Errors) != 0 {
		t.Fatalf("step errors: %q", res.Errors)
	}
	stop(t, s)
	o.assertClean(t)
	return res, model.Requests(), took
}

// A page whose script never yields cannot hold a step hostage: its script
// is interrupted after the budget, the run goes on, and the model is told.
func TestBusyLoopPage(t *testing.T) {
	res, reqs, took := pageRun(t, "/fault-busy.html")
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	if len(reqs) == 0 || !strings.Contains(lastUser(reqs[0]), "script was stopped because its script kept the page busy") {
		t.Fatalf("the model was not told; first prompt:\n%s", lastUser(reqs[0]))
	}
	if took > 90*time.Second {
		t.Fatalf("the run took %s", took)
	}
	t.Logf("busy-loop page: the run took %s", took.Round(time.Millisecond))
}

// A page that loops on alert() cannot hold a step hostage either: the
// popups watchdog reloads it without scripts, and the model is told.
func TestAlertLoopPage(t *testing.T) {
	res, reqs, took := pageRun(t, "/fault-alerts.html")
	if !res.Done || !res.Success {
		if len(reqs) > 0 {
			t.Logf("first prompt:\n%s", lastUser(reqs[0]))
		}
		t.Fatalf("result %+v after %s", res, took)
	}
	if len(reqs) == 0 || !strings.Contains(lastUser(reqs[0]), "dialogs within") {
		t.Fatalf("the model was not told; first prompt:\n%s", lastUser(reqs[0]))
	}
	if took > 90*time.Second {
		t.Fatalf("the run took %s", took)
	}
	t.Logf("alert-loop page: the run took %s", took.Round(time.Millisecond))
}

func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].TextContent()
		}
	}
	return ""
}

// stubborn is a custom watchdog whose BrowserStop handler and Detach ignore
// their contexts until released.
type stubborn struct{ release chan struct{} }

func (w *stubborn) Name() string { return "stubborn" }

func (w *stubborn) Attach(s *session.Session) error {
	return session.Handle(s, events.BrowserStop, "stubborn", func(context.Context, events.BrowserStopEvent) (events.None, error) {
		<-w.release
		return events.None{}, nil
	})
}

func (w *stubborn) Detach(context.Context) error {
	<-w.release
	return nil
}

// A custom watchdog that ignores cancellation cannot make Stop hang after
// a run: each phase of Stop ends at its budget, the straggler is named, and
// the browser is still closed, its profile and temp entries removed.
func TestStubbornWatchdogStop(t *testing.T) {
	srv := fixture(t)
	temps := chromiumTemps(t)
	w := &stubborn{release: make(chan struct{})}
	defer close(w.release) // lets the abandoned goroutines end, for goleak
	budgets := session.StopBudgets{Events: 300 * time.Millisecond, Bus: 300 * time.Millisecond, Detach: 300 * time.Millisecond}
	s := startSession(t, session.Profile{StopBudgets: budgets}, session.WithWatchdogs(w))
	o := ownedBy(t, s.Browser(), temps)
	model := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{{Name: "click", Label: "Hello"}}},
		{Action: "done", Params: map[string]any{"text": "pressed", "success": true}},
	})
	a, err := agent.New("Press hello on "+srv.URL1+"/fault-busy-free.html", model, s, settings(t))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.Run(context.Background()); err != nil || !res.Done {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
	began := time.Now()
	err = s.Stop(context.Background())
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "stubborn") || !errors.Is(err, bus.ErrCloseIncomplete) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v; want an error naming the stubborn watchdog", err)
	}
	if took > 20*time.Second {
		t.Fatalf("Stop took %s", took)
	}
	t.Logf("Stop with a stubborn watchdog took %s: %v", took.Round(time.Millisecond), err)
	o.assertClean(t)
}
