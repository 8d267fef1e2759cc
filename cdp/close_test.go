package cdp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// poll waits until cond holds, checking every 20 ms, for at most wait.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupEnded checks that no process of group pgid runs any more (Close's
// promise), then waits until init has reaped their zombies too.
func groupEnded(t *testing.T, pgid int) {
	t.Helper()
	if live := liveGroupMembers(pgid); len(live) > 0 {
		t.Fatalf("processes of group %d still run: %v", pgid, live)
	}
	poll(t, "the group's zombies to be reaped", func() bool {
		return !testbrowser.GroupExists(pgid)
	})
}

// liveGroupMembers lists the processes of group pgid that are not zombies.
func liveGroupMembers(pgid int) []string {
	var live []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			live = append(live, p.Name()+":"+f[0])
		}
	}
	return live
}

func gone(path string) bool {
	_, err := os.Lstat(path)
	return os.IsNotExist(err)
}

// fakeBrowser writes a script that plays a browser: it publishes a
// DevToolsActivePort, records its TMPDIR and the SIGINTs it gets in the
// file $FAKE_LOG, and never quits by itself.
func fakeBrowser(t *testing.T) (script, logFile string) {
	dir := t.TempDir()
	script = filepath.Join(dir, "fake-chrome")
	logFile = filepath.Join(dir, "log")
	const body = `#!/bin/sh
for a in "$@"; do case "$a" in --user-data-dir=*) d="${a#--user-data-dir=}";; esac; done
trap 'echo INT >> "$FAKE_LOG"' INT
echo "TMPDIR=$TMPDIR" >> "$FAKE_LOG"
printf '9\n/devtools/browser/fake\n' > "$d/DevToolsActivePort"
while :; do sleep 1 & wait $!; done
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script, logFile
}

func TestCloseIsGraceful(t *testing.T) {
	testbrowser.Start(t)
	ctx := ctxT(t)
	// A generous grace, so that a loaded machine still sees the clean quit.
	const grace = 30 * time.Second
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{GracefulClose: grace})
	if err != nil {
		t.Fatal(err)
	}
	dir, pid := b.UserDataDir(), b.PID()
	start := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Exit status 0: Chromium quit by itself, it was not killed.
	if werr := b.Wait(); werr != nil {
		t.Fatalf("browser did not quit cleanly: %v", werr)
	}
	if took >= grace {
		t.Fatalf("Close took %v", took)
	}
	if !gone(dir) {
		t.Fatalf("profile %s left", dir)
	}
	groupEnded(t, pid)
	t.Logf("graceful Close took %v", took)
}

func TestCloseKillsAfterTheGrace(t *testing.T) {
	testbrowser.Start(t)
	ctx := ctxT(t)
	script, logFile := fakeBrowser(t)
	const grace = 500 * time.Millisecond
	b, err := cdp.Launch(ctx, cdp.LaunchOptions{ExecPath: script, GracefulClose: grace,
		Env: []string{"FAKE_LOG=" + logFile}, StartTimeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	dir := b.UserDataDir()
	start := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if werr := b.Wait(); werr == nil || !strings.Contains(werr.Error(), "killed") {
		t.Fatalf("want killed, got %v", werr)
	}
	if took < grace || took > grace+20*time.Second {
		t.Fatalf("Close took %v with a grace of %v", took, grace)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "INT") {
		t.Fatalf("the browser was not asked to quit: %q", log)
	}
	// Its TMPDIR was the temporary profile's own folder.
	if !strings.Contains(string(log), "TMPDIR="+filepath.Join(dir, "tmp")+"\n") {
		t.Fatalf("TMPDIR not inside the profile %s: %q", dir, log)
	}
	if !gone(dir) {
		t.Fatalf("profile %s left", dir)
	}
	t.Logf("Close of a browser ignoring SIGINT took %v (grace %v)", took, grace)

	// A negative grace kills at once: no SIGINT.
	script2, logFile2 := fakeBrowser(t)
	b2, err := cdp.Launch(ctx, cdp.LaunchOptions{ExecPath: script2, GracefulClose: -1,
		Env: []string{"FAKE_LOG=" + logFile2}, StartTimeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if werr := b2.Wait(); werr == nil || !strings.Contains(werr.Error(), "killed") {
		t.Fatalf("want killed, got %v", werr)
	}
	if log, _ := os.ReadFile(logFile2); strings.Contains(string(log), "INT") {
		t.Fatalf("negative grace sent SIGINT: %q", log)
	}
}

// chromiumEntries returns the org.chromium.Chromium.* names in os.TempDir().
func chromiumEntries(t *testing.T) map[string]bool {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "org.chromium.Chromium.") {
			out[e.Name()] = true
		}
	}
	return out
}

// TestNoChromiumTempEntries launches real browsers and checks that their
// singleton-socket directory (the org.chromium.Chromium.* entry Chromium
// makes in TMPDIR) lives in a directory of ours that Close removes. Other
// processes may add such entries to os.TempDir() meanwhile, so a new entry
// counts only if it carries our browser's singleton cookie.
func TestNoChromiumTempEntries(t *testing.T) {
	testbrowser.Start(t)
	for _, given := range []bool{false, true} {
		name := "temporary profile"
		if given {
			name = "given profile"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			opts := cdp.LaunchOptions{}
			if given {
				opts.UserDataDir = t.TempDir()
			}
			before := chromiumEntries(t)
			b, err := cdp.Launch(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(context.Background())
			profile := b.UserDataDir()
			var sock, cookie string
			poll(t, "the singleton links", func() bool {
				sock, _ = os.Readlink(filepath.Join(profile, "SingletonSocket"))
				cookie, _ = os.Readlink(filepath.Join(profile, "SingletonCookie"))
				return sock != "" && cookie != ""
			})
			sockDir := filepath.Dir(sock)       // .../org.chromium.Chromium.XXXXXX
			browserTmp := filepath.Dir(sockDir) // the browser's TMPDIR
			if !strings.HasPrefix(filepath.Base(sockDir), "org.chromium.Chromium.") {
				t.Fatalf("singleton socket %s", sock)
			}
			if given {
				if filepath.Dir(browserTmp) != filepath.Clean(os.TempDir()) ||
					!strings.HasPrefix(filepath.Base(browserTmp), cdp.TempDirPrefix) {
					t.Fatalf("TMPDIR %s is not a %s* directory of os.TempDir()", browserTmp, cdp.TempDirPrefix)
				}
			} else if browserTmp != filepath.Join(profile, "tmp") {
				t.Fatalf("TMPDIR %s is not inside the profile %s", browserTmp, profile)
			}
			if err := b.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if !gone(browserTmp) {
				t.Fatalf("the browser's TMPDIR %s is left", browserTmp)
			}
			for n := range chromiumEntries(t) {
				if before[n] {
					continue
				}
				if c, _ := os.Readlink(filepath.Join(os.TempDir(), n, "SingletonCookie")); c == cookie {
					t.Fatalf("our browser left %s in %s", n, os.TempDir())
				}
			}
			if given {
				if _, err := os.Stat(profile); err != nil {
					t.Fatalf("given profile removed: %v", err)
				}
				if !gone(filepath.Join(profile, "tmp")) {
					t.Fatal("Launch wrote a tmp folder into the given profile")
				}
			}
		})
	}
}

// TestCloseRemovesProfileWhenCtxEnds: Close's ctx ends before the browser
// is reaped (already cancelled here); Close returns its error, and the
// Browser's goroutine still removes the profile once the process is gone.
func TestCloseRemovesProfileWhenCtxEnds(t *testing.T) {
	testbrowser.Start(t)
	for _, dead := range []bool{false, true} {
		name := "running browser"
		if dead {
			name = "browser already dead"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			b, err := cdp.Launch(ctx, cdp.LaunchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dir, pid := b.UserDataDir(), b.PID()
			if dead {
				if err := testbrowser.KillProcess(pid); err != nil {
					t.Fatal(err)
				}
				select {
				case <-b.Done():
				case <-ctx.Done():
					t.Fatal("killed browser not reaped")
				}
				if gone(dir) {
					t.Fatal("profile removed before Close")
				}
			}
			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			if err := b.Close(cancelled); !errors.Is(err, context.Canceled) {
				t.Fatalf("Close with a cancelled ctx: want context.Canceled, got %v", err)
			}
			poll(t, "the profile's removal", func() bool { return gone(dir) })
			select {
			case <-b.Done():
			case <-ctx.Done():
				t.Fatal("browser not reaped")
			}
			// A later Close sees the finished job.
			if err := b.Close(ctx); err != nil {
				t.Fatal(err)
			}
			groupEnded(t, pid)
		})
	}
}
