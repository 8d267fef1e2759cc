package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// generous bounds: the machine is shared, tests assert behaviour, not speed.
const long = 20 * time.Second

type ping struct{ N int }
type pong struct{ N int }

var Ping = Kind[ping, pong]{Name: "Ping", Timeout: 10 * time.Second}

func newBus(t *testing.T, opts ...Option) *Bus {
	t.Helper()
	b := New(opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func mustHandle[E, R any](t *testing.T, b *Bus, k Kind[E, R], name string, h func(context.Context, E) (R, error), opts ...HandleOption) *Registration {
	t.Helper()
	r, err := Handle(b, k, name, h, opts...)
	if err != nil {
		t.Fatalf("Handle %s/%s: %v", k.Name, name, err)
	}
	return r
}

func ctxLong(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), long)
	t.Cleanup(cancel)
	return ctx
}

func TestCallTyped(t *testing.T) {
	b := newBus(t)
	mustHandle(t, b, Ping, "double", func(_ context.Context, p ping) (pong, error) { return pong{p.N * 2}, nil })
	got, err := Call(ctxLong(t), b, Ping, ping{21})
	if err != nil || got.N != 42 {
		t.Fatalf("Call = %v, %v; want {42}, nil", got, err)
	}
}

func TestManyHandlersRunInOrderAllResultsKept(t *testing.T) {
	b := newBus(t)
	var order []string
	for _, n := range []string{"a", "b", "c"} {
		mustHandle(t, b, Ping, n, func(_ context.Context, p ping) (pong, error) {
			order = append(order, n) // handlers of one event run one after another
			return pong{len(order)}, nil
		})
	}
	res, err := Dispatch(ctxLong(t), b, Ping, ping{}).Wait(ctxLong(t))
	if err != nil {
		t.Fatal(err)
	}
	all := res.All()
	if len(all) != 3 || strings.Join(order, "") != "abc" {
		t.Fatalf("order %v, results %+v", order, all)
	}
	for i, h := range all {
		if h.Handler != string(rune('a'+i)) || h.Value.N != i+1 || h.Err != nil {
			t.Errorf("result %d = %+v", i, h)
		}
	}
	if v, err := res.First(); err != nil || v.N != 1 {
		t.Errorf("First = %v, %v", v, err)
	}
}

func TestPanicInOneOfThreeHandlers(t *testing.T) {
	b := newBus(t)
	mustHandle(t, b, Ping, "one", func(context.Context, ping) (pong, error) { return pong{1}, nil })
	mustHandle(t, b, Ping, "boom", func(context.Context, ping) (pong, error) { panic("kaboom") })
	mustHandle(t, b, Ping, "three", func(context.Context, ping) (pong, error) { return pong{3}, nil })
	res, err := Dispatch(ctxLong(t), b, Ping, ping{}).Wait(ctxLong(t))
	if err != nil {
		t.Fatal(err)
	}
	all := res.All()
	if all[0].Value.N != 1 || all[0].Err != nil || all[2].Value.N != 3 || all[2].Err != nil {
		t.Fatalf("other handlers' results lost: %+v", all)
	}
	var he *HandlerError
	var pe *PanicError
	if !errors.As(all[1].Err, &he) || he.Handler != "boom" || he.Kind != "Ping" || !errors.As(all[1].Err, &pe) {
		t.Fatalf("panic error = %v", all[1].Err)
	}
	if pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "bus_test.go") {
		t.Errorf("panic value %v, stack lacks the handler:\n%s", pe.Value, pe.Stack)
	}
	if v, err := res.First(); v.N != 1 || !errors.As(err, &pe) {
		t.Errorf("First = %v, %v", v, err)
	}
	// The bus goes on.
	if _, err := Call(ctxLong(t), b, Ping, ping{}); !errors.As(err, &pe) {
		t.Errorf("second call: %v", err)
	}
}

func TestNoHandler(t *testing.T) {
	b := newBus(t)
	_, err := Call(ctxLong(t), b, Ping, ping{})
	if !errors.Is(err, ErrNoHandler) || !strings.Contains(err.Error(), "Ping") {
		t.Fatalf("err = %v, want ErrNoHandler naming Ping", err)
	}
}

