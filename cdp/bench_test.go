package cdp_test

import (
	"context"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// BenchmarkCallRoundTrip measures one Runtime.evaluate("1") on a page
// session: encode, websocket write, Chromium, read, route, decode.
func BenchmarkCallRoundTrip(b *testing.B) {
	env := testbrowser.Start(b)
	pg := env.NewPage(b, "")
	ctx := context.Background()
	params := runtime.EvaluateParams{Expression: "1", ReturnByValue: ptr(true)}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cdpproto.Call(ctx, pg.Session, runtime.Evaluate, params)
		if err != nil {
			b.Fatal(err)
		}
		if string(res.Result.Value) != "1" {
			b.Fatalf("got %s", res.Result.Value)
		}
	}
}

// BenchmarkCallRoundTripParallel is the same with concurrent callers on one
// session, showing the multiplexing cost.
func BenchmarkCallRoundTripParallel(b *testing.B) {
	env := testbrowser.Start(b)
	pg := env.NewPage(b, "")
	ctx := context.Background()
	params := runtime.EvaluateParams{Expression: "1", ReturnByValue: ptr(true)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cdpproto.Call(ctx, pg.Session, runtime.Evaluate, params); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
