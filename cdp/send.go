package cdp

import (
	"context"
	"fmt"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

// Reply is a command sent with Session.Send whose answer has not been read.
type Reply struct {
	method string
	conn   *Conn
	id     int64
	ch     chan reply
	err    error // failed before it was sent
}

// Send writes the command now and returns without waiting for the answer;
// Call is Send followed by Wait. Commands sent one after another from one
// goroutine reach the browser in that order. A paused target needs this: a
// tab opened by a page (window.open) does not answer Page.enable until it is
// resumed (seen on Chromium 156), so an attach hook sends its setup, lets the
// target resume, and waits afterwards. ctx bounds the write only; Wait has
// its own context.
func (s *Session) Send(ctx context.Context, method string, params any) *Reply {
	r := &Reply{method: method, conn: s.conn}
	if err := ctx.Err(); err != nil {
		r.err = fmt.Errorf("cdp: %s: %w", method, err)
		return r
	}
	var raw jsonv2.Value
	if params != nil {
		b, err := jsonv2.Marshal(params)
		if err != nil {
			r.err = fmt.Errorf("cdp: %s: encoding params: %w", method, err)
			return r
		}
		raw = b
	}
	c := s.conn
	r.id = c.nextID.Add(1)
	data, err := jsonv2.Marshal(wireMsg{ID: r.id, SessionID: s.id, Method: method, Params: raw})
	if err != nil {
		r.err = fmt.Errorf("cdp: %s: encoding message: %w", method, err)
		return r
	}
	p := &pendingCall{method: method, sess: s, ch: make(chan reply, 1)}
	r.ch = p.ch
	c.mu.Lock()
	switch {
	case c.err != nil:
		r.err = fmt.Errorf("cdp: %s: %w", method, c.err)
	case s.err != nil:
		r.err = fmt.Errorf("cdp: %s: %w", method, s.err)
	default:
		c.pending[r.id] = p
	}
	c.mu.Unlock()
	if r.err != nil {
		return r
	}
	select {
	case c.writeCh <- data:
	case rep := <-p.ch: // the connection failed before the write
		p.ch <- rep
	case <-ctx.Done():
		c.dropPending(r.id)
		r.err = fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
	return r
}

// Err returns the error known when the command was sent (its parameters
// did not encode, the connection or the session had already failed, ctx
// ended before the write), or nil: for a caller that does not wait for the
// answer.
func (r *Reply) Err() error { return r.err }

// Wait waits for the answer and decodes its result into result (nil to
// discard), with the errors of Session.Call. It must be called at most once.
func (r *Reply) Wait(ctx context.Context, result any) error {
	if r.err != nil {
		return r.err
	}
	var rep reply
	select {
	case rep = <-r.ch:
	case <-ctx.Done():
		r.conn.dropPending(r.id)
		return fmt.Errorf("cdp: %s: %w", r.method, ctx.Err())
	}
	if rep.err != nil {
		if _, ok := rep.err.(*ProtocolError); ok {
			return rep.err
		}
		return fmt.Errorf("cdp: %s: %w", r.method, rep.err)
	}
	if result != nil && len(rep.result) > 0 {
		if err := jsonv2.Unmarshal(rep.result, result, decodeOpts); err != nil {
			return fmt.Errorf("cdp: %s: decoding result: %w", r.method, err)
		}
	}
	return nil
}
