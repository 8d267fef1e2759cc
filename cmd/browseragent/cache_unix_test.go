//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run --cache refuses a folder others may write, before anything starts:
// an entry planted there would make the run act as it says.
func TestRunCacheRefusesAWritableFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--cache", dir, "say ok")
	if r.code == 0 || !strings.Contains(r.stderr, "--cache") || !strings.Contains(r.stderr, "writable by group or others") {
		t.Fatalf("a 0777 --cache folder: exit %d, stderr %s", r.code, r.stderr)
	}
}
