package follow

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// A consumer slower than the page overflows its subscription; Run
// subscribes again, resynchronises, and keeps delivering. A detached
// session ends Run with its error; ctx ends it with nil.
func TestRunSurvivesOverflowAndEndsOnDetach(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "/form.html")
	ctx, cancel := context.WithTimeout(context.Background(), testbrowser.Timeout)
	defer cancel()

	conn, err := cdp.Dial(ctx, env.Browser.WebSocketURL(), cdp.WithEventBuffer(2))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cs, err := conn.AttachToTarget(ctx, pg.TargetID)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Call(ctx, runtime.CommandEnable, nil, nil); err != nil {
		t.Fatal(err)
	}
	open := func() *cdp.Subscription { return cs.SubscribeEvents(runtime.ConsoleAPICalled.Method) }

	var resyncs, seen atomic.Int32
	gate := make(chan struct{})
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, nil, open, func(cdp.Event) {
			if seen.Add(1) == 1 {
				<-gate // fall behind on the first event
			}
		}, Options{Name: "test", Resync: func(context.Context) { resyncs.Add(1) }})
	}()
	// Let Run subscribe, then flood.
	waitFor(t, func() bool {
		_ = cs.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "console.log('ping')"}, nil)
		return seen.Load() > 0
	})
	if err := cs.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "for (let i = 0; i < 50; i++) console.log(i)"}, nil); err != nil {
		t.Fatal(err)
	}
	close(gate)
	waitFor(t, func() bool { return resyncs.Load() > 0 })
	before := seen.Load()
	waitFor(t, func() bool {
		_ = cs.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "console.log('after')"}, nil)
		return seen.Load() > before
	})
	stopRun()
	if err := <-done; err != nil {
		t.Fatalf("Run after ctx end = %v, want nil", err)
	}

	// A detached session ends Run with the detach error.
	done2 := make(chan error, 1)
	go func() { done2 <- Run(ctx, open(), open, func(cdp.Event) {}, Options{}) }()
	if err := conn.DetachFromTarget(ctx, cs); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done2:
		if !errors.Is(err, cdp.ErrTargetDetached) {
			t.Fatalf("Run after detach = %v, want ErrTargetDetached", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not end when its session detached")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testbrowser.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
