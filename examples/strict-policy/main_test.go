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
	got := out.String()
	for _, want := range []string{
		`dialogs decided by the policy: ["confirm: Delete your account for good?"]`,
		"blocked", // the navigation to the other host
		"denied by approval policy: page scripts are not approved", // evaluate
		"result: success=false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
