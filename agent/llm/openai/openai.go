// Package openai is an llm.Model for the OpenAI Chat Completions API
// (POST {base}/chat/completions) and the servers that copy it: Ollama
// (http://localhost:11434/v1), vLLM, LM Studio, OpenRouter.
//
// Structured output is sent as response_format {type: "json_schema",
// json_schema: {name, strict: true, schema}}. Strict mode requires every
// object to set additionalProperties:false and to list all its properties as
// required, so the schema is adapted (StrictSchema): optional properties
// become required-but-nullable, key order is preserved. A schema strict mode
// cannot express (a free-form object: no listed properties, or
// additionalProperties true or a schema) is refused before sending with a
// *llm.SchemaError naming the path, unless the llm.Schema is Loose (then it
// is sent unchanged with strict:false) or Config.NonStrict is set.
//
// Prompt caching is automatic on OpenAI's side for a prompt prefix of 1,024
// tokens or more; Request.CacheKey is sent as prompt_cache_key to OpenAI's
// own API only (see Config.SendCacheKey). Usage reports
// prompt_tokens_details.cached_tokens as CachedTokens and
// completion_tokens_details.reasoning_tokens as ReasoningTokens.
//
// Errors: a 429 whose type or code is insufficient_quota is llm.ErrQuota
// (billing, not retried), HTTP 402 (OpenRouter's "insufficient credits") is
// llm.ErrQuota, and a 4xx with code context_length_exceeded or a message
// naming the "maximum context length" (OpenAI, vLLM, OpenRouter) is
// llm.ErrContextLength.
//
// Servers that truncate an oversized prompt instead of rejecting it (Ollama
// answers 200 with the prompt cut to its num_ctx) are guarded by
// Config.ContextWindow when the window is known, and by
// Config.MinContextWindow (the reply's check alone) when it is not.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/internal/wire"
)

// DefaultBaseURL is OpenAI's API base.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Model. Zero fields take the documented defaults.
type Config struct {
	// Model is the model id sent as "model" (required).
	Model string
	// APIKey is sent as "Authorization: Bearer". Default $OPENAI_API_KEY.
	// Required when the base URL is OpenAI's; optional for other servers.
	APIKey string
	// BaseURL defaults to $OPENAI_BASE_URL, then DefaultBaseURL.
	BaseURL string
	// Provider names the backend in Name() and errors; default "openai".
	Provider string
	// HTTPClient defaults to a client owned by the Model (see
	// CloseIdleConnections). An injected client is never closed.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; default 90s. Its expiry is
	// llm.ErrProviderUnavailable (retryable), unlike the caller's ctx.
	Timeout time.Duration
	// NonStrict sends json_schema with strict:false and the schema unchanged.
	NonStrict bool
	// LegacyMaxTokens sends "max_tokens" instead of "max_completion_tokens"
	// (older OpenAI-compatible servers).
	LegacyMaxTokens bool
	// Header holds extra request headers (e.g. OpenRouter's HTTP-Referer).
	Header http.Header
	// SendCacheKey sends Request.CacheKey as "prompt_cache_key" to a server
	// other than OpenAI's. It is always sent to DefaultBaseURL and never
	// elsewhere by default: OpenAI-compatible servers differ in how they
	// treat unknown fields, and a strict one rejects the request.
	SendCacheKey bool
	// ContextWindow, when positive, is the server's context size in tokens,
	// for servers that truncate an oversized prompt silently (Ollama); set
	// it only when the server's window is known (configured), since a
	// request whose estimated prompt (EstimateTokens) exceeds it is refused
	// before sending. A reply whose usage.prompt_tokens reaches the window,
	// or whose prompt size is less than half the estimate, is reported as
	// truncated (see MinContextWindow for the prompt size). Both are a
	// *llm.ContextLengthError (llm.ErrContextLength). 0 checks nothing
	// unless MinContextWindow is set (the API reports oversized prompts
	// itself).
	ContextWindow int
	// MinContextWindow, when positive and ContextWindow is 0, is the
	// smallest window the server may be running with when its actual one
	// is not known (Ollama picks its default by the GPU's memory: 4,096
	// tokens below 24 GiB, more above). Nothing is refused before sending;
	// a reply is reported truncated (a *llm.ContextLengthError with Window
	// 0) when its prompt size is less than half the estimate and the
	// estimate is at least half this window. The prompt size is
	// usage.prompt_tokens plus prompt_tokens_details.cached_tokens when the
	// server reports them (a server may count only the tokens it evaluated
	// after a KV-cache hit), so a reported cache hit is not taken for a
	// truncation. Blind spots: a truncation that keeps more than half the
	// estimate passes, and a server that counts only the evaluated tokens
	// without reporting cached_tokens (some Ollama 0.30 releases) can make a
	// large cache hit look like a truncation.
	MinContextWindow int
	// ContextHint ends a *llm.ContextLengthError's message: how to raise
	// the window on this server.
	ContextHint string
}

