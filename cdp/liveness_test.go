package cdp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/gorilla/websocket"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// wsProxy is a websocket proxy (gorilla server) that relays whole messages
// between a Conn and the real browser, and lets a test rewrite, inject or
// drop them.
type wsProxy struct {
	URL      string // ws://127.0.0.1:PORT (any path)
	upstream string
	ln       net.Listener
	srv      *http.Server
	wg       sync.WaitGroup

	// toBrowser sees every client message; it returns messages to send to
	// the client before the message is relayed. toClient sees every browser
	// message and returns what to relay (nil drops it). Both run on the
	// relay goroutines; set them before dialing.
	toBrowser func(msg []byte) (inject [][]byte)
	toClient  func(msg []byte) []byte

	frozen atomic.Bool // relay nothing, either way; the TCP connections stay up

	mu    sync.Mutex
	conns []*websocket.Conn
}

func newWSProxy(t *testing.T, upstream string) *wsProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &wsProxy{URL: "ws://" + ln.Addr().String() + "/", upstream: upstream, ln: ln}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); _ = p.srv.Serve(ln) }()
	t.Cleanup(p.close)
	return p
}

func (p *wsProxy) track(c *websocket.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *wsProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	client, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	p.track(client)
	browser, _, err := websocket.DefaultDialer.Dial(p.upstream, nil)
	if err != nil {
		client.Close()
		return
	}
	p.track(browser)
	var clientMu sync.Mutex // gorilla allows one writer at a time
	toClient := func(msg []byte) error {
		clientMu.Lock()
		defer clientMu.Unlock()
		return client.WriteMessage(websocket.TextMessage, msg)
	}
	done := make(chan struct{})
	go func() { // client -> browser
		defer close(done)
		defer browser.Close()
		for {
			_, msg, err := client.ReadMessage()
			if err != nil {
				return
			}
			if p.frozen.Load() {
				continue
			}
			if p.toBrowser != nil {
				for _, m := range p.toBrowser(msg) {
					if toClient(m) != nil {
						return
					}
				}
			}
			if browser.WriteMessage(websocket.TextMessage, msg) != nil {
				return
			}
		}
	}()
	for { // browser -> client
		_, msg, err := browser.ReadMessage()
		if err != nil {
			break
		}
		if p.frozen.Load() {
			continue
		}
		if p.toClient != nil {
			if msg = p.toClient(msg); msg == nil {
				continue
			}
		}
		if toClient(msg) != nil {
			break
		}
	}
	client.Close()
	<-done
}

func (p *wsProxy) close() {
	_ = p.srv.Close() // listener; upgraded connections are ours
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// msgID returns the id and method of a CDP message (0, "" if none).
func msgID(msg []byte) (int64, string) {
	var m struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.ID, m.Method
}

func TestUndecodableReplyFailsItsCall(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	const marker = "corrupt-this-reply"
	p := newWSProxy(t, env.Browser.WebSocketURL())
	var corruptID atomic.Int64
	p.toBrowser = func(msg []byte) [][]byte {
		if bytes.Contains(msg, []byte(marker)) {
			id, _ := msgID(msg)
			corruptID.Store(id)
		}
		return nil
	}
	p.toClient = func(msg []byte) []byte {
		if id, _ := msgID(msg); id != 0 && id == corruptID.Load() {
			return msg[:len(msg)/2] // cut in the middle of the result
		}
		return msg
	}
	c, err := cdp.Dial(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sess := openBlank(t, ctx, env, c)

	start := time.Now()
	var res runtime.EvaluateResult
	err = sess.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "'" + marker + "'.repeat(100)"}, &res)
	elapsed := time.Since(start)
	var pe *cdp.ProtocolError
	if !errors.As(err, &pe) || pe.Code != cdp.CodeUndecodable || pe.Method != runtime.CommandEvaluate || pe.Err == nil || pe.Data == "" {
		t.Fatalf("want *ProtocolError %d for Runtime.evaluate with the decoding error, got %#v", cdp.CodeUndecodable, err)
	}
	if corruptID.Load() == 0 {
		t.Fatal("the proxy never saw the marker")
	}
	// The caller's ctx allows a minute; the reply came back at once.
	if elapsed > 5*time.Second {
		t.Fatalf("the call failed only after %v", elapsed)
	}
	t.Logf("undecodable reply failed its call after %v: %v", elapsed, err)

	// Nothing else is affected.
	var n int
	if err := testbrowser.Eval(sess, "40+2", &n); err != nil || n != 42 {
		t.Fatalf("eval after the corrupt reply: %d %v", n, err)
	}
	if err := c.Browser().Call(ctx, "Browser.getVersion", nil, nil); err != nil {
		t.Fatal(err)
	}
	if c.Err() != nil {
		t.Fatalf("connection failed: %v", c.Err())
	}
}

