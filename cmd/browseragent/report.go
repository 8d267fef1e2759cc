package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/browseragent/browseragent/report"
)

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("o", "", "output HTML file (default: the trace's name with .html)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent report [-o report.html] TRACE")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one trace file")
	}
	in := fs.Arg(0)
	dst := *out
	if dst == "" {
		dst = strings.TrimSuffix(in, filepath.Ext(in)) + ".html"
	}
	if err := report.WriteFile(in, dst); err != nil {
		return err
	}
	fmt.Fprintln(stdout, dst)
	return nil
}
