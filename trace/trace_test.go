package trace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/bus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type typeEvent struct {
	Field    string
	Password string
}

func writeSample(t *testing.T, path string) string {
	t.Helper()
	w, err := Create(path, WithSecrets(map[string]string{"password": `hunter2 "quoted"`}), WithMetadata(map[string]any{"task": "demo"}))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.WithName("s1"))
	w.ObserveBus(b)
	k := bus.Kind[typeEvent, string]{Name: "TypeText"}
	if _, err := bus.Handle(b, k, "actions", func(_ context.Context, e typeEvent) (string, error) {
		return "typed " + e.Password, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Call(context.Background(), b, k, typeEvent{Field: "pw", Password: `hunter2 "quoted"`}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(TypeModel, map[string]any{"prompt_chars": 1200, "echo": `my password is hunter2 "quoted"`}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(TypeModel, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close = %v", err)
	}
	return w.Head()
}

func TestTraceChainsRedactsAndVerifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	head := writeSample(t, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Fatalf("secret reached the trace:\n%s", raw)
	}
	if !bytes.Contains(raw, []byte(`secret:password`)) {
		t.Fatal("no redaction marker in the trace")
	}
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !rep.Closed || rep.Head != head || rep.Records < 6 {
		t.Fatalf("report %+v, head %s", rep, head)
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, r := range recs {
		if r.Type == TypeBus {
			phases = append(phases, r.Phase)
		}
	}
	if got := strings.Join(phases, ","); !strings.Contains(got, "dispatched") || !strings.Contains(got, "completed") {
		t.Fatalf("bus phases = %s", got)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	writeSample(t, path)
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	cases := map[string][]string{
		"removed line":  append(append([]string{}, lines[:2]...), lines[3:]...),
		"swapped lines": append(append(append([]string{}, lines[:2]...), lines[3], lines[2]), lines[4:]...),
		"edited line":   append(append(append([]string{}, lines[:2]...), strings.Replace(lines[2], `"time":"2`, `"time":"1`, 1)), lines[3:]...),
		"not json":      append(append(append([]string{}, lines[:2]...), "garbage"), lines[3:]...),
	}
	for name, ls := range cases {
		_, err := Verify(strings.NewReader(strings.Join(ls, "\n") + "\n"))
		var te *TamperError
		if !errors.As(err, &te) || !errors.Is(err, ErrTampered) || te.Line != 3 {
			t.Errorf("%s: err = %v, want a TamperError at line 3", name, err)
		}
	}
	// A cut tail verifies but is reported as not closed.
	rep, err := Verify(strings.NewReader(strings.Join(lines[:len(lines)-1], "\n") + "\n"))
	if err != nil || rep.Closed {
		t.Fatalf("truncated trace: %+v %v, want verified but not closed", rep, err)
	}
	if _, err := Verify(strings.NewReader("")); !errors.Is(err, ErrTampered) {
		t.Fatalf("empty trace = %v", err)
	}
}
