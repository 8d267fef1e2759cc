package security

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// guardFixture is a guard in front of two upstreams: an HTTP server for
// plain requests and a TCP echo server for tunnels. Every host is dialled
// to one of them, so nothing leaves loopback; refused.test is refused.
type guardFixture struct {
	g       *guard
	mu      sync.Mutex
	refused []string // URLs the guard refused, as reported
	dialled []string // addresses the guard dialled
}

func newGuardFixture(t *testing.T) *guardFixture {
	t.Helper()
	web := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s%s", r.Host, r.URL.Path)
	})}
	webLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = web.Serve(webLn) }()
	t.Cleanup(func() { _ = web.Close() })

	echoLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var echoes sync.WaitGroup
	echoes.Add(1)
	go func() {
		defer echoes.Done()
		for {
			c, err := echoLn.Accept()
			if err != nil {
				return
			}
			echoes.Add(1)
			go func() {
				defer echoes.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { echoLn.Close(); echoes.Wait() })

	f := &guardFixture{}
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		f.mu.Lock()
		f.dialled = append(f.dialled, addr)
		f.mu.Unlock()
		if strings.HasSuffix(addr, ":443") {
			return d.DialContext(ctx, network, echoLn.Addr().String())
		}
		return d.DialContext(ctx, network, webLn.Addr().String())
	}
	policy := &DomainPolicy{Prohibited: []string{"refused.test"}}
	decide := func(ctx context.Context, raw string) *BlockedURLError {
		if err := policy.CheckURL(ctx, URLRequest{URL: raw, Kind: KindConnection}); err != nil {
			return err.(*BlockedURLError)
		}
		return nil
	}
	refused := func(be *BlockedURLError, _ string) {
		f.mu.Lock()
		f.refused = append(f.refused, be.URL)
		f.mu.Unlock()
	}
	f.g, err = newGuard(dial, decide, refused, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.g.close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f
}

func (f *guardFixture) client() *http.Client {
	proxy, _ := url.Parse("http://" + f.g.addr())
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
}

func (f *guardFixture) seen() (refused, dialled []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refused...), append([]string(nil), f.dialled...)
}

// connect opens a CONNECT tunnel through the guard and returns the
// connection and the guard's status code.
func (f *guardFixture) connect(t *testing.T, hostport string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	c, err := net.Dial("tcp", f.g.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
	}
	return c, br, resp.StatusCode
}

func TestGuardForwardsAllowedAndRefusesOthers(t *testing.T) {
	f := newGuardFixture(t)
	cl := f.client()

	resp, err := cl.Get("http://allowed.test/page")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello from allowed.test/page" {
		t.Fatalf("allowed request: %d %q", resp.StatusCode, body)
	}

	for _, u := range []string{"http://refused.test/x", "http://a.refused.test/x", "http://REFUSED.test./x"} {
		resp, err := cl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", u, resp.StatusCode)
		}
	}

	// A tunnel to an allowed host carries bytes both ways.
	c, br, code := f.connect(t, "allowed.test:443")
	if code != http.StatusOK {
		t.Fatalf("CONNECT allowed: %d", code)
	}
	fmt.Fprint(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}
	if _, _, code := f.connect(t, "refused.test:443"); code != http.StatusForbidden {
		t.Errorf("CONNECT refused: %d, want 403", code)
	}
	if _, _, code := f.connect(t, "[::ffff:7f00:2]:443"); code != http.StatusOK {
		t.Errorf("CONNECT to an allowed IPv6 literal: %d", code)
	}

	refused, dialled := f.seen()
	if len(refused) != 4 {
		t.Errorf("refusals reported: %v", refused)
	}
	for _, a := range dialled {
		if strings.Contains(strings.ToLower(a), "refused") {
			t.Errorf("the guard dialled a refused host: %s", a)
		}
	}
}

// Requests that are not proxy requests, and CONNECTs without a port, get a
// clear error and no connection.
func TestGuardRefusesNonProxyRequests(t *testing.T) {
	f := newGuardFixture(t)
	resp, err := http.Get("http://" + f.g.addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "proxy requests only") {
		t.Errorf("direct request: %d %q", resp.StatusCode, body)
	}
	if _, _, code := f.connect(t, "no-port.test"); code != http.StatusBadRequest {
		t.Errorf("CONNECT without a port: %d, want 400", code)
	}
	if _, dialled := f.seen(); len(dialled) != 0 {
		t.Errorf("dialled %v", dialled)
	}
}

// close ends open tunnels and returns; goleak (TestMain) checks that no
// copier is left.
func TestGuardCloseEndsTunnels(t *testing.T) {
	f := newGuardFixture(t)
	c, br, code := f.connect(t, "allowed.test:443")
	if code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.g.close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("the tunnel is still open after close")
	}
	if _, err := net.Dial("tcp", f.g.addr()); err == nil {
		t.Error("the guard still accepts connections after close")
	}
}
