package main

// The shell commands: a background session (open, close, sessions; see
// shell_open.go) and the commands that talk to it over its Unix socket, or
// its loopback TCP endpoint on Windows (state, click, type, ...).
// docs/shell.md describes them for users.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
)

// Exit codes of the session commands (besides 0, and exitUsage for a bad
// command line).
const (
	// exitFailed: the action ran and failed, or the session refused it.
	exitFailed = 1
	// exitNotRunning: no session answers (none was opened, it ended, its
	// process died, or its browser is gone).
	exitNotRunning = 3
)

// exitError is a command's failure with its exit code; run prints it and
// exits with the code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) exitCode() int { return e.code }

// defaultCallTimeout bounds each request to a session.
const defaultCallTimeout = 3 * time.Minute

// sessionFlags are the flags every command that talks to a session takes.
type sessionFlags struct {
	name    string
	json    bool
	timeout time.Duration
	command string
}

func (f *sessionFlags) register(fs *flag.FlagSet) {
	def := os.Getenv("BROWSERAGENT_SESSION")
	if def == "" {
		def = control.DefaultName
	}
	fs.StringVar(&f.name, "session", def, "the session's name (default $BROWSERAGENT_SESSION, else \"default\")")
	fs.BoolVar(&f.json, "json", false, "print one JSON object (for programs) instead of text")
	fs.DurationVar(&f.timeout, "timeout", defaultCallTimeout, "how long to wait for the session's answer")
}

// paths checks the session name and the socket directory.
func (f *sessionFlags) paths() (control.Paths, error) {
	if err := control.ValidName(f.name); err != nil {
		return control.Paths{}, &usageError{err.Error()}
	}
	dir, err := control.OpenDir(control.DefaultDir())
	if err != nil {
		return control.Paths{}, err
	}
	return dir.Session(f.name)
}

// call sends req to the session, waiting while it is still starting.
// Failing to reach it is an *exitError with exitNotRunning.
func (f *sessionFlags) call(ctx context.Context, req control.Request) (*control.Response, error) {
	p, err := f.paths()
	if err != nil {
		return nil, err
	}
	c := p.Client(f.timeout)
	deadline := time.Now().Add(f.timeout)
	wait := 10 * time.Millisecond
	for {
		resp, err := c.Call(ctx, req)
		if !errors.Is(err, control.ErrNotRunning) {
			return resp, f.wrap(err)
		}
		nr := p.Diagnose()
		if nr.State != control.Busy || time.Now().After(deadline) {
			return nil, f.notRunning(nr)
		}
		// Its process holds the lock but does not listen yet: it is
		// starting its browser.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// notRunning words a session that does not answer, with what to do.
func (f *sessionFlags) notRunning(nr *control.NotRunningError) error {
	hint := ""
	switch nr.State {
	case control.Absent, control.Died, control.Ended:
		hint = "; start one with: browseragent open URL"
		if f.name != control.DefaultName {
			hint += " --session " + f.name
		}
	}
	return &exitError{exitNotRunning, fmt.Errorf("%w%s", nr, hint)}
}

// wrap gives a call's error its exit code.
func (f *sessionFlags) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, events.ErrBrowserGone):
		return &exitError{exitNotRunning, fmt.Errorf("session %q cannot go on: %w; it is closing (its trace is written); open a new one", f.name, err)}
	case errors.Is(err, agent.ErrClosed):
		return &exitError{exitNotRunning, fmt.Errorf("session %q is closing: %w", f.name, err)}
	}
	return &exitError{exitFailed, err}
}

