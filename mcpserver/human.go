package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/liveview"
)

// ViaElicitation is the HumanResponse.Via of an answer given through the
// MCP client.
const ViaElicitation = "elicitation"

// AskHuman asks the MCP client's user to take over the browser, through
// MCP elicitation during the tool call in ctx (run_task): a form whose
// message says why a person is needed and where to act (liveURL, the live
// view, when not empty), with an optional note for the agent. Accept means
// done (the note, if any, goes to the model); decline or cancel means the
// person will not do it (Declined).
//
// It fails with an error wrapping agent.ErrNoHuman when no client can be
// asked: no MCP call in ctx, a client without form elicitation, or a client
// on protocol 2026-07-28 or later, whose questions come back as a call's
// result and so cannot be answered inside run_task. The wait is bounded by
// ctx (agent.Settings.HumanTimeout).
func AskHuman(ctx context.Context, req agent.HumanRequest, liveURL string) (agent.HumanResponse, error) {
	cl := callFrom(ctx)
	switch {
	case cl == nil:
		return agent.HumanResponse{}, fmt.Errorf("%w: no MCP client to ask", agent.ErrNoHuman)
	case !cl.canAsk():
		return agent.HumanResponse{}, fmt.Errorf("%w: the MCP client cannot ask its user (it does not support form elicitation)", agent.ErrNoHuman)
	case cl.version >= newProtocol:
		return agent.HumanResponse{}, fmt.Errorf("%w: this MCP client (protocol %s) cannot be asked during run_task", agent.ErrNoHuman, cl.version)
	}
	res, err := cl.session.Elicit(ctx, humanQuestion(req, liveURL, cl.scrub))
	if err != nil {
		if ctx.Err() != nil {
			return agent.HumanResponse{}, fmt.Errorf("mcpserver: asking for a person: %w", ctx.Err())
		}
		return agent.HumanResponse{}, fmt.Errorf("%w: asking the MCP client failed: %v", agent.ErrNoHuman, err)
	}
	switch res.Action {
	case "accept":
		note, _ := res.Content["note"].(string)
		return agent.HumanResponse{Via: ViaElicitation, Note: strings.TrimSpace(note)}, nil
	default: // decline, cancel
		return agent.HumanResponse{Via: ViaElicitation, Declined: true}, nil
	}
}

// canHandOff reports whether AskHuman can ask this call's client.
func (c *call) canHandOff() bool {
	return c.canAsk() && c.version < newProtocol
}

// HumanHandler returns an agent.HumanHandler that calls AskHuman with the
// live view's URL (liveURL may be nil: no live view; the person then works
// in a headful window the client knows of).
func HumanHandler(liveURL func() string) agent.HumanHandler {
	return agent.HumanHandlerFunc(func(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
		u := ""
		if liveURL != nil {
			u = liveURL()
		}
		return AskHuman(ctx, req, u)
	})
}

// humanQuestion is the hand-off form. Trusted lines come first (who asks,
// for which site, where to act); the reason, in the model's words which a
// page may have inspired, comes last, quoted and cleaned of control
// characters.
func humanQuestion(req agent.HumanRequest, liveURL string, scrub func(string) string) *mcp.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "browseragent needs a person to take over the browser. Asked by %s", liveview.Asker(req.By))
	if o := liveview.Origin(req.URL); o != "" {
		fmt.Fprintf(&b, " for %s", o)
	}
	b.WriteString(".")
	if liveURL != "" {
		fmt.Fprintf(&b, " Open %s on the machine that runs browseragent (it listens on loopback only) to see the page and act on it.", liveURL)
	}
	b.WriteString(" Accept when done (a note for the agent is optional; never a password); decline if you will not do it or the request looks wrong. Never enter a password or payment details for a site you did not expect.")
	fmt.Fprintf(&b, " The reason given: “%s”", liveview.CleanText(req.Reason, 300))
	return &mcp.ElicitParams{
		Message: scrub(b.String()),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"note": map[string]any{"type": "string", "title": "Note for the agent", "description": "What the agent should know, e.g. \"logged in as ada\" (optional)"},
			},
		},
	}
}
