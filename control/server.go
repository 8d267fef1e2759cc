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
	"runtime"
	"sync"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/events"
)

// Driver is what a Server serves; *agent.Driver implements it. Its calls
// are serialized by the Driver itself.
type Driver interface {
	State(ctx context.Context, opt agent.StateOptions) (*agent.Observation, error)
	Do(ctx context.Context, name string, params json.RawMessage) (agent.ActionRecord, error)
	PageText(ctx context.Context, from, max int) (text, url string, total int, err error)
	Tabs() ([]events.TabInfo, string)
	Actions() []agent.ActionSpec
}

// Screenshotter is a Driver that can also take a screenshot of the focused
// tab without a new page state (OpScreenshot), so the indexes of the last
// state stay valid.
type Screenshotter interface {
	Screenshot(ctx context.Context) ([]byte, error)
}

// StopReason says why Serve returned.
type StopReason int

// Reasons Serve stops for.
const (
	// StopContext: Serve's context ended (a signal; a browser gone: the
	// context's cause tells).
	StopContext StopReason = iota + 1
	// StopClose: a client sent OpClose.
	StopClose
	// StopIdle: no request came for ServerOptions.IdleTimeout.
	StopIdle
)

func (r StopReason) String() string {
	switch r {
	case StopContext:
		return "stopped"
	case StopClose:
		return "closed"
	case StopIdle:
		return "idle"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// DefaultReadTimeout bounds reading a request once a connection is
// accepted, and writing its answer.
const DefaultReadTimeout = 10 * time.Second

// ServerOptions configure a Server.
type ServerOptions struct {
	// Info is the static part of what OpInfo answers (name, files,
	// browser).
	Info Info
	// IdleTimeout ends Serve after this long without a request (OpInfo
	// does not count); 0 never does.
	IdleTimeout time.Duration
	// Health is asked before each request that uses the browser, and again
	// after one that failed; an error wrapping events.ErrBrowserGone is
	// answered with CodeBrowserGone. nil: not asked.
	Health func(ctx context.Context) error
	// OnStop runs once when Serve stops, after the last request ended and
	// before the close requests are answered (with its error), on Serve's
	// goroutine. Serve returns when it has. nil: nothing runs.
	OnStop func(ctx context.Context, reason StopReason) error
	// ReadTimeout bounds reading a request and writing its answer
	// (default DefaultReadTimeout).
	ReadTimeout time.Duration
}

// Server serves one Driver on a listener, one request per connection (see
// the package documentation for the format). On a Unix socket, connections
// from another user are refused where the system tells who connected
// (Linux: SO_PEERCRED); elsewhere the socket's permissions (0600 in a 0700
// directory) are the guard. On TCP (Paths.Listen with TransportTCP) a
// connection that does not begin with the session's token is refused
// (CodeRefused) before its request is read; Serve refuses any other TCP
// listener.
type Server struct {
	d   Driver
	opt ServerOptions

	stopReq chan StopReason // buffered: the first stop request wins

	mu      sync.Mutex
	active  int       // requests in progress that count as activity
	last    time.Time // when the last one ended
	closers []net.Conn
	serving bool
}

// NewServer returns a Server for d.
func NewServer(d Driver, opt ServerOptions) *Server {
	if opt.ReadTimeout <= 0 {
		opt.ReadTimeout = DefaultReadTimeout
	}
	if opt.Info.Started.IsZero() {
		opt.Info.Started = time.Now()
	}
	return &Server{d: d, opt: opt, stopReq: make(chan StopReason, 1), last: time.Now()}
}

// ErrServing is returned by Serve when it was called before.
var ErrServing = errors.New("control: Serve called twice")

// Serve accepts connections on ln (a Unix socket, or Paths.Listen's) until ctx ends, a client sends OpClose,
// or IdleTimeout passes without a request. Then it closes ln (a
// *net.UnixListener removes its socket file), cancels the requests in
// progress and waits for their handlers, runs OnStop, answers the close
// requests with its result, and returns why it stopped. Every goroutine it
// started has ended when it returns. It may be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (StopReason, error) {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return 0, ErrServing
	}
	s.serving = true
	s.mu.Unlock()
	if _, ok := ln.(*tokenListener); !ok && ln.Addr().Network() != "unix" {
		// Anyone on the machine could reach it: refuse rather than serve
		// a browser to every local process.
		ln.Close()
		return 0, fmt.Errorf("%w: %s (use Paths.Listen)", ErrInsecureListener, ln.Addr())
	}

	reqCtx, cancelReqs := context.WithCancelCause(ctx)
	defer cancelReqs(nil)
	var handlers sync.WaitGroup
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		backoff := 5 * time.Millisecond
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				// Out of file descriptors, for example: try again, slower
				// and slower, rather than go deaf.
				select {
				case <-reqCtx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			backoff = 5 * time.Millisecond
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				s.handle(reqCtx, c)
			}()
		}
	}()

	reason := s.wait(ctx)

	ln.Close()
	// ctx's cancellation reaches reqCtx on its own, but not necessarily
	// before this line runs: pass its cause on, or a request cancelled
	// because the browser died would be told only that the session stops.
	cancelReqs(context.Cause(ctx))
	<-accepted
	handlers.Wait()

	var stopErr error
	if s.opt.OnStop != nil {
		stopErr = s.opt.OnStop(context.WithoutCancel(ctx), reason)
	}
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	resp := Response{V: Version, OK: stopErr == nil, Op: OpClose, Info: s.info()}
	if stopErr != nil {
		resp.Code, resp.Error = CodeFailed, stopErr.Error()
	}
	for _, c := range closers {
		s.reply(c, resp)
		c.Close()
	}
	return reason, nil
}

