package bus

import (
	"context"
	"runtime"
	"testing"
	"time"
)

type noop struct{}

var Noop = Kind[noop, struct{}]{Name: "Noop", Timeout: time.Minute}

func noopHandler(context.Context, noop) (struct{}, error) { return struct{}{}, nil }

func benchBus(b *testing.B, observed bool) *Bus {
	bus := New()
	if _, err := Handle(bus, Noop, "noop", noopHandler); err != nil {
		b.Fatal(err)
	}
	if observed {
		obs := bus.Observe(ObserverFunc(func(Record) {}))
		b.Cleanup(func() { obs.Stop() })
	}
	b.Cleanup(func() { _ = bus.Close(context.Background()) })
	return bus
}

// BenchmarkCall is dispatch + await of a no-op event with one handler.
func BenchmarkCall(b *testing.B) {
	bus := benchBus(b, false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(ctx, bus, Noop, noop{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallObserved is BenchmarkCall with one observer attached.
func BenchmarkCallObserved(b *testing.B) {
	bus := benchBus(b, true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(ctx, bus, Noop, noop{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel is Call from many goroutines on one bus.
func BenchmarkCallParallel(b *testing.B) {
	bus := benchBus(b, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := Call(ctx, bus, Noop, noop{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkNestedCall is a parent whose handler awaits one child.
func BenchmarkNestedCall(b *testing.B) {
	bus := benchBus(b, false)
	parent := Kind[int, struct{}]{Name: "Parent", Timeout: time.Minute}
	if _, err := Handle(bus, parent, "p", func(ctx context.Context, _ int) (struct{}, error) {
		return Call(ctx, bus, Noop, noop{})
	}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(ctx, bus, parent, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMillionEventsFlatMemory dispatches 10^6 events (10^5 under -race) and
// checks that the heap in use does not grow with the number of events
// (history and queue are bounded).
func TestMillionEventsFlatMemory(t *testing.T) {
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	bus := New()
	defer func() { _ = bus.Close(context.Background()) }()
	if _, err := Handle(bus, Noop, "noop", noopHandler); err != nil {
		t.Fatal(err)
	}
	obs := bus.Observe(ObserverFunc(func(Record) {}), WithBuffer(1024))
	defer obs.Stop()
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// Warm up so the history ring and buffers reach their size.
	for range 10_000 {
		if _, err := Call(ctx, bus, Noop, noop{}); err != nil {
			t.Fatal(err)
		}
	}
	before := heap()
	start := time.Now()
	// Fire-and-forget in batches, then await the last: the queue stays bounded by the batch.
	for i := 0; i < n; i += 1000 {
		var last *Pending[struct{}]
		for range 1000 {
			last = Dispatch(ctx, bus, Noop, noop{})
		}
		if _, err := last.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	el := time.Since(start)
	after := heap()
	t.Logf("%d events in %v (%.0f ns/event); heap in use before %d KiB, after %d KiB; observer drops %d",
		n, el, float64(el.Nanoseconds())/float64(n), before/1024, after/1024, obs.Dropped())
	if after > before+8<<20 {
		t.Errorf("heap grew from %d to %d bytes over %d events", before, after, n)
	}
	if h := bus.History(); len(h) != DefaultHistory {
		t.Errorf("history %d", len(h))
	}
}

// TestCallCPUCost reports the CPU time (user+system, all goroutines) per
// dispatch+await, which unlike ns/op does not count time spent waiting for a
// core on a shared machine. It asserts only that calls succeed.
func TestCallCPUCost(t *testing.T) {
	bus := New()
	defer func() { _ = bus.Close(context.Background()) }()
	if _, err := Handle(bus, Noop, "noop", noopHandler); err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	ctx := context.Background()
	c0 := cpuTime()
	w0 := time.Now()
	for range n {
		if _, err := Call(ctx, bus, Noop, noop{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("Call: %.0f ns CPU/op, %.0f ns wall/op", float64(cpuTime()-c0)/n, float64(time.Since(w0).Nanoseconds())/n)
}
