// Command read-trace verifies an audit trace and prints what happened in
// it: the run's result, each step with its actions and verdicts, and the
// events that failed.
//
//	go run ./examples/read-trace out/demo/trace.jsonl
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/browseragent/browseragent/trace"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: read-trace TRACE")
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(path string, out io.Writer) error {
	// First the chain: a trace that fails here was edited or cut.
	rep, err := trace.VerifyFile(path)
	if err != nil {
		return fmt.Errorf("not trustworthy: %w", err)
	}
	fmt.Fprintf(out, "verified %d records (closed: %v, head %.12s…)\n", rep.Records, rep.Closed, rep.Head)

	recs, err := trace.ReadFile(path)
	if err != nil {
		return err
	}
	for _, r := range recs {
		switch r.Type {
		case trace.TypeStep:
			var st trace.Step
			if err := json.Unmarshal(r.Data, &st); err != nil {
				return err
			}
			fmt.Fprintf(out, "step %d  %s\n", st.Step, st.NextGoal)
			for _, a := range st.Actions {
				fmt.Fprintf(out, "  %-15s %s %s\n", a.Name, a.Verdict, a.Error)
			}
		case trace.TypeBus:
			if r.Phase == "completed" && r.Error != "" {
				fmt.Fprintf(out, "event %s #%d failed: %s\n", r.Kind, r.EventID, r.Error)
			}
		case trace.TypeRun:
			var run trace.Run
			if err := json.Unmarshal(r.Data, &run); err != nil {
				return err
			}
			fmt.Fprintf(out, "result: done=%v success=%v %q\n", run.Done, run.Success, run.FinalText)
		}
	}
	return nil
}
