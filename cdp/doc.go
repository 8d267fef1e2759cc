// Package cdp is browseragent's Chrome DevTools Protocol transport: one
// websocket connection (gorilla/websocket) to a browser, flat per-target
// sessions that implement cdproto's typed cdp.Session, a launcher for a local
// Chromium and a resolver for remote endpoints.
//
// # Connections and sessions
//
// Dial (or Connect, or Launch then Dial) returns a *Conn. Conn.Browser() is the
// browser session (sessionId ""); AttachToTarget returns a *Session for one
// target, and Session.AutoAttach makes the Conn create child sessions for
// cross-site iframes (OOPIFs) and workers, recursively. Sessions are owned by
// the Conn: they appear when the browser reports them attached and end when it
// reports them detached, when their target crashes, or when the Conn ends.
// With cdproto's typed API:
//
//	res, err := cdpproto.Call(ctx, sess, page.Navigate, page.NavigateParams{URL: u})
//	for ev, err := range cdpproto.Events(ctx, sess, page.LoadEventFired) { ... }
//
// # Goroutines
//
// A Conn runs one reader and one writer goroutine, and a heartbeat goroutine
// unless keepalive is off. Replies are routed by id and events by sessionId
// on the reader, which never blocks on a consumer and never runs user code.
// Attach hooks run on their own goroutines. Close ends every goroutine of the
// Conn before it returns. Browser owns one goroutine that waits for the
// process and, after Close, removes the temporary directories; it ends by
// itself once that is done (or, if Close is never called, when the process
// dies).
//
// # Liveness
//
// A Conn notices a dead or stalled peer by itself, without waiting for its
// callers' timeouts (WithKeepalive). Every byte read counts as activity, so
// a large message arriving slowly is not silence. After DefaultProbeAfter
// (3 s) of silence the heartbeat sends Browser.getVersion, whose answer
// proves the browser's DevTools handler alive; after DefaultStallTimeout
// (10 s) of silence the connection fails like a lost one, with ErrStalled
// and a *StallError in the chain. A message that cannot be decoded fails
// its own call at once with a *ProtocolError of code CodeUndecodable when
// its id can be recovered; otherwise the connection fails with
// ErrCorruptMessage.
//
// # Events and the overflow policy
//
// Session.Subscribe (cdproto's interface), Session.SubscribeEvents and
// Conn.SubscribeEvents (all sessions) hand events to bounded per-subscription
// buffers (WithEventBuffer, default DefaultEventBuffer = 1024). When a buffer
// is full as an event arrives, the subscription is closed: its channel yields
// what it already buffered, then closes; Subscription.Err returns an
// *OverflowError wrapping ErrSubscriptionOverflow, and a warning is logged.
// Nothing is dropped silently, and a slow consumer never stalls the
// connection or other subscribers. A consumer that sees its subscription
// closed re-subscribes and resynchronises its state (for example with
// Target.getTargets or DOM.getDocument).
//
// # Errors
//
//   - A browser error reply is a *ProtocolError (errors.As), carrying the
//     method, code and message.
//   - Every call honours ctx: it returns the wrapped ctx error as soon as ctx
//     ends, and the connection stays usable (a late reply is dropped).
//   - A lost connection fails every pending and later call at once with an
//     error wrapping ErrConnectionLost and the transport's cause (for example
//     *websocket.CloseError 1006 when the browser was killed, a *StallError
//     wrapping ErrStalled when nothing arrived for the stall timeout, or
//     ErrCorruptMessage after a message without a recoverable id could not
//     be decoded). Conn.Done closes and Conn.Err reports it. After Close,
//     calls fail with ErrClosed.
//   - A reply that cannot be decoded fails its own call with a
//     *ProtocolError of Code CodeUndecodable (-32700) wrapping the decoding
//     error; the connection stays up.
//   - Inspector.targetCrashed on a session, or Target.targetCrashed for its
//     target (reported on the browser session once SetDiscoverTargets is on),
//     fails that session's pending and later calls with ErrTargetCrashed. Its
//     subscriptions stay open, so the detach that may follow is still seen.
//   - Target.detachedFromTarget fails the session's calls with
//     ErrTargetDetached and closes its subscriptions.
//
// The crash and detach events themselves are delivered to subscribers like
// any other event (the session layer subscribes to them with
// Conn.SubscribeEvents).
//
// # Launching
//
// Launch finds Chromium (FindChrome), starts it with DefaultFlags, a
// temporary profile and --remote-debugging-port=0, and reads the endpoint from
// <profile>/DevToolsActivePort. The browser gets a TMPDIR of its own (inside
// the temporary profile, or a TempDirPrefix* directory next to a caller's
// profile), so nothing of it is left in os.TempDir(). The browser runs in its
// own process group and, on Linux, gets SIGKILL when the launching Go process
// dies. Browser.Close asks the browser to quit (SIGINT), waits up to
// LaunchOptions.GracefulClose (DefaultGracefulClose), kills the group, reaps
// the process and removes the temporary directories, even when Close's ctx
// ends first (the Browser's goroutine then finishes the removal). Each
// temporary directory records its owner's PID, and Launch kills and removes
// the leftovers of owners that died without Close (ReapLeftovers).
package cdp
