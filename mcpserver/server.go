// Package mcpserver serves one browser to MCP clients (Claude Code, Cursor,
// any client of the Model Context Protocol) through the official Go SDK:
// step tools (navigate, state, click, type, select, …) that map onto an
// agent.Driver's actions, and run_task, which runs a whole task with a
// model.
//
// The embedder keeps the browser, the registry, the policy and the trace:
// Config.Start builds them the way it likes (see cmd/browseragent mcp for
// the CLI's), and every tool goes through that Driver, so its Approver, its
// secrets, its observers (the trace) and its URL policy apply to each call.
// Confirm adds approvals that the client's user answers (MCP elicitation).
//
//	srv, err := mcpserver.New(mcpserver.Config{Start: start})
//	...
//	err = srv.Run(ctx, &mcp.StdioTransport{})
//	srv.Close()
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Errors of the Server. Tool calls report them as tool errors (their text);
// Go callers match them with errors.Is.
var (
	// ErrClosed: the Server was closed.
	ErrClosed = errors.New("mcpserver: closed")
	// ErrStart: Config.Start failed; the error wraps Start's too.
	ErrStart = errors.New("mcpserver: could not start the browser")
	// ErrBrowserGone: the browser died or stopped. The next tool call
	// starts a new one.
	ErrBrowserGone = errors.New("mcpserver: the browser is gone")
)

// DefaultMaxSteps is run_task's step budget when Config.MaxSteps is 0.
const DefaultMaxSteps = 50

// Browser is what Config.Start returns: a started browser and the Driver
// the tools act through.
type Browser struct {
	// Driver runs every tool's action (required). Its Settings decide what
	// applies: Approver (wrap it with Confirm for questions to the user),
	// SensitiveData, Observers (the trace), ExcludeActions, ExtractModel.
	Driver *agent.Driver
	// Ready reports whether the browser can still take actions: nil, or an
	// error wrapping events.ErrBrowserGone when it will not come back (a
	// *session.Session's Ready). It is called before each tool call; nil
	// means always ready.
	Ready func(ctx context.Context) error
	// Close ends the Driver and stops the browser; it is called once, when
	// the Server closes or after the browser died.
	Close func() error
	// Trace is the trace file's path, reported by run_task ("" if none).
	Trace string
}

// Config configures a Server. Only Start is required.
type Config struct {
	// Start starts what the tools drive. It runs on the first tool call
	// (initialize and tools/list start nothing, so a client that never
	// browses costs nothing), and again on the first call after the
	// browser died. ctx is that call's: it bounds the start, and the
	// browser must not depend on it afterwards. Calls never overlap.
	Start func(ctx context.Context) (*Browser, error)
	// Model runs run_task; nil leaves run_task out of the tool list. It
	// also makes extract answer a query: give the Driver the same model as
	// Settings.ExtractModel. Without it extract returns the page's text.
	Model llm.Model
	// MaxSteps is run_task's step budget: the default and the most a call
	// may ask for. Default DefaultMaxSteps.
	MaxSteps int
	// Evaluate lists the evaluate tool (JavaScript the client writes runs
	// in the page). The Driver must offer the action too: it refuses what
	// Settings.ExcludeActions names.
	Evaluate bool
	// HTTPSessionTimeout closes a streamable HTTP session after this long
	// without a request (the client starts a new one). Default
	// DefaultHTTPSessionTimeout; negative: never.
	HTTPSessionTimeout time.Duration
	// Name and Version identify the server to clients (default
	// "browseragent" and "dev").
	Name, Version string
	// Logger receives the server's own log (starts, restarts, failures);
	// default zap.NewNop(). Over stdio it must not write to stdout.
	Logger *zap.Logger
}

// Server is an MCP server over one browser at a time. Its tool calls may
// come from several sessions at once (streamable HTTP); the Driver runs
// them one at a time. Create it with New; Close it when done.
type Server struct {
	cfg Config
	mcp *mcp.Server
	log *zap.Logger

	// ctx ends every call in progress when the Server closes.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed and the calls counter's Add
	closed bool
	calls  sync.WaitGroup

	// lock holds a token while the current browser is looked at,
	// started or retired; it guards cur.
	lock chan struct{}
	cur  *Browser
}

