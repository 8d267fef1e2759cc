// Package watchdogs holds the runtime's watchdogs, one file each. A watchdog
// registers handlers on a session's bus in Attach; policies (may this URL
// load, accept this dialog) are small interfaces with a default, so a
// deployment swaps the policy without rewriting the watchdog.
package watchdogs

import (
	"context"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/session"
)

func ptr[T any](v T) *T { return &v }

// register registers h for kind k under the watchdog's name.
func register[E, R any](b *bus.Bus, name string, k bus.Kind[E, R], h func(context.Context, E) (R, error), opts ...bus.HandleOption) error {
	_, err := bus.Handle(b, k, name, h, opts...)
	return err
}

// withSession binds a handler that needs the session to it, giving the
// func(ctx, E) (R, error) shape the bus registers.
func withSession[E, R any](s *session.Session, f func(context.Context, *session.Session, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) { return f(ctx, s, ev) }
}

// evaluate runs expr in the session's main world, awaiting a promise, and
// decodes its JSON value into out (nil to discard). A page exception is an
// error naming it.
func evaluate(ctx context.Context, s *cdp.Session, expr string, out any) error {
	res, err := cdpproto.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: ptr(true),
		AwaitPromise:  ptr(true),
	})
	if err != nil {
		return err
	}
	return decodeResult(res.Result, res.ExceptionDetails, out)
}

// callOn calls the JavaScript function decl with this bound to the object
// and decodes its JSON value into out (nil to discard).
func callOn(ctx context.Context, s *cdp.Session, obj runtime.RemoteObjectID, decl string, out any, args ...any) error {
	var cargs []*runtime.CallArgument
	for _, a := range args {
		v, err := jsonv2.Marshal(a)
		if err != nil {
			return err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: v})
	}
	res, err := cdpproto.Call(ctx, s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl,
		ObjectID:            obj,
		Arguments:           cargs,
		ReturnByValue:       ptr(true),
		AwaitPromise:        ptr(true),
	})
	if err != nil {
		return err
	}
	return decodeResult(res.Result, res.ExceptionDetails, out)
}

// decodeResult turns a script's outcome into an error naming the page
// exception, or decodes its JSON value into out (nil to discard).
func decodeResult(v *runtime.RemoteObject, exc *runtime.ExceptionDetails, out any) error {
	if exc != nil {
		return fmt.Errorf("page script failed: %s", exceptionText(exc))
	}
	if out != nil && v != nil && len(v.Value) > 0 {
		return jsonv2.Unmarshal(v.Value, out)
	}
	return nil
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}