func TestUndecodableEventFailsConnection(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	const marker = "inject-a-corrupt-event"
	p := newWSProxy(t, env.Browser.WebSocketURL())
	p.toBrowser = func(msg []byte) [][]byte {
		if bytes.Contains(msg, []byte(marker)) {
			// An event (no id) cut short: nothing names a call.
			return [][]byte{[]byte(`{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":"str`)}
		}
		return nil
	}
	c, err := cdp.Dial(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sess := openBlank(t, ctx, env, c)
	sub := c.SubscribeEvents()
	defer sub.Cancel()
	pending := make(chan error, 1)
	go func() {
		pending <- sess.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{
			Expression: "new Promise(() => {})", AwaitPromise: ptr(true)}, nil)
	}()
	var n int
	if err := testbrowser.Eval(sess, "1", &n); err != nil { // the hanging call is in flight
		t.Fatal(err)
	}

	start := time.Now()
	err = sess.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "'" + marker + "'"}, nil)
	elapsed := time.Since(start)
	if !errors.Is(err, cdp.ErrConnectionLost) || !errors.Is(err, cdp.ErrCorruptMessage) {
		t.Fatalf("want ErrConnectionLost and ErrCorruptMessage, got %v", err)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("the call failed only after %v", elapsed)
	}
	t.Logf("undecodable event failed the connection after %v: %v", elapsed, err)
	if err := <-pending; !errors.Is(err, cdp.ErrCorruptMessage) {
		t.Fatalf("pending call: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
	for range sub.C() {
	}
	if !errors.Is(sub.Err(), cdp.ErrCorruptMessage) || !errors.Is(c.Err(), cdp.ErrConnectionLost) {
		t.Fatalf("subscription %v, conn %v", sub.Err(), c.Err())
	}
	if err := sess.Call(ctx, "Runtime.evaluate", nil, nil); !errors.Is(err, cdp.ErrCorruptMessage) {
		t.Fatalf("later call: %v", err)
	}
}

func TestStalledConnectionFailsByItself(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	p := newWSProxy(t, env.Browser.WebSocketURL())
	var probes atomic.Int64
	p.toBrowser = func(msg []byte) [][]byte {
		if _, m := msgID(msg); m == "Browser.getVersion" {
			probes.Add(1)
		}
		return nil
	}
	// The stall timeout leaves room for a loaded machine's pauses in the
	// probes' answers.
	const probe, stall = 100 * time.Millisecond, 4 * time.Second
	c, err := cdp.Connect(ctx, p.URL, cdp.WithKeepalive(probe, stall)) // Connect passes options on
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Idle but healthy: the probes' answers keep the connection up well past
	// the stall timeout.
	idle := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Since(idle) < stall+stall/2 || probes.Load() < 5 {
		select {
		case <-tick.C:
		case <-c.Done():
			t.Fatalf("idle connection failed: %v", c.Err())
		case <-ctx.Done():
			t.Fatalf("only %d probes in %v", probes.Load(), time.Since(idle))
		}
	}
	t.Logf("idle for %v: %d probes, connection up", time.Since(idle), probes.Load())

	// TCP alive, nothing relayed: every call and subscription fails once
	// the connection has been silent for the stall timeout.
	sub := c.SubscribeEvents()
	defer sub.Cancel()
	p.frozen.Store(true)
	frozen := time.Now()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- c.Browser().Call(ctx, "Browser.getVersion", nil, nil) }()
	}
	for range 2 {
		err := <-errs
		var se *cdp.StallError
		if !errors.Is(err, cdp.ErrConnectionLost) || !errors.Is(err, cdp.ErrStalled) || !errors.As(err, &se) {
			t.Fatalf("want ErrConnectionLost, ErrStalled and *StallError, got %v", err)
		}
		if se.Silence < stall || se.Timeout != stall {
			t.Fatalf("stall error %+v", se)
		}
	}
	detected := time.Since(frozen)
	// Not before the timeout (the last byte may have come up to a probe's
	// round trip before the freeze), and not long after it.
	if detected < stall/2 || detected > stall+10*time.Second {
		t.Fatalf("stall detected %v after the freeze (stall timeout %v)", detected, stall)
	}
	t.Logf("stall detected %v after the freeze (stall timeout %v)", detected, stall)
	for range sub.C() {
	}
	if !errors.Is(sub.Err(), cdp.ErrStalled) || !errors.Is(c.Err(), cdp.ErrStalled) {
		t.Fatalf("subscription %v, conn %v", sub.Err(), c.Err())
	}
}

