package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/providers"
	"github.com/browseragent/browseragent/mcpserver"
	"github.com/browseragent/browseragent/session"
)

// mcpFlags are the flags of `browseragent mcp`.
type mcpFlags struct {
	drive       driveFlags
	model       string
	baseURL     string
	agent       agentFlags
	confirm     string
	maxSteps    int
	uploads     string
	httpAddr    string
	allowRemote bool
	tokenEnv    string
	human       mcpHumanFlags
}

func (f *mcpFlags) register(fs *flag.FlagSet) {
	f.drive.register(fs)
	fs.StringVar(&f.model, "model", os.Getenv("BROWSERAGENT_MODEL"), "model for run_task and extract's queries, as provider:name (default $BROWSERAGENT_MODEL; without one there is no run_task and extract returns the page's text)")
	fs.StringVar(&f.baseURL, "base-url", "", "the provider's API base URL (OpenAI-compatible servers, proxies)")
	f.agent.register(fs, "run_task sends screenshots to the model: on (every step), auto (when it asks, or the page is a canvas/video its text cannot show) or off")
	// The budget applies to run_task's runs: the extract tool's one model
	// call is priced (in the trace) but not budgeted.
	fs.Lookup("max-cost").Usage = "stop each run_task before a model call that would bring its cost over this many US dollars (0: no limit); the extract tool's single model calls are priced but not budgeted"
	fs.Lookup("max-tokens").Usage = "stop each run_task before a model call that would bring its input+output tokens over this (0: no limit); the extract tool's single model calls are counted but not budgeted"
	fs.StringVar(&f.confirm, "confirm", "", "comma-separated risk classes the user must confirm in the MCP client (elicitation) before they run; refused when the client cannot ask")
	fs.IntVar(&f.maxSteps, "max-steps", mcpserver.DefaultMaxSteps, "run_task's step budget (its default and maximum)")
	fs.StringVar(&f.uploads, "upload-files", "", "comma-separated local files the upload tool may send to pages (default: none)")
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address (host:port, e.g. 127.0.0.1:8931) instead of stdio; the endpoint is /mcp")
	fs.BoolVar(&f.allowRemote, "http-allow-remote", false, "allow --http on an address other than loopback (anyone who reaches it drives the browser)")
	f.human.register(fs)
	fs.StringVar(&f.tokenEnv, "http-token-env", "", "over HTTP, require the header 'Authorization: Bearer <token>', the token read from this environment variable")
}

func runMCP(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	var f mcpFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent mcp [flags]")
		fmt.Fprintln(stderr, "Serves the browser to an MCP client over stdio (or streamable HTTP with --http). See docs/mcp.md.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("mcp takes no arguments, only flags")
	}
	confirm, err := risks(f.confirm)
	if err != nil {
		return err
	}
	if _, err := risks(f.drive.deny); err != nil {
		return err
	}
	set := agent.Settings{AvailableFilePaths: splitList(f.uploads)}
	if err := f.agent.apply(&set, f.model, f.baseURL); err != nil {
		return err
	}
	if err := f.human.apply(&set); err != nil {
		return err
	}
	var token string
	if f.httpAddr == "" && (f.tokenEnv != "" || f.allowRemote) {
		return usagef("--http-token-env and --http-allow-remote apply to --http only")
	}
	if f.httpAddr != "" {
		if f.tokenEnv != "" {
			if token = os.Getenv(f.tokenEnv); token == "" {
				return usagef("--http-token-env: environment variable %s is empty or not set", f.tokenEnv)
			}
		}
		local, err := loopback(f.httpAddr)
		if err != nil {
			return usagef("--http: %v", err)
		}
		if !local && !f.allowRemote {
			return usagef("--http %s is not a loopback address: anyone who reaches it could drive the browser; pass --http-allow-remote (and --http-token-env) if you mean it", f.httpAddr)
		}
	}
	var model llm.Model
	if f.model != "" {
		if model, err = providers.New(f.model, providers.Options{BaseURL: f.baseURL}); err != nil {
			return err
		}
	}
	if f.drive.outDir == "" {
		base, err := stateDir()
		if err != nil {
			return err
		}
		f.drive.outDir = filepath.Join(base, "mcp-"+time.Now().UTC().Format("20060102-150405.000"))
	}

	// Over stdio, stdout carries the protocol: everything else goes to stderr.
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(stderr), zap.InfoLevel))
	defer log.Sync()

	var approver agent.Approver
	if len(confirm) > 0 {
		approver = mcpserver.Confirm(confirm, nil)
	}
	starts := 0
	start := func(ctx context.Context) (*mcpserver.Browser, error) {
		starts++
		df := f.drive
		if starts > 1 {
			// A browser after the first one died: its own folder, so the
			// first trace stays as it was.
			df.outDir = filepath.Join(f.drive.outDir, fmt.Sprintf("browser-%d", starts))
		}
		runSettings := set
		runSettings.ExtractModel, runSettings.Logger = model, log.Named("agent")
		hand := f.human.handoff()
		if hand != nil {
			runSettings.Human = hand
		}
		d, err := startDriven(ctx, drivenConfig{
			flags:    &df,
			kind:     "mcp",
			approver: approver,
			settings: runSettings,
			opts:     []session.Option{session.WithLogger(log.Named("session"))},
		})
		if err != nil {
			return nil, err
		}
		if err := hand.bind(d.Session); err != nil {
			return nil, errors.Join(fmt.Errorf("--live-addr: %w", err), d.Close())
		}
		fmt.Fprintf(stderr, "browseragent mcp: browser started; trace: %s\n", d.Trace)
		return &mcpserver.Browser{Driver: d.Driver, Ready: d.Session.Ready, Trace: d.Trace, Close: func() error {
			err := errors.Join(hand.close(), d.Close())
			fmt.Fprintf(stderr, "browseragent mcp: browser closed; trace: %s, report: %s\n", d.Trace, d.Report)
			return err
		}}, nil
	}
	srv, err := mcpserver.New(mcpserver.Config{Start: start, Model: model, MaxSteps: f.maxSteps, Evaluate: f.drive.evaluate, Logger: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "browseragent mcp: the browser starts at the first tool call; trace: %s\n", filepath.Join(f.drive.outDir, "trace.jsonl"))

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var serveErr error
	if f.httpAddr != "" {
		serveErr = serveHTTP(ctx, srv, f.httpAddr, token, stderr)
	} else {
		serveErr = srv.Run(ctx, &mcp.StdioTransport{})
		if errors.Is(serveErr, context.Canceled) || errors.Is(serveErr, io.EOF) {
			serveErr = nil // a signal, or the client closed stdin
		}
	}
	return errors.Join(serveErr, srv.Close())
}

// serveHTTP serves srv's streamable HTTP endpoint at addr/mcp until ctx
// ends, then closes srv and the HTTP server.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr, token string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var h http.Handler = srv.HTTPHandler()
	if token != "" {
		h = bearer(token, h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "browseragent mcp: serving streamable HTTP at http://%s/mcp\n", ln.Addr())
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		served <- err // for the wait below
	}
	// Closing the server ends its MCP sessions, so their streams let go of
	// their connections before Shutdown waits for them.
	errs = append(errs, srv.Close())
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		errs = append(errs, hs.Close())
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// bearer refuses requests without the header "Authorization: Bearer token".
func bearer(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopback reports whether addr (host:port) listens on loopback only.
func loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
