package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The agent runs on the replacement perception: every observation is the
// custom watchdog's, the model sees its text, and the run completes by
// clicking the indexes it handed out.
func TestExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"the model saw its text: true", "result: subscribed (success true)", "final page: /thanks?email=ada%40example.com"} {
		if !strings.Contains(got, want) {
			t.Fatalf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "observations by the custom perception: 0\n") {
		t.Fatalf("the default DOM watchdog answered:\n%s", got)
	}
}
