// Command benchperception measures one observation of a page against the
// raw capture floor and, optionally, Playwright's AI snapshot, on the same
// warm Chromium (issue 13's table):
//
//	go run ./cmd/benchperception                 (make bench-perception)
//	go run ./cmd/benchperception --playwright    (adds Playwright's column)
//	go run ./cmd/benchperception --pages gen-1000,go-spec --rounds 3 --json > run.json
//	go run ./cmd/benchperception --from-json run.json   (the table of a saved run)
//
// Per page and per round, in this order: the floor (DOM.getDocument(-1,
// pierce) and DOMSnapshot.captureSnapshot issued together), browseragent's
// observation (a BrowserStateRequest with the DOM, no screenshot, through
// a session with the default watchdogs, after a one-attribute change of the
// page so that it is a fresh observation, as after an action), the same
// observation again with nothing changed (the re-observe), and Playwright's
// page.locator('body').ariaSnapshot({mode: 'ai'}) in a tab of its own on
// the same browser (connectOverCDP). Each tool is warmed once per page,
// untimed; the table gives each tool's median over the rounds and the
// ratios of the medians. Playwright is a Node dependency of this command
// only: --playwright installs playwright-core with npm into a cache folder
// outside the repository (or uses --playwright-dir); without it the column
// says "–".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "benchperception: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var res result
	if opts.FromJSON != "" {
		data, err := os.ReadFile(opts.FromJSON)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", opts.FromJSON, err)
		}
		res.finish()
	} else if res, err = bench(ctx, opts, stderr); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(stdout, res)
	}
	return writeTable(stdout, res)
}