// explained is an error told in other words; it still unwraps to the
// original.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// shellResult is the JSON object the session commands print with --json.
// ok, session, command, action, verdict, text and error are always
// present; the others when they apply.
type shellResult struct {
	OK      bool   `json:"ok"`
	Session string `json:"session"`
	Command string `json:"command"`
	// Action is the Driver action the command ran ("" for state, tabs, ...).
	Action  string `json:"action"`
	Verdict string `json:"verdict"`
	Text    string `json:"text"`
	Error   string `json:"error"`
	// Code classifies a failure: the control package's codes, plus
	// "not_running" and "timeout".
	Code     string `json:"code,omitempty"`
	ExitCode int    `json:"exit_code"`
	URL      string `json:"url,omitempty"`
	Title    string `json:"title,omitempty"`
	Step     int    `json:"step,omitempty"`
	// File is the file the command wrote (screenshot).
	File string `json:"file,omitempty"`
	// From and Total place the text in the page text (text).
	From  int `json:"from,omitempty"`
	Total int `json:"total,omitempty"`
	// Stale says which index was stale and why.
	Stale    *control.StaleIndex  `json:"stale,omitempty"`
	Tabs     []control.Tab        `json:"tabs,omitempty"`
	State    *events.BrowserState `json:"state,omitempty"`
	Sessions []control.Info       `json:"sessions,omitempty"`
	Actions  []control.Action     `json:"actions,omitempty"`
	// Info is the session's description (close: where its files are).
	Info *control.Info `json:"info,omitempty"`
}

// result fills a shellResult from a response and the call's error.
func (f *sessionFlags) result(resp *control.Response, err error) shellResult {
	r := shellResult{OK: err == nil, Session: f.name, Command: f.command}
	if resp != nil {
		r.Action, r.Verdict, r.Text, r.Code = resp.Action, string(resp.Verdict), resp.Text, resp.Code
		r.URL, r.Title, r.Step, r.Total, r.Stale = resp.URL, resp.Title, resp.Step, resp.Total, resp.Stale
		r.Tabs, r.State, r.Actions, r.Info = resp.Tabs, resp.State, resp.Actions, resp.Info
		if resp.ReadOnce != "" {
			r.Text += "\n\n" + resp.ReadOnce
		}
	}
	if err != nil {
		r.Error = err.Error()
		r.ExitCode = exitFailed
		var ec *exitError
		if errors.As(err, &ec) {
			r.ExitCode = ec.code
		}
		switch {
		case errors.Is(err, control.ErrNotRunning):
			r.Code = "not_running"
		case errors.Is(err, control.ErrTimeout):
			r.Code = "timeout"
		case errors.Is(err, events.ErrBrowserGone):
			r.Code = control.CodeBrowserGone
		}
	}
	return r
}

// finish prints r (as JSON with --json, else text when the command
// succeeded) and returns err.
func (f *sessionFlags) finish(stdout io.Writer, r shellResult, text string, err error) error {
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if eerr := enc.Encode(r); eerr != nil && err == nil {
			err = eerr
		}
		return err
	}
	if err == nil && text != "" {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err = io.WriteString(stdout, text)
	}
	return err
}

