package cdp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/gorilla/websocket"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

const wait = testbrowser.Timeout

func ptr[T any](v T) *T { return &v }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func TestGetVersion(t *testing.T) {
	env := testbrowser.Start(t)
	res, err := cdpproto.Call(ctxT(t), env.Conn.Browser(), browser.GetVersion, cdpproto.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Product, "Chrome/") || res.ProtocolVersion == "" {
		t.Fatalf("unexpected version %+v", res)
	}
	if env.Conn.Browser().ID() != "" || env.Conn.Browser().TargetID() != "" {
		t.Fatal("browser session must have empty ids")
	}
}

func TestNavigateAndLoadEvent(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c := env.Conn
	tid, sess := openBlank(t, ctx, env, c)
	if sess.TargetID() != tid || sess.ID() == "" {
		t.Fatalf("session ids: %q %q", sess.ID(), sess.TargetID())
	}
	if got, ok := c.Session(sess.ID()); !ok || got != sess {
		t.Fatal("Conn.Session does not know the attached session")
	}
	if _, err := cdpproto.Call(ctx, sess, page.Enable, page.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	events := cdpproto.Events(ctx, sess, page.LoadEventFired) // subscribed now
	nav, err := cdpproto.Call(ctx, sess, page.Navigate, page.NavigateParams{URL: env.Server.URL1 + "/form.html"})
	if err != nil || nav.ErrorText != "" {
		t.Fatalf("navigate: %v %q", err, nav.ErrorText)
	}
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Timestamp <= 0 {
			t.Fatal("load event without timestamp")
		}
		break
	}
	var title string
	if err := testbrowser.Eval(sess, "document.title", &title); err != nil || title != "Form fixture" {
		t.Fatalf("title %q, %v", title, err)
	}
	if env.Server.Hits(testbrowser.Site1, "/form.html") == 0 {
		t.Fatal("server did not see the request")
	}
}

func TestProtocolError(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	err := env.Conn.Browser().Call(ctx, "Nope.doesNotExist", nil, nil)
	var pe *cdp.ProtocolError
	if !errors.As(err, &pe) || pe.Method != "Nope.doesNotExist" || pe.Code != -32601 {
		t.Fatalf("want *ProtocolError -32601, got %#v", err)
	}
	pg := env.NewPage(t, "")
	_, err = cdpproto.Call(ctx, pg.Session, dom.DescribeNode, dom.DescribeNodeParams{NodeID: 999999})
	if !errors.As(err, &pe) || pe.Method != dom.CommandDescribeNode || pe.Message == "" {
		t.Fatalf("want *ProtocolError, got %#v", err)
	}
	// The session still works.
	var n int
	if err := testbrowser.Eval(pg.Session, "40+2", &n); err != nil || n != 42 {
		t.Fatalf("eval after error: %d %v", n, err)
	}
	// Params that cannot be encoded fail before anything is sent.
	err = pg.Session.Call(ctx, "Runtime.evaluate", map[string]any{"f": func() {}}, nil)
	if err == nil || !strings.Contains(err.Error(), "encoding params") {
		t.Fatalf("want encoding error, got %v", err)
	}
}

func TestLargeMessages(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "")
	// 5 MB reply.
	var s string
	if err := testbrowser.Eval(pg.Session, "'x'.repeat(5*1024*1024)", &s); err != nil {
		t.Fatal(err)
	}
	if len(s) != 5<<20 {
		t.Fatalf("got %d bytes", len(s))
	}
	// A 3 MB parameter (larger than the default write buffer: fragmented, which
	// Chromium accepts) and the same through a Conn whose buffer holds it.
	big := strings.Repeat("y", 3<<20)
	var n int
	if err := testbrowser.Eval(pg.Session, "'"+big+"'.length", &n); err != nil || n != 3<<20 {
		t.Fatalf("big param: %d %v", n, err)
	}
}

