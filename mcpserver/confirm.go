package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browseragent/browseragent/agent"
)

// newProtocol is the first MCP version without server-to-client requests
// during a call: a question goes back as the call's result ("input
// required") and the client calls again with the answer.
const newProtocol = "2026-07-28"

// askID is the id of the approval question in a multi-round-trip result.
const askID = "approve"

// askTTL bounds how long after the question its answer counts.
const askTTL = 10 * time.Minute

// call is the tool call in progress, as the approver finds it in the
// context the Driver hands it.
type call struct {
	req     *mcp.CallToolRequest
	session *mcp.ServerSession
	version string
	caps    *mcp.ClientCapabilities
	// browser is the browser the call acts on, once found.
	browser *Browser
	// task: inside run_task, where a question cannot be answered by
	// calling again.
	task bool
	// answer and state came with a call made again after a question.
	answer *mcp.ElicitResult
	state  string

	mu sync.Mutex
	// ask is the question to send back as the result ("input required").
	ask      *mcp.ElicitParams
	askState string
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// newCall describes req for the approver.
func newCall(req *mcp.CallToolRequest) *call {
	c := &call{req: req, session: req.Session, version: req.ProtocolVersion(), caps: req.ClientCapabilities()}
	if req.Params != nil {
		c.state = req.Params.RequestState
		if r, ok := req.Params.InputResponses[askID].(*mcp.ElicitResult); ok {
			c.answer = r
		}
	}
	return c
}

// canAsk reports whether the client declared form elicitation.
func (c *call) canAsk() bool {
	e := c.caps
	if e == nil || e.Elicitation == nil {
		return false
	}
	return e.Elicitation.Form != nil || e.Elicitation.URL == nil
}

// pending returns the question the call must return instead of a result,
// if the approver asked one.
func (c *call) pending() (*mcp.ElicitParams, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ask, c.askState
}

// Confirm returns an Approver that has the MCP client's user confirm each
// action of the listed risk classes, through MCP elicitation: a yes/no form
// naming the action, its parameters and the page. next decides first (nil
// allows); only what next allows is asked about. The action runs only when
// the user accepts with yes; a refusal, a dismissed question or a client
// that cannot be asked (no elicitation capability, or no MCP call in ctx)
// deny it, with a reason that says which.
//
// Clients on protocol versions before 2026-07-28 are asked during the call
// (the Driver's step timeout bounds the wait). Clients on 2026-07-28 and
// later get the question as the call's result and answer by calling again
// (the SDK's client does it by itself); the answer counts for the same
// action, parameters and page only, within 10 minutes. In run_task, where
// a call cannot be made again, those clients cannot be asked.
func Confirm(risks []agent.Risk, next agent.Approver) agent.Approver {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return &confirmer{risks: slices.Clone(risks), next: next, key: key, now: time.Now}
}

type confirmer struct {
	risks []agent.Risk
	next  agent.Approver
	key   []byte
	now   func() time.Time
}

func (c *confirmer) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	if c.next != nil {
		d, err := c.next.Approve(ctx, req)
		if err != nil || !d.Allow {
			return d, err
		}
	}
	if !slices.Contains(c.risks, req.Risk) {
		return agent.Decision{Allow: true}, nil
	}
	cl := callFrom(ctx)
	if cl == nil {
		return agent.Decision{Reason: fmt.Sprintf("%s actions need the user's confirmation and there is no MCP client to ask", req.Risk)}, nil
	}
	if !cl.canAsk() {
		return agent.Decision{Reason: fmt.Sprintf("%s actions need the user's confirmation and this MCP client cannot ask (it does not support elicitation)", req.Risk)}, nil
	}
	params := question(req, cl.scrub)
	if cl.version < newProtocol {
		res, err := cl.session.Elicit(ctx, params)
		if err != nil {
			return agent.Decision{Reason: fmt.Sprintf("could not ask the user for confirmation: %v", err)}, nil
		}
		return verdict(res), nil
	}
	if cl.answer != nil && c.verify(cl.state, req) {
		return verdict(cl.answer), nil
	}
	if cl.task {
		return agent.Decision{Reason: fmt.Sprintf("%s actions need the user's confirmation, which this client (protocol %s) cannot give during run_task; do this step with the step tools", req.Risk, cl.version)}, nil
	}
	cl.mu.Lock()
	cl.ask, cl.askState = params, c.sign(req, c.now())
	cl.mu.Unlock()
	return agent.Decision{Reason: "waiting for the user's confirmation through the MCP client"}, nil
}

// verdict turns the user's answer into a decision.
func verdict(res *mcp.ElicitResult) agent.Decision {
	switch {
	case res == nil:
		return agent.Decision{Reason: "the user did not answer"}
	case res.Action == "accept" && res.Content["allow"] == true:
		return agent.Decision{Allow: true}
	case res.Action == "accept":
		return agent.Decision{Reason: "the user said no"}
	case res.Action == "decline":
		return agent.Decision{Reason: "the user declined"}
	default:
		return agent.Decision{Reason: "the user dismissed the question"}
	}
}

// toolNames are the tools' names for the Driver's actions, where they differ.
var toolNames = map[string]string{"input": "type", "select_dropdown": "select", "send_keys": "keys", "upload_file": "upload", "switch_tab": "tabs switch", "close_tab": "tabs close"}

// scrub hides the secrets in a text for the client, as the Driver does.
func (c *call) scrub(s string) string {
	if c.browser == nil {
		return s
	}
	return c.browser.Driver.Scrub(s)
}

// question is the yes/no form for req, its text scrubbed.
func question(req agent.ApprovalRequest, scrub func(string) string) *mcp.ElicitParams {
	name := req.Action
	if n, ok := toolNames[name]; ok {
		name = n
	}
	p := string(req.Params)
	if len(p) > 300 {
		p = strings.ToValidUTF8(p[:300], "") + "…"
	}
	where := ""
	if req.URL != "" {
		where = " on " + req.URL
	}
	return &mcp.ElicitParams{
		Message: scrub(fmt.Sprintf("Allow the browser to %s %s%s? (a %s action)", name, p, where, req.Risk)),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"allow": map[string]any{"type": "boolean", "title": "Allow", "description": "Run this action"},
			},
			"required": []string{"allow"},
		},
	}
}

// sign binds an answer to req (action, parameters, page) and to when the
// question was asked.
func (c *confirmer) sign(req agent.ApprovalRequest, at time.Time) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, c.key)
	for _, s := range []string{ts, req.Action, string(req.Params), req.URL} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return ts + "." + hex.EncodeToString(m.Sum(nil))
}

// verify reports whether state is the one sign gave for req, recently.
func (c *confirmer) verify(state string, req agent.ApprovalRequest) bool {
	ts, _, ok := strings.Cut(state, ".")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return false
	}
	at := time.Unix(sec, 0)
	if age := c.now().Sub(at); age < 0 || age > askTTL {
		return false
	}
	return hmac.Equal([]byte(state), []byte(c.sign(req, at)))
}
