// Package anthropic is an llm.Model for the Anthropic Messages API
// (POST {base}/v1/messages, headers x-api-key and anthropic-version).
//
// Structured output uses a forced tool: the schema becomes
// tools[{name, description, input_schema}] with tool_choice {type: "tool",
// name}, and the reply is the tool_use block's input, re-encoded as JSON
// text in Response.Content. The schema is sent unchanged (input_schema is
// plain JSON Schema; its root must be an object). System messages are joined
// into the top-level "system" string.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
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
	// default 8192.
	MaxTokens int
	// Header holds extra headers (e.g. anthropic-beta).
	Header http.Header
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
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 8192
	}
	m := &Model{cfg: cfg, url: cfg.BaseURL + "/v1/messages", client: wire.OwnClient(cfg.HTTPClient)}
	return m, nil
}

// Name returns "anthropic:model".
func (m *Model) Name() string { return "anthropic:" + m.cfg.Model }

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

type block struct {
	Type   string  `json:"type"`
	Text   string  `json:"text,omitempty"`
	Source *source `json:"source,omitempty"`
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
	System      string      `json:"system,omitempty"`
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

func (m *Model) buildRequest(req *llm.Request) (*request, string, error) {
	out := &request{Model: m.cfg.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if out.MaxTokens <= 0 {
		out.MaxTokens = m.cfg.MaxTokens
	}
	var system []string
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			system = append(system, msg.TextContent())
			continue
		}
		blocks := make([]block, 0, len(msg.Parts))
		for _, p := range msg.Parts {
			if p.Image == nil {
				if p.Text != "" { // the API rejects empty text blocks
					blocks = append(blocks, block{Type: "text", Text: p.Text})
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
		}
		if len(blocks) == 0 {
			return nil, "", fmt.Errorf("%w: %s message with only empty text", llm.ErrBadRequest, msg.Role)
		}
		out.Messages = append(out.Messages, message{Role: string(msg.Role), Content: blocks})
	}
	if len(out.Messages) == 0 {
		return nil, "", fmt.Errorf("%w: no user or assistant message", llm.ErrBadRequest)
	}
	out.System = strings.Join(system, "\n\n")
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
		Timeout: m.cfg.Timeout, ParseError: parseError,
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