// Model talks to one model of an OpenAI-compatible server. It is safe for
// concurrent use.
type Model struct {
	cfg    Config
	url    string
	client wire.Client
}

// New returns a Model. A missing key for api.openai.com is a
// *llm.MissingKeyError naming OPENAI_API_KEY.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai: %w: empty model name", llm.ErrBadRequest)
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.APIKey == "" && cfg.BaseURL == DefaultBaseURL {
		return nil, &llm.MissingKeyError{Provider: cfg.Provider, EnvVars: []string{"OPENAI_API_KEY"}}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 90 * time.Second
	}
	m := &Model{cfg: cfg, url: cfg.BaseURL + "/chat/completions", client: wire.OwnClient(cfg.HTTPClient)}
	return m, nil
}

// Name returns "provider:model".
func (m *Model) Name() string { return m.cfg.Provider + ":" + m.cfg.Model }

// BoundsAttempts is true (llm.AttemptBounder): the attempt timeout in
// force (Request.AttemptTimeout or llm.WithAttemptTimeout), when shorter
// than Config.Timeout, bounds each HTTP attempt.
func (m *Model) BoundsAttempts() bool { return true }

// CloseIdleConnections closes idle connections of the Model's own client
// (an injected client is left alone).
func (m *Model) CloseIdleConnections() {
	m.client.CloseIdle()
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []contentPart
}

