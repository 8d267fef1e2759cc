package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pathcheck"
)

// Parameter types of the built-in actions (their schemas are derived by
// SchemaOf, like a custom action's). Their fields have no descriptions:
// what the model needs to know is in the action's description, sent once.
type (
	// NavigateParams are navigate's parameters.
	NavigateParams struct {
		URL    string `json:"url"`
		NewTab bool   `json:"new_tab,omitempty"`
	}
	// SearchParams are search's parameters.
	SearchParams struct {
		Query  string `json:"query"`
		Engine string `json:"engine,omitempty" enum:"duckduckgo,google,bing"`
	}
	// NoParams is the parameter type of actions without parameters (go_back).
	NoParams struct{}
	// WaitParams are wait's parameters.
	WaitParams struct {
		Seconds int `json:"seconds,omitempty"`
	}
	// IndexParams name one element (click, hover, dropdown_options).
	IndexParams struct {
		Index int `json:"index"`
	}
	// InputParams are input's parameters.
	InputParams struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
		Clear *bool  `json:"clear,omitempty"`
	}
	// UploadParams are upload_file's parameters.
	UploadParams struct {
		Index int    `json:"index"`
		Path  string `json:"path"`
	}
	// TabParams name a tab (switch_tab, close_tab).
	TabParams struct {
		TabID string `json:"tab_id"`
	}
	// ExtractParams are extract's parameters.
	ExtractParams struct {
		Query         string `json:"query"`
		StartFromChar int    `json:"start_from_char,omitempty"`
	}
	// ScrollParams are scroll's parameters.
	ScrollParams struct {
		Down  *bool    `json:"down,omitempty"`
		Pages *float64 `json:"pages,omitempty"`
		Index *int     `json:"index,omitempty"`
	}
	// KeysParams are send_keys' parameters.
	KeysParams struct {
		Keys string `json:"keys"`
	}
	// TextParams are find_text's parameters.
	TextParams struct {
		Text string `json:"text"`
	}
	// SelectParams are select_dropdown's parameters.
	SelectParams struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
		Clear bool   `json:"clear,omitempty"`
	}
	// EvaluateParams are evaluate's parameters.
	EvaluateParams struct {
		Code string `json:"code"`
	}
	// ScreenshotParams are screenshot's parameters.
	ScreenshotParams struct {
		FileName string `json:"file_name,omitempty"`
	}
	// WriteFileParams are write_file's parameters.
	WriteFileParams struct {
		FileName string `json:"file_name"`
		Content  string `json:"content"`
		Append   bool   `json:"append,omitempty"`
	}
	// ReadFileParams are read_file's parameters.
	ReadFileParams struct {
		FileName string `json:"file_name"`
	}
	// ReplaceFileParams are replace_file's parameters.
	ReplaceFileParams struct {
		FileName string `json:"file_name"`
		OldStr   string `json:"old_str"`
		NewStr   string `json:"new_str"`
	}
	// DoneParams are done's parameters (without an output schema).
	DoneParams struct {
		Text    string `json:"text"`
		Success bool   `json:"success"`
	}
)