func TestCallHonoursContext(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cdpproto.Call(ctx, pg.Session, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "new Promise(() => {})", AwaitPromise: ptr(true),
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if time.Since(start) > wait {
		t.Fatal("call did not return on ctx end")
	}
	// Already-cancelled ctx: nothing is sent.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := pg.Session.Call(cctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "1"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	var n int
	if err := testbrowser.Eval(pg.Session, "1+1", &n); err != nil || n != 2 {
		t.Fatalf("connection unusable after cancel: %d %v", n, err)
	}
	if env.Conn.Err() != nil {
		t.Fatal(env.Conn.Err())
	}
}

func TestCrossSiteIframeAutoAttach(t *testing.T) {
	env := testbrowser.Start(t)
	// NewPage returns only after Page.loadEventFired, which needs the OOPIF resumed.
	pg := env.NewPage(t, "/iframes.html")
	oopifs := pg.OOPIFs()
	var frames []*cdp.Session
	for _, s := range oopifs {
		if s.TargetInfo() != nil && s.TargetInfo().Type == "iframe" {
			frames = append(frames, s)
		}
	}
	if len(frames) != 1 {
		t.Fatalf("want 1 OOPIF session (the cross-site one), got %d of %d", len(frames), len(oopifs))
	}
	child := frames[0]
	if child.Parent() != pg.Session {
		t.Fatal("OOPIF parent is not the page session")
	}
	var where string
	if err := testbrowser.Eval(child, "location.origin + ' ' + document.readyState", &where); err != nil {
		t.Fatal(err)
	}
	if where != env.Server.URL2+" complete" {
		t.Fatalf("OOPIF evaluated %q, want origin %s", where, env.Server.URL2)
	}
	// The same-site frame lives in the page's process.
	var same string
	pg.Eval(t, "document.getElementById('same-site').contentWindow.location.origin", &same)
	if same != env.Server.URL1 {
		t.Fatalf("same-site frame origin %q", same)
	}
}

func TestNestedOOPIFRecursiveAutoAttach(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "/nested-iframes.html")
	var frames []*cdp.Session
	for _, s := range pg.OOPIFs() {
		if s.TargetInfo().Type == "iframe" {
			frames = append(frames, s)
		}
	}
	if len(frames) != 2 {
		t.Fatalf("want 2 nested OOPIF sessions, got %d", len(frames))
	}
	var inner *cdp.Session
	for _, f := range frames {
		if f.Parent() != pg.Session {
			inner = f
		}
	}
	if inner == nil || inner.Parent().Parent() != pg.Session {
		t.Fatal("inner OOPIF must be a child of the outer OOPIF session")
	}
	var where string
	if err := testbrowser.Eval(inner, "document.getElementById('where').textContent", &where); err != nil {
		t.Fatal(err)
	}
	if where != env.Server.URL1+" ?which=inner" {
		t.Fatalf("inner frame says %q", where)
	}
}

