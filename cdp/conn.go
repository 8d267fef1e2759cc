package cdp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/gorilla/websocket"
	"go.uber.org/zap"
)

// Defaults of the Dial options.
const (
	// DefaultEventBuffer is the capacity of each subscription's buffer.
	DefaultEventBuffer = 1024
	// DefaultWriteBufferSize is the websocket write buffer. gorilla/websocket
	// splits a client message larger than its write buffer into several
	// frames; 1 MiB keeps every ordinary command in one frame. (Chromium 156
	// accepts fragmented messages; old Chromes did not.)
	DefaultWriteBufferSize = 1 << 20
	// DefaultHandshakeTimeout bounds the websocket handshake when ctx has no
	// earlier deadline.
	DefaultHandshakeTimeout = 30 * time.Second
)

// Option configures Dial and Connect.
type Option func(*options)

type options struct {
	header          http.Header
	logger          *zap.Logger
	eventBuffer     int
	writeBufferSize int
	handshake       time.Duration
	probeAfter      time.Duration // <0: no probes
	stallTimeout    time.Duration // <0: no stall detection
}

func defaultOptions() options {
	return options{
		logger:          zap.NewNop(),
		eventBuffer:     DefaultEventBuffer,
		writeBufferSize: DefaultWriteBufferSize,
		handshake:       DefaultHandshakeTimeout,
		probeAfter:      DefaultProbeAfter,
		stallTimeout:    DefaultStallTimeout,
	}
}

// keepalive returns the effective probe interval and stall timeout.
func (o *options) keepalive() (probeAfter, stallTimeout time.Duration) {
	probeAfter, stallTimeout = o.probeAfter, o.stallTimeout
	if probeAfter > 0 && stallTimeout > 0 && probeAfter >= stallTimeout {
		probeAfter = stallTimeout / 2 // a probe must have time to be answered
	}
	return probeAfter, stallTimeout
}

// WithHeader adds HTTP headers to the websocket handshake (and to the
// /json/version request of Connect), for example an Authorization header of
// a hosted browser.
func WithHeader(h http.Header) Option {
	return func(o *options) { o.header = h.Clone() }
}

// WithLogger sets the logger. The default is zap.NewNop(). Every message sent
// and received is logged at debug level.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithEventBuffer sets the capacity of each subscription's buffer (default
// DefaultEventBuffer). Values below 1 are replaced by 1.
func WithEventBuffer(n int) Option {
	return func(o *options) { o.eventBuffer = max(n, 1) }
}

// WithWriteBufferSize sets the websocket write buffer (default
// DefaultWriteBufferSize). A message up to this size is sent as one frame.
func WithWriteBufferSize(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.writeBufferSize = n
		}
	}
}

// WithHandshakeTimeout bounds the websocket handshake (default
// DefaultHandshakeTimeout).
func WithHandshakeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.handshake = d
		}
	}
}

// WithKeepalive sets how the Conn watches the connection's liveness. The
// connection is silent while nothing arrives from the browser (every byte
// read counts, so a 40 MB message arriving slowly is not silence, and so
// does the progress of a large command being written). After
// probeAfter of silence the Conn sends a probe command (Browser.getVersion
// on the browser session; its answer is ignored), and again every
// probeAfter while the silence lasts. After stallTimeout of silence it
// fails the connection: every pending call, later call and subscription
// fails with an error wrapping ErrConnectionLost, ErrStalled and a
// *StallError, as for a lost connection.
//
// Defaults: DefaultProbeAfter (3 s) and DefaultStallTimeout (10 s). Zero
// keeps a default; a negative value disables that half (no probes: a quiet
// but healthy connection is then failed after stallTimeout unless callers
// keep it busy; no stall timeout: probes only, for example to keep a proxy
// from closing an idle connection). A probeAfter not below stallTimeout is
// replaced by stallTimeout/2. Raise stallTimeout for a remote browser behind
// a slow uplink when commands of several MB are sent: data still queued in
// the kernel's buffers is not seen as progress.
func WithKeepalive(probeAfter, stallTimeout time.Duration) Option {
	return func(o *options) {
		if probeAfter != 0 {
			o.probeAfter = probeAfter
		}
		if stallTimeout != 0 {
			o.stallTimeout = stallTimeout
		}
	}
}

