package cdp

import (
	"context"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
)

// Session is a flat CDP session on a Conn: the browser session (ID "") or
// the session of one attached target. It implements cdproto's cdp.Session, so
// cdpproto.Call(ctx, sess, page.Navigate, params) and
// cdpproto.Events(ctx, sess, page.LoadEventFired) work on it. The Conn owns
// every Session; a Session ends when its target detaches, when it crashes
// (calls only), or when the Conn ends. Safe for concurrent use.
type Session struct {
	conn     *Conn
	id       target.SessionID
	targetID target.ID
	info     *target.Info // at attach time; nil for the browser session and AttachToTarget
	parent   *Session

	// Guarded by conn.mu.
	subs       map[*Subscription]struct{}
	err        error
	done       chan struct{}
	autoAttach *autoAttach
}

var _ cdpproto.Session = (*Session)(nil)

// ID returns the session id ("" for the browser session).
func (s *Session) ID() target.SessionID { return s.id }

// TargetID returns the id of the session's target ("" for the browser
// session).
func (s *Session) TargetID() target.ID { return s.targetID }

// TargetInfo returns a copy of the target info reported when the session was
// auto-attached (Type is "iframe", "page", "worker", ...), or nil for sessions
// made by AttachToTarget and for the browser session.
func (s *Session) TargetInfo() *target.Info {
	if s.info == nil {
		return nil
	}
	cp := *s.info
	return &cp
}

// Parent returns the session on which this session was attached (the browser
// session for AttachToTarget, the parent frame's session for an auto-attached
// OOPIF), or nil for the browser session.
func (s *Session) Parent() *Session { return s.parent }

func (s *Session) descendsFrom(a *Session) bool {
	for p := s.parent; p != nil; p = p.parent {
		if p == a {
			return true
		}
	}
	return false
}

// Conn returns the connection the session belongs to.
func (s *Session) Conn() *Conn { return s.conn }

// Done is closed when the session can no longer run commands: detached,
// crashed, or the connection ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session is usable, then the reason it is not
// (wrapping ErrTargetDetached, ErrTargetCrashed, ErrConnectionLost or
// ErrClosed).
func (s *Session) Err() error {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	return s.err
}

// Call sends the command method with params (nil for none) on the session,
// waits for the reply and decodes its result into result (a pointer, or nil
// to discard). It returns:
//   - a *ProtocolError when the browser answered with an error, or when its
//     reply could not be decoded (Code CodeUndecodable; the connection stays
//     up);
//   - ctx.Err() (wrapped) as soon as ctx ends; the reply, if any, is dropped;
//   - an error wrapping ErrTargetCrashed, ErrTargetDetached,
//     ErrConnectionLost (and its cause: ErrStalled, ErrCorruptMessage, a
//     websocket error) or ErrClosed when the session or the connection ended
//     before the reply.
func (s *Session) Call(ctx context.Context, method string, params, result any) error {
	return s.Send(ctx, method, params).Wait(ctx, result)
}

func (c *Conn) dropPending(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Subscribe implements cdproto's cdp.Session: it returns a channel of the raw
// params of every later event method on this session, and a func that ends
// the subscription (idempotent; it closes the channel).
//
// The channel has the Conn's event buffer (WithEventBuffer). If it is full
// when an event arrives, the subscription is closed (overflow policy, see the
// package doc) and a warning is logged; this channel-only API cannot report
// the reason, so long-lived consumers should use SubscribeEvents and check
// Subscription.Err. The channel also closes when the session detaches or the
// connection ends.
func (s *Session) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	sub := s.conn.newSub(s, []string{method}, true)
	return sub.raw, sub.Cancel
}

// SubscribeEvents subscribes to the events of this session whose method is in
// methods, or to all its events when methods is empty. See Subscription for
// the buffering and overflow contract.
func (s *Session) SubscribeEvents(methods ...string) *Subscription {
	return s.conn.newSub(s, methods, false)
}

// SubscribeEvents subscribes to the events of every session of the
// connection (including sessions attached later) whose method is in methods,
// or to all events when methods is empty.
func (c *Conn) SubscribeEvents(methods ...string) *Subscription {
	return c.newSub(nil, methods, false)
}

// AttachHook prepares a newly auto-attached session (enable domains, add
// scripts, ...) while its target is paused. It runs on its own goroutine,
// never on the reader; it may call commands on the session. ctx ends when the
// connection ends. After it returns (error or not; an error is logged) the
// target's own auto-attach is enabled and the target is resumed with
// Runtime.runIfWaitingForDebugger. A hook that never returns leaves the
// target paused.
type AttachHook func(ctx context.Context, s *Session) error

type autoAttach struct {
	hook AttachHook
}

// AutoAttach sends Target.setAutoAttach{autoAttach:true,
// waitForDebuggerOnStart:true, flatten:true} on the session. For every target
// then attached below it (cross-site iframes, workers, and recursively their
// children) the Conn creates the child Session, runs hook (may be nil) off the
// reader goroutine, enables the same auto-attach on the child, and resumes
// it with Runtime.runIfWaitingForDebugger. Subscribers of
// Target.attachedToTarget see the event as well; the child is already
// available through Conn.Session when they do.
func (s *Session) AutoAttach(ctx context.Context, hook AttachHook) error {
	s.conn.mu.Lock()
	s.autoAttach = &autoAttach{hook: hook}
	s.conn.mu.Unlock()
	return s.setAutoAttach(ctx)
}

func (s *Session) setAutoAttach(ctx context.Context) error {
	return s.Call(ctx, cmdSetAutoAttach, target.SetAutoAttachParams{
		AutoAttach:             true,
		WaitForDebuggerOnStart: true,
		Flatten:                ptr(true),
	}, nil)
}

func ptr[T any](v T) *T { return &v }
