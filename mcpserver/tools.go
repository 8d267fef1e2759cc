package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
)

// The tools' arguments. Their schemas come from these types; the
// descriptions are short on purpose (clients send them to their model).
type (
	navigateIn struct {
		URL    string `json:"url" jsonschema:"absolute URL"`
		NewTab bool   `json:"new_tab,omitempty" jsonschema:"open in a new tab"`
	}
	stateIn struct {
		Screenshot bool `json:"screenshot,omitempty" jsonschema:"also return a PNG screenshot"`
	}
	indexIn struct {
		Index int `json:"index" jsonschema:"element index from the last state"`
	}
	typeIn struct {
		Index int    `json:"index" jsonschema:"element index; 0 types into the focused element"`
		Text  string `json:"text" jsonschema:"text; <secret>name</secret> types a secret"`
		Clear *bool  `json:"clear,omitempty" jsonschema:"empty the field first (default true)"`
	}
	selectIn struct {
		Index  int    `json:"index" jsonschema:"element index of the dropdown"`
		Option string `json:"option,omitempty" jsonschema:"the option's text; omit to list the options"`
		Clear  bool   `json:"clear,omitempty" jsonschema:"multi-select: make it the only selected option"`
	}
	scrollIn struct {
		Down  *bool    `json:"down,omitempty" jsonschema:"default true; false scrolls up"`
		Pages *float64 `json:"pages,omitempty" jsonschema:"viewport heights (default 1)"`
		Index *int     `json:"index,omitempty" jsonschema:"scroll this element instead of the page"`
	}
	keysIn struct {
		Keys string `json:"keys" jsonschema:"e.g. Enter, Escape, Control+a"`
	}
	uploadIn struct {
		Index int    `json:"index" jsonschema:"the file input's index"`
		Path  string `json:"path" jsonschema:"a local file the server allows"`
	}
	tabsIn struct {
		Action string `json:"action,omitempty" jsonschema:"list (default), switch or close"`
		TabID  string `json:"tab_id,omitempty" jsonschema:"4-character tab id (switch, close)"`
	}
	extractIn struct {
		Query         string `json:"query" jsonschema:"what to find on the page"`
		StartFromChar int    `json:"start_from_char,omitempty" jsonschema:"continue a long page from here"`
	}
	pageTextIn struct {
		StartFromChar int `json:"start_from_char,omitempty" jsonschema:"continue a long page from here"`
	}
	waitIn struct {
		Seconds int `json:"seconds,omitempty" jsonschema:"default 3, at most 30"`
	}
	findIn struct {
		Text string `json:"text"`
	}
	searchIn struct {
		Pattern       string `json:"pattern" jsonschema:"text to find (a JavaScript regular expression with regex)"`
		Regex         bool   `json:"regex,omitempty"`
		CaseSensitive bool   `json:"case_sensitive,omitempty"`
		CSSScope      string `json:"css_scope,omitempty" jsonschema:"only inside elements matching this CSS selector"`
	}
	findElementsIn struct {
		Selector   string   `json:"selector" jsonschema:"CSS selector"`
		Attributes []string `json:"attributes,omitempty" jsonschema:"attributes to show (default: common ones)"`
	}
	evaluateIn struct {
		Code string `json:"code" jsonschema:"JavaScript expression; its JSON value is returned"`
	}
	taskIn struct {
		Task     string `json:"task" jsonschema:"what to do, in words"`
		MaxSteps int    `json:"max_steps,omitempty" jsonschema:"step budget"`
	}
	noIn struct{}
)

// handler is a tool's work on the running browser.
type handler func(ctx context.Context, b *Browser) (*mcp.CallToolResult, error)

// addTool registers a tool whose work fn builds from its arguments.
func addTool[In any](s *Server, t *mcp.Tool, fn func(in In) handler) {
	if t.InputSchema == nil {
		t.InputSchema = schemaFor[In]()
	}
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		return s.handle(ctx, req, t.Name, fn(in)), nil, nil
	})
}

// action is a handler that runs one Driver action.
func action(name string, params any) handler {
	return func(ctx context.Context, b *Browser) (*mcp.CallToolResult, error) {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		rec, err := b.Driver.Do(ctx, name, raw)
		if err != nil {
			return nil, &actionError{rec: rec, err: err}
		}
		return text(rec.Text()), nil
	}
}

// actionError is a failed action with its record, whose words (secrets
// scrubbed) are what the client reads.
type actionError struct {
	rec agent.ActionRecord
	err error
}

func (e *actionError) Error() string {
	if e.rec.Error != "" {
		return e.rec.Text()
	}
	return e.err.Error()
}

