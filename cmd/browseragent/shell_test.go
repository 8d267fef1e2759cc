package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/trace"
)

// shellEnv is one test's private socket directory (XDG_RUNTIME_DIR, a
// short path: a socket address holds 108 bytes) and output folder.
type shellEnv struct {
	t   *testing.T
	env []string
	rt  string // XDG_RUNTIME_DIR
	out string
}

func newShellEnv(t *testing.T, extraEnv ...string) *shellEnv {
	t.Helper()
	rt, err := os.MkdirTemp("", "ba")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	out := t.TempDir()
	env := append([]string{"XDG_RUNTIME_DIR=" + rt, "XDG_STATE_HOME=" + out, "BROWSERAGENT_SESSION="}, extraEnv...)
	return &shellEnv{t: t, env: env, rt: rt, out: out}
}

func (e *shellEnv) run(args ...string) cliResult {
	e.t.Helper()
	return cli(e.t, e.env, args...)
}

// must runs a command that must succeed.
func (e *shellEnv) must(args ...string) cliResult {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// paths are the files of the named session.
func (e *shellEnv) paths(name string) control.Paths {
	e.t.Helper()
	d, err := control.OpenDir(filepath.Join(e.rt, "browseragent"))
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := d.Session(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// open starts the named session on url and makes the test's cleanup end it
// (close, then SIGKILL if it still runs). It returns the session's Meta.
func (e *shellEnv) open(name, url string, flags ...string) (cliResult, control.Meta) {
	e.t.Helper()
	args := append([]string{"open", url, "--session", name, "--out", filepath.Join(e.out, name)}, flags...)
	r := e.run(args...)
	m, merr := e.paths(name).ReadMeta()
	if merr == nil {
		e.t.Cleanup(func() {
			e.end(name, m.PID)
			// The background process is this test binary: under -race its
			// reports go to its log.
			if log, err := os.ReadFile(m.Log); err == nil && bytes.Contains(log, []byte("DATA RACE")) {
				e.t.Errorf("session %s: a data race in the background process:\n%s", name, log)
			}
		})
	}
	if r.code != 0 || merr != nil {
		e.t.Fatalf("open: exit %d (meta: %v)\nstdout:\n%s\nstderr:\n%s", r.code, merr, r.stdout, r.stderr)
	}
	return r, m
}

// end stops a session a test may have left running.
func (e *shellEnv) end(name string, pid int) {
	if !alive(pid) {
		return
	}
	e.run("close", "--session", name, "--timeout", "1m")
	if alive(pid) {
		testbrowser.KillProcess(pid)
	}
	waitFor(e.t, "the session's process to end", func() bool { return !alive(pid) })
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return testbrowser.ProcessExists(pid)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitFor polls cond until it holds, failing the test after two minutes
// (a loaded machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	wait := 10 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(wait) // polling a condition, with backoff
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// state takes the session's state as JSON.
func (e *shellEnv) state(name string) shellResult {
	e.t.Helper()
	r := e.must("state", "--json", "--session", name)
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.State == nil {
		e.t.Fatalf("state --json: %v\n%s", err, r.stdout)
	}
	return res
}

// indexOf finds the index of the element whose attribute key is value.
func indexOf(t *testing.T, st *events.BrowserState, key, value string) string {
	t.Helper()
	for i, el := range st.Elements {
		if el.Attributes[key] == value {
			return strconv.Itoa(i)
		}
	}
	t.Fatalf("no element with %s=%q in %d elements", key, value, len(st.Elements))
	return ""
}

func gone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}

// TestShellSession walks one background session through the commands a
// shell user runs: open, state, type, click, eval, screenshot, tabs, text,
// a stale index, back, sessions and close.
func TestShellSession(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	r, m := e.open("main", env.URL("/agent-form.html"), "--allow-evaluate")
	if want := "Opened " + env.URL("/agent-form.html") + ": navigated."; strings.TrimSpace(r.stdout) != want {
		t.Fatalf("open printed %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, `session "main" started (pid `+strconv.Itoa(m.PID)+")") {
		t.Fatalf("open's stderr: %s", r.stderr)
	}
	p := e.paths("main")

	// The socket directory and the socket are the user's alone.
	for path, want := range map[string]os.FileMode{filepath.Dir(p.Socket): 0o700, p.Socket: 0o600, p.Meta: 0o600} {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (want %04o), %v", path, fi.Mode(), want, err)
		}
	}
	if fi, _ := os.Lstat(p.Socket); fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("%s is not a socket", p.Socket)
	}

	// state prints what the one-shot state prints: the model's view.
	r = e.must("state", "--session", "main")
	for _, want := range []string{"<browser_state>\n", "Current URL: " + env.URL("/agent-form.html"), "placeholder=Full name", "</browser_state>\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("state lacks %q:\n%s", want, r.stdout)
		}
	}
	st := e.state("main").State
	name, email := indexOf(t, st, "placeholder", "Full name"), indexOf(t, st, "placeholder", "Email address")
	noop, next := indexOf(t, st, "id", "noop"), indexOf(t, st, "type", "submit")

	r = e.must("type", name, "Ada Lovelace", "--session", "main")
	if want := `Typed "Ada Lovelace" into element ` + name; !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("type printed %q", r.stdout)
	}
	e.must("type", email, "ada@example.com", "--session", "main")
	e.must("type", email, ".uk", "--no-clear", "--session", "main")
	// The page's own state, read by the page's own script.
	r = e.must("eval", `[document.querySelector('[name=fullname]').value, document.querySelector('[name=email]').value]`, "--session", "main")
	if !strings.Contains(r.stdout, `Result: ["Ada Lovelace","ada@example.com.uk"]`) {
		t.Fatalf("eval: %s", r.stdout)
	}

	r = e.must("click", noop, "--session", "main")
	if !strings.HasPrefix(r.stdout, "Clicked element "+noop+": ") {
		t.Fatalf("click printed %q", r.stdout)
	}
	// A screenshot leaves the indexes valid.
	shot := filepath.Join(e.out, "page.png")
	r = e.must("screenshot", shot, "--session", "main")
	if png, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || !strings.Contains(r.stdout, shot) {
		t.Fatalf("screenshot: %v, %s", err, r.stdout)
	}
	e.must("click", noop, "--session", "main")
	if r = e.must("eval", "window.__noop", "--session", "main"); !strings.Contains(r.stdout, "Result: 2") {
		t.Fatalf("the page counted %s", r.stdout)
	}

	r = e.must("tabs", "--session", "main")
	if !strings.HasPrefix(r.stdout, "* ") || !strings.Contains(r.stdout, env.URL("/agent-form.html")) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("tabs:\n%s", r.stdout)
	}
	if r = e.must("text", "--session", "main"); !strings.Contains(r.stdout, "Sign up (1 of 2)") {
		t.Fatalf("text:\n%s", r.stdout)
	}

	r = e.must("click", next, "--session", "main")
	if !strings.Contains(r.stdout, ": navigated") {
		t.Fatalf("next: %s", r.stdout)
	}
	// The page navigated: the old indexes are stale, nothing is clicked,
	// and the message says what to do.
	r = e.run("click", noop, "--session", "main")
	if r.code != 1 || !strings.Contains(r.stderr, "element index "+noop+" is stale: the page navigated to") || !strings.Contains(r.stderr, "take a new state") {
		t.Fatalf("stale click: exit %d, stderr %s", r.code, r.stderr)
	}
	r = e.run("click", noop, "--session", "main", "--json")
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 || res.OK || res.Code != control.CodeStaleIndex || res.ExitCode != 1 || res.Stale == nil || res.Action != "click" || !strings.Contains(res.URL, "agent-form2.html") {
		t.Fatalf("stale click --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}

	if r = e.must("back", "--session", "main"); !strings.Contains(r.stdout, "Went back: navigated") {
		t.Fatalf("back: %s", r.stdout)
	}
	// open on a running session opens the URL in it; the flags that would
	// configure a new one are ignored, and it says so.
	r = e.must("open", env.URL("/other.html"), "--session", "main", "--headful")
	if strings.TrimSpace(r.stdout) != "Opened "+env.URL("/other.html")+": navigated." || strings.Contains(r.stderr, "started") || !strings.Contains(r.stderr, "ignored: --headful") {
		t.Fatalf("open on a running session: %s / %s", r.stdout, r.stderr)
	}
	e.must("back", "--session", "main")
	r = e.must("sessions")
	if !strings.Contains(r.stdout, "main") || !strings.Contains(r.stdout, strconv.Itoa(m.PID)) || !strings.Contains(r.stdout, env.URL("/agent-form.html")) {
		t.Fatalf("sessions:\n%s", r.stdout)
	}

	// close writes the history, the trace and the report, and says where.
	r = e.must("close", "--session", "main")
	tr := filepath.Join(e.out, "main", "trace.jsonl")
	if !strings.Contains(r.stdout, `Closed session "main".`) || !strings.Contains(r.stdout, tr) {
		t.Fatalf("close: %s", r.stdout)
	}
	rep, err := trace.VerifyFile(tr)
	if err != nil || !rep.Closed {
		t.Fatalf("trace: %+v %v", rep, err)
	}
	for _, f := range []string{"report.html", "history.json", "session.log"} {
		if _, err := os.Stat(filepath.Join(e.out, "main", f)); err != nil {
			t.Error(err)
		}
	}
	if !gone(p.Socket) || !gone(p.Meta) {
		t.Fatal("close left the socket or the meta file")
	}
	waitFor(t, "the session's process to end", func() bool { return !alive(m.PID) })
	r = e.run("state", "--session", "main")
	if r.code != 3 || !strings.Contains(r.stderr, `no session "main" is running`) || !strings.Contains(r.stderr, "browseragent open URL --session main") {
		t.Fatalf("state after close: exit %d, %s", r.code, r.stderr)
	}
}

// TestShellNamedSessionsAreIsolated runs two named sessions side by side:
// each has its own browser, page and tabs; one ends with close, the other
// with SIGTERM, both cleanly.
func TestShellNamedSessionsAreIsolated(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	cv := filepath.Join(e.out, "cv.txt")
	if err := os.WriteFile(cv, []byte("Ada Lovelace, analyst"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ma := e.open("a", env.URL("/agent-form.html"))
	_, mb := e.open("b", env.URL("/other.html"), "--upload-file", cv)
	if ma.PID == mb.PID {
		t.Fatal("one process serves both sessions")
	}

	a, b := e.state("a"), e.state("b")
	if !strings.Contains(a.URL, "agent-form.html") || !strings.Contains(b.URL, "other.html") {
		t.Fatalf("a on %s, b on %s", a.URL, b.URL)
	}
	for _, c := range []struct {
		name, own, other string
	}{{"a", "agent-form.html", "other.html"}, {"b", "other.html", "agent-form.html"}} {
		r := e.must("tabs", "--session", c.name)
		if !strings.Contains(r.stdout, c.own) || strings.Contains(r.stdout, c.other) || strings.Count(r.stdout, "\n") != 1 {
			t.Fatalf("tabs of %s:\n%s", c.name, r.stdout)
		}
	}
	// A page opened in b does not reach a.
	e.must("navigate", env.URL("/links.html"), "--new-tab", "--session", "b")
	if r := e.must("tabs", "--session", "a"); strings.Contains(r.stdout, "links.html") {
		t.Fatalf("a sees b's new tab:\n%s", r.stdout)
	}
	// eval is only for sessions opened with --allow-evaluate.
	if r := e.run("eval", "1", "--session", "a"); r.code != 1 || !strings.Contains(r.stderr, "--allow-evaluate") {
		t.Fatalf("eval: exit %d, %s", r.code, r.stderr)
	}
	// b may upload the file it was opened with, and no other.
	e.must("navigate", env.URL("/actions-upload.html"), "--session", "b")
	one := indexOf(t, e.state("b").State, "id", "one")
	if r := e.must("upload", one, cv, "--session", "b"); !strings.Contains(r.stdout, "Uploaded cv.txt to element "+one) {
		t.Fatalf("upload: %s", r.stdout)
	}
	other := filepath.Join(e.out, "other.txt")
	os.WriteFile(other, []byte("x"), 0o600)
	if r := e.run("upload", one, other, "--session", "b"); r.code != 1 || !strings.Contains(r.stderr, "may not be uploaded") {
		t.Fatalf("upload of a file not given to open: exit %d, %s", r.code, r.stderr)
	}
	e.must("back", "--session", "b")
	// $BROWSERAGENT_SESSION names the session.
	r := cli(t, append(e.env, "BROWSERAGENT_SESSION=b"), "tabs")
	if r.code != 0 || !strings.Contains(r.stdout, "links.html") {
		t.Fatalf("tabs with BROWSERAGENT_SESSION=b: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = e.must("sessions", "--json")
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Sessions) != 2 || res.Sessions[0].Name != "a" || res.Sessions[1].PID != mb.PID {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}

	e.must("close", "--session", "a")
	// SIGTERM closes b as cleanly as close does.
	if err := testbrowser.TerminateProcess(mb.PID); err != nil {
		t.Fatal(err)
	}
	pb := e.paths("b")
	waitFor(t, "b to end after SIGTERM", func() bool { return !alive(mb.PID) && gone(pb.Socket) })
	if rep, err := trace.VerifyFile(filepath.Join(e.out, "b", "trace.jsonl")); err != nil || !rep.Closed {
		t.Fatalf("b's trace: %+v %v", rep, err)
	}
	r = e.run("state", "--session", "b")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped by a signal") || !strings.Contains(r.stderr, filepath.Join(e.out, "b", "trace.jsonl")) {
		t.Fatalf("state of b after SIGTERM: exit %d, %s", r.code, r.stderr)
	}
	waitFor(t, "a to end", func() bool { return !alive(ma.PID) })
}

// TestShellIdleTimeout: a session nobody talks to closes itself, trace
// written, and the next command says why it is gone.
func TestShellIdleTimeout(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	_, m := e.open("idle", env.URL("/other.html"), "--idle", "2s")
	p := e.paths("idle")
	waitFor(t, "the idle session to end", func() bool { return !alive(m.PID) && gone(p.Socket) })
	rep, err := trace.VerifyFile(filepath.Join(e.out, "idle", "trace.jsonl"))
	if err != nil || !rep.Closed {
		t.Fatalf("trace: %+v %v", rep, err)
	}
	r := e.run("click", "1", "--session", "idle")
	if r.code != 3 || !strings.Contains(r.stderr, "idle for 2s") {
		t.Fatalf("click after the idle end: exit %d, %s", r.code, r.stderr)
	}
	// Said once; then the session is simply absent.
	if r = e.run("state", "--session", "idle"); r.code != 3 || !strings.Contains(r.stderr, `no session "idle" is running`) {
		t.Fatalf("second command: exit %d, %s", r.code, r.stderr)
	}
}

// TestShellDeadSession: a session whose process was killed is reported
// (exit 3, its log named) and its stale socket removed; its browser does
// not outlive it.
func TestShellDeadSession(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	_, m := e.open("dead", env.URL("/other.html"))
	r := e.must("sessions", "--json")
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Sessions) != 1 || res.Sessions[0].BrowserPID == 0 {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	browser := res.Sessions[0].BrowserPID
	if err := testbrowser.KillProcess(m.PID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process to end", func() bool { return !alive(m.PID) })
	p := e.paths("dead")
	if gone(p.Socket) {
		t.Fatal("the killed session's socket vanished by itself")
	}
	r = e.run("click", "1", "--session", "dead")
	if r.code != 3 || !strings.Contains(r.stderr, "pid "+strconv.Itoa(m.PID)) || !strings.Contains(r.stderr, "ended without closing") ||
		!strings.Contains(r.stderr, filepath.Join(e.out, "dead", "session.log")) {
		t.Fatalf("click on a killed session: exit %d, %s", r.code, r.stderr)
	}
	if !gone(p.Socket) || !gone(p.Meta) {
		t.Fatal("the stale socket was not removed")
	}
	waitFor(t, "the killed session's browser to end", func() bool { return !alive(browser) })
}

// TestShellBrowserCrash: the browser of a session dies; the next command
// says so (exit 3) instead of hanging, and the session writes its trace.
func TestShellBrowserCrash(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	_, m := e.open("crash", env.URL("/other.html"))
	r := e.must("sessions", "--json")
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Sessions) != 1 || res.Sessions[0].BrowserPID == 0 {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	browser := res.Sessions[0].BrowserPID
	if err := testbrowser.KillProcess(browser); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the browser to end", func() bool { return !alive(browser) })
	r = e.run("state", "--session", "crash")
	if r.code != 3 || !strings.Contains(r.stderr, "the browser is gone") {
		t.Fatalf("state after the browser died: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, "the session to end", func() bool { return !alive(m.PID) })
	if rep, err := trace.VerifyFile(filepath.Join(e.out, "crash", "trace.jsonl")); err != nil || !rep.Closed {
		t.Fatalf("trace: %+v %v", rep, err)
	}
}

// TestShellRefusals: what the commands refuse before any session starts.
func TestShellRefusals(t *testing.T) {
	e := newShellEnv(t)

	// A socket directory others may enter is refused, not repaired.
	dir := filepath.Join(e.rt, "browseragent")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	for _, args := range [][]string{{"open", "http://127.0.0.1:1/"}, {"state"}, {"sessions"}} {
		r := e.run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "has mode 0777, not 0700") {
			t.Fatalf("%v with a 0777 directory: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o777 {
		t.Fatal("the directory was changed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("files were made in the refused directory: %v", ents)
	}
	os.Chmod(dir, 0o700)

	// A runtime directory too deep for a socket address.
	deep := e.rt
	for len(deep) < 120 {
		deep = filepath.Join(deep, "deeeeeeeeeeeeeeeeeeeep")
	}
	os.MkdirAll(deep, 0o700)
	if r := cli(t, []string{"XDG_RUNTIME_DIR=" + deep}, "state"); r.code != 1 || !strings.Contains(r.stderr, "a Unix socket address holds") {
		t.Fatalf("too long: exit %d, %s", r.code, r.stderr)
	}

	// A session that cannot start: open says why, from its log, and
	// leaves nothing behind.
	r := cli(t, append(e.env, "BROWSERAGENT_CHROME=/nonexistent/chromium"), "open", "http://127.0.0.1:1/", "--session", "nob", "--out", filepath.Join(e.out, "nob"))
	if r.code != 1 || !strings.Contains(r.stderr, "ended before it was ready") || !strings.Contains(r.stderr, "no browser found") || !strings.Contains(r.stderr, filepath.Join(e.out, "nob", "session.log")) {
		t.Fatalf("open without a browser: exit %d, %s", r.code, r.stderr)
	}
	if p := e.paths("nob"); !gone(p.Socket) || !gone(p.Meta) {
		t.Fatal("a session that failed to start left its socket or meta file")
	}

	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"state"}, 3, `no session "default" is running; start one with: browseragent open URL`},
		{[]string{"click", "3", "--session", "x"}, 3, `no session "x" is running`},
		{[]string{"click", "3", "--session", "../x"}, 2, "bad session name"},
		{[]string{"click"}, 2, "want 1 argument"},
		{[]string{"click", "abc"}, 2, `"abc" is not an element index`},
		{[]string{"type", "3"}, 2, "want 2 argument"},
		{[]string{"scroll", "sideways"}, 2, "want down or up"},
		{[]string{"open"}, 2, "want the URL"},
		{[]string{"do", "click", "{nope"}, 2, "not JSON"},
		{[]string{"close", "--session", "nobody"}, 3, `no session "nobody" is running`},
	}
	for _, c := range cases {
		r := e.run(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d (want %d), stderr:\n%s\nwant it to contain %q", c.args, r.code, c.code, r.stderr, c.want)
		}
	}
	r = e.run("state", "--json")
	var res shellResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 3 || res.OK || res.Code != "not_running" || res.ExitCode != 3 {
		t.Fatalf("state --json without a session: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	// sessions with none running lists none.
	if r := e.must("sessions"); r.stdout != "" || !strings.Contains(r.stderr, "no session is running") {
		t.Fatalf("sessions: %q %q", r.stdout, r.stderr)
	}
}

// TestShellSessionsShareABrowser: two sessions connected to one browser
// (--cdp-url) each work in a tab of their own: the second one is given a
// new tab even without --new-tab, so neither takes the other's page.
func TestShellSessionsShareABrowser(t *testing.T) {
	env := testbrowser.Start(t)
	e := newShellEnv(t)
	cdp := env.Browser.WebSocketURL()
	// The first keeps out of the other tests' tabs of the shared browser.
	e.open("one", env.URL("/agent-form.html"), "--cdp-url", cdp, "--new-tab")
	r, _ := e.open("two", env.URL("/other.html"), "--cdp-url", cdp)
	if !strings.Contains(r.stderr, `session "one" uses this browser already: session "two" works in a new tab of its own`) {
		t.Fatalf("open two: %s", r.stderr)
	}
	one, two := e.state("one"), e.state("two")
	if one.State.FocusedTarget == two.State.FocusedTarget {
		t.Fatal("both sessions work in one tab")
	}
	if !strings.Contains(one.URL, "agent-form.html") || !strings.Contains(two.URL, "other.html") {
		t.Fatalf("one on %s, two on %s", one.URL, two.URL)
	}
	// What one session does leaves the other's page alone.
	e.must("navigate", env.URL("/links.html"), "--session", "two")
	if one = e.state("one"); !strings.Contains(one.URL, "agent-form.html") {
		t.Fatalf("one moved to %s with two", one.URL)
	}
	e.must("type", indexOf(t, one.State, "placeholder", "Full name"), "Ada", "--session", "one")
	if two = e.state("two"); !strings.Contains(two.URL, "links.html") {
		t.Fatalf("two is on %s", two.URL)
	}
	e.must("close", "--session", "two")
	e.must("close", "--session", "one")
	// The shared browser still runs: closing a connected session leaves it.
	if env.Conn.Err() != nil {
		t.Fatalf("the shared browser's connection broke: %v", env.Conn.Err())
	}
}