// DefaultRegistry returns a new registry with every built-in action:
// navigate, search, go_back, wait, click, input, upload_file, switch_tab,
// close_tab, extract, scroll, send_keys, find_text, dropdown_options,
// read_value, select_dropdown, hover, evaluate, screenshot (offered in vision "auto"
// only), search_page, find_elements, save_as_pdf, write_file, read_file,
// replace_file, request_human (offered only when Settings.Human is set;
// risk class read, since the action itself does nothing to the page; it
// ends the batch), done.
func DefaultRegistry() *Registry {
	r := NewRegistry()
	must := func(err error) {
		if err != nil {
			panic(err) // programming error in the built-ins
		}
	}
	must(Register(r, "navigate", "Open an absolute URL.", func(ctx context.Context, ac *ActionContext, p NavigateParams) (ActionResult, error) {
		return ac.navigate(ctx, p.URL, p.NewTab)
	}, WithRisk(RiskNavigate), Terminating()))
	must(Register(r, "search", "", func(ctx context.Context, ac *ActionContext, p SearchParams) (ActionResult, error) {
		engine := p.Engine
		if engine == "" {
			engine = ac.agent.set.SearchEngine
		}
		u, err := searchURL(engine, p.Query)
		if err != nil {
			return ActionResult{}, err
		}
		return ac.navigate(ctx, u, false)
	}, WithRisk(RiskNavigate), Terminating()))
	must(Register(r, "go_back", "", func(ctx context.Context, ac *ActionContext, _ NoParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.GoBack, events.GoBackEvent{})
		return outcomeResult("Went back", res.Outcome), err
	}, WithRisk(RiskNavigate), Terminating()))
	must(Register(r, "wait", "Default 3, at most 30.", func(ctx context.Context, ac *ActionContext, p WaitParams) (ActionResult, error) {
		d := 3 * time.Second
		if p.Seconds > 0 {
			d = time.Duration(p.Seconds) * time.Second
		}
		d = min(d, DefaultWaitActionMaxWait)
		_, err := bus.Call(ctx, ac.Browser.Bus(), events.Wait, events.WaitEvent{Duration: d, Max: DefaultWaitActionMaxWait}, bus.WithTimeout(d+10*time.Second))
		if err != nil {
			return ActionResult{}, err
		}
		return ActionResult{Text: fmt.Sprintf("Waited %s.", d)}, nil
	}, WithRisk(RiskRead)))
	must(Register(r, "click", "", func(ctx context.Context, ac *ActionContext, p IndexParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: p.Index}})
		r := outcomeResult(fmt.Sprintf("Clicked element %d", p.Index), res.Outcome)
		r.Mark = ac.mark(p.Index, clickPoint(res))
		return r, err
	}, WithRisk(RiskSubmit), TargetsElement()))
	must(Register(r, "input", "Type (clears first; index 0: the focused element).", func(ctx context.Context, ac *ActionContext, p InputParams) (ActionResult, error) {
		text, key, err := ac.agent.secrets.resolve(p.Text, ac.currentURL())
		if err != nil {
			return ActionResult{}, err
		}
		clear := p.Clear == nil || *p.Clear
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.TypeText, events.TypeTextEvent{Target: events.Target{Index: p.Index}, Text: text, Clear: clear, Sensitive: key != "", SensitiveKey: key})
		what := fmt.Sprintf("Typed %q into element %d", p.Text, p.Index)
		if key != "" {
			what = fmt.Sprintf("Typed the secret %s into element %d", key, p.Index)
		}
		r := outcomeResult(what, res.Outcome)
		r.Mark = ac.mark(p.Index, nil)
		if err == nil && key == "" && res.ActualValue != "" && res.ActualValue != text {
			r.Text += fmt.Sprintf(" The field now holds %q (the page changed the value).", shorten(res.ActualValue, 200))
		}
		return r, err
	}, WithRisk(RiskInput), TargetsElement()))
	must(Register(r, "upload_file", "index: a file input or next to one; path: from available_file_paths or your files.", func(ctx context.Context, ac *ActionContext, p UploadParams) (ActionResult, error) {
		path, err := ac.uploadPath(p.Path)
		if err != nil {
			return ActionResult{}, err
		}
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.UploadFile, events.UploadFileEvent{Target: events.Target{Index: p.Index}, Paths: []string{path}})
		r := outcomeResult(fmt.Sprintf("Uploaded %s to element %d", filepath.Base(path), p.Index), res.Outcome)
		r.Mark = ac.mark(p.Index, nil)
		return r, err
	}, WithRisk(RiskUpload), TargetsElement()))
	must(Register(r, "switch_tab", "", func(ctx context.Context, ac *ActionContext, p TabParams) (ActionResult, error) {
		id, err := ac.Browser.ResolveTab(p.TabID)
		if err != nil {
			return ActionResult{}, fmt.Errorf("no tab %q: %w", p.TabID, err)
		}
		sw, err := ac.agent.switchTab(ctx, id)
		if err != nil {
			return ActionResult{}, err
		}
		return ActionResult{Text: fmt.Sprintf("Switched to tab %s (%s).", TabRef(sw.TargetID), sw.URL)}, nil
	}, WithRisk(RiskNavigate), Terminating()))
	must(Register(r, "close_tab", "", func(ctx context.Context, ac *ActionContext, p TabParams) (ActionResult, error) {
		id, err := ac.Browser.ResolveTab(p.TabID)
		if err != nil {
			return ActionResult{}, fmt.Errorf("no tab %q: %w", p.TabID, err)
		}
		if _, err := bus.Call(ctx, ac.Browser.Bus(), events.CloseTab, events.CloseTabEvent{TargetID: id}); err != nil {
			return ActionResult{}, err
		}
		return ActionResult{Text: fmt.Sprintf("Closed tab %s.", TabRef(id))}, nil
	}, WithRisk(RiskNavigate)))
	must(Register(r, "extract", "One question (once) about the page's whole text.", func(ctx context.Context, ac *ActionContext, p ExtractParams) (ActionResult, error) {
		return ac.extract(ctx, p)
	}, WithRisk(RiskRead)))
	must(Register(r, "scroll", "Default: the page, down 1 page.", func(ctx context.Context, ac *ActionContext, p ScrollParams) (ActionResult, error) {
		dir, word := events.ScrollDown, "down"
		if p.Down != nil && !*p.Down {
			dir, word = events.ScrollUp, "up"
		}
		pages := 1.0
		if p.Pages != nil && *p.Pages > 0 {
			pages = *p.Pages
		}
		vh := 1000
		if ac.BrowserState != nil && ac.BrowserState.Page.ViewportHeight > 0 {
			vh = ac.BrowserState.Page.ViewportHeight
		}
		idx := 0
		if p.Index != nil {
			idx = *p.Index
		}
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.Scroll, events.ScrollEvent{Target: events.Target{Index: idx}, Direction: dir, Amount: int(pages * float64(vh))})
		what := fmt.Sprintf("Scrolled %s %.1f pages", word, pages)
		if idx > 0 {
			what += fmt.Sprintf(" in element %d", idx)
		}
		r := outcomeResult(what, res.Outcome)
		r.Mark = ac.mark(idx, nil)
		return r, err
	}, WithRisk(RiskRead), TargetsElement()))
	must(Register(r, "send_keys", "e.g. Enter, Escape, Control+a.", func(ctx context.Context, ac *ActionContext, p KeysParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.SendKeys, events.SendKeysEvent{Keys: p.Keys})
		return outcomeResult(fmt.Sprintf("Sent keys %q", p.Keys), res.Outcome), err
	}, WithRisk(RiskSubmit)))
	must(Register(r, "find_text", "Scroll to a text.", func(ctx context.Context, ac *ActionContext, p TextParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.ScrollToText, events.ScrollToTextEvent{Text: p.Text})
		return outcomeResult(fmt.Sprintf("Scrolled to %q", p.Text), res.Outcome), err
	}, WithRisk(RiskRead)))
	must(Register(r, "dropdown_options", "", func(ctx context.Context, ac *ActionContext, p IndexParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: events.Target{Index: p.Index}})
		if err != nil {
			return ActionResult{}, err
		}
		var b strings.Builder
		for _, o := range res.Options {
			mark := ""
			if o.Selected {
				mark = " (selected)"
			}
			fmt.Fprintf(&b, "%d: %q value=%q%s\n", o.Index, o.Text, o.Value, mark)
		}
		return ActionResult{Text: fmt.Sprintf("Element %d has %d options (listed in read_state).", p.Index, len(res.Options)), ReadOnce: b.String()}, nil
	}, WithRisk(RiskRead), TargetsElement()))
	must(Register(r, "read_value", "", func(ctx context.Context, ac *ActionContext, p IndexParams) (ActionResult, error) {
		return ac.readValue(ctx, p.Index)
	}, WithRisk(RiskRead), TargetsElement()))
	must(Register(r, "select_dropdown", "By the option's text; clear: unselect the others.", func(ctx context.Context, ac *ActionContext, p SelectParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: events.Target{Index: p.Index}, Text: p.Text, Clear: p.Clear})
		r := outcomeResult(fmt.Sprintf("Selected %q in element %d", res.Selected.Text, p.Index), res.Outcome)
		r.Mark = ac.mark(p.Index, nil)
		return r, err
	}, WithRisk(RiskInput), TargetsElement()))
	must(Register(r, "hover", "For menus that open on hover.", func(ctx context.Context, ac *ActionContext, p IndexParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.Hover, events.HoverEvent{Target: events.Target{Index: p.Index}})
		r := outcomeResult(fmt.Sprintf("Hovered element %d", p.Index), res.Outcome)
		var pt *[2]float64
		if err == nil {
			pt = &[2]float64{res.X, res.Y}
		}
		r.Mark = ac.mark(p.Index, pt)
		return r, err
	}, WithRisk(RiskRead), TargetsElement()))
	must(Register(r, "evaluate", "A JavaScript expression's JSON value. Last resort.", func(ctx context.Context, ac *ActionContext, p EvaluateParams) (ActionResult, error) {
		res, err := bus.Call(ctx, ac.Browser.Bus(), events.Evaluate, events.EvaluateEvent{Code: p.Code, MaxResultBytes: DefaultEvaluateResultCap})
		if err != nil {
			return outcomeResult("Evaluated", res.Outcome), err
		}
		r := outcomeResult("Evaluated", res.Outcome)
		v := res.Value
		if res.Truncated {
			v += fmt.Sprintf("\n[truncated at %d characters]", DefaultEvaluateResultCap)
		}
		if len(v) > 2000 {
			r.ReadOnce = v
			r.Text += fmt.Sprintf(" Result: %d characters (in read_state).", len(v))
		} else {
			r.Text += " Result: " + v
		}
		return r, nil
	}, WithRisk(RiskScript), Terminating()))
	must(Register(r, "screenshot", "Get a screenshot with the next state; file_name also saves it (.png).", func(ctx context.Context, ac *ActionContext, p ScreenshotParams) (ActionResult, error) {
		r := ActionResult{WantScreenshot: true, Text: "A screenshot will be attached to the next state."}
		if p.FileName != "" {
			name := p.FileName
			if err := plainName(name, "a plain name ending in .png"); err != nil {
				return ActionResult{}, err
			}
			if !strings.HasSuffix(strings.ToLower(name), ".png") {
				return ActionResult{}, fmt.Errorf("%w: %q (a plain name ending in .png)", ErrFileName, name)
			}
			shot, err := bus.Call(ctx, ac.Browser.Bus(), events.Screenshot, events.ScreenshotEvent{})
			if err != nil {
				return ActionResult{}, err
			}
			path := filepath.Join(ac.FileSystem.Dir(), name)
			if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
				return ActionResult{}, err
			}
			r.Files = []string{path}
			r.Text += " Saved as " + name + "."
		}
		return r, nil
	}, WithRisk(RiskRead)))
	registerPageActions(r, must)
	must(Register(r, "write_file", "", func(_ context.Context, ac *ActionContext, p WriteFileParams) (ActionResult, error) {
		if err := ac.FileSystem.Write(p.FileName, p.Content, p.Append); err != nil {
			return ActionResult{}, err
		}
		verb := "Wrote"
		if p.Append {
			verb = "Appended"
		}
		return ActionResult{Text: fmt.Sprintf("%s %d characters to %s.", verb, len(p.Content), p.FileName)}, nil
	}, WithRisk(RiskInput)))
	must(Register(r, "read_file", "", func(_ context.Context, ac *ActionContext, p ReadFileParams) (ActionResult, error) {
		c, err := ac.FileSystem.Read(p.FileName)
		if err != nil {
			return ActionResult{}, err
		}
		return ActionResult{Text: fmt.Sprintf("Read %s (%d characters, in read_state).", p.FileName, len(c)), ReadOnce: c}, nil
	}, WithRisk(RiskRead)))
	must(Register(r, "replace_file", "", func(_ context.Context, ac *ActionContext, p ReplaceFileParams) (ActionResult, error) {
		n, err := ac.FileSystem.Replace(p.FileName, p.OldStr, p.NewStr)
		if err != nil {
			return ActionResult{}, err
		}
		return ActionResult{Text: fmt.Sprintf("Replaced %d occurrence(s) in %s.", n, p.FileName)}, nil
	}, WithRisk(RiskInput)))
	must(Register(r, "request_human", "Hand the browser to a person for what only they can do (a CAPTCHA, a 2FA code, a login with their own credentials); reason tells them what to do. The run waits until they hand it back.", humanHandoff, WithRisk(RiskRead), Terminating()))
	must(Register(r, "done", "", func(_ context.Context, _ *ActionContext, p DoneParams) (ActionResult, error) {
		return ActionResult{Done: true, Success: p.Success, Text: p.Text}, nil
	}, WithRisk(RiskRead)))
	r.markBuiltin()
	return r
}

