package routine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStopCancelsAndJoins(t *testing.T) {
	g := New(context.Background())
	started := make(chan struct{})
	ended := make(chan struct{})
	if err := g.Go("worker", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(ended)
	}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the goroutine ended")
	}
	if err := g.Go("late", func(context.Context) {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Go after Stop = %v, want ErrStopped", err)
	}
	if !g.Stopped() {
		t.Fatal("Stopped() = false")
	}
}

func TestStopNamesGoroutinesThatIgnoreTheirContext(t *testing.T) {
	g := New(context.Background())
	release := make(chan struct{})
	if err := g.Go("stubborn", func(context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := g.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stubborn") {
		t.Fatalf("Stop = %v, want a deadline error naming the goroutine", err)
	}
	close(release)
	if err := g.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
}

func TestGoFromInsideTheGroup(t *testing.T) {
	g := New(context.Background())
	inner := make(chan struct{})
	if err := g.Go("outer", func(ctx context.Context) {
		_ = g.Go("inner", func(context.Context) { close(inner) })
	}); err != nil {
		t.Fatal(err)
	}
	<-inner
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestParentCancellationDoesNotStopTheGroup(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	g := New(parent)
	cancel()
	if err := g.Context().Err(); err != nil {
		t.Fatalf("group context ended with its parent: %v", err)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.Context().Err() == nil {
		t.Fatal("Stop did not cancel the group's context")
	}
}
