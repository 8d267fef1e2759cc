//go:build unix

package cdp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestReapLeftovers needs Unix: on Windows a browser dies with its owner
// (its job object), so ReapLeftovers has nothing to kill there.
func TestReapLeftovers(t *testing.T) {
	testbrowser.Start(t)
	ctx := ctxT(t)
	bin, err := cdp.FindChrome()
	if err != nil {
		t.Fatal(err)
	}
	// A dead owner: a process that has exited and been reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	dir, err := os.MkdirTemp("", cdp.ProfilePrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A leftover browser of that dead owner (not started by Launch, so no
	// Pdeathsig tie to us).
	args := []string{"--headless=new", "--remote-debugging-port=0", "--user-data-dir=" + dir, "--no-first-run", "--disable-gpu", "about:blank"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	leftover := exec.Command(bin, args...)
	leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its singleton socket in a TMPDIR of the test's: killed, it would
	// leave an org.chromium.Chromium.* entry where other tests count them.
	leftover.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- leftover.Wait() }()
	defer func() {
		_ = syscall.Kill(-leftover.Process.Pid, syscall.SIGKILL)
		<-exited
	}()
	// Wait until it is really up.
	for deadline := time.Now().Add(wait); ; {
		if _, err := os.Stat(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("leftover browser did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Only now mark it as a dead owner's: a Launch in another test binary
	// running at the same time would otherwise reap it before it started.
	if err := os.WriteFile(filepath.Join(dir, "browseragent-owner"), []byte(strconv.Itoa(deadPID)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A profile whose owner is alive (us) must survive.
	live, err := os.MkdirTemp("", cdp.ProfilePrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	if err := os.WriteFile(filepath.Join(live, "browseragent-owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}

	b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("leftover exited with %v, want killed", err)
		}
	case <-ctx.Done():
		t.Fatal("leftover browser was not reaped by Launch")
	}
	exited <- nil // for the deferred cleanup
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("leftover profile not removed: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("profile of a live owner was removed: %v", err)
	}
}