type jsonSchema struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Strict      bool   `json:"strict"`
	Schema      any    `json:"schema"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type request struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	PromptCacheKey      string          `json:"prompt_cache_key,omitempty"`
}

type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type response struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *apiError `json:"error"` // OpenRouter reports some upstream errors in a 200
}

func (m *Model) buildRequest(req *llm.Request) (*request, error) {
	out := &request{Model: m.cfg.Model, Temperature: req.Temperature}
	if req.CacheKey != "" && (m.cfg.SendCacheKey || m.cfg.BaseURL == DefaultBaseURL) {
		out.PromptCacheKey = req.CacheKey
	}
	if m.cfg.LegacyMaxTokens {
		out.MaxTokens = req.MaxTokens
	} else {
		out.MaxCompletionTokens = req.MaxTokens
	}
	for _, msg := range req.Messages {
		if len(msg.Parts) == 1 && msg.Parts[0].Image == nil || msg.Role != llm.RoleUser {
			out.Messages = append(out.Messages, message{Role: string(msg.Role), Content: msg.TextContent()})
			continue
		}
		parts := make([]contentPart, 0, len(msg.Parts))
		for _, p := range msg.Parts {
			if p.Image == nil {
				parts = append(parts, contentPart{Type: "text", Text: p.Text})
				continue
			}
			u, err := p.Image.DataURL()
			if err != nil {
				return nil, err
			}
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: u, Detail: p.Image.Detail}})
		}
		out.Messages = append(out.Messages, message{Role: string(msg.Role), Content: parts})
	}
	if s := req.Schema; s != nil {
		js := &jsonSchema{Name: s.ToolName(), Description: s.Description, Strict: !m.cfg.NonStrict && !s.Loose, Schema: json.RawMessage(s.JSON)}
		if js.Strict {
			adapted, path, reason, err := strictSchema(s.JSON)
			if err != nil {
				return nil, err
			}
			if path != "" {
				return nil, &llm.SchemaError{Provider: m.cfg.Provider, Schema: s.ToolName(), Path: path,
					Reason: reason + "; strict structured output cannot express it: list the properties, mark the schema Loose to send it non-strict, or set NonStrict"}
			}
			js.Schema = adapted
		}
		out.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: js}
	}
	return out, nil
}

// Generate sends one Chat Completions request. See llm.Model for the error
// contract: finish_reason "length" is llm.ErrTruncated, a refusal or
// "content_filter" is llm.ErrRefused, a reply without content is
// llm.ErrEmptyReply, and non-JSON structured output is a *llm.ParseError.
func (m *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", m.cfg.Provider, err)
	}
	body, err := m.buildRequest(&req)
	if err != nil {
		var se *llm.SchemaError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", m.cfg.Provider, err)
	}
	var estimate int
	if m.cfg.ContextWindow > 0 || m.cfg.MinContextWindow > 0 {
		estimate = EstimateTokens(&req)
	}
	if m.cfg.ContextWindow > 0 && estimate > m.cfg.ContextWindow {
		return nil, m.contextErr(estimate, 0)
	}
	h := http.Header{}
	for k, vs := range m.cfg.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	if m.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	raw, latency, err := wire.Do(ctx, wire.Call{
		Provider: m.cfg.Provider, Client: m.client.Client, URL: m.url, Header: h, Body: body,
		Timeout: wire.Timeout(ctx, m.cfg.Timeout, &req), ParseError: parseError, Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, wire.Envelope(m.cfg.Provider, raw, err)
	}
	if r.Error != nil {
		ae := &llm.APIError{Provider: m.cfg.Provider, Code: r.Error.Type, Message: r.Error.Message}
		if n, err := strconv.Atoi(string(r.Error.Code)); err == nil && n >= 400 && n < 600 {
			ae.Status = n
		}
		classify(ae)
		return nil, ae
	}
	resp := &llm.Response{Model: r.Model, Latency: latency}
	if resp.Model == "" {
		resp.Model = m.cfg.Model
	}
	if u := r.Usage; u != nil {
		resp.Usage = llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if u.PromptTokensDetails != nil {
			resp.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			resp.Usage.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
		}
		if read := m.truncated(estimate, resp.Usage); read > 0 {
			return resp, m.contextErr(estimate, read)
		}
	}
	if len(r.Choices) == 0 {
		return resp, &llm.ReplyError{Provider: m.cfg.Provider, Kind: llm.ErrEmptyReply, Detail: "no choices"}
	}
	c := r.Choices[0]
	resp.StopReason = c.FinishReason
	if c.Message.Content != nil {
		resp.Content = *c.Message.Content
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		return resp, &llm.ReplyError{Provider: m.cfg.Provider, Kind: llm.ErrRefused, StopReason: c.FinishReason, Detail: *c.Message.Refusal}
	}
	switch c.FinishReason {
	case "length":
		return resp, &llm.ReplyError{Provider: m.cfg.Provider, Kind: llm.ErrTruncated, StopReason: c.FinishReason}
	case "content_filter":
		return resp, &llm.ReplyError{Provider: m.cfg.Provider, Kind: llm.ErrRefused, StopReason: c.FinishReason}
	}
	if strings.TrimSpace(resp.Content) == "" {
		return resp, &llm.ReplyError{Provider: m.cfg.Provider, Kind: llm.ErrEmptyReply, StopReason: c.FinishReason}
	}
	return wire.Finish(m.cfg.Provider, &req, resp)
}

// truncated returns the prompt size the server read when a reply's usage
// shows the prompt cut to the server's window (see Config.ContextWindow
// and MinContextWindow), else 0.
func (m *Model) truncated(estimate int, u llm.Usage) int {
	w, known := m.cfg.ContextWindow, true
	if w <= 0 {
		w, known = m.cfg.MinContextWindow, false
	}
	if w <= 0 || u.PromptTokens <= 0 {
		return 0
	}
	if known && u.PromptTokens >= w {
		return u.PromptTokens
	}
	if seen := u.PromptTokens + u.CachedTokens; estimate >= w/2 && seen < estimate/2 {
		return seen
	}
	return 0
}

func (m *Model) contextErr(estimate, reported int) error {
	return &llm.ContextLengthError{Provider: m.cfg.Provider, Model: m.cfg.Model, Window: m.cfg.ContextWindow,
		Estimated: estimate, Reported: reported, Hint: m.cfg.ContextHint}
}

// EstimateTokens estimates the prompt tokens of a request without a
// tokenizer: one token per four bytes of message text, plus four per
// message. Images and the schema are not counted (a local server turns the
// schema into a grammar, and an image's cost depends on its model). It is
// a typical figure, not a bound; Config.ContextWindow compares it with the
// window.
func EstimateTokens(req *llm.Request) int {
	n := 0
	for _, msg := range req.Messages {
		n += 4
		for _, p := range msg.Parts {
			n += (len(p.Text) + 3) / 4
		}
	}
	return n
}

// classify recognises billing and context-length errors from the body.
func classify(ae *llm.APIError) {
	switch {
	case ae.Code == "insufficient_quota":
		ae.Class = llm.ErrQuota
	case ae.Status >= 400 && ae.Status < 500 && (ae.Code == "context_length_exceeded" ||
		strings.Contains(strings.ToLower(ae.Message), "maximum context length")):
		ae.Class = llm.ErrContextLength
	}
}

// parseError reads {"error": {"message", "type", "code"}}; some compatible
// servers send {"error": "text"}, {"detail": "text"} or (vLLM)
// {"object": "error", "message", "type"}.
func parseError(body []byte) (code, msg string, _ time.Duration) {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Detail  string          `json:"detail"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", 0
	}
	var ae apiError
	if json.Unmarshal(e.Error, &ae) == nil && (ae.Message != "" || ae.Type != "") {
		code = ae.Type
		var s string
		if json.Unmarshal(ae.Code, &s) == nil && s != "" {
			code = s
		}
		return code, ae.Message, 0
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return "", s, 0
	}
	if e.Message != "" {
		return e.Type, e.Message, 0
	}
	return "", e.Detail, 0
}
