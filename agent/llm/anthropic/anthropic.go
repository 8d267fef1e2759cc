// Package anthropic is an llm.Model for the Anthropic Messages API
// (POST {base}/v1/messages, headers x-api-key and anthropic-version).
//
// Structured output uses a forced tool: the schema becomes
// tools[{name, description, input_schema}] with tool_choice {type: "tool",
// name}, and the reply is the tool_use block's input, re-encoded as JSON
// text in Response.Content. The schema is sent unchanged (input_schema is
// plain JSON Schema; its root must be an object). System messages become the
// top-level "system" array of text blocks, one per part.
//
// Prompt caching: a part with llm.Part.CacheBreakpoint gets
// cache_control {"type": "ephemeral"} on its block (system, user or
// assistant). When the request marks no part, the last system block is
// marked, so that the tools and the system prompt, which precede it in the
// cache prefix (tools, system, messages), are cached. The API accepts at
// most 4 breakpoints; the last 4 are kept. Config.DisableCache sends none.
// A prefix shorter than the model's minimum (1,024 or more tokens) is not
// cached and costs nothing extra. Usage: input_tokens excludes cache reads
// and writes, so PromptTokens is input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens, CachedTokens the reads and CacheWriteTokens
// the writes.
//
// max_tokens, which the API requires, defaults to DefaultMaxTokens (8,192)
// or the model's known output limit when that is smaller (claude-3-haiku
// and claude-3-opus: 4,096; the API rejects a max_tokens above the limit).
// It is not the full limit (64,000 for Sonnet 4.x): Anthropic's rate
// limiter estimates a request's output tokens from max_tokens when the
// request starts, so a max_tokens near a tier's output-tokens-per-minute
// limit (8,000 for Sonnet at tier 1) turns nearly every call into a 429.
// Request.MaxTokens or Config.MaxTokens may ask for more, up to the known
// limit (a larger value is capped at it).
//
// Errors: a 400 "credit balance is too low" is llm.ErrQuota; a 400 "prompt
// is too long" is llm.ErrContextLength.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/internal/wire"
)

// DefaultBaseURL is Anthropic's API base (without /v1).
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header value sent.
const APIVersion = "2023-06-01"

// Config configures a Model. Zero fields take the documented defaults.
type Config struct {
	// Model is the model id (required), e.g. "claude-sonnet-4-5".
	Model string
	// APIKey defaults to $ANTHROPIC_API_KEY; required.
	APIKey string
	// BaseURL defaults to $ANTHROPIC_BASE_URL, then DefaultBaseURL.
	BaseURL string
	// HTTPClient defaults to a client owned by the Model.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; default 90s.
	Timeout time.Duration
	// MaxTokens is sent when the request has none (the API requires it);
	// default min(DefaultMaxTokens, MaxOutputTokens(Model)), not the full
	// limit, which the rate limiter would count against the output tokens
	// per minute (see the package doc). For a model in the table, either is
	// capped at its limit (the API rejects a larger max_tokens).
	MaxTokens int
	// Header holds extra headers (e.g. anthropic-beta).
	Header http.Header
	// DisableCache sends no cache_control marker.
	DisableCache bool
}

// DefaultMaxOutputTokens is the output limit assumed for a model that
// MaxOutputTokens does not know: the smallest limit of the current Claude
// families (Claude 3.5), which every newer model accepts.
const DefaultMaxOutputTokens = 8192

// DefaultMaxTokens is the max_tokens sent when neither the request nor the
// Config sets one, lowered to the model's output limit when that is
// smaller. It is well above an agent step's reply (hundreds of tokens) and
// stays within the output-tokens-per-minute estimate of the lowest rate
// tier (see the package doc).
const DefaultMaxTokens = 8192

// outputLimits are the models' maximum output tokens, by model-name prefix,
// longest prefix first (Anthropic's models overview; the 3.7 Sonnet's 128k
// needs a beta header and is not assumed).
var outputLimits = []struct {
	prefix string
	limit  int
}{
	{"claude-opus-4-5", 64000},
	{"claude-opus-4-1", 32000},
	{"claude-opus-4", 32000},
	{"claude-sonnet-4-5", 64000},
	{"claude-sonnet-4", 64000},
	{"claude-haiku-4-5", 64000},
	{"claude-3-7-sonnet", 64000},
	{"claude-3-5-sonnet", 8192},
	{"claude-3-5-haiku", 8192},
	{"claude-3-opus", 4096},
	{"claude-3-sonnet", 4096},
	{"claude-3-haiku", 4096},
}