// Conn is one websocket connection to a browser endpoint. It multiplexes the
// flat sessions of all attached targets. All methods are safe for concurrent
// use.
//
// A Conn owns two goroutines (a reader and a writer), a heartbeat goroutine
// unless keepalive is disabled (see WithKeepalive), plus one short-lived
// goroutine per auto-attached target that runs the attach hook; Close stops
// them all. A Conn must be closed even after the connection was lost.
//
// The Conn detects a dead or stalled peer by itself (WithKeepalive), and a
// message it cannot decode never leaves a caller waiting: see
// ErrCorruptMessage and CodeUndecodable.
type Conn struct {
	ws          *websocket.Conn
	log         *zap.Logger
	eventBuffer int
	url         string
	act         *activity // progress of the network connection

	nextID  atomic.Int64
	writeCh chan []byte
	probeCh chan []byte // buffered 1; the heartbeat's probes

	hookCtx    context.Context
	hookCancel context.CancelFunc
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closing    atomic.Bool // Close began: a read error now means ErrClosed

	// mu guards everything below, the mutable fields of every Session and
	// every Subscription. It is never held while user code runs or while a
	// goroutine blocks on I/O.
	mu       sync.Mutex
	pending  map[int64]*pendingCall
	sessions map[target.SessionID]*Session
	subs     map[*Subscription]struct{} // connection-wide subscriptions
	browser  *Session
	err      error
	done     chan struct{}
}

type pendingCall struct {
	method string
	sess   *Session
	ch     chan reply // buffered 1; receives exactly one reply
}

type reply struct {
	result jsonv2.Value
	err    error
}

// wireMsg is one CDP message on the wire.
type wireMsg struct {
	ID        int64            `json:"id,omitempty,omitzero"`
	SessionID target.SessionID `json:"sessionId,omitempty,omitzero"`
	Method    string           `json:"method,omitempty,omitzero"`
	Params    jsonv2.Value     `json:"params,omitempty,omitzero"`
	Result    jsonv2.Value     `json:"result,omitempty,omitzero"`
	Error     *wireError       `json:"error,omitempty,omitzero"`
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty,omitzero"`
}

var decodeOpts = jsonv2.AllowInvalidUTF8(true)

// Dial opens a websocket connection to the browser endpoint wsURL (for
// example Browser.WebSocketURL() or the webSocketDebuggerUrl of
// /json/version). ctx bounds only the handshake; the connection lives until
// Close or until it is lost.
func Dial(ctx context.Context, wsURL string, opts ...Option) (*Conn, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	act := newActivity()
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: o.handshake,
		ReadBufferSize:   64 << 10,
		WriteBufferSize:  o.writeBufferSize,
		NetDialContext:   dialActivity(act), // TLS, if any, runs above it
	}
	ws, resp, err := d.DialContext(ctx, wsURL, o.header)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("cdp: dial %s: %w (HTTP %s)", redactURL(wsURL), err, resp.Status)
		}
		return nil, fmt.Errorf("cdp: dial %s: %w", redactURL(wsURL), err)
	}
	ws.SetReadLimit(-1) // screenshots and snapshots can be many MB
	c := &Conn{
		ws:          ws,
		log:         o.logger.Named("cdp"),
		eventBuffer: o.eventBuffer,
		url:         wsURL,
		act:         act,
		writeCh:     make(chan []byte),
		probeCh:     make(chan []byte, 1),
		pending:     make(map[int64]*pendingCall),
		sessions:    make(map[target.SessionID]*Session),
		subs:        make(map[*Subscription]struct{}),
		done:        make(chan struct{}),
	}
	c.hookCtx, c.hookCancel = context.WithCancel(context.Background())
	c.browser = c.newSessionLocked("", "", nil, nil)
	act.touch() // the handshake's reply has arrived
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	if probeAfter, stallTimeout := o.keepalive(); probeAfter > 0 || stallTimeout > 0 {
		c.wg.Add(1)
		go c.heartbeat(probeAfter, stallTimeout)
	}
	return c, nil
}