func TestTimeoutReleasesHandlerThatHonoursCtx(t *testing.T) {
	b := newBus(t)
	released := make(chan struct{})
	mustHandle(t, b, Ping, "hung", func(ctx context.Context, _ ping) (pong, error) {
		<-ctx.Done()
		close(released)
		return pong{}, ctx.Err()
	})
	start := time.Now()
	_, err := Call(ctxLong(t), b, Ping, ping{}, WithTimeout(50*time.Millisecond))
	if el := time.Since(start); el > long/2 {
		t.Fatalf("Call took %v", el)
	}
	var he *HandlerError
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &he) || he.Handler != "hung" || he.Kind != "Ping" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "Ping") || !strings.Contains(err.Error(), "hung") {
		t.Errorf("error text does not name event and handler: %v", err)
	}
	select {
	case <-released:
	case <-time.After(long):
		t.Fatal("hung handler's context was not cancelled")
	}
}

func TestTimeoutHandlerIgnoringCtxDoesNotBlockBus(t *testing.T) {
	b := newBus(t)
	var late atomic.Int32
	obs := b.Observe(ObserverFunc(func(r Record) {
		if r.Phase == HandlerLate {
			late.Add(1)
		}
	}))
	defer obs.Stop()
	unblock := make(chan struct{})
	mustHandle(t, b, Ping, "stuck", func(_ context.Context, p ping) (pong, error) {
		if p.N == 0 {
			<-unblock // ignores ctx
		}
		return pong{p.N}, nil
	})
	_, err := Call(ctxLong(t), b, Ping, ping{0}, WithTimeout(30*time.Millisecond))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	// The bus moved on while the handler is still stuck.
	got, err := Call(ctxLong(t), b, Ping, ping{7})
	if err != nil || got.N != 7 {
		t.Fatalf("next call = %v, %v", got, err)
	}
	if s := b.Stats(); s.Running != 1 || s.Abandoned != 1 {
		t.Errorf("stats = %+v", s)
	}
	close(unblock)
	deadline := time.Now().Add(long)
	for late.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if late.Load() != 1 {
		t.Errorf("late result not recorded")
	}
}

func TestTimeoutConfiguration(t *testing.T) {
	k := Kind[ping, pong]{Name: "Slow", Timeout: time.Hour}
	b := newBus(t, WithTimeouts(map[string]time.Duration{"Slow": 20 * time.Millisecond}))
	mustHandle(t, b, k, "wait", func(ctx context.Context, _ ping) (pong, error) {
		<-ctx.Done()
		return pong{}, ctx.Err()
	})
	if _, err := Call(ctxLong(t), b, k, ping{}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WithTimeouts not applied: %v", err)
	}
	b.SetTimeout("Slow", 30*time.Millisecond)
	var te *TimeoutError
	if _, err := Call(ctxLong(t), b, k, ping{}); !errors.As(err, &te) || te.Timeout != 30*time.Millisecond {
		t.Fatalf("SetTimeout not applied: %v", err)
	}
	if _, err := Call(ctxLong(t), b, k, ping{}, WithTimeout(10*time.Millisecond)); !errors.As(err, &te) || te.Timeout != 10*time.Millisecond {
		t.Fatalf("WithTimeout not applied: %v", err)
	}
	// Deadline visible to the handler.
	k2 := Kind[ping, time.Duration]{Name: "Deadline", Timeout: time.Minute}
	mustHandle(t, b, k2, "dl", func(ctx context.Context, _ ping) (time.Duration, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return 0, errors.New("no deadline")
		}
		return time.Until(d), nil
	})
	if d, err := Call(context.Background(), b, k2, ping{}); err != nil || d <= 0 || d > time.Minute {
		t.Fatalf("deadline = %v, %v", d, err)
	}
}

