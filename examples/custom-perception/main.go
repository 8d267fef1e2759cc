// Command custom-perception replaces the default DOM watchdog with a
// perception of its own: the model is shown only the page's links, buttons
// and form fields, one line each. The agent does not change: it asks for
// events.BrowserStateRequest as always and gets this watchdog's answer,
// clicks by the indexes it handed out (the default actions watchdog
// resolves them through the session's selector map), and finishes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// Header starts every page text this perception produces.
const Header = "(links, buttons and fields only)"

// controlsJS lists the visible controls of the page, in document order.
const controlsJS = `Array.from(document.querySelectorAll('a[href], button, input, select, textarea'))
  .filter((e) => e.checkVisibility())`

// controlTextJS describes one control (this) for the model.
const controlTextJS = `function() {
  const t = (this.innerText || this.value || this.placeholder || this.getAttribute('aria-label') || '').trim();
  return t.replace(/\s+/g, ' ').slice(0, 80);
}`

// Controls is the perception: a watchdog named like the default DOM
// watchdog, so that giving it to the session replaces the default.
type Controls struct {
	// Observations counts the states it answered.
	Observations int
}

// Name implements session.Watchdog: the DOM watchdog's name.
func (c *Controls) Name() string { return dom.Name }

// Attach implements session.Watchdog. A replacement answers every event
// the default DOM watchdog answered: BrowserStateRequest and PageText (the
// extract action reads it).
func (c *Controls) Attach(s *session.Session) error {
	return errors.Join(
		session.Handle(s, events.BrowserStateRequest, "controls", func(ctx context.Context, _ events.BrowserStateRequestEvent) (events.BrowserState, error) {
			c.Observations++
			return observe(ctx, s)
		}),
		session.Handle(s, events.PageText, "controls", func(ctx context.Context, ev events.PageTextEvent) (events.PageTextResult, error) {
			return pageText(ctx, s, ev.TargetID)
		}),
	)
}

// pageText reads a tab's visible text.
func pageText(ctx context.Context, s *session.Session, tab string) (events.PageTextResult, error) {
	var r events.PageTextResult
	cs, err := s.PageSession(tab)
	if err != nil {
		return r, err
	}
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    `({url: location.href, title: document.title, text: document.body ? document.body.innerText : ''})`,
		ReturnByValue: ptr(true),
	})
	if err != nil {
		return r, err
	}
	var v struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	if res.ExceptionDetails != nil || res.Result == nil || json.Unmarshal(res.Result.Value, &v) != nil {
		return r, errors.New("the page's text could not be read")
	}
	return events.PageTextResult{URL: v.URL, Title: v.Title, Text: v.Text}, nil
}