// MaxOutputTokens returns the known output limit of a Claude model by its
// name's prefix (so "claude-sonnet-4-5-20250929" and its alias agree, and
// a later point release inherits its family's limit), or
// DefaultMaxOutputTokens for an unknown name.
func MaxOutputTokens(model string) int {
	n, _ := knownLimit(model)
	return n
}

func knownLimit(model string) (int, bool) {
	for _, l := range outputLimits {
		if strings.HasPrefix(model, l.prefix) {
			return l.limit, true
		}
	}
	return DefaultMaxOutputTokens, false
}

// maxTokens is the max_tokens sent: the request's, else the Config's, else
// min(DefaultMaxTokens, the model's limit); capped at the limit when the
// model is known (an unknown model's own limit may be larger than the
// default, so an explicit value passes).
func (m *Model) maxTokens(req int) int {
	limit, known := knownLimit(m.cfg.Model)
	n := req
	if n <= 0 {
		n = m.cfg.MaxTokens
	}
	if n <= 0 {
		n = min(DefaultMaxTokens, limit)
	}
	if known && n > limit {
		n = limit
	}
	return n
}

// Model talks to one Anthropic model. Safe for concurrent use.
type Model struct {
	cfg    Config
	url    string
	client wire.Client
}

// New returns a Model; a missing key is a *llm.MissingKeyError naming
// ANTHROPIC_API_KEY.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("anthropic: %w: empty model name", llm.ErrBadRequest)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, &llm.MissingKeyError{Provider: "anthropic", EnvVars: []string{"ANTHROPIC_API_KEY"}}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 90 * time.Second
	}
	m := &Model{cfg: cfg, url: cfg.BaseURL + "/v1/messages", client: wire.OwnClient(cfg.HTTPClient)}
	return m, nil
}

// Name returns "anthropic:model".
func (m *Model) Name() string { return "anthropic:" + m.cfg.Model }

// BoundsAttempts is true (llm.AttemptBounder): the attempt timeout in
// force (Request.AttemptTimeout or llm.WithAttemptTimeout), when shorter
// than Config.Timeout, bounds each HTTP attempt.
func (m *Model) BoundsAttempts() bool { return true }

// CloseIdleConnections closes idle connections of the Model's own client.
func (m *Model) CloseIdleConnections() {
	m.client.CloseIdle()
}

type source struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type block struct {
	Type         string        `json:"type"`
	Text         string        `json:"text,omitempty"`
	Source       *source       `json:"source,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type request struct {
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      []block     `json:"system,omitempty"`
	Messages    []message   `json:"messages"`
	Tools       []tool      `json:"tools,omitempty"`
	ToolChoice  *toolChoice `json:"tool_choice,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
}

type response struct {
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// maxBreakpoints is the API's limit on cache_control markers per request.
const maxBreakpoints = 4

func (m *Model) buildRequest(req *llm.Request) (*request, string, error) {
	out := &request{Model: m.cfg.Model, MaxTokens: m.maxTokens(req.MaxTokens), Temperature: req.Temperature}
	// refs locates the blocks with a breakpoint, in prefix order (system
	// first, then the messages); they are marked once all blocks exist.
	type ref struct{ msg, blk int } // msg -1: system
	var refs []ref
	for _, msg := range req.Messages {
		if msg.Role != llm.RoleSystem {
			continue
		}
		for _, p := range msg.Parts {
			if p.Text == "" {
				if p.CacheBreakpoint && len(out.System) > 0 {
					refs = append(refs, ref{-1, len(out.System) - 1})
				}
				continue
			}
			out.System = append(out.System, block{Type: "text", Text: p.Text})
			if p.CacheBreakpoint {
				refs = append(refs, ref{-1, len(out.System) - 1})
			}
		}
	}
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			continue
		}
		blocks := make([]block, 0, len(msg.Parts))
		for _, p := range msg.Parts {
			if p.Image == nil {
				if p.Text != "" { // the API rejects empty text blocks
					blocks = append(blocks, block{Type: "text", Text: p.Text})
				}
				if p.CacheBreakpoint && len(blocks) > 0 {
					refs = append(refs, ref{len(out.Messages), len(blocks) - 1})
				}
				continue
			}
			mt, data, inline, err := p.Image.Inline()
			if err != nil {
				return nil, "", err
			}
			src := &source{Type: "url", URL: p.Image.URL}
			if inline {
				src = &source{Type: "base64", MediaType: mt, Data: encode(data)}
			}
			blocks = append(blocks, block{Type: "image", Source: src})
			if p.CacheBreakpoint {
				refs = append(refs, ref{len(out.Messages), len(blocks) - 1})
			}
		}
		if len(blocks) == 0 {
			return nil, "", fmt.Errorf("%w: %s message with only empty text", llm.ErrBadRequest, msg.Role)
		}
		out.Messages = append(out.Messages, message{Role: string(msg.Role), Content: blocks})
	}
	if len(out.Messages) == 0 {
		return nil, "", fmt.Errorf("%w: no user or assistant message", llm.ErrBadRequest)
	}
	if !m.cfg.DisableCache {
		if len(refs) == 0 && len(out.System) > 0 {
			refs = append(refs, ref{-1, len(out.System) - 1})
		}
		var marks []*block
		for _, r := range refs {
			if r.msg < 0 {
				marks = append(marks, &out.System[r.blk])
			} else {
				marks = append(marks, &out.Messages[r.msg].Content[r.blk])
			}
		}
		marks = slices.Compact(marks) // an empty part's mark may repeat its predecessor's
		if len(marks) > maxBreakpoints {
			marks = marks[len(marks)-maxBreakpoints:]
		}
		for _, b := range marks {
			b.CacheControl = &cacheControl{Type: "ephemeral"}
		}
	}
	var toolName string
	if s := req.Schema; s != nil {
		toolName = s.ToolName()
		desc := s.Description
		if desc == "" {
			desc = "Reply by calling this tool with your answer as its input."
		}
		out.Tools = []tool{{Name: toolName, Description: desc, InputSchema: s.JSON}}
		out.ToolChoice = &toolChoice{Type: "tool", Name: toolName}
	}
	return out, toolName, nil
}

