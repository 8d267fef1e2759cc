package temporal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// workerBin is the browseragent-temporal command, built once for the
// tests that run workers as processes.
var workerBin string

// TestMain builds the command, runs the tests, and checks that no
// goroutine outlives them but those the in-process Temporal server and
// the SDK leave behind (named below).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "browseragent-temporal-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin = filepath.Join(dir, "browseragent-temporal")
	build := exec.Command("go", "build", "-o", workerBin, "./cmd/browseragent-temporal")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(leftovers...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: errors on successful test run:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers are the goroutines temporaltest's in-process server (and the
// SDK workers it runs for its own system namespace) keep after Stop: its
// membership (ringpop) loops, metrics reporters, SQL connection openers,
// gRPC callback serialisers and internal workers' pollers, which have no
// stop of theirs. Found by running the tests; named precisely.
var leftovers = []goleak.Option{
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal/common/backoff.(*ConcurrentRetrier).throttleInternal"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*baseWorker).Start.func2"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*baseWorker).runTaskDispatcher"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*baseWorker).runEagerTaskDispatcher"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*localActivityTunnel).getTask"),
	goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*sharedNamespaceWorker).run"),
	goleak.IgnoreAnyFunction("github.com/temporalio/ringpop-go.(*Ringpop).startTimers.func1"),
	goleak.IgnoreAnyFunction("github.com/temporalio/ringpop-go.(*Ringpop).startTimers.func2"),
	goleak.IgnoreAnyFunction("go.temporal.io/server/common/membership/ringpop.(*monitor).startHeartbeatUpsertLoop.func1"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
	goleak.IgnoreAnyFunction("github.com/uber-go/tally/v4.(*scope).reportLoop"),
	goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	goleak.IgnoreAnyFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	goleak.IgnoreAnyFunction("github.com/uber-go/tally/v4/prometheus.Configuration.NewReporter.func5"),
	goleak.IgnoreAnyFunction("go.temporal.io/server/common/pprof.(*PProfInitializerImpl).Start.func1"),
}