// wait blocks until a reason to stop.
func (s *Server) wait(ctx context.Context) StopReason {
	var idle <-chan time.Time
	if s.opt.IdleTimeout > 0 {
		t := time.NewTimer(s.opt.IdleTimeout)
		defer t.Stop()
		idle = t.C
		for {
			select {
			case <-ctx.Done():
				return StopContext
			case r := <-s.stopReq:
				return r
			case <-idle:
				left := s.idleLeft()
				if left <= 0 {
					return StopIdle
				}
				t.Reset(left)
			}
		}
	}
	select {
	case <-ctx.Done():
		return StopContext
	case r := <-s.stopReq:
		return r
	}
}

// idleLeft is how long until the idle timeout, counted from the end of the
// last request (a request in progress restarts it).
func (s *Server) idleLeft() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return s.opt.IdleTimeout
	}
	return s.opt.IdleTimeout - time.Since(s.last)
}

func (s *Server) begin() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
}

func (s *Server) end() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.mu.Unlock()
}

// handle serves one connection: one request, one answer.
func (s *Server) handle(ctx context.Context, c net.Conn) {
	owned := true
	defer func() {
		if owned {
			c.Close()
		}
	}()
	if a, ok := c.(authenticator); ok {
		if err := a.authenticate(ctx, s.opt.ReadTimeout); err != nil {
			// Said to whoever connected: it learns nothing but "no".
			if ctx.Err() == nil {
				s.reply(c, Response{V: Version, Code: CodeRefused, Error: ErrRefused.Error() + ": it needs the session's token"})
			}
			return
		}
	}
	if err := checkPeer(c); err != nil {
		s.reply(c, Response{V: Version, Code: CodeBadRequest, Error: err.Error()})
		return
	}
	req, err := s.read(ctx, c)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, io.EOF) {
			s.reply(c, Response{V: Version, Code: CodeBadRequest, Error: err.Error()})
		}
		return
	}
	if req.V != Version && req.Op != OpInfo && req.Op != OpClose {
		s.reply(c, Response{V: Version, Op: req.Op, Code: CodeVersion, Error: fmt.Sprintf(
			"the session speaks protocol version %d and this client version %d: it was started by another build of browseragent; close it (browseragent close) and open it again", Version, req.V)})
		return
	}
	if req.Op == OpClose {
		s.mu.Lock()
		s.closers = append(s.closers, c)
		s.mu.Unlock()
		owned = false
		select {
		case s.stopReq <- StopClose:
		default: // a stop is already requested
		}
		return
	}
	counts := req.Op != OpInfo
	if counts {
		s.begin()
		defer s.end()
	}
	// The client keeps its side open until it has the answer: a hang-up
	// cancels the request.
	rctx, cancel := context.WithCancel(ctx)
	hungUp := make(chan struct{})
	go func() {
		defer close(hungUp)
		var b [1]byte
		c.Read(b[:])
		cancel()
	}()
	resp := s.dispatch(rctx, req)
	resp.V, resp.Op = Version, req.Op
	s.reply(c, resp)
	c.Close()
	<-hungUp
	cancel()
}

