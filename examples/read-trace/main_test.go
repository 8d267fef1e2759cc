package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/trace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(trace.TypeStep, trace.Step{Step: 1, NextGoal: "open the form", Actions: []trace.Action{{Name: "click", Params: json.RawMessage(`{"index":3}`), Verdict: "navigated"}}})
	w.Write(trace.TypeRun, trace.Run{Done: true, Success: true, FinalText: "sent"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(path, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verified 4 records (closed: true", "step 1  open the form", "click           navigated", `result: done=true success=true "sent"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// An edited trace is refused.
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(raw, []byte("navigated"), []byte("no_change"), 1), 0o644)
	if err := run(path, &out); err == nil || !strings.Contains(err.Error(), "not trustworthy") {
		t.Fatalf("edited trace: %v", err)
	}
}
