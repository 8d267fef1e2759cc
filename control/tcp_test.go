package control_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/control"
	"github.com/browseragent/browseragent/events"
)

// stubDriver answers the requests that need no browser.
type stubDriver struct{}

func (stubDriver) State(context.Context, agent.StateOptions) (*agent.Observation, error) {
	return nil, errors.New("no browser")
}
func (stubDriver) Do(context.Context, string, json.RawMessage) (agent.ActionRecord, error) {
	return agent.ActionRecord{}, errors.New("no browser")
}
func (stubDriver) PageText(context.Context, int, int) (string, string, int, error) {
	return "", "", 0, errors.New("no browser")
}
func (stubDriver) Tabs() ([]events.TabInfo, string) {
	return []events.TabInfo{{TargetID: "T1", URL: "https://example.com/", Title: "Example"}}, "T1"
}
func (stubDriver) Actions() []agent.ActionSpec { return nil }

// tcpSession is the named session's Paths in a new Dir with the TCP
// transport selected.
func tcpSession(t *testing.T, name string) control.Paths {
	t.Helper()
	t.Setenv(control.TransportEnv, "tcp")
	d, err := control.OpenDir(filepath.Join(t.TempDir(), "browseragent"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Session(name)
	if err != nil {
		t.Fatal(err)
	}
	if p.Transport != control.TransportTCP {
		t.Fatalf("transport %q", p.Transport)
	}
	return p
}

// serveTCP serves stubDriver on p's TCP listener until the test ends.
func serveTCP(t *testing.T, p control.Paths) (done <-chan struct{}) {
	t.Helper()
	// A session holds its lock while it runs; clients send nothing to a
	// TCP endpoint whose lock nobody holds.
	lock, err := p.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := p.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		control.NewServer(stubDriver{}, control.ServerOptions{Info: control.Info{Name: p.Name}}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-ch
		lock.Unlock()
	})
	return ch
}

// endpointOf reads a NAME.tcp file.
func endpointOf(t *testing.T, path string) (addr, token string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ep struct{ Addr, Token string }
	if err := json.Unmarshal(b, &ep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ep.Addr, ep.Token
}

// rawTCP sends bytes as they are to addr, ends its side, and reads the
// answer line ("" when the server closed without one).
func rawTCP(t *testing.T, addr string, b []byte) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(b)
		c.(*net.TCPConn).CloseWrite()
	}()
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	<-wrote
	return line
}

func TestControlTCPTransport(t *testing.T) {
	p := tcpSession(t, "s")
	done := serveTCP(t, p)

	fi, err := os.Lstat(p.Endpoint)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", p.Endpoint, fi, err)
	}
	if _, err := os.Lstat(p.Socket); err == nil {
		t.Fatal("a Unix socket was made too")
	}
	addr, token := endpointOf(t, p.Endpoint)
	if !strings.HasPrefix(addr, "127.0.0.1:") || len(token) != 64 {
		t.Fatalf("endpoint %q, a token of %d characters", addr, len(token))
	}

	c := p.Client(time.Minute)
	resp, err := c.Call(context.Background(), control.Request{Op: control.OpInfo})
	if err != nil || resp.Info == nil || resp.Info.Name != "s" {
		t.Fatalf("info: %+v %v", resp, err)
	}
	if b, _ := json.Marshal(resp); strings.Contains(string(b), token) {
		t.Fatal("the answer carries the token")
	}
	if resp, err = c.Call(context.Background(), control.Request{Op: control.OpTabs}); err != nil || len(resp.Tabs) != 1 || resp.URL != "https://example.com/" {
		t.Fatalf("tabs: %+v %v", resp, err)
	}

	// Anything but the token is refused before its request is read.
	req := `{"v":1,"op":"tabs"}` + "\n"
	wrong := strings.Repeat("0", 64)
	if wrong == token {
		wrong = strings.Repeat("1", 64)
	}
	flipped := []byte(token)
	flipped[63] ^= 1
	for name, b := range map[string]string{
		"a wrong token":      wrong + "\n" + req,
		"a token one off":    string(flipped) + "\n" + req,
		"the token in caps":  strings.ToUpper(token) + "\n" + req,
		"no token":           req + strings.Repeat(" ", 64),
		"an HTTP request":    "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n\r\n" + req,
		"the token unended":  token + " " + req,
		"a short token":      token[:10] + "\n" + req,
		"the token, then \r": token + "\r\n" + req,
	} {
		line := rawTCP(t, addr, []byte(b))
		var r control.Response
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.OK || r.Code != control.CodeRefused || len(r.Tabs) != 0 || strings.Contains(line, "example.com") {
			t.Errorf("%s: answered %q (%v)", name, line, err)
		}
	}
	// The right token, by hand.
	if line := rawTCP(t, addr, []byte(token+"\n"+req)); !strings.Contains(line, `"ok":true`) || !strings.Contains(line, "example.com") {
		t.Fatalf("the right token: %q", line)
	}

	// A client given another token is told it was refused.
	forged := filepath.Join(t.TempDir(), "forged.tcp")
	fb, _ := json.Marshal(map[string]string{"addr": addr, "token": wrong})
	if err := os.WriteFile(forged, fb, 0o600); err != nil {
		t.Fatal(err)
	}
	fc := control.Client{Endpoint: forged, Timeout: time.Minute}
	if _, err := fc.Call(context.Background(), control.Request{Op: control.OpTabs}); !errors.Is(err, control.ErrRefused) {
		t.Fatalf("a forged token: %v", err)
	}
	// A file that names another host is not used: the token goes to
	// loopback only.
	fb, _ = json.Marshal(map[string]string{"addr": "192.0.2.1:80", "token": token})
	os.WriteFile(forged, fb, 0o600)
	if _, err := fc.Call(context.Background(), control.Request{Op: control.OpTabs}); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("a remote address: %v", err)
	}

	// Still serving; close ends it and removes the endpoint.
	resp, err = c.Call(context.Background(), control.Request{Op: control.OpClose})
	if err != nil || !resp.OK {
		t.Fatalf("close: %+v %v", resp, err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Serve did not return")
	}
	if _, err := os.Lstat(p.Endpoint); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the endpoint file outlived the server: %v", err)
	}
	if _, err := c.Call(context.Background(), control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("after close: %v", err)
	}
}

