package cdp_test

import (
	"strings"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestDebugLogRedactsTypedText: with debug logging on, what is typed
// (Input.insertText) and the arguments of a page function
// (Runtime.callFunctionOn, which sets a date field's value) never reach the
// log; the function itself does.
func TestDebugLogRedactsTypedText(t *testing.T) {
	env := testbrowser.Start(t)
	core, logs := observer.New(zapcore.DebugLevel)
	ctx := ctxT(t)
	conn, err := cdp.Dial(ctx, env.Browser.WebSocketURL(), cdp.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tab, err := conn.CreateTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseTarget(ctx, tab)
	ps, err := conn.AttachToTarget(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "correct-horse-42"
	if _, err := cdpproto.Call(ctx, ps, input.InsertText, input.InsertTextParams{Text: secret}); err != nil {
		t.Fatal(err)
	}
	obj, err := cdpproto.Call(ctx, ps, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cdpproto.Call(ctx, ps, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: "function setIt(v) { this.title = v; }",
		ObjectID:            obj.Result.ObjectID,
		Arguments:           []*runtime.CallArgument{{Value: []byte(`"` + secret + `"`)}},
	}); err != nil {
		t.Fatal(err)
	}
	sawFunc := false
	for _, e := range logs.FilterMessage("send").All() {
		msg := e.ContextMap()["msg"]
		s, _ := msg.(string)
		if strings.Contains(s, secret) {
			t.Fatalf("the typed text is in the debug log: %s", s)
		}
		sawFunc = sawFunc || strings.Contains(s, "function setIt")
	}
	if !sawFunc {
		t.Fatal("the function call is not in the debug log at all (the test proves nothing)")
	}
}
