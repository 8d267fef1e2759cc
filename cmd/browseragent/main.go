// Command browseragent runs LLM-driven browser agents and inspects what
// they see and did.
//
//	browseragent demo                    the offline demo (no key, no network)
//	browseragent run "task" [flags]      run a task with a real model
//	browseragent state URL [flags]       print what the model would see
//	browseragent report TRACE [-o FILE]  turn a trace into an HTML report
//	browseragent verify TRACE            check a trace's hash chain
//	browseragent mcp [flags]             serve the browser to MCP clients (stdio or --http)
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
		{"state", "print exactly what the model would see for a page", runState},
		{"report", "turn a trace into a self-contained HTML report", runReport},
		{"verify", "check that a trace is complete and unedited", runVerify},
		{"mcp", "serve the browser to MCP clients (Claude Code, Cursor, …) over stdio or --http", runMCP},
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
			fmt.Fprintf(stderr, "browseragent %s: %v\n", c.name, err)
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
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
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