// read reads one request line within ReadTimeout (or until ctx ends).
func (s *Server) read(ctx context.Context, c net.Conn) (Request, error) {
	var req Request
	c.SetReadDeadline(time.Now().Add(s.opt.ReadTimeout))
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	br := bufio.NewReader(io.LimitReader(c, MaxRequestBytes+1))
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Longer than bufio's buffer: read the rest up to the limit.
		rest, rerr := br.ReadBytes('\n')
		line, err = append(append([]byte(nil), line...), rest...), rerr
	}
	switch {
	case len(line) > MaxRequestBytes:
		return req, fmt.Errorf("%w: larger than %d bytes", ErrBadRequest, MaxRequestBytes)
	case err != nil && len(line) == 0:
		return req, err
	case err != nil && !errors.Is(err, io.EOF):
		return req, err
	}
	c.SetReadDeadline(time.Time{})
	if err := json.Unmarshal(line, &req); err != nil {
		return req, fmt.Errorf("%w: not a JSON request: %v", ErrBadRequest, err)
	}
	return req, nil
}

func (s *Server) reply(c net.Conn, resp Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(Response{V: Version, Op: resp.Op, Code: CodeFailed, Error: "encoding the answer: " + err.Error()})
	}
	c.SetWriteDeadline(time.Now().Add(s.opt.ReadTimeout))
	c.Write(append(b, '\n'))
}

// dispatch runs one request.
func (s *Server) dispatch(ctx context.Context, req Request) Response {
	switch req.Op {
	case OpInfo:
		return Response{OK: true, Info: s.info()}
	case OpTabs:
		tabs, focused := s.d.Tabs()
		r := Response{OK: true, Focused: agent.TabRef(focused)}
		for _, t := range tabs {
			r.Tabs = append(r.Tabs, Tab{ID: agent.TabRef(t.TargetID), TargetID: t.TargetID, URL: t.URL, Title: t.Title, Focused: t.TargetID == focused})
			if t.TargetID == focused {
				r.URL, r.Title = t.URL, t.Title
			}
		}
		return r
	case OpActions:
		r := Response{OK: true}
		for _, a := range s.d.Actions() {
			r.Actions = append(r.Actions, Action{Name: a.Name, Description: a.Description, Params: a.Params})
		}
		return r
	case OpDo, OpState, OpText, OpScreenshot:
	default:
		return Response{Code: CodeBadRequest, Error: fmt.Sprintf("%v: unknown op %q", ErrBadRequest, req.Op)}
	}
	if err := s.health(ctx); err != nil {
		return s.failure(ctx, err, Response{Action: req.Action})
	}
	var r Response
	switch req.Op {
	case OpDo:
		rec, err := s.d.Do(ctx, req.Action, req.Params)
		r = Response{Action: req.Action, Verdict: rec.Verdict, Text: rec.Result.Text, ReadOnce: rec.Result.ReadOnce}
		s.focused(&r)
		if err != nil {
			if rec.Error != "" {
				// The record's words are scrubbed of secrets.
				err = &scrubbed{msg: rec.Error, err: err}
			}
			return s.failure(ctx, err, r)
		}
		if rec.Error != "" || rec.Verdict == events.VerdictFailed {
			if gone := s.gone(ctx); gone != nil {
				return s.failure(ctx, gone, r)
			}
			r.Code, r.Error = CodeFailed, rec.Error
			return r
		}
	case OpState:
		obs, err := s.d.State(ctx, agent.StateOptions{Screenshot: req.Screenshot})
		if err != nil {
			return s.failure(ctx, err, r)
		}
		st := *obs.State
		if st.Error != "" {
			// A page state without its elements: maybe the browser died.
			if gone := s.gone(ctx); gone != nil {
				return s.failure(ctx, gone, r)
			}
		}
		r = Response{Text: obs.Text, URL: st.URL, Title: st.Title, Step: obs.Step}
		if req.Screenshot {
			r.Screenshot = st.Screenshot
		}
		if req.Detail {
			st.Screenshot = nil
			r.State = &st
		}
	case OpText:
		text, url, total, err := s.d.PageText(ctx, req.From, req.Max)
		r = Response{Text: text, URL: url, Total: total}
		if err != nil {
			return s.failure(ctx, err, r)
		}
	case OpScreenshot:
		sh, ok := s.d.(Screenshotter)
		if !ok {
			return Response{Code: CodeUnknownAction, Error: "this session cannot take screenshots"}
		}
		png, err := sh.Screenshot(ctx)
		if err != nil {
			return s.failure(ctx, err, r)
		}
		r = Response{Screenshot: png}
		s.focused(&r)
	}
	r.OK = true
	return r
}

