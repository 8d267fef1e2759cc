package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// TestRunHandsOffThroughLiveView: `run --human live` prints the live
// view's URL when the model asks for a person; the person (the test,
// through the live view's endpoints) signs in and clicks Done; the run
// goes on and succeeds, and the password is in neither the trace, the
// history nor the command's output.
func TestRunHandsOffThroughLiveView(t *testing.T) {
	env := testbrowser.Start(t)
	model := newModelServer(t)
	model.script(
		fmt.Sprintf(`{"memory":"open the wall","action":[{"navigate":{"url":%q}}]}`, env.URL("/liveview-login.html")),
		`{"memory":"needs a person","action":[{"request_human":{"reason":"sign in as ada"}}]}`,
		`{"memory":"signed in","action":[{"done":{"text":"signed in","success":true}}]}`,
	)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "run", "--model", "openai:test", "--base-url", model.URL+"/v1",
		"--vision", "off", "--reply-mode", "flash", "--out", out, "--human", "live", "--human-timeout", "2m",
		"--cdp-url", env.Browser.WebSocketURL(), "sign in")
	cmd.Env = append(os.Environ(), "BROWSERAGENT_CLI=1", "OPENAI_API_KEY=test")
	cmd.Dir = t.TempDir()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	found := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`open the live view: (http://\S+)`)
		for sc.Scan() {
			errText.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-read:
		cmd.Wait()
		t.Fatalf("the run ended without announcing a live view:\n%s", errText.String())
	case <-ctx.Done():
		t.Fatal("no live view announced")
	}
	for _, body := range []string{
		`{"type":"click","x":140,"y":75}`, `{"type":"text","text":"ada"}`,
		`{"type":"click","x":140,"y":125}`, `{"type":"text","text":"correct horse 42"}`,
		`{"type":"click","x":100,"y":175}`,
	} {
		post(t, base+"input", body)
	}
	post(t, base+"done", `{"note":"signed in as ada"}`)
	<-read
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), errText.String())
	}
	model.mu.Lock()
	last := model.bodies[len(model.bodies)-1]
	model.mu.Unlock()
	if !bytes.Contains(last, []byte("signed in as ada")) {
		t.Fatalf("the model did not read the person's note:\n%.2000s", last)
	}
	for _, f := range []string{"trace.jsonl", "history.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("correct horse 42")) {
			t.Errorf("the password is in %s", f)
		}
	}
	if strings.Contains(stdout.String()+errText.String(), "correct horse 42") {
		t.Error("the password is in the command's output")
	}
}

func post(t *testing.T, u, body string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		t.Fatalf("POST %s %s: %d %s", u, body, resp.StatusCode, b.String())
	}
}

// TestHumanFlags: bad values are usage errors; a run whose stdin is not a
// terminal cannot wait on Enter.
func TestHumanFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--human", "maybe"}, `--human "maybe"`},
		{[]string{"--human", "terminal"}, "needs stdin to be a terminal"},
		{[]string{"--human-timeout", "-1s"}, "must not be negative"},
	} {
		args := append([]string{"run", "--model", "openai:test"}, c.args...)
		r := cli(t, []string{"OPENAI_API_KEY=test"}, append(args, "task")...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("run %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
