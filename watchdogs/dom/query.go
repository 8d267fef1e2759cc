package dom

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// ErrQuery is wrapped by the errors of SearchPage and FindElements that
// the caller can fix: an empty or invalid pattern or selector, a scope that
// matches nothing, a search that ran out of time.
var ErrQuery = errors.New("dom: page query")

// Bounds of the page queries.
const (
	defaultContextChars = 150
	maxContextChars     = 1000
	defaultSearchMax    = 25
	maxSearchResults    = 200
	defaultFindMax      = 50
	maxFindResults      = 500
	// queryScriptBudget is how long a query may run in the page: a regular
	// expression with catastrophic backtracking is terminated by Chrome
	// after it, instead of holding the page's main thread.
	queryScriptBudget = 3000 // ms
)

// defaultFindAttributes are reported by FindElements when none are asked.
var defaultFindAttributes = []string{"id", "class", "name", "type", "href", "value", "placeholder", "aria-label", "role", "title", "alt"}

//go:embed js/search_page.js
var searchPageJS string

//go:embed js/find_elements.js
var findElementsJS string

// queryCall builds the expression that calls fn with args (as JSON
// literals: JSON is valid JavaScript, and Go escapes U+2028/2029).
func queryCall(fn string, args ...any) (string, error) {
	parts := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		parts[i] = string(b)
	}
	return "(" + strings.TrimSpace(fn) + ")(" + strings.Join(parts, ",") + ")", nil
}

// evalBounded evaluates expr in the tab's main world under the script
// budget and returns the remote object (by value unless byRef).
func evalBounded(ctx context.Context, cs *cdp.Session, expr string, byRef bool) (*runtime.RemoteObject, error) {
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: pagejs.Ptr(!byRef),
		Timeout:       queryScriptBudget,
		ObjectGroup:   queryObjectGroup,
	})
	if err != nil {
		var pe *cdp.ProtocolError
		if errors.As(err, &pe) && strings.Contains(pe.Message, "terminated") {
			// Chrome stopped the script at the budget.
			return nil, fmt.Errorf("%w: the query ran longer than %d ms in the page and was stopped; use a simpler pattern or a narrower CSS scope", ErrQuery, queryScriptBudget)
		}
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, &pagejs.ScriptError{Text: pagejs.ExceptionText(res.ExceptionDetails)}
	}
	if res.Result == nil {
		return nil, errors.New("dom: the page returned nothing")
	}
	return res.Result, nil
}

// queryObjectGroup holds FindElements' node handles until it is done.
const queryObjectGroup = "browseragent-query"

// queryTab returns the CDP session of a readable tab ("" = focused).
func queryTab(s *session.Session, tab string) (*cdp.Session, error) {
	if err := s.Readable(tab); err != nil {
		return nil, err
	}
	return s.PageSession(tab)
}

// searchPage answers SearchPage.
func searchPage(ctx context.Context, s *session.Session, ev events.SearchPageEvent) (events.SearchPageResult, error) {
	var r events.SearchPageResult
	if ev.Pattern == "" {
		return r, fmt.Errorf("%w: search_page needs a pattern", ErrQuery)
	}
	cs, err := queryTab(s, ev.TargetID)
	if err != nil {
		return r, fmt.Errorf("dom: search page: %w", err)
	}
	ctxChars := ev.ContextChars
	if ctxChars <= 0 {
		ctxChars = defaultContextChars
	}
	maxN := ev.MaxResults
	if maxN <= 0 {
		maxN = defaultSearchMax
	}
	expr, err := queryCall(searchPageJS, ev.Pattern, ev.Regex, ev.CaseSensitive, min(ctxChars, maxContextChars), ev.Scope, min(maxN, maxSearchResults))
	if err != nil {
		return r, err
	}
	v, err := evalBounded(ctx, cs, expr, false)
	if err != nil {
		return r, fmt.Errorf("dom: search page: %w", err)
	}
	var out struct {
		events.SearchPageResult
		Error string `json:"error"`
	}
	if err := jsonv2.Unmarshal(v.Value, &out); err != nil {
		return r, fmt.Errorf("dom: search page: %w", err)
	}
	if out.Error != "" {
		return r, fmt.Errorf("%w: %s", ErrQuery, out.Error)
	}
	return out.SearchPageResult, nil
}

// findElements answers FindElements: one evaluation for the data, one
// call for the node handles, and one pipelined DOM.describeNode per
// element returned for its backend node id.
func findElements(ctx context.Context, s *session.Session, ev events.FindElementsEvent) (events.FindElementsResult, error) {
	var r events.FindElementsResult
	if strings.TrimSpace(ev.Selector) == "" {
		return r, fmt.Errorf("%w: find_elements needs a CSS selector", ErrQuery)
	}
	cs, err := queryTab(s, ev.TargetID)
	if err != nil {
		return r, fmt.Errorf("dom: find elements: %w", err)
	}
	defer cs.Send(context.WithoutCancel(ctx), runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: queryObjectGroup})
	attrs := ev.Attributes
	if len(attrs) == 0 {
		attrs = defaultFindAttributes
	}
	maxN := ev.MaxResults
	if maxN <= 0 {
		maxN = defaultFindMax
	}
	expr, err := queryCall(findElementsJS, ev.Selector, attrs, min(maxN, maxFindResults), !ev.NoText)
	if err != nil {
		return r, err
	}
	obj, err := evalBounded(ctx, cs, expr, true)
	if err != nil {
		return r, fmt.Errorf("dom: find elements: %w", err)
	}
	var out struct {
		events.FindElementsResult
		Error string `json:"error"`
	}
	if err := pagejs.CallOn(ctx, cs, obj.ObjectID, `function(){ return {error: this.error, URL: this.URL, Total: this.Total, Elements: this.Elements}; }`, &out); err != nil {
		return r, fmt.Errorf("dom: find elements: %w", err)
	}
	if out.Error != "" {
		return r, fmt.Errorf("%w: %s", ErrQuery, out.Error)
	}
	r = out.FindElementsResult
	ids, err := nodeIDs(ctx, cs, obj.ObjectID, len(r.Elements))
	if err != nil {
		return r, fmt.Errorf("dom: find elements: %w", err)
	}
	for i := range r.Elements {
		r.Elements[i].BackendNodeID = ids[i]
	}
	return r, nil
}

// nodeIDs reads the backend node ids of the n elements in obj.nodes.
func nodeIDs(ctx context.Context, cs *cdp.Session, obj runtime.RemoteObjectID, n int) ([]int64, error) {
	ids := make([]int64, n)
	if n == 0 {
		return ids, nil
	}
	arr, err := pagejs.CallForObject(ctx, cs, obj, `function(){ return this.nodes; }`, queryObjectGroup)
	if err != nil {
		return nil, err
	}
	props, err := cdpproto.Call(ctx, cs, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: arr, OwnProperties: pagejs.Ptr(true)})
	if err != nil {
		return nil, err
	}
	pending := make([]*cdp.Reply, n)
	for _, p := range props.Result {
		var i int
		if _, err := fmt.Sscanf(p.Name, "%d", &i); err != nil || i < 0 || i >= n || p.Value == nil || p.Value.ObjectID == "" {
			continue
		}
		pending[i] = cs.Send(ctx, dom.CommandDescribeNode, dom.DescribeNodeParams{ObjectID: p.Value.ObjectID})
	}
	for i, p := range pending {
		if p == nil {
			continue
		}
		var d dom.DescribeNodeResult
		if err := p.Wait(ctx, &d); err == nil && d.Node != nil {
			ids[i] = int64(d.Node.BackendNodeID)
		}
	}
	return ids, nil
}
