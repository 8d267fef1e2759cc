package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Client sends requests to the server listening on Socket, or at
// Endpoint. The zero Timeout bounds a call by its context only.
// Paths.Client makes the client of a session.
type Client struct {
	Socket string
	// Endpoint, when set, is a session's NAME.tcp (TransportTCP): when the
	// file exists, the client connects to the loopback address it names
	// and sends its token before the request; when it does not, Socket is
	// used (if set).
	Endpoint string
	// Lock, when set with Endpoint, is the session's lock file: the client
	// sends nothing over TCP when no live process holds it, since the
	// session is gone and another local user may have taken its port.
	Lock    string
	Timeout time.Duration
}

// Call sends req (its V set to Version) on a connection of its own and
// returns the answer. On a failed answer it returns the response too, with
// resp.Err(): *agent.StaleIndexError, *agent.DeniedError or *RemoteError.
// Other errors wrap ErrNotRunning (no server on the socket: none exists, or
// it refuses connections), ErrTimeout (no answer within Timeout),
// ErrBadRequest (req is larger than MaxRequestBytes; nothing was sent),
// ErrBadResponse, or the context's error. A server that refused the
// connection (a wrong token) answers with an error wrapping ErrRefused.
func (c *Client) Call(ctx context.Context, req Request) (*Response, error) {
	req.V = Version
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if len(line) >= MaxRequestBytes {
		return nil, fmt.Errorf("%w: the request is %d bytes, more than the %d a session takes", ErrBadRequest, len(line), MaxRequestBytes)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	conn, preamble, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	// One write: the token (if any), then the request.
	_, werr := conn.Write(append(append(preamble, line...), '\n'))
	// Read the answer even when the write failed: a server that refused
	// the request early answered before closing.
	br := bufio.NewReader(io.LimitReader(conn, MaxResponseBytes+1))
	raw, rerr := br.ReadBytes('\n')
	if len(raw) == 0 || (rerr != nil && !errors.Is(rerr, io.EOF)) {
		switch {
		case werr != nil:
			return nil, c.ctxErr(ctx, werr)
		case rerr != nil && errors.Is(rerr, io.EOF):
			return nil, fmt.Errorf("%w: the session closed the connection without answering (it may have just stopped)", ErrBadResponse)
		}
		return nil, c.ctxErr(ctx, rerr)
	}
	if len(raw) > MaxResponseBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrBadResponse, MaxResponseBytes)
	}
	var resp Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	if resp.V != Version && resp.Code == "" && req.Op != OpInfo && req.Op != OpClose {
		return &resp, fmt.Errorf("%w: the session answered in protocol version %d, this client speaks %d", ErrVersion, resp.V, Version)
	}
	return &resp, resp.Err()
}

// dial connects to the session: over TCP when c.Endpoint exists (the
// token is the preamble to send first), else on c.Socket.
func (c *Client) dial(ctx context.Context) (net.Conn, []byte, error) {
	var d net.Dialer
	if c.Endpoint != "" {
		ep, err := readEndpoint(c.Endpoint)
		switch {
		case err == nil:
			if c.Lock != "" {
				if l, err := (Paths{Lock: c.Lock}).TryLock(); err == nil {
					l.Unlock()
					return nil, nil, fmt.Errorf("%w: no process holds %s (the session is gone; its port may now be anyone's)", ErrNotRunning, c.Lock)
				}
			}
			conn, err := d.DialContext(ctx, "tcp", ep.Addr)
			if err != nil {
				if isRefused(err) {
					return nil, nil, fmt.Errorf("%w: nothing listens at %s (%s)", ErrNotRunning, ep.Addr, c.Endpoint)
				}
				return nil, nil, c.ctxErr(ctx, err)
			}
			return conn, []byte(ep.Token + "\n"), nil
		case !isNotExist(err):
			// Unreadable or not ours: Diagnose removes it when no live
			// process holds the session's lock.
			return nil, nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
		case c.Socket == "":
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotRunning, c.Endpoint, err)
		}
	}
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || isRefused(err) {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotRunning, c.Socket, err)
		}
		return nil, nil, c.ctxErr(ctx, err)
	}
	return conn, nil, nil
}

// ctxErr words an I/O error that the context's end or the timeout caused.
func (c *Client) ctxErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		if c.Timeout > 0 {
			return fmt.Errorf("%w: the session did not answer within %s", ErrTimeout, c.Timeout)
		}
		return fmt.Errorf("%w: %w", ErrTimeout, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}