func TestAttachHookRunsBeforeResume(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c := env.Conn
	_, sess := openBlank(t, ctx, env, c)
	if _, err := cdpproto.Call(ctx, sess, page.Enable, page.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	attached := sess.SubscribeEvents(target.AttachedToTarget.Method)
	defer attached.Cancel()
	var mu sync.Mutex
	hooked := 0
	err := sess.AutoAttach(ctx, func(ctx context.Context, child *cdp.Session) error {
		// A script added while paused runs before the frame's own scripts.
		_, err := cdpproto.Call(ctx, child, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.__hooked = 'yes'"})
		if err == nil {
			_, err = cdpproto.Call(ctx, child, page.Enable, page.EnableParams{})
		}
		mu.Lock()
		hooked++
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	loaded := cdpproto.Events(ctx, sess, page.LoadEventFired)
	if _, err := cdpproto.Call(ctx, sess, page.Navigate, page.NavigateParams{URL: env.Server.URL1 + "/iframes.html"}); err != nil {
		t.Fatal(err)
	}
	for _, err := range loaded {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	var ev cdp.Event
	select {
	case ev = <-attached.C():
	case <-ctx.Done():
		t.Fatal("no attachedToTarget event")
	}
	var at target.EventAttachedToTarget
	if err := ev.Decode(&at); err != nil || !at.WaitingForDebugger {
		t.Fatalf("attach event %+v %v", at, err)
	}
	child, ok := c.Session(at.SessionID)
	if !ok {
		t.Fatal("child session unknown to the Conn")
	}
	var v string
	if err := testbrowser.Eval(child, "window.__hooked", &v); err != nil || v != "yes" {
		t.Fatalf("hook script not applied before resume: %q %v", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hooked != 1 {
		t.Fatalf("hook ran %d times", hooked)
	}
}

func TestDetachAndCloseTarget(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c := env.Conn
	tid, sess := openBlank(t, ctx, env, c)
	sub := sess.SubscribeEvents()
	if err := c.DetachFromTarget(ctx, sess); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-ctx.Done():
		t.Fatal("session not ended by detach")
	}
	if err := sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "1"}, nil); !errors.Is(err, cdp.ErrTargetDetached) {
		t.Fatalf("want ErrTargetDetached, got %v", err)
	}
	for range sub.C() {
	}
	if !errors.Is(sub.Err(), cdp.ErrTargetDetached) {
		t.Fatalf("subscription err %v", sub.Err())
	}
	if _, ok := c.Session(sess.ID()); ok {
		t.Fatal("detached session still registered")
	}
	// A subscription on a detached session is closed at once.
	ch, cancel := sess.Subscribe("Page.loadEventFired")
	if _, ok := <-ch; ok {
		t.Fatal("want closed channel")
	}
	cancel()
	cancel() // idempotent
	if err := c.DetachFromTarget(ctx, c.Browser()); err == nil {
		t.Fatal("detaching the browser session must fail")
	}

	// Closing the target detaches a new session and fails a pending call.
	sess2, err := c.AttachToTarget(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- sess2.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "new Promise(() => {})", AwaitPromise: ptr(true)}, nil)
	}()
	// Make sure the call is in flight before closing.
	var n int
	if err := testbrowser.Eval(sess2, "1", &n); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseTarget(ctx, tid); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, cdp.ErrTargetDetached) {
		t.Fatalf("pending call: want ErrTargetDetached, got %v", err)
	}
}

func TestTargetCrash(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c := env.Conn
	if err := c.SetDiscoverTargets(ctx, true); err != nil {
		t.Fatal(err)
	}
	defer c.SetDiscoverTargets(context.Background(), false)
	crashes := c.SubscribeEvents(target.TargetCrashed.Method)
	defer crashes.Cancel()
	pg := env.NewPage(t, "/form.html")
	inspectorCrash := pg.Session.SubscribeEvents("Inspector.targetCrashed")
	defer inspectorCrash.Cancel()

	pending := make(chan error, 1)
	go func() {
		pending <- pg.Session.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "new Promise(() => {})", AwaitPromise: ptr(true)}, nil)
	}()
	var n int
	pg.Eval(t, "1", &n) // the hanging call was sent before this one

	crashErr := make(chan error, 1)
	go func() { crashErr <- pg.Session.Call(ctx, page.CommandCrash, nil, nil) }() // never replies
	if err := <-pending; !errors.Is(err, cdp.ErrTargetCrashed) {
		t.Fatalf("pending call: want ErrTargetCrashed, got %v", err)
	}
	if err := <-crashErr; !errors.Is(err, cdp.ErrTargetCrashed) {
		t.Fatalf("Page.crash call: want ErrTargetCrashed, got %v", err)
	}
	if err := pg.Session.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "1"}, nil); !errors.Is(err, cdp.ErrTargetCrashed) {
		t.Fatalf("later call: want ErrTargetCrashed, got %v", err)
	}
	if !errors.Is(pg.Session.Err(), cdp.ErrTargetCrashed) {
		t.Fatalf("session err %v", pg.Session.Err())
	}
	select {
	case ev := <-inspectorCrash.C():
		if ev.Session != pg.Session {
			t.Fatal("Inspector.targetCrashed on the wrong session")
		}
	case <-ctx.Done():
		t.Fatal("no Inspector.targetCrashed")
	}
	select {
	case ev := <-crashes.C():
		var tc target.EventTargetCrashed
		if err := ev.Decode(&tc); err != nil || tc.TargetID != pg.TargetID {
			t.Fatalf("Target.targetCrashed %+v %v", tc, err)
		}
	case <-ctx.Done():
		t.Fatal("no Target.targetCrashed")
	}
	// The rest of the browser is unaffected.
	if _, err := cdpproto.Call(ctx, c.Browser(), browser.GetVersion, cdpproto.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func TestSubscriptionOverflow(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	// A second connection to the shared browser, with a tiny buffer.
	c, err := cdp.Dial(ctx, env.Browser.WebSocketURL(), cdp.WithEventBuffer(4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sess := openBlank(t, ctx, env, c)
	if _, err := cdpproto.Call(ctx, sess, runtime.Enable, cdpproto.Empty{}); err != nil {
		t.Fatal(err)
	}
	slow := sess.SubscribeEvents("Runtime.consoleAPICalled") // never read until closed
	raw, cancelRaw := sess.Subscribe("Runtime.consoleAPICalled")
	defer cancelRaw()
	all := c.SubscribeEvents() // connection-wide, also slow

	// A fast consumer with the same buffer, drained concurrently, is
	// unaffected by the slow ones as long as it keeps up with one event at a
	// time.
	fast := sess.SubscribeEvents("Runtime.consoleAPICalled")
	if err := sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "console.log('one')"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fast.C():
	case <-ctx.Done():
		t.Fatal("fast consumer got nothing")
	}
	fast.Cancel()

	if err := sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "for (let i = 0; i < 50; i++) console.log(i)"}, nil); err != nil {
		t.Fatal(err)
	}
	got := 0
	for range slow.C() { // yields the buffered events, then closes
		got++
	}
	if got != 4 {
		t.Fatalf("want the 4 buffered events before close, got %d", got)
	}
	var oe *cdp.OverflowError
	if !errors.Is(slow.Err(), cdp.ErrSubscriptionOverflow) || !errors.As(slow.Err(), &oe) || oe.Buffer != 4 {
		t.Fatalf("want overflow error, got %v", slow.Err())
	}
	rawGot := 0
	for range raw {
		rawGot++
	}
	if rawGot != 4 {
		t.Fatalf("raw subscription: want 4 then closed, got %d", rawGot)
	}
	for range all.C() {
	}
	if !errors.Is(all.Err(), cdp.ErrSubscriptionOverflow) {
		t.Fatalf("connection-wide subscription: %v", all.Err())
	}
	// The connection and new subscriptions keep working.
	again := sess.SubscribeEvents("Runtime.consoleAPICalled")
	defer again.Cancel()
	if err := sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "console.log('after')"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-again.C():
		var e runtime.EventConsoleAPICalled
		if !ok || ev.Decode(&e) != nil || len(e.Args) != 1 || string(e.Args[0].Value) != `"after"` {
			t.Fatalf("after overflow: %v %+v", ok, e)
		}
	case <-ctx.Done():
		t.Fatal("no event after overflow")
	}
	if again.Err() != nil {
		t.Fatal(again.Err())
	}
	again.Cancel()
	if again.Err() != nil {
		t.Fatal("Err after Cancel must be nil")
	}
}