// New returns a Server with the tools registered. It starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Start == nil {
		return nil, errors.New("mcpserver: Config.Start is required")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Name == "" {
		cfg.Name = "browseragent"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, lock: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "Browser", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// No logging capability: the server logs to its own Logger.
		Capabilities: &mcp.ServerCapabilities{},
	})
	s.addTools()
	return s, nil
}

// instructions tell the client's model how the tools fit together.
const instructions = "Drive a web browser. Call state to read the page: its elements carry [index] numbers that click, type, select, hover, upload and scroll take; take a new state after the page changes."

// MCP returns the underlying SDK server (to connect it to a transport of
// one's own).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t (e.g. &mcp.StdioTransport{}) until the
// client leaves or ctx ends. It does not close the Server.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// DefaultHTTPSessionTimeout is how long an idle streamable HTTP session is
// kept (Config.HTTPSessionTimeout).
const DefaultHTTPSessionTimeout = 30 * time.Minute

// HTTPHandler serves streamable HTTP: each client gets its own MCP session,
// all of them drive the same browser; an idle session is closed after
// Config.HTTPSessionTimeout. It refuses, with 403, requests that
// reached a loopback address under another host name (DNS rebinding; the
// SDK's check) and cross-origin requests from web pages
// (http.CrossOriginProtection). It has no authentication of its own.
func (s *Server) HTTPHandler() http.Handler {
	timeout := s.cfg.HTTPSessionTimeout
	switch {
	case timeout == 0:
		timeout = DefaultHTTPSessionTimeout
	case timeout < 0:
		timeout = 0 // the SDK's "never"
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{SessionTimeout: timeout})
	return http.NewCrossOriginProtection().Handler(h)
}

// Close ends the calls in progress and waits for them, closes the MCP
// sessions, and closes the browser (Browser.Close, whose error it
// returns). Later tool calls fail with ErrClosed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.calls.Wait()
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	s.lock <- struct{}{}
	b := s.cur
	s.cur = nil
	<-s.lock
	if b == nil {
		return nil
	}
	return b.Close()
}

// enter registers a call; the returned context ends when the call's does
// or the Server closes. leave must be called when the call is over.
func (s *Server) enter(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	s.calls.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		s.calls.Done()
	}, nil
}

// browser returns the running browser, starting one when none runs. A
// browser that is no longer ready is closed and reported as
// ErrBrowserGone; the call after starts a new one.
func (s *Server) browser(ctx context.Context) (*Browser, error) {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.lock }()
	if b := s.cur; b != nil {
		if b.Ready == nil {
			return b, nil
		}
		err := b.Ready(ctx)
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.retireLocked(b, err)
		return nil, fmt.Errorf("%w (%v); the next call starts a new browser, on a blank page", ErrBrowserGone, err)
	}
	b, err := s.cfg.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if b == nil || b.Driver == nil || b.Close == nil {
		return nil, fmt.Errorf("%w: Config.Start returned no Driver or no Close", ErrStart)
	}
	s.log.Info("browser started", zap.String("trace", b.Trace))
	s.cur = b
	return b, nil
}

// retire closes b after err said it is gone, unless it was already
// replaced.
func (s *Server) retire(b *Browser, err error) {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	s.retireLocked(b, err)
}

func (s *Server) retireLocked(b *Browser, err error) {
	if s.cur != b {
		return
	}
	s.cur = nil
	s.log.Warn("the browser is gone; the next call starts a new one", zap.Error(err))
	if cerr := b.Close(); cerr != nil {
		s.log.Warn("closing the dead browser", zap.Error(cerr))
	}
}

// isGone reports whether err means the browser will not take more actions.
func isGone(err error) bool {
	return errors.Is(err, events.ErrBrowserGone) || errors.Is(err, agent.ErrNotStarted) || errors.Is(err, session.ErrNotStarted)
}
