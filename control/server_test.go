package control_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// shotDriver is what the browseragent command serves: the Driver plus
// screenshots that keep the indexes.
type shotDriver struct {
	*agent.Driver
	s *session.Session
}

func (d shotDriver) Screenshot(ctx context.Context) ([]byte, error) {
	res, err := bus.Call(ctx, d.s.Bus(), events.Screenshot, events.ScreenshotEvent{})
	return res.Data, err
}

// fixture is a launched browser with a Driver, and the fixture site.
type fixture struct {
	srv *testbrowser.Server
	s   *session.Session
	d   *agent.Driver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	s := watchdogs.NewSession(session.Profile{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	d, err := agent.NewDriver(s, agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff, ExcludeActions: []string{"evaluate"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		d.Close(ctx)
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	return &fixture{srv: srv, s: s, d: d}
}

// serving is a Server running on a socket of its own.
type serving struct {
	socket string
	client control.Client
	done   chan struct{}
	reason control.StopReason
	err    error
	cancel context.CancelCauseFunc
}

func serve(t *testing.T, d control.Driver, opt control.ServerOptions) *serving {
	t.Helper()
	socket := filepath.Join(shortDir(t), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sv := &serving{socket: socket, client: control.Client{Socket: socket, Timeout: 2 * time.Minute}, done: make(chan struct{}), cancel: cancel}
	srv := control.NewServer(d, opt)
	go func() {
		defer close(sv.done)
		sv.reason, sv.err = srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel(nil)
		<-sv.done
	})
	return sv
}

// wait waits for Serve to return (bounded generously: a loaded machine).
func (sv *serving) wait(t *testing.T) control.StopReason {
	t.Helper()
	select {
	case <-sv.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Serve did not return")
	}
	if sv.err != nil {
		t.Fatal(sv.err)
	}
	return sv.reason
}

// raw sends one line as it is and reads the answer.
func raw(t *testing.T, socket string, line []byte) control.Response {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	// A server that refuses a request early stops reading: write on the
	// side, and read its answer meanwhile.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(line)
	}()
	b, err := bufio.NewReader(c).ReadBytes('\n')
	c.Close()
	<-wrote
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var r control.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return r
}

// waitUntil polls cond with backoff until it holds, failing after two
// minutes (a loaded machine).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	wait := 5 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(wait) // polling a condition, with backoff
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func params(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestControlServer(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sv := serve(t, shotDriver{f.d, f.s}, control.ServerOptions{Info: control.Info{Name: "t", Trace: "/x/trace.jsonl"}})
	call := func(req control.Request) (*control.Response, error) {
		t.Helper()
		return sv.client.Call(ctx, req)
	}

	t.Run("info", func(t *testing.T) {
		r, err := call(control.Request{Op: control.OpInfo})
		if err != nil || r.Info == nil || r.Info.Name != "t" || r.Info.PID != os.Getpid() || r.Info.Version != control.Version || r.Info.Trace != "/x/trace.jsonl" || r.Info.HeapAlloc == 0 {
			t.Fatalf("info: %+v %v", r, err)
		}
	})

	t.Run("actions and states", func(t *testing.T) {
		r, err := call(control.Request{Op: control.OpDo, Action: "navigate", Params: params(map[string]any{"url": f.srv.URL1 + "/agent-form.html"})})
		if err != nil || r.Verdict != events.VerdictNavigated || !strings.Contains(r.URL, "agent-form.html") {
			t.Fatalf("navigate: %+v %v", r, err)
		}
		// No state yet: an index is stale, and the error says so in the
		// Driver's own type.
		_, err = call(control.Request{Op: control.OpDo, Action: "click", Params: params(map[string]any{"index": 3})})
		var stale *agent.StaleIndexError
		if !errors.As(err, &stale) || !errors.Is(err, agent.ErrStaleIndex) || stale.Index != 3 || !strings.Contains(err.Error(), "take a new state") {
			t.Fatalf("click before a state: %v", err)
		}
		r, err = call(control.Request{Op: control.OpState, Detail: true, Screenshot: true})
		if err != nil || !strings.Contains(r.Text, "Full name") || r.State == nil || len(r.State.Elements) == 0 || r.State.Screenshot != nil || !bytes.HasPrefix(r.Screenshot, []byte("\x89PNG")) {
			t.Fatalf("state: %v", err)
		}
		noop := 0
		for i, el := range r.State.Elements {
			if el.Attributes["id"] == "noop" {
				noop = i
			}
		}
		// A screenshot keeps the indexes.
		if r, err := call(control.Request{Op: control.OpScreenshot}); err != nil || !bytes.HasPrefix(r.Screenshot, []byte("\x89PNG")) {
			t.Fatalf("screenshot: %v", err)
		}
		r, err = call(control.Request{Op: control.OpDo, Action: "click", Params: params(map[string]any{"index": noop})})
		if err != nil || !r.OK || !strings.HasPrefix(r.Text, "Clicked element") {
			t.Fatalf("click: %+v %v", r, err)
		}
		r, err = call(control.Request{Op: control.OpText})
		if err != nil || !strings.Contains(r.Text, "Sign up") || r.Total == 0 {
			t.Fatalf("text: %+v %v", r, err)
		}
		r, err = call(control.Request{Op: control.OpTabs})
		if err != nil || len(r.Tabs) != 1 || !r.Tabs[0].Focused || len(r.Tabs[0].ID) != 4 || r.Focused != r.Tabs[0].ID {
			t.Fatalf("tabs: %+v %v", r, err)
		}
		r, err = call(control.Request{Op: control.OpActions})
		if err != nil || len(r.Actions) == 0 {
			t.Fatalf("actions: %v", err)
		}
		for _, a := range r.Actions {
			if a.Name == "evaluate" || a.Name == "done" {
				t.Fatalf("offered %s", a.Name)
			}
		}
	})

	t.Run("caller errors", func(t *testing.T) {
		if _, err := call(control.Request{Op: control.OpDo, Action: "evaluate", Params: params(map[string]any{"code": "1"})}); !errors.Is(err, agent.ErrUnknownAction) {
			t.Fatalf("excluded action: %v", err)
		}
		if _, err := call(control.Request{Op: control.OpDo, Action: "click", Params: params(map[string]any{"index": "x"})}); !errors.Is(err, agent.ErrBadParams) {
			t.Fatalf("bad params: %v", err)
		}
		var re *control.RemoteError
		if _, err := call(control.Request{Op: "fly"}); !errors.Is(err, control.ErrBadRequest) || !errors.As(err, &re) || re.Code != control.CodeBadRequest {
			t.Fatalf("unknown op: %v", err)
		}
	})

	t.Run("version mismatch", func(t *testing.T) {
		r := raw(t, sv.socket, []byte(`{"v":99,"op":"state"}`+"\n"))
		if r.OK || r.Code != control.CodeVersion || r.V != control.Version || !strings.Contains(r.Error, "protocol version 1") || !strings.Contains(r.Error, "99") {
			t.Fatalf("answer %+v", r)
		}
		if !errors.Is(r.Err(), control.ErrVersion) {
			t.Fatalf("Err: %v", r.Err())
		}
		// info (and close) are understood across versions.
		if r := raw(t, sv.socket, []byte(`{"v":99,"op":"info"}`+"\n")); !r.OK || r.Info == nil {
			t.Fatalf("info of another version: %+v", r)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		big := append([]byte(`{"v":1,"op":"do","action":"input","params":{"index":1,"text":"`), bytes.Repeat([]byte("x"), 2*control.MaxRequestBytes)...)
		big = append(big, []byte(`"}}`+"\n")...)
		r := raw(t, sv.socket, big)
		if r.OK || r.Code != control.CodeBadRequest || !strings.Contains(r.Error, "larger than") {
			t.Fatalf("oversize: %+v", r)
		}
		if r := raw(t, sv.socket, []byte("hello\n")); r.Code != control.CodeBadRequest || !strings.Contains(r.Error, "not a JSON request") {
			t.Fatalf("not JSON: %+v", r)
		}
		// The client refuses to send an oversize request at all.
		_, err := call(control.Request{Op: control.OpDo, Action: "input", Params: params(map[string]any{"index": 1, "text": strings.Repeat("x", control.MaxRequestBytes)})})
		if !errors.Is(err, control.ErrBadRequest) || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("client-side oversize: %v", err)
		}
		// The server still serves.
		if _, err := call(control.Request{Op: control.OpInfo}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a client that gives up cancels its request", func(t *testing.T) {
		quick := control.Client{Socket: sv.socket, Timeout: time.Second}
		_, err := quick.Call(ctx, control.Request{Op: control.OpDo, Action: "wait", Params: params(map[string]any{"seconds": 30})})
		if !errors.Is(err, control.ErrTimeout) {
			t.Fatalf("a 30 s wait with a 1 s timeout: %v", err)
		}
		// The wait was cancelled: the Driver's next call does not queue
		// behind it for 30 s.
		start := time.Now()
		if _, err := call(control.Request{Op: control.OpTabs}); err != nil {
			t.Fatal(err)
		}
		if r, err := call(control.Request{Op: control.OpDo, Action: "scroll", Params: params(map[string]any{"down": true})}); err != nil {
			t.Fatalf("after the cancelled wait: %+v %v", r, err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("the next action waited %s: the cancelled wait went on", d)
		}
	})

	t.Run("nothing on the socket", func(t *testing.T) {
		c := control.Client{Socket: filepath.Join(shortDir(t), "none.sock"), Timeout: time.Minute}
		if _, err := c.Call(ctx, control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
			t.Fatalf("no socket: %v", err)
		}
		// A socket file nobody listens on (a dead server's).
		dead := filepath.Join(shortDir(t), "dead.sock")
		ln, err := net.Listen("unix", dead)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		c.Socket = dead
		if _, err := c.Call(ctx, control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
			t.Fatalf("refused: %v", err)
		}
	})
}

func TestControlServerStops(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	t.Run("close", func(t *testing.T) {
		var stopped atomic.Int32
		sv := serve(t, f.d, control.ServerOptions{Info: control.Info{Trace: "/x/trace.jsonl"}, OnStop: func(_ context.Context, r control.StopReason) error {
			if r == control.StopClose {
				stopped.Add(1)
			}
			return nil
		}})
		r, err := sv.client.Call(ctx, control.Request{Op: control.OpClose})
		// OnStop ran before the answer, which says where the trace is.
		if err != nil || !r.OK || r.Info == nil || r.Info.Trace != "/x/trace.jsonl" || stopped.Load() != 1 {
			t.Fatalf("close: %+v %v (OnStop ran %d times)", r, err, stopped.Load())
		}
		if got := sv.wait(t); got != control.StopClose {
			t.Fatalf("reason %v", got)
		}
		if _, err := os.Stat(sv.socket); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the socket is still there: %v", err)
		}
	})

	t.Run("close reports OnStop's error", func(t *testing.T) {
		sv := serve(t, f.d, control.ServerOptions{OnStop: func(context.Context, control.StopReason) error {
			return errors.New("trace: disk full")
		}})
		r, err := sv.client.Call(ctx, control.Request{Op: control.OpClose})
		if err == nil || r == nil || r.OK || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("close: %+v %v", r, err)
		}
		sv.wait(t)
	})

	t.Run("idle", func(t *testing.T) {
		var reason atomic.Int32
		sv := serve(t, f.d, control.ServerOptions{IdleTimeout: 300 * time.Millisecond, OnStop: func(_ context.Context, r control.StopReason) error {
			reason.Store(int32(r))
			return nil
		}})
		// info does not keep it alive.
		if _, err := sv.client.Call(ctx, control.Request{Op: control.OpInfo}); err != nil {
			t.Fatal(err)
		}
		if got := sv.wait(t); got != control.StopIdle || control.StopReason(reason.Load()) != control.StopIdle {
			t.Fatalf("reason %v, OnStop saw %v", got, control.StopReason(reason.Load()))
		}
		if _, err := sv.client.Call(ctx, control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
			t.Fatalf("after the idle stop: %v", err)
		}
	})

	t.Run("a request in progress is not idle", func(t *testing.T) {
		sv := serve(t, f.d, control.ServerOptions{IdleTimeout: 500 * time.Millisecond})
		// A 2 s wait outlasts the idle timeout; the session must not stop
		// under it.
		r, err := sv.client.Call(ctx, control.Request{Op: control.OpDo, Action: "wait", Params: params(map[string]any{"seconds": 2})})
		if err != nil || !r.OK {
			t.Fatalf("wait: %+v %v", r, err)
		}
		sv.wait(t)
	})

	// A request in progress when the session stops is answered, and says
	// why: the browser gone, or the session stopping.
	for _, c := range []struct {
		name  string
		cause error
		want  error
	}{
		{"browser gone", fmt.Errorf("%w: the browser process (pid 1) exited", events.ErrBrowserGone), events.ErrBrowserGone},
		{"stopping", nil, agent.ErrClosed},
	} {
		t.Run("a request in progress, "+c.name, func(t *testing.T) {
			sv := serve(t, f.d, control.ServerOptions{})
			type result struct {
				r   *control.Response
				err error
			}
			got := make(chan result, 1)
			go func() {
				r, err := sv.client.Call(ctx, control.Request{Op: control.OpDo, Action: "wait", Params: params(map[string]any{"seconds": 30})})
				got <- result{r, err}
			}()
			// In progress: a server with a request running reports no idle
			// time.
			waitUntil(t, "the wait to run", func() bool {
				r, err := sv.client.Call(ctx, control.Request{Op: control.OpInfo})
				return err == nil && r.Info.Idle == 0
			})
			sv.cancel(c.cause)
			var res result
			select {
			case res = <-got:
			case <-time.After(time.Minute):
				t.Fatal("the request in progress got no answer")
			}
			var re *control.RemoteError
			if !errors.Is(res.err, c.want) || !errors.As(res.err, &re) || res.r == nil || res.r.OK {
				t.Fatalf("answer %+v, %v", res.r, res.err)
			}
			if c.cause != nil && !strings.Contains(res.err.Error(), "pid 1") {
				t.Fatalf("the cause is not said: %v", res.err)
			}
			sv.wait(t)
		})
	}

	t.Run("context", func(t *testing.T) {
		sv := serve(t, f.d, control.ServerOptions{})
		if _, err := sv.client.Call(ctx, control.Request{Op: control.OpInfo}); err != nil {
			t.Fatal(err)
		}
		sv.cancel(nil)
		if got := sv.wait(t); got != control.StopContext {
			t.Fatalf("reason %v", got)
		}
	})
}
