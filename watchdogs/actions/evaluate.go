package actions

import (
	"context"
	"errors"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// evaluate handles Evaluate: the code runs in the focused tab's main
// world, with a user gesture (so that it may open what a click may), its
// promise awaited; the value comes back as JSON text, capped. The action
// frame reads evidence around it like any action, so a script that
// navigates, opens a tab or a dialog gets that verdict.
func (a *Watchdog) evaluate(ctx context.Context, s *session.Session, ev events.EvaluateEvent) (events.EvaluateResult, error) {
	var res events.EvaluateResult
	if ev.Code == "" {
		return res, errors.New("actions: evaluate needs JavaScript code")
	}
	if err := s.Readable(""); err != nil {
		return res, fmt.Errorf("actions: evaluate: %w", err)
	}
	ps, err := s.PageSession("")
	if err != nil {
		return res, err
	}
	limit := ev.MaxResultBytes
	if limit <= 0 {
		limit = events.DefaultEvaluateResultBytes
	}
	run := a.begin(ctx, s, ps)
	var v string
	v, err = evaluateValue(ctx, ps, ev.Code)
	if err == nil {
		if len(v) > limit {
			v, res.Truncated = v[:limit], true
		}
		res.Value = v
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// evaluateValue runs code and returns its value as JSON text: "undefined"
// for undefined, the description of a value JSON cannot hold (a function,
// a DOM node), and a page exception as an error naming it.
func evaluateValue(ctx context.Context, cs *cdp.Session, code string) (string, error) {
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    code,
		ReturnByValue: pagejs.Ptr(true),
		AwaitPromise:  pagejs.Ptr(true),
		UserGesture:   pagejs.Ptr(true),
	})
	if err != nil {
		return "", fmt.Errorf("actions: evaluate: %w", err)
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("actions: evaluate: JavaScript error: %w", &pagejs.ScriptError{Text: pagejs.ExceptionText(res.ExceptionDetails)})
	}
	switch r := res.Result; {
	case r == nil:
		return "null", nil
	case len(r.Value) > 0:
		return string(r.Value), nil
	case r.Type == runtime.RemoteObjectTypeUndefined:
		return "undefined", nil
	case r.Description != "":
		return r.Description, nil
	}
	return "null", nil
}
