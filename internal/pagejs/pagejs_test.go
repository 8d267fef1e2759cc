package pagejs

import (
	"context"
	"errors"
	"strings"
	"testing"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

func TestEvaluateCallOnAndErrors(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "/form.html")
	ctx, cancel := context.WithTimeout(context.Background(), testbrowser.Timeout)
	defer cancel()

	var n int
	if err := Evaluate(ctx, pg.Session, "Promise.resolve(6 * 7)", &n); err != nil || n != 42 {
		t.Fatalf("Evaluate = %d, %v; want 42", n, err)
	}
	err := Evaluate(ctx, pg.Session, "(() => { throw new Error('boom here') })()", nil)
	var se *ScriptError
	if !errors.As(err, &se) || !errors.Is(err, ErrScript) || !strings.Contains(se.Text, "boom here") {
		t.Fatalf("exception = %v; want a *ScriptError naming it", err)
	}
	if err := Evaluate(ctx, pg.Session, "undefined", &n); err != nil || n != 42 {
		t.Fatalf("undefined result changed out or failed: %d, %v", n, err)
	}
	var s string
	if err := Evaluate(ctx, pg.Session, "123", &s); err == nil {
		t.Fatal("decoding a number into a string did not fail")
	}

	doc, err := cdpproto.Call(ctx, pg.Session, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
	if err != nil || doc.Result == nil || doc.Result.ObjectID == "" {
		t.Fatalf("document object: %v", err)
	}
	var got string
	if err := CallOn(ctx, pg.Session, doc.Result.ObjectID, `function(a, b){ return this.nodeName + a + b.x; }`, &got, "-", map[string]int{"x": 1}); err != nil || got != "#document-1" {
		t.Fatalf("CallOn = %q, %v", got, err)
	}
	body, err := CallForObject(ctx, pg.Session, doc.Result.ObjectID, `function(){ return this.body; }`, "pagejs-test")
	if err != nil || body == "" {
		t.Fatalf("CallForObject = %q, %v", body, err)
	}
	none, err := CallForObject(ctx, pg.Session, doc.Result.ObjectID, `function(){ return null; }`, "pagejs-test")
	if err != nil || none != "" {
		t.Fatalf("CallForObject(null) = %q, %v", none, err)
	}
	if _, err := CallForObject(ctx, pg.Session, doc.Result.ObjectID, `function(){ throw new TypeError('nope'); }`, "pagejs-test"); !errors.Is(err, ErrScript) {
		t.Fatalf("CallForObject exception = %v", err)
	}
	if _, err := Args(make(chan int)); err == nil {
		t.Fatal("an unencodable argument was accepted")
	}
	if ExceptionText(nil) != "" {
		t.Fatal("ExceptionText(nil) not empty")
	}
}
