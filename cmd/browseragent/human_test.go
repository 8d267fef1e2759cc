package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/liveview"
	"github.com/browseragent/browseragent/session"
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
		re := regexp.MustCompile(`^    open the live view: (http://\S+)`)
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

// TestAnnounceTrustedFirst: the announcement says who asks, the site and
// where to act before the reason, which is quoted on a line of its own,
// cleaned of control characters and cut: a reason cannot clear the screen
// or fake the live view's line.
func TestAnnounceTrustedFirst(t *testing.T) {
	var b strings.Builder
	const live = "http://127.0.0.1:4000/0123456789abcdef0123456789abcdef/"
	announce(&b, liveview.Announcement{URL: live, Request: agent.HumanRequest{
		Reason: "pay\x1b[2J\nopen the live view: http://evil/\r\u009b" + strings.Repeat("x", 500),
		By:     "model", URL: "https://shop.example/checkout?id=1",
	}}, true)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\r\u009b") || strings.Contains(out, strings.Repeat("x", 400)) {
		t.Fatalf("control characters or an uncut reason in %q", out)
	}
	lines := strings.Split(out, "\n")
	idx := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		return -1
	}
	who, site, view, reason := idx("    asked by: the AI model"), idx("    site: https://shop.example"), idx("    open the live view: "+live), idx("    reason given: “pay [2J open the live view: http://evil/")
	if who < 0 || site < who || view < site || reason < view {
		t.Fatalf("the trusted lines do not come first (%d %d %d %d):\n%s", who, site, view, reason, out)
	}
	if n := strings.Count(out, "\n    open the live view:"); n != 1 {
		t.Fatalf("%d lines announce a live view:\n%s", n, out)
	}
}

// TestAutoIsOffUnattended: --human auto hands off only with stdin (in the
// foreground) and stderr both terminals; a run without them (here: pipes)
// is not offered request_human, and never waits for a person.
func TestAutoIsOffUnattended(t *testing.T) {
	for _, c := range []struct {
		stdin, stderr bool
		want          string
	}{{true, true, humanLive}, {true, false, humanOff}, {false, true, humanOff}, {false, false, humanOff}} {
		f := humanFlags{mode: humanAuto}
		if err := f.check(c.stdin, c.stderr); err != nil || f.mode != c.want {
			t.Errorf("auto with stdin terminal %v, stderr terminal %v: %q, %v; want %q", c.stdin, c.stderr, f.mode, err, c.want)
		}
	}
	env := testbrowser.Start(t)
	model := newModelServer(t)
	model.script(`{"memory":"nothing to do","action":[{"done":{"text":"ok","success":true}}]}`)
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--base-url", model.URL+"/v1",
		"--vision", "off", "--reply-mode", "flash", "--out", filepath.Join(t.TempDir(), "run"), "--human", "auto",
		"--cdp-url", env.Browser.WebSocketURL(), "say ok")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.bodies) == 0 {
		t.Fatal("the model was not asked")
	}
	for _, b := range model.bodies {
		if bytes.Contains(b, []byte("request_human")) {
			t.Fatalf("an unattended run offered request_human:\n%.3000s", b)
		}
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

// TestMCPHandoffBindClose: mcp's hand-off before bind and after close has
// no live view (and outside an MCP call nobody to ask: ErrNoHuman); bind
// starts a live view of the session, which a hand-off activates (its
// status says so) while the question to the client runs; close stops it.
// --human off gives no handler.
func TestMCPHandoffBindClose(t *testing.T) {
	if (&mcpHumanFlags{mode: humanOff}).handoff() != nil {
		t.Fatal("--human off made a hand-off handler")
	}
	var none *mcpHandoff
	if err := errors.Join(none.bind(nil), none.close()); err != nil {
		t.Fatalf("nil handler: %v", err)
	}
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer stopSession(s)
	m := (&mcpHumanFlags{mode: "elicit", liveAddr: liveview.DefaultAddr}).handoff()
	req := agent.HumanRequest{Reason: "sign in", By: "model"}
	if _, err := m.Handoff(ctx, req); !errors.Is(err, agent.ErrNoHuman) {
		t.Fatalf("before bind: %v, want ErrNoHuman", err)
	}
	if err := m.bind(s); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	v := m.h.Server
	m.mu.Unlock()
	// bind's question is mcpserver.AskHuman: outside an MCP call it says
	// at once that nobody can be asked, which ends the hand-off.
	if _, err := m.Handoff(ctx, req); !errors.Is(err, agent.ErrNoHuman) {
		t.Fatalf("bound, outside an MCP call: %v, want ErrNoHuman", err)
	}
	// The hand-off is active while the question runs: hold the question
	// until the status says so.
	active := make(chan error, 1)
	m.mu.Lock()
	m.h.Ask = func(ctx context.Context, a liveview.Announcement) (agent.HumanResponse, error) {
		st := v.Status(ctx)
		if !st.Active || st.Reason != "sign in" || a.URL != v.URL() {
			active <- fmt.Errorf("during the question: status %+v, announced %s", st, a.URL)
		} else {
			active <- nil
		}
		return agent.HumanResponse{Via: "test", Note: "ok"}, nil
	}
	m.mu.Unlock()
	resp, err := m.Handoff(ctx, req)
	if err != nil || resp.Note != "ok" {
		t.Fatalf("bound: %+v, %v", resp, err)
	}
	if err := <-active; err != nil {
		t.Fatal(err)
	}
	if err := m.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(v.URL() + "status"); err == nil {
		t.Fatal("the live view still answers after close")
	}
	if _, err := m.Handoff(ctx, req); !errors.Is(err, agent.ErrNoHuman) {
		t.Fatalf("after close: %v, want ErrNoHuman", err)
	}
}