// outcomeResult words an action's verdict for the model.
func outcomeResult(what string, o events.ActionOutcome) ActionResult {
	r := ActionResult{Text: what}
	if o.Verdict != "" {
		oc := o
		r.Outcome = &oc
		r.Text += ": " + string(o.Verdict)
		if o.Detail != "" {
			r.Text += " (" + o.Detail + ")"
		}
	}
	r.Text += "."
	return r
}

// currentURL is the focused tab's URL as the session knows it now.
func (ac *ActionContext) currentURL() string {
	ft := ac.Browser.FocusedTab()
	for _, t := range ac.Browser.Tabs() {
		if t.TargetID == ft {
			return t.URL
		}
	}
	if ac.BrowserState != nil {
		return ac.BrowserState.URL
	}
	return ""
}

func (ac *ActionContext) navigate(ctx context.Context, u string, newTab bool) (ActionResult, error) {
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: u, NewTab: newTab})
	if err != nil {
		// A navigation the browser failed still says where the tab is.
		return outcomeResult(fmt.Sprintf("Opened %s", u), res.Outcome), err
	}
	r := outcomeResult(fmt.Sprintf("Opened %s", res.URL), res.Outcome)
	if res.HTTPStatus >= 400 {
		r.Text += fmt.Sprintf(" The server answered HTTP %d.", res.HTTPStatus)
	}
	return r, nil
}