// Generate sends one Messages request. stop_reason "max_tokens" is
// llm.ErrTruncated, "refusal" is llm.ErrRefused, a reply without the forced
// tool call or text is llm.ErrEmptyReply; when the model answers with text
// instead of the tool, the text is checked as JSON (a *llm.ParseError if it
// is not).
func (m *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	body, toolName, err := m.buildRequest(&req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	h := http.Header{}
	for k, vs := range m.cfg.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	h.Set("x-api-key", m.cfg.APIKey)
	h.Set("anthropic-version", APIVersion)
	raw, latency, err := wire.Do(ctx, wire.Call{
		Provider: "anthropic", Client: m.client.Client, URL: m.url, Header: h, Body: body,
		Timeout: wire.Timeout(ctx, m.cfg.Timeout, &req), ParseError: parseError, Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, wire.Envelope("anthropic", raw, err)
	}
	resp := &llm.Response{Model: r.Model, Latency: latency, StopReason: r.StopReason}
	if resp.Model == "" {
		resp.Model = m.cfg.Model
	}
	// input_tokens excludes cached and cache-creation tokens; report the
	// whole prompt as PromptTokens, like the other providers.
	u := r.Usage
	resp.Usage = llm.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CompletionTokens: u.OutputTokens,
		CachedTokens:     u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	var text []string
	var found bool
	for _, b := range r.Content {
		switch b.Type {
		case "tool_use":
			if toolName != "" && b.Name == toolName && !found {
				resp.Content = string(b.Input)
				found = true
			}
		case "text":
			text = append(text, b.Text)
		}
	}
	if !found {
		resp.Content = strings.Join(text, "")
	}
	switch r.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		return resp, &llm.ReplyError{Provider: "anthropic", Kind: llm.ErrTruncated, StopReason: r.StopReason}
	case "refusal":
		return resp, &llm.ReplyError{Provider: "anthropic", Kind: llm.ErrRefused, StopReason: r.StopReason, Detail: resp.Content}
	}
	if strings.TrimSpace(resp.Content) == "" || (found && strings.TrimSpace(resp.Content) == "null") {
		return resp, &llm.ReplyError{Provider: "anthropic", Kind: llm.ErrEmptyReply, StopReason: r.StopReason}
	}
	return wire.Finish("anthropic", &req, resp)
}

// classify recognises billing and context-length errors, both sent as 400
// invalid_request_error and told apart by their message.
func classify(ae *llm.APIError) {
	msg := strings.ToLower(ae.Message)
	switch {
	case strings.Contains(msg, "credit balance is too low"):
		ae.Class = llm.ErrQuota
	case ae.Status == 400 && strings.Contains(msg, "prompt is too long"):
		ae.Class = llm.ErrContextLength
	}
}

// parseError reads {"type": "error", "error": {"type", "message"}}.
func parseError(body []byte) (code, msg string, _ time.Duration) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", 0
	}
	return e.Error.Type, e.Error.Message, 0
}
