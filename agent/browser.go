package agent

import (
	"context"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// Browser is what the agent needs of a browser session; *session.Session
// implements it. Everything the agent does to the page it does by
// dispatching catalog events on Bus (observe with BrowserStateRequest, act
// with ClickElement, TypeText, Evaluate, ...), so watchdogs, policies,
// timeouts and trace observers apply to every action; the other methods
// only read the session's tab model. A test or an embedder can drive the
// agent with any implementation: a bus with handlers of its own is enough.
type Browser interface {
	// Bus is the bus the events go to; nil when the browser is not started.
	Bus() *bus.Bus
	// FocusedTab is the id of the tab the agent acts on ("" when none).
	FocusedTab() string
	// Tabs are the open tabs, in the order they were opened.
	Tabs() []events.TabInfo
	// ResolveTab turns a tab reference the model wrote (a full id or a
	// unique suffix) into a tab id.
	ResolveTab(ref string) (string, error)
	// Fingerprint reads a tab's page fingerprint ("" = the focused tab) for
	// the mutation fence; it must be cheap (one round trip).
	Fingerprint(ctx context.Context, tabID string) (events.PageFingerprint, error)
	// Ready returns nil when the browser can take events, waits (bounded by
	// ctx) while a lost connection is being restored, and returns an error
	// wrapping events.ErrBrowserGone when the browser will not come back.
	// The agent calls it before every step.
	Ready(ctx context.Context) error
}