// uploadPath allows the caller's AvailableFilePaths and the agent's files.
// Paths match by the system's rules (on Windows C:\Files\cv.pdf is
// c:/files/CV.pdf); the path uploaded is the one the caller listed.
func (ac *ActionContext) uploadPath(p string) (string, error) {
	if slices.Contains(ac.agent.set.AvailableFilePaths, p) {
		return p, nil
	}
	for _, a := range ac.agent.set.AvailableFilePaths {
		if pathcheck.Same(a, p) {
			return a, nil
		}
	}
	if path, err := ac.FileSystem.Path(filepath.Base(p)); err == nil && (p == filepath.Base(p) || p == path || pathcheck.Same(p, path)) {
		return path, nil
	}
	return "", fmt.Errorf("file %q may not be uploaded: use a path from available_file_paths or one of your files (%s)", p, strings.Join(ac.FileSystem.Names(), ", "))
}

// extract reads the page's text fresh and asks the extraction model.
func (ac *ActionContext) extract(ctx context.Context, p ExtractParams) (ActionResult, error) {
	pt, err := bus.Call(ctx, ac.Browser.Bus(), events.PageText, events.PageTextEvent{})
	if err != nil {
		return ActionResult{}, err
	}
	text := pt.Text
	if p.StartFromChar > 0 {
		if p.StartFromChar >= len(text) {
			return ActionResult{}, fmt.Errorf("start_from_char %d is past the end of the page text (%d characters)", p.StartFromChar, len(text))
		}
		text = text[p.StartFromChar:]
	}
	more := ""
	if len(text) > DefaultExtractChunkChars {
		text = strings.ToValidUTF8(text[:DefaultExtractChunkChars], "")
		more = fmt.Sprintf("\n[The page continues: call extract with start_from_char=%d for the rest.]", p.StartFromChar+DefaultExtractChunkChars)
	}
	text = ac.agent.secrets.scrub(text)
	if ac.ExtractModel == nil {
		return ActionResult{}, errors.New("no extraction model configured")
	}
	msgs := []llm.Message{
		llm.SystemMessage("You extract information from a web page's text. Answer the query using only the page text. If the answer is not in the text, say so. Be complete and exact; keep numbers, names and links as written."),
		llm.UserMessage(llm.Text(fmt.Sprintf("<query>%s</query>\n<url>%s</url>\n<page_text>\n%s\n</page_text>", p.Query, pt.URL, text))),
	}
	if ac.agent != nil {
		var cancel context.CancelFunc
		ctx, cancel = boundCall(ctx, ac.ExtractModel, ac.agent.set.LLMTimeout)
		defer cancel()
	}
	resp, err := ac.ExtractModel.Generate(ctx, llm.Request{Messages: msgs})
	if err != nil {
		return ActionResult{}, fmt.Errorf("extraction model: %w", err)
	}
	ans := strings.TrimSpace(resp.Content) + more
	name := ""
	if len(ans) > 10000 {
		name = fmt.Sprintf("extracted_content_%d.md", time.Now().UnixNano()%1e6)
		if err := ac.FileSystem.Write(name, ans, false); err != nil {
			name = ""
		}
	}
	r := ActionResult{Text: fmt.Sprintf("Extracted %q from %s (%d characters, in read_state).", p.Query, pt.URL, len(ans)), ReadOnce: ans, Usage: resp.Usage}
	if name != "" {
		r.Text += " Saved as " + name + "."
	}
	return r, nil
}