func (e *actionError) Unwrap() error { return e.err }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func toolError(s string) *mcp.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}

// handle runs one tool call: it finds (or starts) the browser, runs fn,
// and words the outcome. Every failure is a tool error carrying the text
// the Driver gives a model; a browser found dead is retired so that the
// next call starts a new one.
func (s *Server) handle(ctx context.Context, req *mcp.CallToolRequest, tool string, fn handler) *mcp.CallToolResult {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return toolError("The browser server is shutting down.")
	}
	defer leave()
	c := newCall(req)
	c.task = tool == "run_task"
	ctx = withCall(ctx, c)
	b, err := s.browser(ctx)
	if err != nil {
		s.log.Warn("tool call without a browser", zap.String("tool", tool), zap.Error(err))
		return toolError(err.Error())
	}
	c.browser = b
	res, err := fn(ctx, b)
	if ask, state := c.pending(); ask != nil {
		// The approver asked: the client answers and calls again.
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{askID: ask}, RequestState: state}
	}
	switch {
	case err == nil:
		return res
	case isGone(err):
		s.retire(b, err)
		return toolError(fmt.Sprintf("%s\nThe browser is gone; the next call starts a new one, on a blank page.", err))
	case errors.Is(err, agent.ErrClosed):
		return toolError("The browser was closed (it died, or the server is shutting down); call again to start a new one.")
	}
	return toolError(err.Error())
}

func (s *Server) addTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "navigate", Description: "Open a URL."}, func(in navigateIn) handler {
		return action("navigate", map[string]any{"url": in.URL, "new_tab": in.NewTab})
	})
	addTool(s, &mcp.Tool{Name: "state", Annotations: ro, Description: "The page as text: URL, tabs, and the interactive elements with the [index] the other tools take. Call it again after the page changes."}, func(in stateIn) handler {
		return func(ctx context.Context, b *Browser) (*mcp.CallToolResult, error) {
			o, err := b.Driver.State(ctx, agent.StateOptions{Screenshot: in.Screenshot})
			if err != nil {
				return nil, err
			}
			r := text(o.Text)
			if in.Screenshot && len(o.State.Screenshot) > 0 {
				r.Content = append(r.Content, &mcp.ImageContent{Data: o.State.Screenshot, MIMEType: agent.ScreenshotMediaType(o.State)})
			}
			return r, nil
		}
	})
	addTool(s, &mcp.Tool{Name: "click", Description: "Click an element."}, func(in indexIn) handler {
		return action("click", map[string]any{"index": in.Index})
	})
	addTool(s, &mcp.Tool{Name: "type", Description: "Type text into an input element."}, func(in typeIn) handler {
		p := map[string]any{"index": in.Index, "text": in.Text}
		if in.Clear != nil {
			p["clear"] = *in.Clear
		}
		return action("input", p)
	})
	addTool(s, &mcp.Tool{Name: "select", Description: "Choose an option of a dropdown by its text, or list the options."}, func(in selectIn) handler {
		if in.Option == "" {
			return action("dropdown_options", map[string]any{"index": in.Index})
		}
		p := map[string]any{"index": in.Index, "text": in.Option}
		if in.Clear {
			p["clear"] = true
		}
		return action("select_dropdown", p)
	})
	addTool(s, &mcp.Tool{Name: "read_value", Annotations: ro, Description: "The whole value of a field (state cuts long values): an input's, a textarea's, a select's selected options, an editable element's text."}, func(in indexIn) handler {
		return action("read_value", map[string]any{"index": in.Index})
	})
	addTool(s, &mcp.Tool{Name: "hover", Description: "Move the mouse over an element."}, func(in indexIn) handler {
		return action("hover", map[string]any{"index": in.Index})
	})
	addTool(s, &mcp.Tool{Name: "scroll", Description: "Scroll the page or an element."}, func(in scrollIn) handler {
		p := map[string]any{}
		if in.Down != nil {
			p["down"] = *in.Down
		}
		if in.Pages != nil {
			p["pages"] = *in.Pages
		}
		if in.Index != nil {
			p["index"] = *in.Index
		}
		return action("scroll", p)
	})
	addTool(s, &mcp.Tool{Name: "keys", Description: "Press keys in the focused element."}, func(in keysIn) handler {
		return action("send_keys", map[string]any{"keys": in.Keys})
	})
	addTool(s, &mcp.Tool{Name: "upload", Description: "Put a local file into a file input."}, func(in uploadIn) handler {
		return action("upload_file", map[string]any{"index": in.Index, "path": in.Path})
	})
	addTool(s, &mcp.Tool{Name: "tabs", Description: "List, switch or close tabs.", InputSchema: tabsSchema()}, func(in tabsIn) handler {
		switch in.Action {
		case "switch":
			return action("switch_tab", map[string]any{"tab_id": in.TabID})
		case "close":
			return action("close_tab", map[string]any{"tab_id": in.TabID})
		}
		return listTabs
	})
	if s.cfg.Model != nil {
		addTool(s, &mcp.Tool{Name: "extract", Annotations: ro, Description: "Answer a query from the page's full text (for what the element list lacks)."}, func(in extractIn) handler {
			return action("extract", map[string]any{"query": in.Query, "start_from_char": in.StartFromChar})
		})
	} else {
		addTool(s, &mcp.Tool{Name: "extract", Annotations: ro, Description: "The page's full text as markdown, in chunks (for what the element list lacks)."}, func(in pageTextIn) handler {
			return pageText(in.StartFromChar)
		})
	}
	addTool(s, &mcp.Tool{Name: "search_page", Annotations: ro, Description: "Find text or a regex in the page's full text, with the text around each match."}, func(in searchIn) handler {
		return action("search_page", in) // the same fields as agent.SearchPageParams
	})
	addTool(s, &mcp.Tool{Name: "find_elements", Annotations: ro, Description: "List the elements a CSS selector matches: tag, attributes, text, and [index] when the last state has one."}, func(in findElementsIn) handler {
		return action("find_elements", in) // the same fields as agent.FindElementsParams
	})
	addTool(s, &mcp.Tool{Name: "find_text", Description: "Scroll to a text on the page."}, func(in findIn) handler {
		return action("find_text", map[string]any{"text": in.Text})
	})
	addTool(s, &mcp.Tool{Name: "go_back", Description: "Go back in this tab."}, func(noIn) handler {
		return action("go_back", map[string]any{})
	})
	addTool(s, &mcp.Tool{Name: "wait", Annotations: ro, Description: "Wait for the page."}, func(in waitIn) handler {
		return action("wait", map[string]any{"seconds": in.Seconds})
	})
	if s.cfg.Evaluate {
		addTool(s, &mcp.Tool{Name: "evaluate", Description: "Run JavaScript in the page (last resort)."}, func(in evaluateIn) handler {
			return action("evaluate", map[string]any{"code": in.Code})
		})
	}
	s.addPointerTools()
	if s.cfg.Model != nil {
		addTool(s, &mcp.Tool{Name: "run_task", Description: fmt.Sprintf("Have the browser agent (model %s) do a whole task in this browser, step by step; returns its answer. Default and maximum max_steps: %d.", s.cfg.Model.Name(), s.cfg.MaxSteps)}, func(in taskIn) handler {
			return s.runTask(in)
		})
	}
}