// scrubbed is an error whose text is replaced by its record's (secrets
// scrubbed); it still unwraps to the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// health asks ServerOptions.Health.
func (s *Server) health(ctx context.Context) error {
	if s.opt.Health == nil {
		return nil
	}
	return s.opt.Health(ctx)
}

// gone returns Health's error when it says the browser is gone, else nil.
func (s *Server) gone(ctx context.Context) error {
	if err := s.health(ctx); errors.Is(err, events.ErrBrowserGone) {
		return err
	}
	return nil
}

// failure fills r for err, after asking Health whether the browser is
// still there (a request that failed because the browser died says so).
func (s *Server) failure(ctx context.Context, err error, r Response) Response {
	switch {
	case errors.Is(err, events.ErrBrowserGone):
	case ctx.Err() != nil:
		// The server is stopping (a client that hung up reads nothing):
		// say why, when it is the browser.
		if cause := context.Cause(ctx); errors.Is(cause, events.ErrBrowserGone) {
			err = cause
		} else {
			err = fmt.Errorf("%w: the session is stopping; the request was cancelled", agent.ErrClosed)
		}
	default:
		if gone := s.gone(ctx); gone != nil {
			err = gone
		}
	}
	r.OK, r.Error = false, err.Error()
	var stale *agent.StaleIndexError
	var denied *agent.DeniedError
	switch {
	case errors.As(err, &stale):
		r.Code, r.Stale = CodeStaleIndex, &StaleIndex{Index: stale.Index, Reason: stale.Reason}
	case errors.As(err, &denied):
		r.Code, r.Reason = CodeDenied, denied.Reason
	case errors.Is(err, agent.ErrUnknownAction):
		r.Code = CodeUnknownAction
	case errors.Is(err, agent.ErrBadParams):
		r.Code = CodeBadParams
	case errors.Is(err, events.ErrBrowserGone):
		r.Code = CodeBrowserGone
	case errors.Is(err, agent.ErrClosed):
		r.Code = CodeClosed
	default:
		r.Code = CodeFailed
	}
	return r
}

// focused sets r's URL and Title to the focused tab's.
func (s *Server) focused(r *Response) {
	tabs, focused := s.d.Tabs()
	for _, t := range tabs {
		if t.TargetID == focused {
			r.URL, r.Title = t.URL, t.Title
		}
	}
}

// info is the session's description now.
func (s *Server) info() *Info {
	in := s.opt.Info
	in.PID, in.Version, in.IdleTimeout = os.Getpid(), Version, s.opt.IdleTimeout
	s.mu.Lock()
	if s.active == 0 {
		in.Idle = time.Since(s.last)
	}
	s.mu.Unlock()
	var r Response
	s.focused(&r)
	in.URL, in.Title = r.URL, r.Title
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	in.HeapAlloc, in.HeapInuse, in.Sys = ms.HeapAlloc, ms.HeapInuse, ms.Sys
	in.Goroutines = runtime.NumGoroutine()
	return &in
}