// observe lists the controls, gives each an index, and stores the indexes
// in the session: the actions watchdog resolves indexes there.
func observe(ctx context.Context, s *session.Session) (events.BrowserState, error) {
	tab := s.FocusedTab()
	// The tab list follows the browser's target events, which may trail a
	// navigation the last action started; read the URLs afresh, as the
	// default DOM watchdog does.
	_ = s.RefreshTabs(ctx)
	st := events.BrowserState{FocusedTarget: tab, Tabs: s.Tabs(), Elements: map[int]events.ElementInfo{}}
	for _, t := range st.Tabs {
		if t.TargetID == tab {
			st.URL, st.Title = t.URL, t.Title
		}
	}
	cs, err := s.PageSession(tab)
	if err != nil {
		return st, err
	}
	list, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: controlsJS})
	if err != nil {
		return st, err
	}
	if list.ExceptionDetails != nil || list.Result == nil || list.Result.ObjectID == "" {
		return st, errors.New("the page's controls could not be listed")
	}
	props, err := cdpproto.Call(ctx, cs, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: list.Result.ObjectID, OwnProperties: ptr(true)})
	if err != nil {
		return st, err
	}
	var text strings.Builder
	text.WriteString(Header + "\n")
	for _, p := range props.Result {
		if p.Value == nil || p.Value.Subtype != "node" {
			continue
		}
		node, err := cdpproto.Call(ctx, cs, cdpdom.DescribeNode, cdpdom.DescribeNodeParams{ObjectID: p.Value.ObjectID})
		if err != nil {
			return st, err
		}
		label, err := cdpproto.Call(ctx, cs, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: controlTextJS, ObjectID: p.Value.ObjectID, ReturnByValue: ptr(true)})
		if err != nil {
			return st, err
		}
		idx := len(st.Elements) + 1
		tag := node.Node.LocalName
		st.Elements[idx] = events.ElementInfo{
			Index:      idx,
			ElementRef: events.ElementRef{BackendNodeID: int64(node.Node.BackendNodeID), TargetID: tab, SessionID: string(cs.ID())},
			Tag:        tag,
		}
		var name string
		if label.Result != nil {
			name = strings.Trim(string(label.Result.Value), `"`)
		}
		fmt.Fprintf(&text, "[%d]<%s />\n\t%s\n", idx, tag, name)
	}
	st.DOMText = text.String()
	if fp, err := s.Fingerprint(ctx, tab); err == nil {
		st.Fingerprint = fp.String()
		// The page's own answer: the tab list may still hold the URL of a
		// navigation in progress, or none (seen under load).
		st.URL = fp.URL
	}
	s.SetSelectorMap(&session.SelectorMap{TargetID: tab, Fingerprint: st.Fingerprint, Elements: st.Elements})
	return st, nil
}

func ptr[T any](v T) *T { return &v }

const pages = `<!doctype html><title>Newsletter</title>
<h1>A long article the model never needs to read</h1><p>Lorem ipsum dolor sit amet.</p>
<form action="/thanks"><input name=email placeholder="Email address"><button>Subscribe</button></form>`

func main() {
	if err := run(context.Background(), os.Stdout, ""); err != nil {
		log.Fatal(err)
	}
}

// run subscribes to a newsletter with the custom perception; runDir ""
// means a temporary folder.
func run(ctx context.Context, out io.Writer, runDir string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, pages) })
	mux.HandleFunc("/thanks", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>Thanks</title><p>Subscribed %s</p><a href=/>Back</a>", r.URL.Query().Get("email"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The defaults, with the DOM watchdog replaced by name.
	perception := &Controls{}
	s := watchdogs.NewSession(session.Profile{}, session.WithWatchdogs(perception))
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer s.Stop(context.Background())

	model := scripted.New([]scripted.Step{
		{NextGoal: "Subscribe.", Actions: []scripted.Action{
			{Name: "input", Label: "Email address", Params: map[string]any{"text": "ada@example.com"}},
			{Name: "click", Label: "Subscribe"},
		}},
		{NextGoal: "Finish.", Actions: []scripted.Action{{Name: "done", Params: map[string]any{"success": true, "text": "subscribed"}}}},
	})
	a, err := agent.New("Subscribe ada@example.com to the newsletter at "+srv.URL, model, s,
		agent.Settings{RunDir: runDir, Vision: agent.VisionOff, MaxSteps: 5, StepTimeout: time.Minute})
	if err != nil {
		return err
	}
	res, err := a.Run(ctx)
	if err != nil {
		return err
	}
	reqs := model.Requests()
	shown := len(reqs) > 0 && strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].TextContent(), Header)
	fmt.Fprintf(out, "observations by the custom perception: %d\nthe model saw its text: %v\nresult: %s (success %v)\nfinal page: %s\n",
		perception.Observations, shown, res.FinalText, res.Success, lastURL(a))
	return nil
}

func lastURL(a *agent.Agent) string {
	h := a.History()
	if len(h.Items) == 0 {
		return ""
	}
	u := h.Items[len(h.Items)-1].State.URL
	if i := strings.Index(u, "/thanks"); i >= 0 {
		return u[i:]
	}
	return u
}