// newShellFlagSet is a session command's flag set with its usage text.
func newShellFlagSet(name, args, help string, sf *sessionFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	sf.register(fs)
	sf.command = name
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: browseragent %s %s[--session NAME] [--json] [--timeout D]\n", name, args)
		fmt.Fprintln(stderr, help)
		fmt.Fprintln(stderr, "It talks to the background session started by 'browseragent open' (docs/shell.md). Exit codes: 0 ok, 1 the action failed, 2 usage, 3 the session is not running.")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags anywhere among the arguments (click 12 --json),
// the way a shell user writes them; "--" ends the flags. It returns the
// positional arguments and the flag arguments as given.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (pos, flags []string, err error) {
	fs.SetOutput(stderr)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			return nil, nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if n := len(consumed); n > 0 && consumed[n-1] == "--" {
			return append(pos, rest...), append(flags, consumed[:n-1]...), nil
		}
		flags = append(flags, consumed...)
		if len(rest) == 0 {
			return pos, flags, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// index parses an element index.
func index(s string, zeroOK bool) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || (n == 0 && !zeroOK) {
		return 0, usagef("%q is not an element index (a number from the last state)", s)
	}
	return n, nil
}

// actionCmd is a command that runs one Driver action. setup registers the
// command's own flags and returns the function that builds the action from
// the positional arguments (nmin to nmax of them).
func actionCmd(name, args, help string, nmin, nmax int, setup func(fs *flag.FlagSet) func(pos []string) (string, any, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		var sf sessionFlags
		fs := newShellFlagSet(name, args, help, &sf, stderr)
		build := setup(fs)
		pos, _, err := parseArgs(fs, argv, stderr)
		if err != nil {
			return err
		}
		if len(pos) < nmin || len(pos) > nmax {
			if nmin == nmax {
				return usagef("want %d argument(s): %s", nmin, strings.TrimSpace(args))
			}
			return usagef("want %d to %d arguments: %s", nmin, nmax, strings.TrimSpace(args))
		}
		action, params, err := build(pos)
		if err != nil {
			return err
		}
		return sf.do(ctx, stdout, action, params)
	}
}

// do runs one action in the session and prints its record.
func (f *sessionFlags) do(ctx context.Context, stdout io.Writer, action string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	resp, err := f.call(ctx, control.Request{Op: control.OpDo, Action: action, Params: raw})
	switch {
	case err == nil || resp == nil:
	case resp.Code == control.CodeUnknownAction && action == "evaluate":
		err = &exitError{exitFailed, &explained{err.Error() + " (eval needs a session opened with --allow-evaluate)", err}}
	case resp.Code == control.CodeFailed && resp.Text != "":
		// The record says what was tried and how it ended; the error why.
		msg := resp.Text
		if resp.Error != "" && !strings.Contains(msg, resp.Error) {
			msg += " Error: " + resp.Error
		}
		err = &exitError{exitFailed, &explained{msg, err}}
	}
	r := f.result(resp, err)
	return f.finish(stdout, r, r.Text, err)
}

// Action commands.
var (
	runClick = actionCmd("click", "N ", "Clicks element N of the last state and prints what happened (navigated, changed, no_change, new_tab, ...).", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				return "click", map[string]any{"index": i}, err
			}
		})
	runType = actionCmd("type", `N "text" [--no-clear] `, "Types text into element N (0: the focused element), clearing it first unless --no-clear. <secret>name</secret> types a secret given to open with --secret-env.", 2, 2,
		func(fs *flag.FlagSet) func([]string) (string, any, error) {
			noClear := fs.Bool("no-clear", false, "keep the field's text and type after it")
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], true)
				return "input", map[string]any{"index": i, "text": pos[1], "clear": !*noClear}, err
			}
		})
	runSelect = actionCmd("select", `N "Option" [--only] `, "Selects the option with this text (or value) in dropdown N; on a multi-select it adds to the selection, or with --only makes it the only selected option.", 2, 2,
		func(fs *flag.FlagSet) func([]string) (string, any, error) {
			only := fs.Bool("only", false, "deselect the other options of a multi-select first")
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				p := map[string]any{"index": i, "text": pos[1]}
				if *only {
					p["clear"] = true
				}
				return "select_dropdown", p, err
			}
		})
	runOptions = actionCmd("options", "N ", "Lists the options of dropdown N.", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				return "dropdown_options", map[string]any{"index": i}, err
			}
		})
	runValue = actionCmd("value", "N ", "Prints the whole value of field N (the state cuts long values): an input's, a textarea's, a select's selected options, an editable element's text.", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				return "read_value", map[string]any{"index": i}, err
			}
		})
	runHover = actionCmd("hover", "N ", "Moves the mouse over element N (menus that open on hover).", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				return "hover", map[string]any{"index": i}, err
			}
		})
	runScroll = actionCmd("scroll", "[down|up] [--pages P] [--index N] ", "Scrolls the page (or scrollable element N) by P viewport heights (default 1), down unless told up.", 0, 1,
		func(fs *flag.FlagSet) func([]string) (string, any, error) {
			pages := fs.Float64("pages", 1, "viewport heights to scroll")
			idx := fs.Int("index", 0, "scroll this scrollable element instead of the page")
			return func(pos []string) (string, any, error) {
				down := true
				if len(pos) == 1 {
					switch pos[0] {
					case "down":
					case "up":
						down = false
					default:
						return "", nil, usagef("scroll %q: want down or up", pos[0])
					}
				}
				if *pages <= 0 {
					return "", nil, usagef("--pages must be positive")
				}
				p := map[string]any{"down": down, "pages": *pages}
				if *idx > 0 {
					p["index"] = *idx
				}
				return "scroll", p, nil
			}
		})
	runKeys = actionCmd("keys", "KEYS ", `Presses keys in the focused element: Enter, Escape, Tab, Control+a, ... (one argument; quote combinations like "Control+a Delete").`, 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) { return "send_keys", map[string]any{"keys": pos[0]}, nil }
		})
	runBack = actionCmd("back", "", "Goes back to the previous page of the tab.", 0, 0,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func([]string) (string, any, error) { return "go_back", map[string]any{}, nil }
		})
	runNavigate = actionCmd("navigate", "URL [--new-tab] ", "Opens URL in the session's tab (or a new one).", 1, 1,
		func(fs *flag.FlagSet) func([]string) (string, any, error) {
			newTab := fs.Bool("new-tab", false, "open it in a new tab")
			return func(pos []string) (string, any, error) {
				return "navigate", map[string]any{"url": pos[0], "new_tab": *newTab}, nil
			}
		})
	runTab = actionCmd("tab", "ID ", "Switches to the tab with this id (the 4 characters 'tabs' and 'state' show).", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) { return "switch_tab", map[string]any{"tab_id": pos[0]}, nil }
		})
	runWait = actionCmd("wait", "[SECONDS] ", "Waits for the page (default 3 seconds, at most 30).", 0, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				p := map[string]any{}
				if len(pos) == 1 {
					n, err := strconv.Atoi(pos[0])
					if err != nil || n < 0 {
						return "", nil, usagef("wait %q: want whole seconds", pos[0])
					}
					p["seconds"] = n
				}
				return "wait", p, nil
			}
		})
	runUpload = actionCmd("upload", "N PATH ", "Uploads the file PATH into file input N. The session may upload only the files named with --upload-file when it was opened.", 2, 2,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				if err != nil {
					return "", nil, err
				}
				abs, err := filepath.Abs(pos[1])
				return "upload_file", map[string]any{"index": i, "path": abs}, err
			}
		})
	runEval = actionCmd("eval", "CODE ", "Runs a JavaScript expression in the page and prints its JSON value. Only in a session opened with --allow-evaluate.", 1, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) { return "evaluate", map[string]any{"code": pos[0]}, nil }
		})
)

