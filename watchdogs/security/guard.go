package security

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/internal/routine"
)

// guard is the network guard: an HTTP proxy on loopback that a launched
// browser sends every connection through (--proxy-server, with loopback
// included). It asks the policy before it opens a connection, so what
// request interception cannot see — WebSocket handshakes, preconnects,
// requests of targets attached too late — never reaches a refused host,
// and the browser resolves no names itself. It serves until close.
//
// The guard judges hosts, not requests: a tunnel (CONNECT, used for https,
// wss and ws) shows only host and port; a plain http request shows its
// URL. Request interception, which runs first, is what sees resource types.
type guard struct {
	ln      net.Listener
	srv     *http.Server
	proxy   *httputil.ReverseProxy
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	decide  func(ctx context.Context, rawURL string) *BlockedURLError
	refused func(be *BlockedURLError, what string)
	log     *zap.Logger

	mu      sync.Mutex
	tunnels map[net.Conn]struct{} // hijacked connections, closed by close
	group   *routine.Group        // serve and the tunnels' copiers
	closed  bool
}

// guardTimeout bounds dialing an upstream host.
const guardTimeout = 30 * time.Second

// newGuard listens on 127.0.0.1 and serves until close.
func newGuard(dial func(ctx context.Context, network, addr string) (net.Conn, error),
	decide func(ctx context.Context, rawURL string) *BlockedURLError,
	refused func(be *BlockedURLError, what string), log *zap.Logger) (*guard, error) {
	if dial == nil {
		d := &net.Dialer{Timeout: guardTimeout}
		dial = d.DialContext
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &guard{ln: ln, dial: dial, decide: decide, refused: refused, log: log,
		tunnels: map[net.Conn]struct{}{}, group: routine.New(context.Background())}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = cloneURL(r.In.URL)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			Proxy:                 nil, // the guard is the last hop
			DialContext:           dial,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: 0, // slow pages are the page's business
			ForceAttemptHTTP2:     false,
		},
		ErrorLog: zap.NewStdLog(log),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Debug("guard: forwarding", zap.String("url", r.URL.String()), zap.Error(err))
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second, ErrorLog: zap.NewStdLog(log)}
	// Serve ends when close closes the server; the group only joins it.
	if err := g.group.Go("network guard", func(context.Context) { _ = g.srv.Serve(ln) }); err != nil {
		ln.Close()
		return nil, err
	}
	return g, nil
}

func cloneURL(u *url.URL) *url.URL {
	c := *u
	return &c
}

// addr is the proxy's address, host:port.
func (g *guard) addr() string { return g.ln.Addr().String() }

// proxyServer is the guard as a proxy setting (--proxy-server's form).
func (g *guard) proxyServer() string { return "http://" + g.addr() }

// guardBypass is the proxy bypass list that sends loopback through the
// guard too.
const guardBypass = "<-loopback>"

// flags are the browser switches that route everything through the guard.
// <-loopback> removes Chromium's implicit bypass of localhost and 127/8,
// which would otherwise let a page reach loopback services directly.
func (g *guard) flags() []string {
	return []string{
		"--proxy-server=" + g.proxyServer(),
		"--proxy-bypass-list=" + guardBypass,
	}
}

// webRTCPolicyPref and webRTCProxiedOnly keep WebRTC to proxied paths: no
// UDP of its own (host candidates, STUN), only TCP through the proxy, which
// is the guard. No proxy carries UDP, so without it a page's STUN or peer
// traffic would reach any host. It is a profile preference: Chromium 156
// ignores the --force-webrtc-ip-handling-policy switch (measured).
const (
	webRTCPolicyPref  = "webrtc.ip_handling_policy"
	webRTCProxiedOnly = "disable_non_proxied_udp"
)

// ServeHTTP answers one proxy request: CONNECT opens a tunnel, anything
// else is forwarded.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.tunnel(w, r)
		return
	}
	if r.URL.Host == "" || (r.URL.Scheme != "http" && r.URL.Scheme != "ws") {
		// Not a proxy request (someone browsing to the guard itself).
		http.Error(w, "browseragent network guard: proxy requests only", http.StatusBadRequest)
		return
	}
	if be := g.decide(r.Context(), r.URL.String()); be != nil {
		g.refused(be, "http")
		http.Error(w, "blocked by the URL policy", http.StatusForbidden)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// tunnel decides on a CONNECT and splices the two connections.
func (g *guard) tunnel(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "bad CONNECT target", http.StatusBadRequest)
		return
	}
	scheme := "https"
	if port == "80" {
		scheme = "http" // a ws:// tunnel; https never uses port 80
	}
	u := scheme + "://" + net.JoinHostPort(host, port) + "/" // JoinHostPort brackets IPv6
	if be := g.decide(r.Context(), u); be != nil {
		g.refused(be, "tunnel")
		http.Error(w, "blocked by the URL policy", http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), guardTimeout)
	up, err := g.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		g.log.Debug("guard: dialing", zap.String("host", r.Host), zap.Error(err))
		http.Error(w, "cannot reach "+r.Host, http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !g.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		g.untrack(down, up)
		return
	}
	// Bytes the browser sent after the CONNECT (a TLS hello) may sit in buf.
	var fromBrowser io.Reader = down
	if n := buf.Reader.Buffered(); n > 0 {
		pending, _ := buf.Reader.Peek(n)
		fromBrowser = io.MultiReader(strings.NewReader(string(pending)), down)
	}
	// The copiers end when either side closes; close closes both.
	toHost := func(context.Context) {
		_, _ = io.Copy(up, fromBrowser)
		closeWrite(up)
	}
	toBrowser := func(context.Context) {
		defer g.untrack(down, up)
		_, _ = io.Copy(down, up)
	}
	if g.group.Go("guard tunnel to "+r.Host, toHost) != nil || g.group.Go("guard tunnel from "+r.Host, toBrowser) != nil {
		g.untrack(down, up) // closing: the copier that started ends with the connections
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// track registers a tunnel's connections; false once the guard closed.
func (g *guard) track(conns ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	for _, c := range conns {
		g.tunnels[c] = struct{}{}
	}
	return true
}

func (g *guard) untrack(conns ...net.Conn) {
	g.mu.Lock()
	for _, c := range conns {
		delete(g.tunnels, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// close stops serving, closes every tunnel and waits for the goroutines
// (bounded by ctx).
func (g *guard) close(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	conns := make([]net.Conn, 0, len(g.tunnels))
	for c := range g.tunnels {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	err := g.srv.Close() // listener and the server's own connections
	for _, c := range conns {
		_ = c.Close()
	}
	if t, ok := g.proxy.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return errors.Join(err, g.group.Stop(ctx))
}