func TestCallerCancellation(t *testing.T) {
	b := newBus(t)
	started := make(chan struct{})
	released := make(chan struct{})
	mustHandle(t, b, Ping, "waiter", func(ctx context.Context, _ ping) (pong, error) {
		close(started)
		<-ctx.Done()
		close(released)
		return pong{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	p := Dispatch(ctx, b, Ping, ping{})
	<-started
	cancel()
	res, err := p.Wait(ctxLong(t))
	if err != nil {
		t.Fatal(err)
	}
	var he *HandlerError
	if err := res.Err(); !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) || !errors.As(err, &he) || he.Handler != "waiter" {
		t.Fatalf("err = %v", err)
	}
	<-released
	// Cancelled before it started: no handler runs.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = Call(ctx2, b, Ping, ping{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("pre-cancelled: %v", err)
	}
	// Waiting with a context that ends only stops waiting.
	block := make(chan struct{})
	k := Kind[ping, pong]{Name: "Block"}
	mustHandle(t, b, k, "block", func(context.Context, ping) (pong, error) { <-block; return pong{1}, nil })
	p2 := Dispatch(context.Background(), b, k, ping{})
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer wcancel()
	if _, err := p2.Wait(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v", err)
	}
	close(block)
	if r, err := p2.Wait(ctxLong(t)); err != nil || r.Err() != nil {
		t.Fatalf("event did not go on: %v %v", err, r.Err())
	}
}

type lvl struct{ Depth int }

var Level = Kind[lvl, []uint64]{Name: "Level", Timeout: 10 * time.Second}

func TestNestedDispatchThreeLevels(t *testing.T) {
	b := newBus(t)
	var mu sync.Mutex
	var recs []Record
	obs := b.Observe(ObserverFunc(func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }))
	mustHandle(t, b, Level, "descend", func(ctx context.Context, l lvl) ([]uint64, error) {
		info, _ := Current(ctx)
		if l.Depth == 3 {
			return []uint64{info.EventID}, nil
		}
		ids, err := Call(ctx, b, Level, lvl{l.Depth + 1})
		return append([]uint64{info.EventID}, ids...), err
	})
	// A second root queued behind: it must not run before the tree finishes.
	ids, err := Call(ctxLong(t), b, Level, lvl{1})
	if err != nil || len(ids) != 3 {
		t.Fatalf("Call = %v, %v", ids, err)
	}
	h := b.History()
	if len(h) != 3 {
		t.Fatalf("history %+v", h)
	}
	parent := map[uint64]uint64{}
	for _, s := range h {
		parent[s.ID] = s.ParentID
	}
	if parent[ids[0]] != 0 || parent[ids[1]] != ids[0] || parent[ids[2]] != ids[1] {
		t.Errorf("parent links %v for ids %v", parent, ids)
	}
	// Children complete before their parents.
	if h[0].ID != ids[2] || h[2].ID != ids[0] {
		t.Errorf("completion order %+v", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	obs.Stop()
	select {
	case <-obs.Done():
	case <-ctx.Done():
		t.Fatal("observer did not stop")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range recs {
		if r.Phase == Dispatched && r.ParentID != parent[r.EventID] {
			t.Errorf("record %+v has wrong parent", r)
		}
	}
}

func TestNestedChildTimeoutReturnsToParent(t *testing.T) {
	b := newBus(t)
	child := Kind[ping, pong]{Name: "Child", Timeout: 20 * time.Millisecond}
	mustHandle(t, b, child, "hang", func(ctx context.Context, _ ping) (pong, error) {
		<-ctx.Done()
		return pong{}, ctx.Err()
	})
	mustHandle(t, b, Ping, "parent", func(ctx context.Context, _ ping) (pong, error) {
		_, err := Call(ctx, b, child, ping{})
		if !errors.Is(err, ErrTimeout) {
			return pong{}, fmt.Errorf("child error = %v", err)
		}
		return pong{1}, nil
	})
	if v, err := Call(ctxLong(t), b, Ping, ping{}); err != nil || v.N != 1 {
		t.Fatalf("Call = %v, %v", v, err)
	}
}

func TestFIFOFromOutside(t *testing.T) {
	b := newBus(t)
	var got []int
	mustHandle(t, b, Ping, "rec", func(_ context.Context, p ping) (pong, error) {
		got = append(got, p.N)
		return pong{}, nil
	})
	var last *Pending[pong]
	for i := range 200 {
		last = Dispatch(context.Background(), b, Ping, ping{i})
	}
	if _, err := last.Wait(ctxLong(t)); err != nil {
		t.Fatal(err)
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("order broken at %d: %v", i, got)
		}
	}
	if len(got) != 200 {
		t.Fatalf("%d events ran", len(got))
	}
}

func TestFireAndForgetFromHandlerRunsAfterAndErrorsReachTrace(t *testing.T) {
	b := newBus(t)
	var mu sync.Mutex
	var log []string
	add := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	var traced atomic.Value
	obs := b.Observe(ObserverFunc(func(r Record) {
		if r.Phase == HandlerFinished && r.Kind == "Report" && r.Err != nil {
			traced.Store(r.Err)
		}
	}))
	report := Kind[ping, struct{}]{Name: "Report"}
	errReport := errors.New("report failed")
	mustHandle(t, b, report, "fail", func(context.Context, ping) (struct{}, error) {
		add("report")
		return struct{}{}, errReport
	})
	mustHandle(t, b, Ping, "emitter", func(ctx context.Context, _ ping) (pong, error) {
		if _, err := Emit(ctx, b, report, ping{}); err != nil {
			return pong{}, err
		}
		add("emitter-end")
		return pong{}, nil
	})
	if _, err := Call(ctxLong(t), b, Ping, ping{}); err != nil {
		t.Fatal(err)
	}
	// A later event from outside completes after the queued report.
	mustHandle(t, b, Kind[int, int]{Name: "Later"}, "l", func(context.Context, int) (int, error) { add("later"); return 0, nil })
	if _, err := Call(ctxLong(t), b, Kind[int, int]{Name: "Later"}, 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if strings.Join(log, ",") != "emitter-end,report,later" {
		t.Errorf("order = %v", log)
	}
	mu.Unlock()
	var found bool
	for _, s := range b.History() {
		if s.Kind == "Report" && errors.Is(s.Err, errReport) && s.ParentID != 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("fire-and-forget error not in history: %+v", b.History())
	}
	obs.Stop()
	<-obs.Done()
	if e, _ := traced.Load().(error); !errors.Is(e, errReport) {
		t.Errorf("fire-and-forget error not traced: %v", e)
	}
}

func TestIndependentBusesRunInParallel(t *testing.T) {
	b1, b2 := newBus(t), newBus(t)
	done2 := make(chan struct{})
	mustHandle(t, b1, Ping, "waits-for-b2", func(ctx context.Context, _ ping) (pong, error) {
		select {
		case <-done2:
			return pong{1}, nil
		case <-ctx.Done():
			return pong{}, ctx.Err()
		}
	})
	mustHandle(t, b2, Ping, "b2", func(context.Context, ping) (pong, error) { close(done2); return pong{2}, nil })
	p1 := Dispatch(ctxLong(t), b1, Ping, ping{})
	if v, err := Call(ctxLong(t), b2, Ping, ping{}); err != nil || v.N != 2 {
		t.Fatalf("b2: %v %v", v, err)
	}
	r, err := p1.Wait(ctxLong(t))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := r.First(); err != nil || v.N != 1 {
		t.Fatalf("b1: %v %v", v, err)
	}
}

func TestConcurrentDispatch100Goroutines(t *testing.T) {
	b := newBus(t)
	var n atomic.Int64
	mustHandle(t, b, Ping, "inc", func(_ context.Context, p ping) (pong, error) {
		n.Add(1)
		return pong{p.N + 1}, nil
	})
	mustHandle(t, b, Level, "nest", func(ctx context.Context, l lvl) ([]uint64, error) {
		v, err := Call(ctx, b, Ping, ping{l.Depth})
		return []uint64{uint64(v.N)}, err
	})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if i%2 == 0 {
					v, err := Call(context.Background(), b, Ping, ping{g})
					if err != nil || v.N != g+1 {
						errs <- fmt.Errorf("Call %v %v", v, err)
						return
					}
				} else {
					v, err := Call(context.Background(), b, Level, lvl{g})
					if err != nil || v[0] != uint64(g+1) {
						errs <- fmt.Errorf("nested %v %v", v, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n.Load() != 100*20 {
		t.Errorf("handled %d", n.Load())
	}
}

func TestCloseDrainsInFlight(t *testing.T) {
	b := New()
	gate := make(chan struct{})
	var ran atomic.Int32
	mustHandle(t, b, Ping, "slow", func(_ context.Context, p ping) (pong, error) {
		<-gate
		ran.Add(1)
		return pong{p.N}, nil
	})
	var ps []*Pending[pong]
	for i := range 5 {
		ps = append(ps, Dispatch(context.Background(), b, Ping, ping{i}))
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close(ctxLong(t)) }()
	// Dispatch after Close began is refused (events accepted before it ran are drained).
	accepted := 0
	for {
		p := Dispatch(context.Background(), b, Ping, ping{})
		select {
		case <-p.Done():
			if r, _ := p.Wait(context.Background()); !errors.Is(r.Err(), ErrClosed) {
				t.Fatalf("refused dispatch: %v", r.Err())
			}
		default:
			accepted++
			ps = append(ps, p)
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	if _, err := Handle(b, Ping, "late", func(context.Context, ping) (pong, error) { return pong{}, nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Handle after close: %v", err)
	}
	if _, err := Emit(context.Background(), b, Ping, ping{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Emit after close: %v", err)
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, p := range ps {
		r, err := p.Wait(context.Background())
		if err != nil || r.Err() != nil {
			t.Fatalf("event %d: %v %v", i, err, r.Err())
		}
	}
	if ran.Load() != int32(5+accepted) {
		t.Errorf("ran %d, want %d", ran.Load(), 5+accepted)
	}
	<-b.Done()
}

func TestCloseCancelsInFlight(t *testing.T) {
	b := New()
	started := make(chan struct{}, 10)
	mustHandle(t, b, Ping, "honours", func(ctx context.Context, _ ping) (pong, error) {
		started <- struct{}{}
		<-ctx.Done()
		return pong{}, ctx.Err()
	})
	first := Dispatch(context.Background(), b, Ping, ping{})
	queued := Dispatch(context.Background(), b, Ping, ping{})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := b.Close(ctx)
	if err != nil && !errors.Is(err, ErrCloseIncomplete) {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-b.Done():
	case <-time.After(long):
		t.Fatal("goroutines left after cancel")
	}
	r1, _ := first.Wait(context.Background())
	if e := r1.Err(); !errors.Is(e, ErrCanceled) || !errors.Is(e, ErrClosed) {
		t.Errorf("running event: %v", e)
	}
	r2, _ := queued.Wait(context.Background())
	if e := r2.Err(); !errors.Is(e, ErrClosed) {
		t.Errorf("queued event: %v", e)
	}
}

func TestCloseWithHandlerIgnoringCtx(t *testing.T) {
	b := New()
	started := make(chan struct{})
	release := make(chan struct{})
	mustHandle(t, b, Ping, "deaf", func(context.Context, ping) (pong, error) {
		close(started)
		<-release
		return pong{}, nil
	})
	p := Dispatch(context.Background(), b, Ping, ping{})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := b.Close(ctx)
	var ce *CloseError
	if !errors.Is(err, ErrCloseIncomplete) || !errors.As(err, &ce) || len(ce.Running) != 1 || ce.Running[0] != "Ping/deaf" {
		t.Fatalf("Close = %v", err)
	}
	// The awaiter is released even though the handler is stuck.
	if r, err := p.Wait(ctxLong(t)); err != nil || !errors.Is(r.Err(), ErrClosed) {
		t.Fatalf("Wait = %v", err)
	}
	close(release)
	select {
	case <-b.Done():
	case <-time.After(long):
		t.Fatal("Done not closed after the handler returned")
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseFromHandlerRefused(t *testing.T) {
	b := newBus(t)
	mustHandle(t, b, Ping, "closer", func(ctx context.Context, _ ping) (pong, error) {
		return pong{}, b.Close(ctx)
	})
	if _, err := Call(ctxLong(t), b, Ping, ping{}); !errors.Is(err, ErrCloseFromHandler) {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistrationRemoveReplaceOrder(t *testing.T) {
	b := newBus(t)
	mk := func(s string) func(context.Context, ping) (pong, error) {
		return func(context.Context, ping) (pong, error) { return pong{len(s)}, nil }
	}
	ra := mustHandle(t, b, Ping, "a", mk("a"))
	mustHandle(t, b, Ping, "c", mk("ccc"))
	mustHandle(t, b, Ping, "b", mk("bb"), Before("c"))
	mustHandle(t, b, Ping, "first", mk(""), First())
	mustHandle(t, b, Ping, "d", mk("dddd"), After("c"))
	if got := strings.Join(b.Handlers("Ping"), ","); got != "first,a,b,c,d" {
		t.Fatalf("order %s", got)
	}
	if _, err := Handle(b, Ping, "a", mk("x")); !errors.Is(err, ErrDuplicateHandler) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := Handle(b, Ping, "z", mk("x"), Before("nope")); !errors.Is(err, ErrHandlerNotFound) {
		t.Errorf("bad anchor: %v", err)
	}
	if _, err := Handle(b, Kind[string, int]{Name: "Ping"}, "z", func(context.Context, string) (int, error) { return 0, nil }); !errors.Is(err, ErrKindMismatch) {
		t.Errorf("mismatch: %v", err)
	}
	if _, err := Handle(b, Kind[ping, pong]{}, "z", mk("")); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty kind: %v", err)
	}
	if _, err := Handle(b, Ping, "", mk("")); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty name: %v", err)
	}
	if _, err := Handle[ping, pong](b, Ping, "n", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil handler: %v", err)
	}
	if err := Replace(b, Ping, "a", mk("replaced")); err != nil {
		t.Fatal(err)
	}
	if err := Replace(b, Ping, "nope", mk("")); !errors.Is(err, ErrHandlerNotFound) {
		t.Errorf("replace unknown: %v", err)
	}
	res, _ := Dispatch(ctxLong(t), b, Ping, ping{}).Wait(ctxLong(t))
	if a := res.All()[1]; a.Handler != "a" || a.Value.N != len("replaced") {
		t.Errorf("replaced handler result %+v", a)
	}
	if !ra.Remove() || ra.Remove() {
		t.Error("Remove should succeed once (also after Replace)")
	}
	if got := strings.Join(b.Handlers("Ping"), ","); got != "first,b,c,d" {
		t.Fatalf("after remove %s", got)
	}
	// Dispatch with a mismatched kind of the same name fails loudly.
	if _, err := Call(ctxLong(t), b, Kind[string, int]{Name: "Ping"}, "x"); !errors.Is(err, ErrKindMismatch) {
		t.Errorf("mismatched dispatch: %v", err)
	}
	if _, err := Call(ctxLong(t), b, Kind[string, int]{}, "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("nameless dispatch: %v", err)
	}
}

var errBlocked = errors.New("blocked by policy")

func TestGuardStopsChain(t *testing.T) {
	b := newBus(t)
	nav := Kind[string, string]{Name: "Navigate"}
	var navigated atomic.Int32
	mustHandle(t, b, nav, "session", func(_ context.Context, u string) (string, error) {
		navigated.Add(1)
		return "loaded " + u, nil
	})
	mustHandle(t, b, nav, "policy", func(_ context.Context, u string) (string, error) {
		if strings.HasPrefix(u, "evil") {
			return "", errBlocked
		}
		return "", nil
	}, Guard(), First())
	if v, err := Call(ctxLong(t), b, nav, "good"); err != nil || v != "loaded good" {
		t.Fatalf("allowed: %q %v", v, err)
	}
	res, _ := Dispatch(ctxLong(t), b, nav, "evil").Wait(ctxLong(t))
	if !errors.Is(res.Err(), errBlocked) || navigated.Load() != 1 {
		t.Fatalf("blocked: %v, navigated %d", res.Err(), navigated.Load())
	}
	if s := res.All()[1]; !s.Skipped || !errors.Is(s.Err, ErrSkipped) || !errors.Is(s.Err, errBlocked) {
		t.Errorf("skipped result %+v", s)
	}
	// Kind.StopOnError applies to every handler.
	k := Kind[int, int]{Name: "Chain", StopOnError: true}
	mustHandle(t, b, k, "fail", func(context.Context, int) (int, error) { return 0, errBlocked })
	mustHandle(t, b, k, "never", func(context.Context, int) (int, error) { t.Error("ran"); return 1, nil })
	if _, err := Call(ctxLong(t), b, k, 0); !errors.Is(err, errBlocked) {
		t.Errorf("chain: %v", err)
	}
	// Without StopOnError every handler runs and errors join.
	k2 := Kind[int, int]{Name: "NoStop"}
	mustHandle(t, b, k2, "e1", func(context.Context, int) (int, error) { return 0, errBlocked })
	mustHandle(t, b, k2, "e2", func(context.Context, int) (int, error) { return 0, ErrNoHandler })
	mustHandle(t, b, k2, "ok", func(context.Context, int) (int, error) { return 5, nil })
	v, err := Call(ctxLong(t), b, k2, 0)
	if v != 5 || !errors.Is(err, errBlocked) || !errors.Is(err, ErrNoHandler) {
		t.Errorf("joined: %v %v", v, err)
	}
}

type summarized struct{ N int }

func (s summarized) Summary() string { return fmt.Sprintf("n=%d", s.N) }

func TestObserverSeesEveryLifecycleRecord(t *testing.T) {
	b := newBus(t, WithName("s1"))
	var mu sync.Mutex
	var recs []Record
	obs := b.Observe(ObserverFunc(func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }))
	k := Kind[int, summarized]{Name: "Sum"}
	mustHandle(t, b, k, "ok", func(_ context.Context, n int) (summarized, error) { return summarized{n}, nil })
	mustHandle(t, b, k, "bad", func(context.Context, int) (summarized, error) { return summarized{}, errBlocked })
	_, _ = Call(ctxLong(t), b, k, 3)
	obs.Stop()
	<-obs.Done()
	mu.Lock()
	defer mu.Unlock()
	var phases []string
	for _, r := range recs {
		phases = append(phases, r.Phase.String()+":"+r.Handler)
		if r.Bus != "s1" || r.Kind != "Sum" || r.EventID == 0 || r.Time.IsZero() {
			t.Errorf("record %+v", r)
		}
	}
	want := "dispatched:,handler_started:ok,handler_finished:ok,handler_started:bad,handler_finished:bad,completed:"
	if strings.Join(phases, ",") != want {
		t.Fatalf("phases %v", phases)
	}
	if recs[2].Summary(0) != "n=3" || recs[0].Summary(0) != "3" || !errors.Is(recs[4].Err, errBlocked) || !errors.Is(recs[5].Err, errBlocked) || recs[5].Failed != 1 || recs[5].Handlers != 2 {
		t.Errorf("records %+v", recs)
	}
	if recs[2].Duration < 0 || recs[5].Duration <= 0 {
		t.Errorf("durations %v %v", recs[2].Duration, recs[5].Duration)
	}
	if got := (Record{Phase: HandlerFinished, Value: strings.Repeat("x", 50)}).Summary(10); got != strings.Repeat("x", 10)+"…" {
		t.Errorf("truncated summary %q", got)
	}
}

func TestSlowObserverDoesNotStallBus(t *testing.T) {
	b := newBus(t)
	block := make(chan struct{})
	var seen atomic.Int64
	obs := b.Observe(ObserverFunc(func(Record) { <-block; seen.Add(1) }), WithBuffer(4))
	panicky := b.Observe(ObserverFunc(func(Record) { panic("observer bug") }))
	mustHandle(t, b, Ping, "h", func(context.Context, ping) (pong, error) { return pong{}, nil })
	for range 100 {
		if _, err := Call(ctxLong(t), b, Ping, ping{}); err != nil {
			t.Fatal(err)
		}
	}
	if obs.Dropped() == 0 || b.Stats().ObserverDrops < obs.Dropped() {
		t.Fatalf("drops not counted: %d, stats %+v", obs.Dropped(), b.Stats())
	}
	close(block)
	obs.Stop()
	panicky.Stop()
	<-obs.Done()
	<-panicky.Done()
	if total := uint64(seen.Load()) + obs.Dropped(); total != 100*4 {
		t.Errorf("delivered+dropped = %d, want 400", total)
	}
	if panicky.Panics() != 400 {
		t.Errorf("panics %d", panicky.Panics())
	}
}

func TestHistoryBounded(t *testing.T) {
	b := newBus(t, WithHistory(5))
	mustHandle(t, b, Ping, "h", func(_ context.Context, p ping) (pong, error) { return pong{p.N}, nil })
	var ids []uint64
	for i := range 20 {
		p := Dispatch(context.Background(), b, Ping, ping{i})
		ids = append(ids, p.ID())
		if _, err := p.Wait(ctxLong(t)); err != nil {
			t.Fatal(err)
		}
	}
	h := b.History()
	if len(h) != 5 {
		t.Fatalf("len %d", len(h))
	}
	for i, s := range h {
		if s.ID != ids[15+i] || s.Handlers != 1 || s.CompletedAt.Before(s.DispatchedAt) {
			t.Errorf("history[%d] = %+v", i, s)
		}
	}
	if s := b.Stats(); s.Dispatched != 20 || s.Completed != 20 {
		t.Errorf("stats %+v", s)
	}
}

func TestCurrent(t *testing.T) {
	b := newBus(t)
	if _, ok := Current(context.Background()); ok {
		t.Error("Current outside a handler")
	}
	mustHandle(t, b, Ping, "who", func(ctx context.Context, _ ping) (pong, error) {
		info, ok := Current(ctx)
		if !ok || info.Bus != b || info.Kind != "Ping" || info.Handler != "who" || info.EventID == 0 {
			return pong{}, fmt.Errorf("info %+v", info)
		}
		return pong{}, nil
	})
	if _, err := Call(ctxLong(t), b, Ping, ping{}); err != nil {
		t.Fatal(err)
	}
}

func TestNestedAcrossBusesBackToFirst(t *testing.T) {
	a, b := newBus(t), newBus(t)
	inner := Kind[int, int]{Name: "Inner", Timeout: 10 * time.Second}
	mustHandle(t, a, inner, "a-inner", func(_ context.Context, n int) (int, error) { return n + 1, nil })
	mustHandle(t, b, Ping, "b-mid", func(ctx context.Context, p ping) (pong, error) {
		// a's worker is blocked in a-outer; the child runs inline because an
		// ancestor handler belongs to a.
		n, err := Call(ctx, a, inner, p.N)
		return pong{n}, err
	})
	mustHandle(t, a, Ping, "a-outer", func(ctx context.Context, p ping) (pong, error) {
		return Call(ctx, b, Ping, p)
	})
	if v, err := Call(ctxLong(t), a, Ping, ping{1}); err != nil || v.N != 2 {
		t.Fatalf("Call = %v, %v", v, err)
	}
}

func TestHandlerContextErrIsStandard(t *testing.T) {
	b := newBus(t)
	got := make(chan error, 1)
	mustHandle(t, b, Ping, "h", func(ctx context.Context, _ ping) (pong, error) {
		<-ctx.Done()
		got <- ctx.Err()
		return pong{}, nil
	})
	_, _ = Call(ctxLong(t), b, Ping, ping{}, WithTimeout(10*time.Millisecond))
	if err := <-got; err != context.DeadlineExceeded {
		t.Errorf("timeout ctx.Err() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := Dispatch(ctx, b, Ping, ping{})
	cancel()
	r, err := p.Wait(ctxLong(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.All()) == 1 && !r.All()[0].Skipped { // it ran before the cancel arrived
		if err := <-got; err != context.Canceled {
			t.Errorf("cancel ctx.Err() = %v", err)
		}
	}
}

func TestObserverOrderOnTimeout(t *testing.T) {
	b := newBus(t)
	var mu sync.Mutex
	var phases []string
	obs := b.Observe(ObserverFunc(func(r Record) {
		mu.Lock()
		defer mu.Unlock()
		if r.Phase == HandlerFinished && !errors.Is(r.Err, ErrTimeout) {
			t.Errorf("finished record err = %v", r.Err)
		}
		if r.Phase != HandlerLate { // the late return may come before or after Completed
			phases = append(phases, r.Phase.String())
		}
	}))
	mustHandle(t, b, Ping, "slow", func(ctx context.Context, _ ping) (pong, error) {
		<-ctx.Done()
		return pong{}, ctx.Err()
	})
	if _, err := Call(ctxLong(t), b, Ping, ping{}, WithTimeout(5*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Fatal(err)
	}
	obs.Stop()
	<-obs.Done()
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(phases, ","); got != "dispatched,handler_started,handler_finished,completed" {
		t.Errorf("phases %s", got)
	}
}

// A failed handler's value is its evidence: Call returns it with the error,
// errors.As reaches the handler's typed error through *HandlerError, and
// observers get the value in the HandlerFinished record.
func TestFailedHandlerKeepsValue(t *testing.T) {
	b := newBus(t)
	type evidence struct{ Before, After string }
	type result struct {
		Verdict  string
		Evidence evidence
	}
	type actionErr struct{ error }
	kind := Kind[ping, result]{Name: "Act", StopOnError: true}
	got := make(chan Record, 8)
	obs := b.Observe(ObserverFunc(func(r Record) {
		if r.Phase == HandlerFinished {
			got <- r
		}
	}))
	failed := result{Verdict: "failed", Evidence: evidence{"a", "b"}}
	mustHandle(t, b, kind, "act", func(context.Context, ping) (result, error) {
		return failed, actionErr{errors.New("covered")}
	})
	v, err := Call(ctxLong(t), b, kind, ping{})
	var ae actionErr
	if !errors.As(err, &ae) || v != failed {
		t.Fatalf("Call = %+v, %v; want the failed value and the typed error", v, err)
	}
	var he *HandlerError
	if !errors.As(err, &he) || he.Handler != "act" {
		t.Fatalf("error %v is not a *HandlerError", err)
	}
	obs.Stop()
	<-obs.Done()
	r := <-got
	if r.Err == nil || r.Value != failed {
		t.Fatalf("observer record: value %+v, err %v; want both", r.Value, r.Err)
	}

	// A successful handler's value still wins over an earlier failed one;
	// a guard's value is never the result.
	two := Kind[ping, result]{Name: "Two"}
	mustHandle(t, b, two, "guard", func(context.Context, ping) (result, error) {
		return result{Verdict: "guard"}, nil
	}, Guard())
	mustHandle(t, b, two, "fails", func(context.Context, ping) (result, error) {
		return result{Verdict: "failed"}, errors.New("x")
	})
	mustHandle(t, b, two, "works", func(context.Context, ping) (result, error) {
		return result{Verdict: "ok"}, nil
	})
	if v, err := Call(ctxLong(t), b, two, ping{}); err == nil || v.Verdict != "ok" {
		t.Fatalf("Call = %+v, %v; want the successful value and the error", v, err)
	}
}