// runDo runs any action the session offers by name, with JSON parameters;
// without a name it lists them.
func runDo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("do", "[ACTION ['{json params}']] ", "Runs any action the session offers, by name, with its parameters as JSON (as a model writes them); without an action, lists them.", &sf, stderr)
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		resp, err := sf.call(ctx, control.Request{Op: control.OpActions})
		r := sf.result(resp, err)
		var b strings.Builder
		if resp != nil {
			for _, a := range resp.Actions {
				fmt.Fprintf(&b, "%s %s\n", a.Name, paramSummary(a.Params))
				if a.Description != "" { // a name that says it all has none
					fmt.Fprintf(&b, "    %s\n", a.Description)
				}
			}
		}
		return sf.finish(stdout, r, b.String(), err)
	case 1, 2:
		params := json.RawMessage(`{}`)
		if len(pos) == 2 {
			if !json.Valid([]byte(pos[1])) {
				return usagef("the parameters are not JSON: %s", pos[1])
			}
			params = json.RawMessage(pos[1])
		}
		return sf.do(ctx, stdout, pos[0], params)
	}
	return usagef("want an action name and at most one JSON argument")
}

// runStateCommand is "state": with a URL, the one-shot command (a browser
// of its own, printed, stopped); without one, the running session's page.
func runStateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("state", "[--screenshot FILE] ", "", &sf, io.Discard)
	shot := fs.String("screenshot", "", "also save a screenshot of the page to this PNG file")
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintln(stderr, "usage: browseragent state [--session NAME] [--screenshot FILE] [--json] [--timeout D]")
			fmt.Fprintln(stderr, "   or: browseragent state [flags] URL")
			fmt.Fprintln(stderr, "Without a URL: prints the page of the background session started by 'browseragent open', exactly as a model reads it, and makes its element indexes the ones click, type, ... use (until the next state).")
			fmt.Fprintln(stderr, "With a URL: one-shot: launches a browser of its own, prints what the model would see of the page, and stops it. Its flags:")
			return runState(ctx, []string{"-h"}, stdout, stderr)
		}
	}
	pos, _, err := parseArgs(fs, args, io.Discard)
	if err != nil || len(pos) > 0 {
		// A URL, or the one-shot command's flags.
		return runState(ctx, args, stdout, stderr)
	}
	resp, err := sf.call(ctx, control.Request{Op: control.OpState, Screenshot: *shot != "", Detail: sf.json})
	if err == nil && *shot != "" {
		if len(resp.Screenshot) == 0 {
			err = &exitError{exitFailed, errors.New("the session took no screenshot")}
		} else if werr := os.WriteFile(*shot, resp.Screenshot, 0o644); werr != nil {
			err = werr
		}
	}
	r := sf.result(resp, err)
	if *shot != "" && err == nil {
		r.File = *shot
	}
	text := ""
	if resp != nil {
		text = "<browser_state>\n" + resp.Text + "</browser_state>\n"
	}
	return sf.finish(stdout, r, text, err)
}