// Browser returns the browser-level session (sessionId ""). Target.* commands
// and browser-wide events go through it.
func (c *Conn) Browser() *Session { return c.browser }

// Sessions returns the sessions currently attached (not the browser
// session), in no particular order.
func (c *Conn) Sessions() []*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		if s != c.browser {
			out = append(out, s)
		}
	}
	return out
}

// Session returns the attached session with the id, if the connection knows
// it (attached by AttachToTarget or auto-attach and not yet detached).
func (c *Conn) Session(id target.SessionID) (*Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[id]
	return s, ok
}

// Done is closed when the connection ends (Close, or loss).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns nil while the connection is up; afterwards ErrClosed after
// Close, or an error wrapping ErrConnectionLost and the cause.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection. Pending and later calls fail with ErrClosed,
// all subscriptions close, and the goroutines of the Conn have ended when
// Close returns. Close is idempotent and always returns nil. Do not call Close
// from an attach hook (it waits for the hooks).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		// Set before the close frame goes out: the browser's answering close
		// frame then ends the reader as a Close, not as a lost connection.
		c.closing.Store(true)
		if c.Err() == nil {
			// Polite close frame; the deadline bounds a dead peer.
			_ = c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(time.Second))
		}
		c.fail(ErrClosed)
	})
	c.wg.Wait()
	return nil
}

// fail ends the connection with err (first error wins): it fails every
// pending call, ends every session and closes every subscription.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	for id, p := range c.pending {
		p.ch <- reply{err: err}
		delete(c.pending, id)
	}
	for id, s := range c.sessions {
		c.endSessionLocked(s, err, true)
		delete(c.sessions, id)
	}
	for sub := range c.subs {
		c.closeSubLocked(sub, err)
	}
	c.mu.Unlock()
	c.hookCancel()
	if err != ErrClosed {
		c.log.Warn("connection lost", zap.Error(err))
	}
	_ = c.ws.Close()
}

func (c *Conn) writeLoop() {
	defer c.wg.Done()
	for {
		var data []byte
		select {
		case data = <-c.writeCh:
		case data = <-c.probeCh:
		case <-c.done:
			return
		}
		if ce := c.log.Check(zap.DebugLevel, "send"); ce != nil {
			ce.Write(zap.ByteString("msg", truncate(redactTyped(data))))
		}
		if err := c.ws.WriteMessage(websocket.TextMessage, data); err != nil {
			if c.closing.Load() {
				c.fail(ErrClosed)
			} else {
				c.fail(lostError(err))
			}
			return
		}
	}
}

func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			if c.closing.Load() {
				c.fail(ErrClosed)
			} else {
				c.fail(lostError(err))
			}
			return
		}
		var msg wireMsg
		if err := jsonv2.Unmarshal(data, &msg, decodeOpts); err != nil {
			if !c.handleUndecodable(data, err) {
				return
			}
			continue
		}
		// The envelope only: what the browser sends is page content, which
		// holds what was typed into the page (a password field's value is
		// in its shadow DOM's text), so it never reaches the log.
		if ce := c.log.Check(zap.DebugLevel, "recv"); ce != nil {
			ce.Write(zap.Int64("id", msg.ID), zap.String("method", msg.Method), zap.String("session", string(msg.SessionID)),
				zap.Int("bytes", len(data)), zap.Bool("error", msg.Error != nil))
		}
		if msg.ID != 0 {
			c.handleReply(&msg)
			continue
		}
		if msg.Method != "" {
			c.handleEvent(&msg)
		}
	}
}

