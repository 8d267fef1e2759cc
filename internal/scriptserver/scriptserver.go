// Package scriptserver is an OpenAI-compatible chat-completions server on
// loopback that answers with an llm.Model in-process, usually a
// scripted.Model (which reads the page from the request, like a real
// model). Each call can take a configured latency, so a run through the
// real provider path (openai:NAME with --base-url) costs what a remote model
// would: the CLI tests use it as replay's heal model and the replay
// measurement (cmd/benchreplay) as a 1 s per call model.
//
// Only what the agent sends is understood: POST /v1/chat/completions (or
// /chat/completions) with messages whose content is a string or text and
// image_url parts, and an optional json_schema response_format. Streaming
// is not supported.
package scriptserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Latency is how long every call takes before it is answered (the
	// simulated model's thinking time); it ends early when the client goes
	// away. Default 0.
	Latency time.Duration
	// Addr is the address to listen on; default "127.0.0.1:0" (a free
	// loopback port). A non-loopback address is refused.
	Addr string
	// ModelTimeout bounds one call of the model (after the latency);
	// default 60 s.
	ModelTimeout time.Duration
}

// ErrNotLoopback is returned by Start for an Addr that is not a loopback
// address: the server has no authentication.
var ErrNotLoopback = errors.New("scriptserver: address is not loopback")

// Server serves one model until Close. Its methods are safe for concurrent
// use.
type Server struct {
	model llm.Model
	cfg   Config
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}
	calls atomic.Int64
	// gen serialises the model's calls (a scripted model is a sequence).
	gen sync.Mutex

	mu   sync.Mutex
	errs []error
	// closing refuses new handlers; handlers counts the running ones,
	// which Close waits for.
	closing  bool
	handlers sync.WaitGroup
}

// Start listens and serves m. Calls reach m one at a time (their latency
// runs concurrently); which waiting call goes next is not defined.
func Start(m llm.Model, cfg Config) (*Server, error) {
	if m == nil {
		return nil, errors.New("scriptserver: nil model")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.ModelTimeout <= 0 {
		cfg.ModelTimeout = 60 * time.Second
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("scriptserver: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %s", ErrNotLoopback, cfg.Addr)
	}
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("scriptserver: negative latency %v", cfg.Latency)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("scriptserver: %w", err)
	}
	s := &Server{model: m, cfg: cfg, ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("POST /chat/completions", s.complete)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the API base URL to give the openai provider (--base-url):
// "http://127.0.0.1:PORT/v1".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Calls is the number of chat-completion requests received so far (model
// calls: a request that does not parse is not counted, one abandoned during
// its latency is).
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Errors returns the model's errors so far, in order.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Close stops the server, ending calls in progress (their contexts are
// cancelled when their connections close), and waits for its goroutine and
// every handler to return. A request arriving meanwhile is answered 503.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	err := s.srv.Close()
	<-s.done
	s.handlers.Wait()
	return err
}

// enter registers a running handler; false once Close has begun.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.handlers.Add(1)
	return true
}

// request is the part of a chat-completions request that is understood.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	MaxTokens           int      `json:"max_tokens"`
	Temperature         *float64 `json:"temperature"`
	Stream              bool     `json:"stream"`
}

type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// toLLM converts the wire request into the model's.
func (r *request) toLLM() (llm.Request, error) {
	var out llm.Request
	out.MaxTokens = max(r.MaxCompletionTokens, r.MaxTokens)
	out.Temperature = r.Temperature
	for i, m := range r.Messages {
		msg := llm.Message{Role: llm.Role(m.Role)}
		var text string
		var parts []part
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
		case json.Unmarshal(m.Content, &text) == nil:
			msg.Parts = []llm.Part{llm.Text(text)}
		case json.Unmarshal(m.Content, &parts) == nil:
			for _, p := range parts {
				switch {
				case p.Type == "text":
					msg.Parts = append(msg.Parts, llm.Text(p.Text))
				case p.Type == "image_url" && p.ImageURL != nil:
					mt, data, err := llm.ParseDataURL(p.ImageURL.URL)
					if err != nil {
						msg.Parts = append(msg.Parts, llm.Part{Image: &llm.Image{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}})
						continue
					}
					msg.Parts = append(msg.Parts, llm.Part{Image: &llm.Image{MediaType: mt, Data: data, Detail: p.ImageURL.Detail}})
				}
			}
		default:
			return out, fmt.Errorf("message %d: content is neither a string nor a list of parts", i)
		}
		out.Messages = append(out.Messages, msg)
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		out.Schema = &llm.Schema{Name: rf.JSONSchema.Name, JSON: rf.JSONSchema.Schema}
	}
	return out, nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, "server_error", "the server is closing")
		return
	}
	defer s.handlers.Done()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "request is not JSON: "+err.Error())
		return
	}
	if req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "streaming is not supported")
		return
	}
	lr, err := req.toLLM()
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.calls.Add(1)
	if d := s.cfg.Latency; d > 0 {
		// The simulated model's thinking time: a timer, or the client
		// giving up (or Close).
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ModelTimeout)
	defer cancel()
	resp, err := s.generate(ctx, lr)
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	finish := resp.StopReason
	if finish == "" {
		finish = "stop"
	}
	out, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", s.calls.Load()), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": resp.Content}, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": resp.Usage.PromptTokens, "completion_tokens": resp.Usage.CompletionTokens,
			"total_tokens": resp.Usage.PromptTokens + resp.Usage.CompletionTokens},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// generate calls the model, one call at a time.
func (s *Server) generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	s.gen.Lock()
	defer s.gen.Unlock()
	return s.model.Generate(ctx, req)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": strings.TrimSpace(msg), "type": typ, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
