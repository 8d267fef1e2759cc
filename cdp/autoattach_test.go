package cdp_test

import (
	"context"
	"errors"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// Browser-level auto-attach: new pages (including popups) arrive paused,
// get their setup from the hook, then run.
func TestBrowserLevelAutoAttach(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c, err := cdp.Dial(ctx, env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hooked := make(chan *cdp.Session, 16)
	err = c.Browser().AutoAttach(ctx, func(ctx context.Context, s *cdp.Session) error {
		if s.TargetInfo().Type != "page" {
			return nil
		}
		if _, err := cdpproto.Call(ctx, s, page.Enable, page.EnableParams{}); err != nil {
			return err
		}
		_, err := cdpproto.Call(ctx, s, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.__setup = location.pathname"})
		select {
		case hooked <- s:
		case <-ctx.Done():
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	attached := c.SubscribeEvents(target.AttachedToTarget.Method)
	defer attached.Cancel()
	// Created at about:blank: Chromium starts a createTarget URL's navigation
	// before the pause, so a hook cannot reliably prepare that first document.
	tid, err := c.CreateTarget(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseTarget(ctx, tid)
	var sess *cdp.Session
	for sess == nil {
		select {
		case ev := <-attached.C():
			var at target.EventAttachedToTarget
			if err := ev.Decode(&at); err != nil {
				t.Fatal(err)
			}
			if at.TargetInfo.TargetID == tid {
				sess, _ = c.Session(at.SessionID)
				if !at.WaitingForDebugger || sess == nil || sess.Parent() != c.Browser() {
					t.Fatalf("attach %+v session %v", at, sess)
				}
			}
		case <-ctx.Done():
			t.Fatal("new target not auto-attached")
		}
	}
	// The page was resumed (it answers), and what the hook set up applies.
	for done := false; !done; {
		select {
		case s := <-hooked:
			done = s == sess
		case <-ctx.Done():
			t.Fatal("hook did not run for the new page")
		}
	}
	if _, err := cdpproto.Call(ctx, sess, page.Navigate, page.NavigateParams{URL: env.Server.URL1 + "/links.html"}); err != nil {
		t.Fatal(err)
	}
	var setup string
	for setup == "" {
		if err := testbrowser.Eval(sess, "location.pathname === '/links.html' && document.readyState === 'complete' ? (window.__setup || 'missing') : ''", &setup); err != nil {
			t.Fatal(err)
		}
	}
	if setup != "/links.html" {
		var href string
		testbrowser.Eval(sess, "location.href", &href)
		t.Fatalf("hook script result %q at %s", setup, href)
	}
}

// Closing a page ends its OOPIF sessions too.
func TestCloseTargetEndsOOPIFSessions(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	pg := env.NewPage(t, "/nested-iframes.html")
	children := pg.OOPIFs()
	if len(children) < 2 {
		t.Fatalf("want nested OOPIFs, got %d", len(children))
	}
	if err := env.Conn.CloseTarget(ctx, pg.TargetID); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(children, pg.Session) {
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatalf("session %s (%s) not ended", s.ID(), s.TargetInfo().Type)
		}
		if err := s.Call(ctx, "Runtime.evaluate", nil, nil); !errors.Is(err, cdp.ErrTargetDetached) {
			t.Fatalf("call on %s: %v", s.ID(), err)
		}
		if _, ok := env.Conn.Session(s.ID()); ok {
			t.Fatal("ended session still registered")
		}
	}
}

func TestLaunchHonoursContext(t *testing.T) {
	testbrowser.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}
