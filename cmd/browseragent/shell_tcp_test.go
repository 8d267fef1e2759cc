//go:build unix

// These tests run the shell session over the TCP transport (Windows's) on
// Unix; the helpers they share with shell_test.go stop processes the Unix
// way.

package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// tcpEnv is a shell environment whose sessions listen on loopback TCP with
// a token, as on Windows.
func tcpEnv(t *testing.T) *shellEnv {
	return newShellEnv(t, control.TransportEnv+"=tcp")
}

// tcpEndpoint reads a session's NAME.tcp.
func tcpEndpoint(t *testing.T, p control.Paths) (addr, token string) {
	t.Helper()
	fi, err := os.Lstat(p.Endpoint)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", p.Endpoint, fi, err)
	}
	b, _ := os.ReadFile(p.Endpoint)
	var ep struct{ Addr, Token string }
	if err := json.Unmarshal(b, &ep); err != nil || !strings.HasPrefix(ep.Addr, "127.0.0.1:") || len(ep.Token) != 64 {
		t.Fatalf("%s: %q %v", p.Endpoint, b, err)
	}
	return ep.Addr, ep.Token
}

// TestShellTCPSession: open, state, click, tabs, sessions and close over
// loopback TCP; the token is in its file only, and a connection without
// it is refused.
func TestShellTCPSession(t *testing.T) {
	env := testbrowser.Start(t)
	e := tcpEnv(t)
	r, m := e.open("main", env.URL("/agent-form.html"))
	if want := "Opened " + env.URL("/agent-form.html") + ": navigated."; strings.TrimSpace(r.stdout) != want {
		t.Fatalf("open printed %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, `session "main" started (pid `+strconv.Itoa(m.PID)+")") {
		t.Fatalf("open's stderr: %s", r.stderr)
	}
	p := e.paths("main")
	addr, token := tcpEndpoint(t, p)
	if !gone(p.Socket) {
		t.Fatal("a TCP session made a Unix socket")
	}
	if !gone(filepath.Join(e.out, "main", "session.ready")) {
		t.Fatal("the ready file was left")
	}

	st := e.state("main").State
	noop := indexOf(t, st, "id", "noop")
	r = e.must("click", noop, "--session", "main")
	if !strings.HasPrefix(r.stdout, "Clicked element "+noop+": ") {
		t.Fatalf("click printed %q", r.stdout)
	}
	r = e.must("state", "--session", "main")
	if !strings.Contains(r.stdout, "Current URL: "+env.URL("/agent-form.html")) {
		t.Fatalf("state:\n%s", r.stdout)
	}
	if r = e.must("tabs", "--session", "main"); !strings.HasPrefix(r.stdout, "* ") || !strings.Contains(r.stdout, "agent-form.html") {
		t.Fatalf("tabs:\n%s", r.stdout)
	}
	if r = e.must("sessions"); !strings.Contains(r.stdout, "main") || !strings.Contains(r.stdout, strconv.Itoa(m.PID)) {
		t.Fatalf("sessions:\n%s", r.stdout)
	}

	// A connection with another token gets nothing but a refusal.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	c.Write([]byte(strings.Repeat("0", 64) + "\n" + `{"v":1,"op":"tabs"}` + "\n"))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.Contains(line, `"code":"refused"`) || strings.Contains(line, "agent-form") {
		t.Fatalf("a wrong token was answered %q", line)
	}
	// The session still serves its owner.
	e.must("tabs", "--session", "main")

	r = e.must("close", "--session", "main")
	if !strings.Contains(r.stdout, `Closed session "main".`) {
		t.Fatalf("close: %s", r.stdout)
	}
	if !gone(p.Endpoint) || !gone(p.Meta) {
		t.Fatal("close left the endpoint or the meta file")
	}
	waitFor(t, "the session's process to end", func() bool { return !alive(m.PID) })
	// The token was never printed or logged.
	log, _ := os.ReadFile(filepath.Join(e.out, "main", "session.log"))
	if strings.Contains(string(log), token) || strings.Contains(r.stdout+r.stderr, token) {
		t.Fatal("the token was logged or printed")
	}
	if !strings.Contains(string(log), "listening on "+addr) {
		t.Fatalf("the log does not say where it listened:\n%s", log)
	}
	r = e.run("state", "--session", "main")
	if r.code != 3 || !strings.Contains(r.stderr, `no session "main" is running`) {
		t.Fatalf("state after close: exit %d, %s", r.code, r.stderr)
	}
}

// TestShellTCPDeadSession: a TCP session whose process was killed leaves
// its endpoint file; the next command says it died (exit 3) and removes
// the file.
func TestShellTCPDeadSession(t *testing.T) {
	env := testbrowser.Start(t)
	e := tcpEnv(t)
	_, m := e.open("dead", env.URL("/other.html"))
	p := e.paths("dead")
	tcpEndpoint(t, p)
	if err := syscall.Kill(m.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process to end", func() bool { return !alive(m.PID) })
	if gone(p.Endpoint) {
		t.Fatal("the killed session's endpoint vanished by itself")
	}
	r := e.run("click", "1", "--session", "dead")
	if r.code != 3 || !strings.Contains(r.stderr, "pid "+strconv.Itoa(m.PID)) || !strings.Contains(r.stderr, "ended without closing") {
		t.Fatalf("click on a killed session: exit %d, %s", r.code, r.stderr)
	}
	if !gone(p.Endpoint) || !gone(p.Meta) {
		t.Fatal("the stale endpoint was not removed")
	}
}

// TestShellTCPRefusals: what needs no browser: a stale endpoint file, a
// session that cannot start, an unknown transport.
func TestShellTCPRefusals(t *testing.T) {
	e := tcpEnv(t)
	p := e.paths("old")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, _ := json.Marshal(map[string]string{"addr": addr, "token": strings.Repeat("cd", 32)})
	if err := os.WriteFile(p.Endpoint, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run("state", "--session", "old")
	if r.code != 3 || !strings.Contains(r.stderr, `session "old" is not running`) || !gone(p.Endpoint) {
		t.Fatalf("state with a stale endpoint: exit %d, %s (endpoint gone: %v)", r.code, r.stderr, gone(p.Endpoint))
	}

	// The spawn that polls for readiness reports a process that ended.
	r = cli(t, append(e.env, "BROWSERAGENT_CHROME=/nonexistent/chromium"), "open", "http://127.0.0.1:1/", "--session", "nob", "--out", filepath.Join(e.out, "nob"))
	if r.code != 1 || !strings.Contains(r.stderr, "ended before it was ready") || !strings.Contains(r.stderr, "no browser found") || !strings.Contains(r.stderr, filepath.Join(e.out, "nob", "session.log")) {
		t.Fatalf("open without a browser: exit %d, %s", r.code, r.stderr)
	}
	if p := e.paths("nob"); !gone(p.Endpoint) || !gone(p.Meta) || !gone(filepath.Join(e.out, "nob", "session.ready")) {
		t.Fatal("a session that failed to start left its endpoint, meta or ready file")
	}

	r = cli(t, append(e.env, control.TransportEnv+"=pigeon"), "state")
	if r.code != 1 || !strings.Contains(r.stderr, "want unix or tcp") {
		t.Fatalf("an unknown transport: exit %d, %s", r.code, r.stderr)
	}
}