// runScreenshot saves a screenshot of the session's focused tab; the
// indexes of the last state stay valid.
func runScreenshot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("screenshot", "FILE ", "Saves a PNG of the session's page (the viewport) to FILE. The indexes of the last state stay valid.", &sf, stderr)
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want the PNG file to write")
	}
	resp, err := sf.call(ctx, control.Request{Op: control.OpScreenshot})
	if err == nil {
		err = os.WriteFile(pos[0], resp.Screenshot, 0o644)
	}
	r := sf.result(resp, err)
	if err == nil {
		r.File = pos[0]
		r.Text = fmt.Sprintf("Saved a screenshot of %s to %s (%d bytes).", resp.URL, pos[0], len(resp.Screenshot))
	}
	return sf.finish(stdout, r, r.Text, err)
}

// runTabs lists the session's tabs.
func runTabs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("tabs", "", "Lists the session's tabs: id, URL and title; * marks the focused one.", &sf, stderr)
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("tabs takes no arguments")
	}
	resp, err := sf.call(ctx, control.Request{Op: control.OpTabs})
	r := sf.result(resp, err)
	var b strings.Builder
	if resp != nil {
		for _, t := range resp.Tabs {
			mark := " "
			if t.Focused {
				mark = "*"
			}
			fmt.Fprintf(&b, "%s %s %s - %s\n", mark, t.ID, t.URL, t.Title)
		}
	}
	return sf.finish(stdout, r, b.String(), err)
}

// runText prints a chunk of the page's text.
func runText(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf sessionFlags
	fs := newShellFlagSet("text", "[--from N] [--max N] ", "Prints the page's text (markdown), a chunk at a time; stderr says where the rest starts.", &sf, stderr)
	from := fs.Int("from", 0, "the first character")
	maxc := fs.Int("max", 0, "at most this many characters (default 30000)")
	pos, _, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("text takes no arguments")
	}
	resp, err := sf.call(ctx, control.Request{Op: control.OpText, From: *from, Max: *maxc})
	r := sf.result(resp, err)
	r.From = *from
	if err == nil && !sf.json {
		if end := *from + len(resp.Text); end < resp.Total {
			defer fmt.Fprintf(stderr, "[characters %d to %d of %d; the rest: browseragent text --from %d]\n", *from, end, resp.Total, end)
		}
	}
	return sf.finish(stdout, r, r.Text, err)
}

// paramSummary words an action's parameter schema as {"name": type, ...},
// optional ones marked with ?.
func paramSummary(schema json.RawMessage) string {
	var sc struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	// Keep the schema's order: decode the property names in sequence.
	var order struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &sc) != nil || json.Unmarshal(schema, &order) != nil {
		return string(schema)
	}
	var names []string
	dec := json.NewDecoder(bytes.NewReader(order.Properties))
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && dec.More() {
				names = append(names, v)
				// Skip the value.
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return string(schema)
				}
			}
		}
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		opt := "?"
		if slices.Contains(sc.Required, n) {
			opt = ""
		}
		parts = append(parts, fmt.Sprintf("%q%s: %s", n, opt, sc.Properties[n].Type))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
