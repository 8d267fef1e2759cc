package cdp

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"go.uber.org/zap"
)

// Keepalive defaults (see WithKeepalive).
const (
	// DefaultProbeAfter is how long a connection may be silent before the
	// Conn sends a probe command. Short enough that a healthy idle connection
	// is probed a few times before DefaultStallTimeout, long enough that a
	// busy connection (which never falls silent) is never probed.
	DefaultProbeAfter = 3 * time.Second
	// DefaultStallTimeout is how long a connection may be silent, probes
	// unanswered, before the Conn fails it with ErrStalled. The browser
	// answers a probe within milliseconds even when a page spins in
	// JavaScript (the probe is served by the browser process, not by a
	// renderer); 10 s leaves room for a loaded machine and a slow remote
	// link while still ending a dead connection well before the minute-long
	// timeouts of callers.
	DefaultStallTimeout = 10 * time.Second
)

// probeMethod is the probe: a browser-session command that the browser's
// UI thread answers at once, with a small reply. A websocket ping would do
// for a local Chromium (it answers pings), but a pong only proves the
// browser's network thread, or a hosted service's proxy, is alive; a
// command's reply proves the DevTools handler that serves every call is.
const probeMethod = "Browser.getVersion"

// writeChunk is the size in which activityConn writes, so that a long write
// shows progress.
const writeChunk = 64 << 10

// activity records when the connection last made progress, as a monotonic
// offset from epoch.
type activity struct {
	epoch time.Time
	last  atomic.Int64 // time.Duration since epoch
}

func newActivity() *activity {
	return &activity{epoch: time.Now()}
}

func (a *activity) touch() { a.last.Store(int64(time.Since(a.epoch))) }

// silence returns how long ago the connection last made progress.
func (a *activity) silence() time.Duration {
	return time.Since(a.epoch) - time.Duration(a.last.Load())
}

// activityConn is the network connection under the websocket. It counts as
// progress every read that returns data, so a 40 MB message arriving slowly
// keeps the connection alive, and every chunk but the first of a write, so a
// large command draining slowly into a slow link does too. The first chunk
// of a write does not count: a small message (a probe, say) is taken by the
// kernel's buffer at once even when the peer reads nothing.
type activityConn struct {
	net.Conn
	act *activity
}

func (c *activityConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.act.touch()
	}
	return n, err
}