// throttle relays the browser's bytes at a bounded rate (chunk bytes per
// tick), so that a large message takes longer than a stall timeout while
// bytes keep flowing.
func throttle(chunk int, every time.Duration) testbrowser.Relay {
	return func(dst io.Writer, src io.Reader) {
		buf := make([]byte, chunk)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
			<-tick.C // pacing, not a wait for state
		}
	}
}

func TestSlowLargeMessageIsNotAStall(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	u, err := url.Parse(env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	// At most 16 KiB per 25 ms (655 kB/s): a 6 MiB reply takes 9.6 s or
	// more, longer than the stall timeout, while bytes keep arriving. The
	// timeout leaves room for a loaded machine's pauses before the first
	// byte (building the 6 MiB string took over 5 s once, at load 25).
	proxy := testbrowser.NewProxy(t, u.Host, testbrowser.WithDownstream(throttle(16<<10, 25*time.Millisecond)))
	const stall = 8 * time.Second
	c, err := cdp.Dial(ctx, proxy.Through(u.String()), cdp.WithKeepalive(300*time.Millisecond, stall))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sess := openBlank(t, ctx, env, c)
	start := time.Now()
	var res runtime.EvaluateResult
	if err := sess.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{
		Expression: "'x'.repeat(6*1024*1024)", ReturnByValue: ptr(true)}, &res); err != nil {
		t.Fatalf("large reply: %v", err)
	}
	elapsed := time.Since(start)
	if len(res.Result.Value) != 6<<20+2 {
		t.Fatalf("got %d bytes", len(res.Result.Value))
	}
	if elapsed < stall {
		t.Fatalf("the reply took only %v: the throttle did not hold it past the stall timeout", elapsed)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	t.Logf("6 MiB reply took %v with a %v stall timeout; connection up", elapsed, stall)
}

// TestSpinningPageIsNotAStall: a page that never yields leaves its
// session's calls pending and the connection quiet, but the probe is
// answered by the browser process, so the connection stays up.
func TestSpinningPageIsNotAStall(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	const stall = 4 * time.Second
	c, err := cdp.Dial(ctx, env.Browser.WebSocketURL(), cdp.WithKeepalive(100*time.Millisecond, stall))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sess := openBlank(t, ctx, env, c)
	spin := sess.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "for (;;) {}"})
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Since(start) < stall+time.Second {
		select {
		case <-tick.C:
		case <-c.Done():
			t.Fatalf("connection failed while a page spun: %v", c.Err())
		}
	}
	// Release the page: the spinning evaluation ends ("Execution was
	// terminated", an error reply on Chromium 156).
	if err := sess.Call(ctx, runtime.CommandTerminateExecution, nil, nil); err != nil {
		t.Fatal(err)
	}
	var res runtime.EvaluateResult
	err = spin.Wait(ctx, &res)
	var pe *cdp.ProtocolError
	if !errors.As(err, &pe) && res.ExceptionDetails == nil {
		t.Fatalf("spinning evaluation: %+v %v", res, err)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
}
