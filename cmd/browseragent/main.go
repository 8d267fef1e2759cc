// Command browseragent runs LLM-driven browser agents and inspects what
// they see and did.
//
//	browseragent demo                    the offline demo (no key, no network)
//	browseragent run "task" [flags]      run a task with a real model
//	browseragent replay [flags] HISTORY  replay a recorded run without the model
//	browseragent state URL [flags]       print what the model would see
//	browseragent report TRACE [-o FILE]  turn a trace into an HTML report
//	browseragent verify TRACE            check a trace's hash chain
//	browseragent mcp [flags]             serve the browser to MCP clients (stdio or --http)
//	browseragent doctor [--json]         which browser would be launched, its version, and why
//
// Scale out (docs/scaling.md):
//
//	browseragent batch FILE|- [flags]    run many tasks concurrently on a pool of sessions
//	browseragent worker [flags]          a Temporal worker (runs the add-on browseragent-temporal)
//	browseragent submit "task" [--wait]  submit a task to Temporal (add-on)
//	browseragent cancel ID               cancel a submitted task (add-on)
//
// A background session for shells and scripts (docs/shell.md):
//
//	browseragent open URL [--session NAME]   start a background session (or reuse it) on URL
//	browseragent state                       print the session's page; its indexes apply until the next state
//	browseragent click N | type N "text" | select N "Option" | options N | hover N
//	browseragent scroll [up] | keys Enter | back | navigate URL | tab ID | wait [S] | upload N PATH | eval CODE
//	browseragent screenshot FILE | tabs | text | do ACTION [JSON]
//	browseragent sessions | close            list the running sessions; end one (trace written)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitUsage is the exit code for a bad command line.
const exitUsage = 2

// usageError is a command-line mistake: it prints usage and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "run the offline demo: a bundled site, a scripted model, a trace and a report", runDemo},
		{"run", "run a task with a model (--model provider:name)", runTask},
		{"replay", "run a recorded history.json again without the model (--dry-run prints the plan)", runReplay},
		{"state", "print what the model would see: of URL (one-shot), or without URL of the open session", runStateCommand},
		{"tokens", "print the prompt of a task's first step on a page (--url) with its tokens per part, without a model", runTokens},
		{"report", "turn a trace into a self-contained HTML report", runReport},
		{"verify", "check that a trace is complete and unedited", runVerify},
		{"open", "start a background session on URL (or open URL in the running one)", runOpen},
		{"click", "session: click element N", runClick},
		{"type", "session: type text into element N", runType},
		{"select", "session: select an option of dropdown N", runSelect},
		{"options", "session: list the options of dropdown N", runOptions},
		{"value", "session: print the whole value of field N", runValue},
		{"hover", "session: move the mouse over element N", runHover},
		{"drag", "session: drag element N onto element M or by an offset", runDrag},
		{"pdf", "session: print the text of the PDF the tab shows", runPDF},
		{"scroll", "session: scroll the page down or up", runScroll},
		{"keys", "session: press keys (Enter, Escape, Control+a)", runKeys},
		{"back", "session: go back", runBack},
		{"navigate", "session: open a URL", runNavigate},
		{"tab", "session: switch to a tab", runTab},
		{"tabs", "session: list the tabs", runTabs},
		{"text", "session: print the page's text", runText},
		{"screenshot", "session: save a PNG of the page", runScreenshot},
		{"wait", "session: wait for the page", runWait},
		{"upload", "session: upload a file into file input N", runUpload},
		{"eval", "session: run JavaScript (sessions opened with --allow-evaluate)", runEval},
		{"do", "session: run any action by name with JSON parameters", runDo},
		{"sessions", "list the running background sessions", runSessions},
		{"close", "end a background session: history, trace and report written", runClose},
		{serveCommand, "", runServeSession},
		{"mcp", "serve the browser to MCP clients (Claude Code, Cursor, …) over stdio or --http", runMCP},
		{"batch", "run many tasks (one a line, or JSON lines) concurrently on a pool of sessions", runBatch},
		{"worker", "run a Temporal worker (hands off to the add-on browseragent-temporal)", handoff("worker")},
		{"submit", "submit a task to Temporal, --wait for its result (add-on browseragent-temporal)", handoff("submit")},
		{"cancel", "cancel a task submitted to Temporal (add-on browseragent-temporal)", handoff("cancel")},
		{"doctor", "say which browser would be launched and why, its version, and where sessions keep files", runDoctor},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		var ue *usageError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "browseragent %s: %v\n", c.name, err)
			fmt.Fprintf(stderr, "run 'browseragent %s -h' for usage\n", c.name)
			return exitUsage
		default:
			// A silent error (a child command's exit) was explained by
			// whoever failed.
			var se interface{ silent() bool }
			if !errors.As(err, &se) || !se.silent() {
				fmt.Fprintf(stderr, "browseragent %s: %v\n", c.name, err)
			}
			var ec interface{ exitCode() int }
			if errors.As(err, &ec) {
				return ec.exitCode()
			}
			return 1
		}
	}
	fmt.Fprintf(stderr, "browseragent: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: browseragent <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		if c.summary == "" {
			continue // internal
		}
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}

// parseFlags parses a command's flags, turning parse errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	return nil
}
