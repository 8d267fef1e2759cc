package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
)

// cacheWriterEnv makes this test binary a writer process of
// TestDirCacheTwoProcesses: it names the shared folder.
const cacheWriterEnv = "BROWSERAGENT_TEST_CACHE_WRITER"

// Two processes write and read the same keys of one DirCache folder at
// once: every Get reads a whole entry of its key or none (never a torn or
// corrupt file), and no temporary file is left behind.
func TestDirCacheTwoProcesses(t *testing.T) {
	if dir := os.Getenv(cacheWriterEnv); dir != "" {
		cacheWriter(t, dir)
		return
	}
	dir := t.TempDir()
	newDirCache(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDirCacheTwoProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), cacheWriterEnv+"="+dir, fmt.Sprintf("BROWSERAGENT_TEST_CACHE_WRITER_ID=%d", i))
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || !strings.Contains(outs[i], "PASS") {
			t.Fatalf("writer %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	c := newDirCache(t, dir)
	for k := range 20 {
		key := fmt.Sprintf("key-%d", k)
		e, err := c.Get(ctx, key)
		if err != nil || e.Key != key || len(e.Actions) != 1 {
			t.Fatalf("after both writers, %s: %+v, %v", key, e, err)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".entry-*")); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// cacheWriter is one writer process: it writes each of 20 keys 10 times,
// reading a key after each write; any Get error but a miss fails it.
func cacheWriter(t *testing.T, dir string) {
	c, err := agent.NewDirCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("BROWSERAGENT_TEST_CACHE_WRITER_ID")
	ctx := context.Background()
	for round := range 10 {
		for k := range 20 {
			key := fmt.Sprintf("key-%d", k)
			e := &agent.CacheEntry{Model: "writer-" + id, PromptVersion: fmt.Sprint(round),
				Memory: strings.Repeat("x", 4000), Actions: []agent.CachedAction{{Name: "click"}}}
			if err := c.Put(ctx, key, e); err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
			other := fmt.Sprintf("key-%d", (k+7)%20)
			got, err := c.Get(ctx, other)
			switch {
			case errors.Is(err, agent.ErrCacheMiss):
			case err != nil:
				t.Fatalf("get %s: %v", other, err)
			case got.Key != other || len(got.Actions) != 1 || len(got.Memory) != 4000:
				t.Fatalf("get %s: a torn entry %+v", other, got)
			}
		}
	}
}
