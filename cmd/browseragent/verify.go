package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/browseragent/browseragent/trace"
)

func runVerify(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	head := fs.String("head", "", "expected head hash (as printed at the end of the run); detects a cut tail")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent verify [--head HASH] TRACE")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one trace file")
	}
	rep, err := trace.VerifyFile(fs.Arg(0))
	if err != nil {
		return err
	}
	if *head != "" && *head != rep.Head {
		return fmt.Errorf("trace: head %s does not match the expected %s (records were added or removed at the end)", rep.Head, *head)
	}
	if !rep.Closed {
		return fmt.Errorf("trace: %d records verify, but the close record is missing: the trace may have been cut short", rep.Records)
	}
	fmt.Fprintf(stdout, "ok: %d records, chain intact, head %s\n", rep.Records, rep.Head)
	return nil
}