func (c *Conn) handleReply(msg *wireMsg) {
	c.mu.Lock()
	p := c.pending[msg.ID]
	delete(c.pending, msg.ID)
	c.mu.Unlock()
	if p == nil {
		return // the caller gave up (ctx) or the session already failed
	}
	if msg.Error != nil {
		p.ch <- reply{err: &ProtocolError{Method: p.method, Code: msg.Error.Code, Message: msg.Error.Message, Data: msg.Error.Data}}
		return
	}
	p.ch <- reply{result: msg.Result}
}

// Event methods the connection itself acts on.
const (
	evAttached        = "Target.attachedToTarget"
	evDetached        = "Target.detachedFromTarget"
	evTargetCrashed   = "Target.targetCrashed"
	evInspectorCrash  = "Inspector.targetCrashed"
	cmdRunIfWaiting   = "Runtime.runIfWaitingForDebugger"
	cmdSetAutoAttach  = "Target.setAutoAttach"
	maxLoggedMsgBytes = 2048
)

func (c *Conn) handleEvent(msg *wireMsg) {
	// Decode what the connection needs before taking the lock.
	var (
		attached target.EventAttachedToTarget
		detached target.EventDetachedFromTarget
		crashed  target.EventTargetCrashed
	)
	switch msg.Method {
	case evAttached:
		if err := jsonv2.Unmarshal(msg.Params, &attached, decodeOpts); err != nil {
			c.log.Warn("bad attachedToTarget", zap.Error(err))
		}
	case evDetached:
		if err := jsonv2.Unmarshal(msg.Params, &detached, decodeOpts); err != nil {
			c.log.Warn("bad detachedFromTarget", zap.Error(err))
		}
	case evTargetCrashed:
		if err := jsonv2.Unmarshal(msg.Params, &crashed, decodeOpts); err != nil {
			c.log.Warn("bad targetCrashed", zap.Error(err))
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	sess := c.sessions[msg.SessionID]
	if sess == nil {
		if ce := c.log.Check(zap.DebugLevel, "event for unknown session dropped"); ce != nil {
			ce.Write(zap.String("session", string(msg.SessionID)), zap.String("method", msg.Method))
		}
		return
	}

	// A new flat session must exist before its first message is read, and
	// before subscribers see the attach event.
	if msg.Method == evAttached && attached.SessionID != "" {
		child := c.sessions[attached.SessionID]
		if child == nil {
			var tid target.ID
			if attached.TargetInfo != nil {
				tid = attached.TargetInfo.TargetID
			}
			child = c.newSessionLocked(attached.SessionID, tid, attached.TargetInfo, sess)
		}
		if sess.autoAttach != nil {
			child.autoAttach = sess.autoAttach // recursive: the child's own children too
			c.wg.Add(1)
			go c.runAttachHook(child, sess.autoAttach, attached.WaitingForDebugger)
		}
	}

	ev := Event{Session: sess, Method: msg.Method, Params: msg.Params}
	for sub := range sess.subs {
		c.deliverLocked(sub, ev)
	}
	for sub := range c.subs {
		c.deliverLocked(sub, ev)
	}

	switch msg.Method {
	case evInspectorCrash:
		c.endSessionLocked(sess, ErrTargetCrashed, false)
	case evTargetCrashed:
		for _, s := range c.sessions {
			if s.targetID == crashed.TargetID && s.targetID != "" {
				c.endSessionLocked(s, ErrTargetCrashed, false)
			}
		}
	case evDetached:
		if s := c.sessions[detached.SessionID]; s != nil && s != c.browser {
			// Its auto-attached descendants go with it, whether or not the
			// browser reports them one by one.
			for id, d := range c.sessions {
				if d == s || d.descendsFrom(s) {
					c.endSessionLocked(d, ErrTargetDetached, true)
					delete(c.sessions, id)
				}
			}
		}
	}
}

// runAttachHook runs off the reader goroutine: the user's setup of an
// auto-attached session, then the recursive auto-attach, then the resume.
// The resume is sent even when the hook fails, or the page would never load.
func (c *Conn) runAttachHook(child *Session, aa *autoAttach, waiting bool) {
	defer c.wg.Done()
	ctx := c.hookCtx
	log := c.log.With(zap.String("session", string(child.id)), zap.String("target", string(child.targetID)))
	if aa.hook != nil {
		if err := callHook(ctx, aa.hook, child); err != nil {
			log.Warn("attach hook failed", zap.Error(err))
		}
	}
	if err := child.setAutoAttach(ctx); err != nil {
		log.Debug("recursive auto-attach failed", zap.Error(err))
	}
	if waiting {
		if err := child.Call(ctx, cmdRunIfWaiting, nil, nil); err != nil {
			log.Debug("runIfWaitingForDebugger failed", zap.Error(err))
		}
	}
}

func callHook(ctx context.Context, h AttachHook, s *Session) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cdp: attach hook panicked: %v", r)
		}
	}()
	return h(ctx, s)
}