// A server that died leaves its endpoint file: clients are told it is not
// running, and Diagnose says it died and removes the file.
func TestControlTCPStaleEndpoint(t *testing.T) {
	p := tcpSession(t, "stale")
	// A port nothing listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, _ := json.Marshal(map[string]string{"addr": addr, "token": strings.Repeat("ab", 32)})
	if err := os.WriteFile(p.Endpoint, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMeta(control.Meta{Name: "stale", PID: 999999, Log: "/x/session.log"}); err != nil {
		t.Fatal(err)
	}
	c := p.Client(time.Minute)
	if _, err := c.Call(context.Background(), control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("a dead server: %v", err)
	}
	d, err := control.OpenDir(filepath.Dir(p.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	if names, err := d.Names(); err != nil || len(names) != 1 || names[0] != "stale" {
		t.Fatalf("names: %v %v", names, err)
	}
	nr := p.Diagnose()
	if nr.State != control.Died || !strings.Contains(nr.Error(), "ended without closing") {
		t.Fatalf("diagnose: %v (%v)", nr, nr.State)
	}
	for _, f := range []string{p.Endpoint, p.Meta} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", f, err)
		}
	}
	// A garbled endpoint file is not running either, and is cleaned.
	os.WriteFile(p.Endpoint, []byte("{not json"), 0o600)
	if _, err := c.Call(context.Background(), control.Request{Op: control.OpInfo}); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("a garbled endpoint: %v", err)
	}
	if nr := p.Diagnose(); nr.State != control.Died {
		t.Fatalf("diagnose of a garbled endpoint: %v", nr.State)
	}
	if _, err := os.Lstat(p.Endpoint); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the garbled endpoint file was left")
	}
	// While a live process holds the lock, the file is left alone.
	os.WriteFile(p.Endpoint, b, 0o600)
	l, err := p.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if nr := p.Diagnose(); nr.State != control.Busy {
		t.Fatalf("diagnose under the lock: %v", nr.State)
	}
	if _, err := os.Lstat(p.Endpoint); err != nil {
		t.Fatal("Diagnose removed the endpoint of a live session")
	}
}

// Serve refuses a TCP listener that checks no token.
func TestControlServeRefusesPlainTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = control.NewServer(stubDriver{}, control.ServerOptions{}).Serve(context.Background(), ln)
	if !errors.Is(err, control.ErrInsecureListener) {
		t.Fatalf("Serve on a plain TCP listener: %v", err)
	}
}

func TestControlSelectedTransport(t *testing.T) {
	for env, want := range map[string]control.Transport{"": control.DefaultTransport(), "tcp": control.TransportTCP} {
		t.Setenv(control.TransportEnv, env)
		if got, err := control.SelectedTransport(); err != nil || got != want {
			t.Errorf("%s=%q: %q %v", control.TransportEnv, env, got, err)
		}
	}
	t.Setenv(control.TransportEnv, "pigeon")
	if _, err := control.SelectedTransport(); !errors.Is(err, control.ErrTransport) {
		t.Fatalf("an unknown transport: %v", err)
	}
	if _, err := control.OpenDir(filepath.Join(t.TempDir(), "d")); !errors.Is(err, control.ErrTransport) {
		t.Fatalf("OpenDir with an unknown transport: %v", err)
	}
	// A TCP session's path may be longer than a socket address holds.
	t.Setenv(control.TransportEnv, "tcp")
	deep := t.TempDir()
	for len(deep) < 150 {
		deep = filepath.Join(deep, "deeeeeeeeeeeeeeeeeeeeep")
	}
	os.MkdirAll(deep, 0o700)
	d, err := control.OpenDir(filepath.Join(deep, "browseragent"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Session("x"); err != nil {
		t.Fatalf("a TCP session in a deep directory: %v", err)
	}
	if names, _ := d.Names(); len(names) != 0 {
		t.Fatal(names)
	}
}
