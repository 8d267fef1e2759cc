package cdp_test

import (
	"errors"
	"testing"

	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestSendThenWait(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	c, err := cdp.Dial(ctx, env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	pg := env.NewPage(t, "")
	sess, err := c.AttachToTarget(ctx, pg.TargetID)
	if err != nil {
		t.Fatal(err)
	}
	// Sent in order, awaited out of order: each reply finds its own waiter.
	var replies []*cdp.Reply
	for _, expr := range []string{"window.__n = 1", "window.__n = window.__n * 10 + 2", "window.__n * 10 + 3"} {
		replies = append(replies, sess.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: ptr(true)}))
	}
	for i := len(replies) - 1; i >= 0; i-- {
		var res runtime.EvaluateResult
		if err := replies[i].Wait(ctx, &res); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if i == 2 && string(res.Result.Value) != "123" {
			t.Fatalf("commands ran out of order: got %s, want 123", res.Result.Value)
		}
	}
	c.Close()
	if err := sess.Send(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "1"}).Wait(ctx, nil); !errors.Is(err, cdp.ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
}
