package cdp

import (
	"sync/atomic"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"go.uber.org/zap"
)

// Event is one CDP event as received.
type Event struct {
	Session *Session     // the session it arrived on (Conn.Browser() for sessionId "")
	Method  string       // such as "Page.loadEventFired"
	Params  jsonv2.Value // raw params; shared, do not modify
}

// Decode decodes the params into v (for example a *page.EventLoadEventFired).
func (e Event) Decode(v any) error {
	return jsonv2.Unmarshal(e.Params, v, decodeOpts)
}

// Subscription is a bounded queue of events fed by the reader goroutine,
// which never blocks on it.
//
// Overflow policy: when an event arrives and the buffer (WithEventBuffer,
// default DefaultEventBuffer) is full, that event is not delivered and the
// subscription is closed at once: C still yields the events already buffered,
// then is closed, and Err returns an *OverflowError (wrapping
// ErrSubscriptionOverflow). A warning is logged. Events are thus never lost
// silently: a consumer either sees every event in order, or learns that it
// fell behind and must resynchronise.
//
// C also closes when the subscription's session detaches (Err wraps
// ErrTargetDetached) or the connection ends (Err is the connection's error).
// After Cancel, Err returns nil.
type Subscription struct {
	conn    *Conn
	owner   *Session // nil for connection-wide
	methods map[string]struct{}
	ch      chan Event
	raw     chan jsonv2.Value

	delivered atomic.Uint64 // events put on C (or raw) so far

	// Guarded by conn.mu.
	closed bool
	err    error
}

// Delivered returns how many events were put on the subscription's channel
// so far. A consumer that counts the ones it handled knows, after any
// round trip, whether it has seen every event that came before the reply.
func (s *Subscription) Delivered() uint64 { return s.delivered.Load() }

// C returns the channel of events.
func (s *Subscription) C() <-chan Event { return s.ch }

// Err returns why the subscription ended (nil while open and after Cancel).
func (s *Subscription) Err() error {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	return s.err
}

// Cancel ends the subscription and closes C. It is idempotent.
func (s *Subscription) Cancel() {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.conn.closeSubLocked(s, nil)
}

func (c *Conn) newSub(owner *Session, methods []string, raw bool) *Subscription {
	sub := &Subscription{conn: c, owner: owner}
	if raw {
		sub.raw = make(chan jsonv2.Value, c.eventBuffer)
	} else {
		sub.ch = make(chan Event, c.eventBuffer)
	}
	if len(methods) > 0 {
		sub.methods = make(map[string]struct{}, len(methods))
		for _, m := range methods {
			sub.methods[m] = struct{}{}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		c.closeSubLocked(sub, c.err)
	case owner == nil:
		c.subs[sub] = struct{}{}
	case owner.err != nil && (c.sessions[owner.id] != owner):
		// Detached: nothing will ever arrive.
		c.closeSubLocked(sub, owner.err)
	default:
		owner.subs[sub] = struct{}{}
	}
	return sub
}

// deliverLocked hands ev to sub without blocking; see the overflow policy.
func (c *Conn) deliverLocked(sub *Subscription, ev Event) {
	if sub.closed {
		return
	}
	if sub.methods != nil {
		if _, ok := sub.methods[ev.Method]; !ok {
			return
		}
	}
	if sub.raw != nil {
		select {
		case sub.raw <- ev.Params:
			sub.delivered.Add(1)
			return
		default:
		}
	} else {
		select {
		case sub.ch <- ev:
			sub.delivered.Add(1)
			return
		default:
		}
	}
	err := &OverflowError{Method: ev.Method, Buffer: c.eventBuffer}
	c.log.Warn("subscription overflow: closing it", zap.String("method", ev.Method),
		zap.String("session", string(ev.Session.id)), zap.Int("buffer", c.eventBuffer))
	c.closeSubLocked(sub, err)
}

func (c *Conn) closeSubLocked(sub *Subscription, err error) {
	if sub.closed {
		return
	}
	sub.closed = true
	sub.err = err
	if sub.owner != nil {
		delete(sub.owner.subs, sub)
	} else {
		delete(c.subs, sub)
	}
	if sub.raw != nil {
		close(sub.raw)
	} else {
		close(sub.ch)
	}
}