func TestCloseConn(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c, err := cdp.Dial(ctx, env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	tid, err := c.CreateTarget(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Conn.CloseTarget(ctx, tid)
	sess, err := c.AttachToTarget(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	sub := c.SubscribeEvents()
	pending := make(chan error, 1)
	go func() {
		pending <- sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "new Promise(() => {})", AwaitPromise: ptr(true)}, nil)
	}()
	var n int
	if err := testbrowser.Eval(sess, "1", &n); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := <-pending; !errors.Is(err, cdp.ErrClosed) {
		t.Fatalf("pending: want ErrClosed, got %v", err)
	}
	if err := sess.Call(ctx, "Runtime.evaluate", nil, nil); !errors.Is(err, cdp.ErrClosed) {
		t.Fatalf("later: want ErrClosed, got %v", err)
	}
	for range sub.C() {
	}
	if !errors.Is(sub.Err(), cdp.ErrClosed) || !errors.Is(c.Err(), cdp.ErrClosed) {
		t.Fatalf("sub %v conn %v", sub.Err(), c.Err())
	}
	late := c.SubscribeEvents("x")
	if _, ok := <-late.C(); ok {
		t.Fatal("subscription on closed conn must be closed")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
}

func TestKillBrowserFailsCalls(t *testing.T) {
	testbrowser.Start(t) // fails here when Chromium is missing
	ctx := ctxT(t)
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	c, err := cdp.Dial(ctx, b.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tid, err := c.CreateTarget(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.AttachToTarget(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	pending := make(chan error, 1)
	go func() {
		pending <- sess.Call(ctx, "Runtime.evaluate", runtime.EvaluateParams{Expression: "new Promise(() => {})", AwaitPromise: ptr(true)}, nil)
	}()
	var n int
	if err := testbrowser.Eval(sess, "1", &n); err != nil {
		t.Fatal(err)
	}
	if err := testbrowser.KillProcess(b.PID()); err != nil {
		t.Fatal(err)
	}
	err = <-pending
	if !errors.Is(err, cdp.ErrConnectionLost) {
		t.Fatalf("pending: want ErrConnectionLost, got %v", err)
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseAbnormalClosure {
		t.Fatalf("want the websocket 1006 CloseError in the chain, got %v", err)
	}
	<-c.Done()
	if err := c.Browser().Call(ctx, "Browser.getVersion", nil, nil); !errors.Is(err, cdp.ErrConnectionLost) {
		t.Fatalf("later: want ErrConnectionLost, got %v", err)
	}
	if !errors.Is(c.Err(), cdp.ErrConnectionLost) {
		t.Fatal(c.Err())
	}
	if werr := b.Wait(); werr == nil || !strings.Contains(werr.Error(), "killed") {
		t.Fatalf("Wait: %v", werr)
	}
}

// openBlank creates a blank page target and attaches c to it; the test's
// cleanup closes the target through the shared connection (c may be closed
// by then).
func openBlank(t *testing.T, ctx context.Context, env *testbrowser.Env, c *cdp.Conn) (target.ID, *cdp.Session) {
	t.Helper()
	tid, err := c.CreateTarget(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Conn.CloseTarget(context.Background(), tid) })
	sess, err := c.AttachToTarget(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	return tid, sess
}