func (c *activityConn) Write(p []byte) (int, error) {
	total := 0
	for first := true; len(p) > 0; first = false {
		chunk := p[:min(len(p), writeChunk)]
		n, err := c.Conn.Write(chunk)
		total += n
		if n > 0 && !first {
			c.act.touch()
		}
		if err != nil {
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// heartbeat is the Conn's liveness goroutine (started by Dial when
// keepalive is on, stopped by the end of the connection, joined by Close).
// After probeAfter of silence it sends a probe, again every probeAfter while
// the silence lasts; after stallTimeout of silence it fails the connection
// with a *StallError. Silence is time since the last byte was read (see
// activityConn).
func (c *Conn) heartbeat(probeAfter, stallTimeout time.Duration) {
	defer c.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	lastProbe := time.Time{} // when the last probe was queued
	for {
		silence := c.act.silence()
		if stallTimeout > 0 && silence >= stallTimeout {
			c.fail(lostError(&StallError{Silence: silence, Timeout: stallTimeout}))
			return
		}
		next := time.Duration(1<<63 - 1)
		if probeAfter > 0 {
			if silence >= probeAfter {
				if since := time.Since(lastProbe); lastProbe.IsZero() || since >= probeAfter {
					c.sendProbe()
					lastProbe = time.Now()
					next = probeAfter
				} else {
					next = probeAfter - since
				}
			} else {
				next = probeAfter - silence
			}
		}
		if stallTimeout > 0 {
			next = min(next, stallTimeout-silence)
		}
		t.Reset(next)
		select {
		case <-t.C:
		case <-c.done:
			return
		}
	}
}

// sendProbe queues a probe for the writer without blocking: the heartbeat
// must keep its schedule even when the writer is stuck on a stalled peer.
// The probe is not registered as pending, so its reply is dropped like any
// reply whose caller gave up.
func (c *Conn) sendProbe() {
	data, err := jsonv2.Marshal(wireMsg{ID: c.nextID.Add(1), Method: probeMethod})
	if err != nil {
		return
	}
	select {
	case c.probeCh <- data:
	default: // one is still queued: the writer is busy
	}
}

// handleUndecodable deals with a message that did not decode. A reply whose
// id can be recovered fails its own call with a *ProtocolError
// (CodeUndecodable); anything else means the stream cannot be trusted, and
// the connection fails with ErrCorruptMessage. It reports whether the
// connection is still up.
func (c *Conn) handleUndecodable(data []byte, decodeErr error) bool {
	id, ok := scanID(data)
	if !ok {
		c.log.Error("undecodable message without an id: failing the connection",
			zap.Error(decodeErr), zap.Int("bytes", len(data)), zap.ByteString("msg", truncate(data)))
		c.fail(corruptError(len(data), decodeErr))
		return false
	}
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	method := ""
	if p != nil {
		method = p.method
	}
	c.log.Warn("undecodable reply: failing its call", zap.Int64("id", id), zap.String("method", method),
		zap.Error(decodeErr), zap.Int("bytes", len(data)), zap.ByteString("msg", truncate(data)))
	if p != nil {
		p.ch <- reply{err: &ProtocolError{
			Method:  p.method,
			Code:    CodeUndecodable,
			Message: "reply could not be decoded",
			Data:    decodeErr.Error(),
			Err:     decodeErr,
		}}
	}
	return true
}

// maxIDScan bounds the bytes scanID reads. Chromium writes "id" first, so
// the scan normally stops within a few bytes; a server that reorders keys
// still puts "id" before a large "result" in practice.
const maxIDScan = 1 << 20

// scanID recovers the top-level "id" of a JSON object that failed to
// decode. It walks the object's members, skipping values without
// validating them, and returns the first "id" whose value is a positive
// integer (the ids Send makes). It reads at most maxIDScan bytes, never
// recurses, and never allocates. A member name written with escapes is not
// recognised as "id".
func scanID(data []byte) (int64, bool) {
	s := idScanner{b: data}
	if len(data) > maxIDScan {
		s.b, s.cut = data[:maxIDScan], true
	}
	s.space()
	if !s.eat('{') {
		return 0, false
	}
	for {
		s.space()
		isID, ok := s.name()
		if !ok {
			return 0, false
		}
		s.space()
		if !s.eat(':') {
			return 0, false
		}
		s.space()
		if isID {
			return s.positiveInt()
		}
		if !s.skipValue() {
			return 0, false
		}
		s.space()
		if !s.eat(',') {
			return 0, false // '}' (no id) or garbage
		}
	}
}

type idScanner struct {
	b   []byte
	i   int
	cut bool // b is a prefix of the message: its end is not the message's
}

func (s *idScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *idScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// name reads a member name and reports whether it is exactly "id".
func (s *idScanner) name() (isID, ok bool) {
	start := s.i
	if !s.skipString() {
		return false, false
	}
	return string(s.b[start:s.i]) == `"id"`, true
}

// skipString skips a string starting at the quote, escapes included.
func (s *idScanner) skipString() bool {
	if !s.eat('"') {
		return false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return true
		default:
			s.i++
		}
	}
	return false
}

// skipValue skips one value: a string, a scalar, or an object or array
// (nesting counted, strings inside skipped; brackets are not matched by
// kind, which is enough to find the end of a well-formed value).
func (s *idScanner) skipValue() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default:
		start := s.i
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
		return s.i > start
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// positiveInt reads a positive integer that fits an int64 and is followed
// by a delimiter or by the end of the message (a truncated reply still
// names its call).
func (s *idScanner) positiveInt() (int64, bool) {
	var n int64
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := int64(s.b[s.i] - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
		s.i++
	}
	if s.i == start || n == 0 || (s.b[start] == '0' && s.i-start > 1) {
		return 0, false
	}
	if s.i == len(s.b) && s.cut {
		return 0, false // the digits may go on past the bound
	}
	if s.i < len(s.b) && !isDelim(s.b[s.i]) {
		return 0, false // 1.5, 1e3, 12abc
	}
	return n, true
}

// dialActivity returns a NetDialContext for websocket.Dialer that wraps
// every connection it makes in an activityConn recording into act.
func dialActivity(act *activity) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		act.touch()
		return &activityConn{Conn: c, act: act}, nil
	}
}