// schemaFor is In's schema, an optional (pointer) field typed as its
// value rather than ["null", type]: some model APIs take no type unions,
// and leaving the field out is how a client says "default".
func schemaFor[In any]() *jsonschema.Schema {
	sc, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err) // a fixed type: a programming error
	}
	for _, p := range sc.Properties {
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	return sc
}

// tabsSchema is tabsIn's schema with the actions enumerated.
func tabsSchema() *jsonschema.Schema {
	sc := schemaFor[tabsIn]()
	sc.Properties["action"].Enum = []any{"list", "switch", "close"}
	return sc
}

// listTabs lists the open tabs, the focused one marked, secrets scrubbed.
func listTabs(_ context.Context, b *Browser) (*mcp.CallToolResult, error) {
	tabs, focused := b.Driver.Tabs()
	var sb strings.Builder
	for _, t := range tabs {
		mark := ""
		if t.TargetID == focused {
			mark = " (current)"
		}
		fmt.Fprintf(&sb, "Tab %s%s: %s - %s\n", agent.TabRef(t.TargetID), mark, t.URL, t.Title)
	}
	if sb.Len() == 0 {
		return text("No tabs are open."), nil
	}
	return text(b.Driver.Scrub(sb.String())), nil
}

// pageText returns a chunk of the page's text, saying where it continues.
func pageText(from int) handler {
	return func(ctx context.Context, b *Browser) (*mcp.CallToolResult, error) {
		t, url, total, err := b.Driver.PageText(ctx, from, 0)
		if err != nil {
			return nil, err
		}
		end := min(from+agent.DefaultExtractChunkChars, total)
		var sb strings.Builder
		fmt.Fprintf(&sb, "Text of %s (characters %d to %d of %d):\n\n%s", url, from, end, total, t)
		if end < total {
			fmt.Fprintf(&sb, "\n\n[The page continues: call extract with start_from_char=%d for the rest.]", end)
		}
		return text(sb.String()), nil
	}
}
