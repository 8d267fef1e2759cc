package agent

import (
	"context"
	"errors"
	"time"
)

// HumanHandler hands the browser to a person and waits for them. The
// agent calls Handoff when the model asks for a person (the request_human
// action) or a hand-off policy asks for one (a CAPTCHA frame, a login
// wall), with the run paused: no model call and no action runs until
// Handoff returns. ctx carries Settings.HumanTimeout; a handler returns
// when the person says they are done, or with ctx's error when it ends.
// The agent then observes the page afresh.
//
// Implementations tell the person where to look (a live view URL, a
// headful window) and must never record what the person types. The CLI's
// default prints a live-view URL and waits for Enter; the MCP server asks
// the client by elicitation.
type HumanHandler interface {
	Handoff(ctx context.Context, req HumanRequest) (HumanResponse, error)
}

// HumanHandlerFunc adapts a function to HumanHandler.
type HumanHandlerFunc func(ctx context.Context, req HumanRequest) (HumanResponse, error)

// Handoff calls f.
func (f HumanHandlerFunc) Handoff(ctx context.Context, req HumanRequest) (HumanResponse, error) {
	return f(ctx, req)
}

// HumanRequest is what the person is asked to do.
type HumanRequest struct {
	// Reason says why a person is needed, in the model's or the policy's
	// words ("solve the CAPTCHA", "enter the 2FA code sent to your phone").
	Reason string
	// By is who asked: "model" for the request_human action, or
	// "policy:<name>" for a hand-off policy.
	By string
	// Step is the step the hand-off happens in.
	Step int
	// URL, Title and TabID are the focused page when the hand-off began.
	URL, Title, TabID string
	// Deadline is when the agent stops waiting (zero: no deadline).
	Deadline time.Time
}

// HumanResponse is the person's answer.
type HumanResponse struct {
	// Note is what the person chose to tell the model ("logged in as ada");
	// it is shown to the model and recorded. Never the person's keystrokes.
	Note string
	// Declined reports that the person will not do it: the model is told so.
	Declined bool
	// Via names how the person worked ("live view", "headful window",
	// "elicitation"), for the trace.
	Via string
}

// ErrNoHuman is returned (to the model, as the action's error) when a
// person is asked for but no HumanHandler is configured.
var ErrNoHuman = errors.New("agent: no person is available to hand the browser to")

// ErrHumanTimeout is wrapped when the person did not finish within
// Settings.HumanTimeout.
var ErrHumanTimeout = errors.New("agent: the person did not finish in time")
