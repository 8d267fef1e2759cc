package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// The catalog has no event for running page JavaScript or reading page text,
// so the agent defines its own two kinds and registers their handlers on the
// session bus when a Run starts (HandlerName "agent"). Going through the bus
// keeps them in the trace and under a timeout like every other action.

// EvaluateEvent asks to run JavaScript in the focused tab's main frame
// (the model's "evaluate" action). The expression may return a promise.
type EvaluateEvent struct {
	Code string
}

// Summary implements bus.Summarizer (code length only: the trace stays small).
func (e EvaluateEvent) Summary() string {
	return fmt.Sprintf("evaluate %d bytes of JavaScript", len(e.Code))
}

// EvaluateResult is the expression's value as JSON text, capped.
type EvaluateResult struct {
	Value     string
	Truncated bool
	Outcome   events.ActionOutcome
}

// Summary implements bus.Summarizer.
func (r EvaluateResult) Summary() string {
	return fmt.Sprintf("%d bytes, %s", len(r.Value), r.Outcome.Summary())
}

// PageTextEvent asks for the focused tab's visible text (document.body.innerText),
// read fresh (never a cached tree, so a click followed by extract reads the
// page after the click).
type PageTextEvent struct{}

// PageTextResult is the page text.
type PageTextResult struct {
	URL, Title, Text string
}

// Summary implements bus.Summarizer.
func (r PageTextResult) Summary() string { return fmt.Sprintf("%s: %d chars", r.URL, len(r.Text)) }

// Event kinds the agent registers on the session bus.
var (
	Evaluate = bus.Kind[EvaluateEvent, EvaluateResult]{Name: "AgentEvaluate", Timeout: 30 * time.Second}
	PageText = bus.Kind[PageTextEvent, PageTextResult]{Name: "AgentPageText", Timeout: 30 * time.Second}
)

// HandlerName names the agent's handlers on the session bus.
const HandlerName = "agent"

// registerPageHandlers installs the Evaluate and PageText handlers on the
// session's current bus (once per bus).
func registerPageHandlers(s *session.Session) error {
	b := s.Bus()
	if b == nil {
		return session.ErrNotStarted
	}
	_, err := bus.Handle(b, Evaluate, HandlerName, func(ctx context.Context, ev EvaluateEvent) (EvaluateResult, error) {
		before := s.Evidence(ctx)
		v, err := evalJS(ctx, s, ev.Code)
		res := EvaluateResult{}
		if err == nil {
			if len(v) > DefaultEvaluateResultCap {
				v, res.Truncated = v[:DefaultEvaluateResultCap], true
			}
			res.Value = v
		}
		res.Outcome = s.Outcome(ctx, before, err)
		return res, err
	})
	if err != nil && !errors.Is(err, bus.ErrDuplicateHandler) {
		return err
	}
	_, err = bus.Handle(b, PageText, HandlerName, func(ctx context.Context, _ PageTextEvent) (PageTextResult, error) {
		v, err := evalJS(ctx, s, `JSON.stringify({url: location.href, title: document.title, text: document.body ? document.body.innerText : ''})`)
		if err != nil {
			return PageTextResult{}, err
		}
		var str string
		if err := json.Unmarshal([]byte(v), &str); err != nil {
			return PageTextResult{}, fmt.Errorf("agent: page text: %w", err)
		}
		var r PageTextResult
		if err := json.Unmarshal([]byte(str), &r); err != nil {
			return PageTextResult{}, fmt.Errorf("agent: page text: %w", err)
		}
		return r, nil
	})
	if err != nil && !errors.Is(err, bus.ErrDuplicateHandler) {
		return err
	}
	return nil
}

// evalJS evaluates code in the focused tab and returns the value as JSON.
func evalJS(ctx context.Context, s *session.Session, code string) (string, error) {
	cs, err := s.PageSession("")
	if err != nil {
		return "", err
	}
	t, f := true, true
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    code,
		ReturnByValue: &t,
		AwaitPromise:  &f,
		UserGesture:   &t,
	})
	if err != nil {
		return "", fmt.Errorf("agent: evaluate: %w", err)
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if res.ExceptionDetails.Exception != nil && res.ExceptionDetails.Exception.Description != "" {
			msg = res.ExceptionDetails.Exception.Description
		}
		return "", fmt.Errorf("agent: evaluate: JavaScript error: %s", msg)
	}
	if res.Result == nil {
		return "null", nil
	}
	if len(res.Result.Value) == 0 {
		if res.Result.Type == "undefined" {
			return "undefined", nil
		}
		if res.Result.Description != "" {
			return res.Result.Description, nil
		}
		return "null", nil
	}
	return string(res.Result.Value), nil
}
