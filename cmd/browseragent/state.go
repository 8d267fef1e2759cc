package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

func runState(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("state", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	asJSON := fs.Bool("json", false, "print the whole observation as JSON (without the screenshot bytes)")
	shot := fs.String("screenshot", "", "also save the screenshot the model would get to this PNG file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent state [flags] URL")
		fmt.Fprintln(stderr, "Prints exactly what the model would see of the page: the indexed elements and the page facts.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one URL")
	}
	s, err := startSession(ctx, &bf)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stopSession(s); err == nil {
			err = serr
		}
	}()
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: fs.Arg(0)}); err != nil {
		return err
	}
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: *shot != ""})
	if err != nil {
		return err
	}
	if *shot != "" {
		if len(st.Screenshot) == 0 {
			return fmt.Errorf("no screenshot was taken")
		}
		if err := os.WriteFile(*shot, st.Screenshot, 0o644); err != nil {
			return err
		}
	}
	if *asJSON {
		st.Screenshot = nil
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	_, err = io.WriteString(stdout, formatState(st))
	return err
}

// formatState is the <browser_state> section exactly as the agent sends it.
func formatState(st events.BrowserState) string {
	return "<browser_state>\n" + agent.BrowserStateText(&st, 0) + "</browser_state>\n"
}
