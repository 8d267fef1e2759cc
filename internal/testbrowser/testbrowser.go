// Package testbrowser gives tests a real Chromium, a connected cdp.Conn and
// the fixture web site (two loopback sites, so cross-site iframes are real
// OOPIFs). A package shares one browser through Main:
//
//	func TestMain(m *testing.M) { testbrowser.Main(m) }
//
//	func TestX(t *testing.T) {
//		env := testbrowser.Start(t)
//		page := env.NewPage(t, "/form.html")
//		...
//	}
//
// A missing Chromium fails the test (never skips) with install instructions.
package testbrowser

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/cdp"
)

// Timeout bounds each helper's wait (navigation, load, evaluation). It is
// generous because tests share a small machine.
const Timeout = 60 * time.Second

// Env is a running browser, a connection to it and the fixture server.
type Env struct {
	Browser *cdp.Browser
	Conn    *cdp.Conn
	Server  *Server
}

var shared struct {
	mu      sync.Mutex
	enabled bool // Main is in charge
	env     *Env
	err     error
}

// Main runs the package's tests with one shared Env (started on first use
// by Start), tears it down, then checks for leaked goroutines with goleak,
// and exits. Call it from TestMain.
func Main(m *testing.M, opts ...goleak.Option) {
	shared.mu.Lock()
	shared.enabled = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	env := shared.env
	shared.env, shared.err = nil, nil
	shared.mu.Unlock()
	if env != nil {
		if err := env.close(); err != nil {
			fmt.Fprintln(os.Stderr, "testbrowser: teardown:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: errors on successful test run:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Start returns the package's shared Env (when TestMain uses Main) or a
// fresh Env that tb's cleanup closes. It fails tb (Fatal) when the browser or
// the server cannot start, for example when Chromium is missing.
func Start(tb testing.TB) *Env {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.enabled {
		env, err := NewEnv(context.Background())
		if err != nil {
			tb.Fatalf("testbrowser: %v", err)
		}
		tb.Cleanup(func() {
			if err := env.close(); err != nil {
				tb.Errorf("testbrowser: teardown: %v", err)
			}
		})
		return env
	}
	if shared.env == nil && shared.err == nil {
		shared.env, shared.err = NewEnv(context.Background())
	}
	if shared.err != nil {
		tb.Fatalf("testbrowser: %v", shared.err)
	}
	return shared.env
}

// NewEnv launches a headless browser, connects to it and starts the fixture
// server. The caller owns the result; most tests use Start instead.
func NewEnv(ctx context.Context) (*Env, error) {
	if _, err := cdp.FindChrome(); err != nil {
		return nil, fmt.Errorf("%w (browser tests need a real Chromium; run scripts/ensure-chromium.sh or apt-get install chromium)", err)
	}
	srv, err := NewServer()
	if err != nil {
		return nil, err
	}
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		srv.Close()
		return nil, err
	}
	conn, err := cdp.Dial(ctx, b.WebSocketURL())
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		b.Close(closeCtx)
		srv.Close()
		return nil, err
	}
	return &Env{Browser: b, Conn: conn, Server: srv}, nil
}

// Close tears down an Env made with NewEnv: connection, browser, server.
// Envs from Start are closed by Main or by the test's cleanup instead.
func (e *Env) Close() error { return e.close() }

func (e *Env) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	e.Conn.Close()
	errB := e.Browser.Close(ctx)
	errS := e.Server.Close()
	if errB != nil {
		return errB
	}
	return errS
}

// URL resolves p against Site1 unless it is already absolute.
func (e *Env) URL(p string) string {
	if strings.Contains(p, "://") || strings.HasPrefix(p, "about:") || strings.HasPrefix(p, "data:") {
		return p
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return e.Server.URL1 + p
}

// Page is a page target attached with a flat session, with auto-attach on:
// its OOPIFs get sessions with Page and Runtime enabled before they resume.
type Page struct {
	Env      *Env
	TargetID target.ID
	Session  *cdp.Session

	mu     sync.Mutex
	oopifs []*cdp.Session
}

// NewPage opens a new page target, attaches to it, enables Page and Runtime
// and auto-attach, navigates to p (a fixture path or an absolute URL; "" for
// about:blank) and waits for the load event. tb's cleanup closes the target.
func (e *Env) NewPage(tb testing.TB, p string) *Page {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	tid, err := e.Conn.CreateTarget(ctx, "about:blank")
	if err != nil {
		tb.Fatalf("testbrowser: create target: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if e.Conn.Err() == nil {
			_ = e.Conn.CloseTarget(ctx, tid)
		}
	})
	sess, err := e.Conn.AttachToTarget(ctx, tid)
	if err != nil {
		tb.Fatalf("testbrowser: attach: %v", err)
	}
	pg := &Page{Env: e, TargetID: tid, Session: sess}
	if err := enableDomains(ctx, sess); err != nil {
		tb.Fatalf("testbrowser: %v", err)
	}
	err = sess.AutoAttach(ctx, func(ctx context.Context, child *cdp.Session) error {
		pg.mu.Lock()
		pg.oopifs = append(pg.oopifs, child)
		pg.mu.Unlock()
		if info := child.TargetInfo(); info != nil && info.Type != "iframe" && info.Type != "page" {
			return nil
		}
		return enableDomains(ctx, child)
	})
	if err != nil {
		tb.Fatalf("testbrowser: auto-attach: %v", err)
	}
	if p != "" {
		pg.Navigate(tb, p)
	}
	return pg
}

func enableDomains(ctx context.Context, s *cdp.Session) error {
	if _, err := cdpproto.Call(ctx, s, page.Enable, page.EnableParams{}); err != nil {
		return fmt.Errorf("Page.enable: %w", err)
	}
	if _, err := cdpproto.Call(ctx, s, runtime.Enable, cdpproto.Empty{}); err != nil {
		return fmt.Errorf("Runtime.enable: %w", err)
	}
	return nil
}

// Navigate loads p (fixture path or absolute URL) and waits for the main
// frame's load event (which needs every OOPIF resumed).
func (pg *Page) Navigate(tb testing.TB, p string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	u := pg.Env.URL(p)
	loaded := pg.Session.SubscribeEvents(page.LoadEventFired.Method)
	defer loaded.Cancel()
	res, err := cdpproto.Call(ctx, pg.Session, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		tb.Fatalf("testbrowser: navigate %s: %v", u, err)
	}
	if res.ErrorText != "" {
		tb.Fatalf("testbrowser: navigate %s: %s", u, res.ErrorText)
	}
	if res.IsDownload {
		return // no load event for a download
	}
	select {
	case _, ok := <-loaded.C():
		if !ok {
			tb.Fatalf("testbrowser: waiting for load of %s: subscription ended: %v", u, loaded.Err())
		}
	case <-ctx.Done():
		tb.Fatalf("testbrowser: no load event for %s within %s", u, Timeout)
	}
}

// Eval evaluates expr in the page's main frame (awaiting promises) and
// returns the result by value, decoded as JSON into out (may be nil).
func (pg *Page) Eval(tb testing.TB, expr string, out any) {
	tb.Helper()
	if err := Eval(pg.Session, expr, out); err != nil {
		tb.Fatalf("testbrowser: %v", err)
	}
}

// Eval evaluates expr on the session (awaiting promises) and decodes the
// returned value into out (may be nil).
func Eval(s *cdp.Session, expr string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	res, err := cdpproto.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: ptr(true),
		AwaitPromise:  ptr(true),
	})
	if err != nil {
		return fmt.Errorf("evaluate %q: %w", truncate(expr), err)
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if ex := res.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
			msg = ex.Description
		}
		return fmt.Errorf("evaluate %q: exception: %s", truncate(expr), msg)
	}
	if out != nil && res.Result != nil && len(res.Result.Value) > 0 {
		if err := (cdp.Event{Params: res.Result.Value}).Decode(out); err != nil {
			return fmt.Errorf("evaluate %q: decoding %s: %w", truncate(expr), res.Result.Value, err)
		}
	}
	return nil
}

// OOPIFs returns the sessions auto-attached below this page so far (cross-site
// iframes, including nested ones, and workers), in attach order.
func (pg *Page) OOPIFs() []*cdp.Session {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return append([]*cdp.Session(nil), pg.oopifs...)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func ptr[T any](v T) *T { return &v }
