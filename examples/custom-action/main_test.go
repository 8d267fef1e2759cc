package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "recorded: Gopher plush 24.90") || !strings.Contains(out.String(), "success true") {
		t.Fatalf("output:\n%s", out.String())
	}
}