// readValueCap is how many characters of a value read_value puts in the
// model's context; a longer value is saved whole to a file of the run's
// file system, which the result names.
const readValueCap = 10000

// readValue reads an indexed field's whole value (events.ReadValue): the
// observation cuts long values. Secrets are scrubbed from it; a password
// field or one a person typed into is refused (events.ErrValueWithheld).
func (ac *ActionContext) readValue(ctx context.Context, index int) (ActionResult, error) {
	res, err := bus.Call(ctx, ac.Browser.Bus(), events.ReadValue, events.ReadValueEvent{Target: events.Target{Index: index}})
	if err != nil {
		return ActionResult{}, err
	}
	v := res.Value
	if res.Kind == "select" {
		var b strings.Builder
		for _, o := range res.Selected {
			fmt.Fprintf(&b, "%q value=%q\n", o.Text, o.Value)
		}
		v = strings.TrimSuffix(b.String(), "\n")
	}
	if v == "" {
		return ActionResult{Text: fmt.Sprintf("Element %d (%s) is empty.", index, res.Kind)}, nil
	}
	if ac.agent != nil {
		v = ac.agent.secrets.scrub(v)
	}
	n := utf8.RuneCountInString(v)
	text := fmt.Sprintf("Read element %d's value (%s, %d characters, in read_state).", index, res.Kind, n)
	if n > readValueCap {
		more := ""
		if ac.FileSystem != nil {
			name := fmt.Sprintf("value_%d_%d.txt", index, time.Now().UnixNano()%1e6)
			if err := ac.FileSystem.Write(name, v, false); err == nil {
				text += " Saved whole as " + name + "."
				more = "; the whole value is in " + name + " (read_file)"
			}
		}
		cut := []rune(v)
		v = string(cut[:readValueCap]) + fmt.Sprintf("\n[… %d more characters%s]", n-readValueCap, more)
	}
	return ActionResult{Text: text, ReadOnce: v}, nil
}

// switchTab focuses a tab through the bus.
func (a *Agent) switchTab(ctx context.Context, id string) (events.SwitchTabResult, error) {
	return bus.Call(ctx, a.browser.Bus(), events.SwitchTab, events.SwitchTabEvent{TargetID: id})
}
