// Package pagejs runs JavaScript in a page over CDP (Runtime.evaluate and
// Runtime.callFunctionOn) and turns the outcome into Go values and errors:
// a page exception is a *ScriptError naming it, a JSON value is decoded into
// the caller's variable. The session and every watchdog use it, so a script
// failure reads the same wherever it happens.
package pagejs

import (
	"context"
	"errors"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
)

// ErrScript is matched by a *ScriptError.
var ErrScript = errors.New("page script failed")

// ScriptError is an exception the page's JavaScript threw.
type ScriptError struct {
	Text string // the exception's description (message and stack), or CDP's text
}

func (e *ScriptError) Error() string { return "page script failed: " + e.Text }

// Is matches ErrScript.
func (e *ScriptError) Is(target error) bool { return target == ErrScript }

// Evaluate runs expr in the session's main world, awaiting a returned
// promise, and decodes its JSON value into out (nil to discard).
func Evaluate(ctx context.Context, s *cdp.Session, expr string, out any) error {
	res, err := cdpproto.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: Ptr(true),
		AwaitPromise:  Ptr(true),
	})
	if err != nil {
		return err
	}
	return Decode(res.Result, res.ExceptionDetails, out)
}

// CallOn calls the function declaration decl with this bound to obj, args
// passed by value (JSON), awaiting a returned promise, and decodes its JSON
// value into out (nil to discard).
func CallOn(ctx context.Context, s *cdp.Session, obj runtime.RemoteObjectID, decl string, out any, args ...any) error {
	cargs, err := Args(args...)
	if err != nil {
		return err
	}
	res, err := cdpproto.Call(ctx, s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl,
		ObjectID:            obj,
		Arguments:           cargs,
		ReturnByValue:       Ptr(true),
		AwaitPromise:        Ptr(true),
	})
	if err != nil {
		return err
	}
	return Decode(res.Result, res.ExceptionDetails, out)
}

// CallForObject calls decl on obj like CallOn but returns the result as a
// remote object (in objectGroup), for functions that return an element. A
// null or undefined result is ("", nil).
func CallForObject(ctx context.Context, s *cdp.Session, obj runtime.RemoteObjectID, decl, objectGroup string, args ...any) (runtime.RemoteObjectID, error) {
	cargs, err := Args(args...)
	if err != nil {
		return "", err
	}
	res, err := cdpproto.Call(ctx, s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl,
		ObjectID:            obj,
		Arguments:           cargs,
		ObjectGroup:         objectGroup,
	})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", &ScriptError{Text: ExceptionText(res.ExceptionDetails)}
	}
	if res.Result == nil {
		return "", nil
	}
	return res.Result.ObjectID, nil
}

// Args encodes values as by-value call arguments.
func Args(args ...any) ([]*runtime.CallArgument, error) {
	if len(args) == 0 {
		return nil, nil
	}
	out := make([]*runtime.CallArgument, 0, len(args))
	for _, a := range args {
		v, err := jsonv2.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("pagejs: encoding an argument: %w", err)
		}
		out = append(out, &runtime.CallArgument{Value: v})
	}
	return out, nil
}

// Decode turns a script's outcome into a *ScriptError, or decodes its JSON
// value into out (nil to discard; an undefined result leaves out as it is).
func Decode(v *runtime.RemoteObject, exc *runtime.ExceptionDetails, out any) error {
	if exc != nil {
		return &ScriptError{Text: ExceptionText(exc)}
	}
	if out != nil && v != nil && len(v.Value) > 0 {
		if err := jsonv2.Unmarshal(v.Value, out); err != nil {
			return fmt.Errorf("pagejs: decoding the script's value: %w", err)
		}
	}
	return nil
}

// ExceptionText is the most useful text of an exception: its description
// (message and stack) when the page gave one, else CDP's summary.
func ExceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return ""
	}
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

// Ptr returns a pointer to v, for CDP's optional parameters.
func Ptr[T any](v T) *T { return &v }