// endSessionLocked makes s unusable with err (first error wins for calls)
// and fails its pending calls. With closeSubs, its subscriptions close too.
func (c *Conn) endSessionLocked(s *Session, err error, closeSubs bool) {
	if s.err == nil {
		s.err = err
		close(s.done)
		for id, p := range c.pending {
			if p.sess == s {
				p.ch <- reply{err: err}
				delete(c.pending, id)
			}
		}
	}
	if closeSubs {
		for sub := range s.subs {
			c.closeSubLocked(sub, err)
		}
	}
}

func (c *Conn) newSessionLocked(id target.SessionID, tid target.ID, info *target.Info, parent *Session) *Session {
	s := &Session{
		conn:     c,
		id:       id,
		targetID: tid,
		parent:   parent,
		subs:     make(map[*Subscription]struct{}),
		done:     make(chan struct{}),
	}
	if info != nil {
		cp := *info
		s.info = &cp
	}
	c.sessions[id] = s
	return s
}

// typedMethods carry what a person or the agent types (passwords among
// it): their params never reach the debug log.
var typedMethods = [][]byte{
	[]byte(`"method":"Input.insertText"`),
	[]byte(`"method":"Input.dispatchKeyEvent"`),
	[]byte(`"method":"Input.imeSetComposition"`),
}

// argMethods pass page functions their arguments, which may be typed text
// (a date or time field's value is set by a function): the arguments never
// reach the debug log, the function does.
var argMethods = [][]byte{
	[]byte(`"method":"Runtime.callFunctionOn"`),
}

// redactTyped replaces the params of a typed-text command with a marker,
// and the arguments of a function call.
func redactTyped(b []byte) []byte {
	for _, m := range argMethods {
		if !bytes.Contains(b, m) {
			continue
		}
		var msg map[string]json.RawMessage
		var params map[string]json.RawMessage
		if json.Unmarshal(b, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil {
			return []byte(`{"method":"Runtime.callFunctionOn","params":"<redacted>"}`)
		}
		if _, ok := params["arguments"]; !ok {
			return b
		}
		params["arguments"] = json.RawMessage(`"<redacted>"`)
		msg["params"], _ = json.Marshal(params)
		out, _ := json.Marshal(msg)
		return out
	}
	for _, m := range typedMethods {
		if bytes.Contains(b, m) {
			if i := bytes.Index(b, []byte(`"params":`)); i >= 0 {
				return append(append([]byte(nil), b[:i]...), `"params":"<redacted>"}`...)
			}
		}
	}
	return b
}

func truncate(b []byte) []byte {
	if len(b) > maxLoggedMsgBytes {
		return b[:maxLoggedMsgBytes]
	}
	return b
}
