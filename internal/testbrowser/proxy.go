package testbrowser

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy for fault tests. Its connections can be cut (both
// sides closed, as a dropped network does) or stalled (nothing forwarded,
// the sockets kept open, as a hung peer or a black-holed route does), and
// either direction can be relayed by a function of the test's (to pace or
// inspect the bytes). It is closed at the test's cleanup, with every
// goroutine it started.
type Proxy struct {
	ln       net.Listener
	target   string
	up, down Relay // client to target, target to client; nil: copy

	mu      sync.Mutex
	conns   []net.Conn
	stalled chan struct{} // closed when the stall ends; nil when not stalled
	wg      sync.WaitGroup
}

// Relay copies one direction of a proxied connection, from src to dst,
// until a read or a write fails; the proxy then closes both connections.
type Relay func(dst io.Writer, src io.Reader)

// ProxyOption configures a Proxy.
type ProxyOption func(*Proxy)

// WithUpstream relays the bytes from the client to the target with r.
// Stall does not hold a direction relayed by the test.
func WithUpstream(r Relay) ProxyOption { return func(p *Proxy) { p.up = r } }

// WithDownstream relays the bytes from the target to the client with r.
// Stall does not hold a direction relayed by the test.
func WithDownstream(r Relay) ProxyOption { return func(p *Proxy) { p.down = r } }

// NewProxy starts a proxy on 127.0.0.1 that forwards to target
// ("host:port").
func NewProxy(tb testing.TB, target string, opts ...ProxyOption) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	for _, o := range opts {
		o(p)
	}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(func() {
		ln.Close()
		p.Stall(false)
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Through rewrites a ws:// or http:// URL of the target to go through the
// proxy.
func (p *Proxy) Through(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = p.Addr()
	return u.String()
}

// Cut closes every connection open through the proxy; new ones are still
// accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Stall stops (on) or resumes (off) forwarding bytes, on the open
// connections and on new ones.
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.stalled == nil:
		p.stalled = make(chan struct{})
	case !on && p.stalled != nil:
		close(p.stalled)
		p.stalled = nil
	}
}

func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.relay(p.up, u, c)
		go p.relay(p.down, c, u)
	}
}

// relay runs one direction of a connection with r (nil: pipe), then closes
// both ends.
func (p *Proxy) relay(r Relay, dst, src net.Conn) {
	defer p.wg.Done()
	if r == nil {
		r = p.pipe
	}
	r(dst, src)
	dst.Close()
	src.Close()
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *Proxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if g := p.gate(); g != nil {
				<-g
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// UDPSink is a UDP socket on 127.0.0.1 that counts the datagrams it gets:
// a STUN server that never answers, to see whether a page's WebRTC sends
// anything. It is closed at the test's cleanup, with its reader.
type UDPSink struct {
	Addr string // "127.0.0.1:PORT"
	got  atomic.Int64
}

// Datagrams returns how many datagrams arrived so far.
func (u *UDPSink) Datagrams() int64 { return u.got.Load() }

// NewUDPSink starts a UDPSink.
func NewUDPSink(tb testing.TB) *UDPSink {
	tb.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &UDPSink{Addr: conn.LocalAddr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return // closed
			}
			u.got.Add(1)
		}
	}()
	tb.Cleanup(func() {
		conn.Close()
		<-done
	})
	return u
}
