// Package llm is the agent's model layer: a small provider-neutral interface
// (messages with text and images in, structured JSON out, token usage
// reported), typed errors shared by every provider, and provider-neutral
// wrappers for retries (WithRetry) and fallback (WithFallback).
//
// Providers live in subpackages (openai, anthropic, gemini) and speak the
// providers' HTTP APIs over plain net/http; package providers builds a Model
// from a "provider:model" spec string; package scripted is a deterministic
// model for tests and demos. This package imports no other browseragent
// package.
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Role is the author of a Message.
type Role string

// Roles understood by every provider. Providers without a system role
// (Anthropic, Gemini) lift system messages into their top-level system field.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation. Parts are sent in order.
type Message struct {
	Role  Role
	Parts []Part
}

// Part is one piece of a message: exactly one of Text or Image is set.
// A Part with both or neither is rejected by providers with ErrBadRequest.
type Part struct {
	Text  string
	Image *Image
	// CacheBreakpoint marks the end of a prefix worth caching: everything
	// up to and including this part is expected to repeat in the next
	// request. Providers with explicit prompt caching (Anthropic's
	// cache_control) mark it: at most 4 per request, the last ones kept;
	// a request with none gets one at the end of its system prompt. The
	// others ignore it, their caches key on the prefix by themselves.
	CacheBreakpoint bool
}

// Image is an image part. Either Data (raw bytes, sent base64-encoded) or URL
// is set; a "data:" URL is decoded and treated like Data. MediaType is
// required with Data ("image/png", "image/jpeg", "image/webp", "image/gif").
// Detail is an OpenAI hint ("low", "high", "auto"); other providers ignore it.
type Image struct {
	MediaType string
	Data      []byte
	URL       string
	Detail    string
}

// Text returns a text Part.
func Text(s string) Part { return Part{Text: s} }

// ImagePart returns an image Part carrying raw bytes.
func ImagePart(mediaType string, data []byte) Part {
	return Part{Image: &Image{MediaType: mediaType, Data: data}}
}

// SystemMessage returns a system Message with a single text part.
func SystemMessage(text string) Message { return Message{Role: RoleSystem, Parts: []Part{Text(text)}} }

// UserMessage returns a user Message with the given parts.
func UserMessage(parts ...Part) Message { return Message{Role: RoleUser, Parts: parts} }

// AssistantMessage returns an assistant Message with a single text part.
func AssistantMessage(text string) Message {
	return Message{Role: RoleAssistant, Parts: []Part{Text(text)}}
}

// TextContent returns the concatenation of the message's text parts,
// separated by newlines.
func (m Message) TextContent() string {
	var n int
	for _, p := range m.Parts {
		n += len(p.Text) + 1
	}
	b := make([]byte, 0, n)
	for _, p := range m.Parts {
		if p.Image != nil {
			continue
		}
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, p.Text...)
	}
	return string(b)
}

// Schema asks for structured output. JSON is a JSON Schema document whose
// root must be an object schema (Anthropic's forced tool requires it; the
// others accept it). Name labels the schema for the provider (OpenAI's
// json_schema.name, Anthropic's tool name); it is sanitised to
// [A-Za-z0-9_-]{1,64}, and "output" is used when empty. Each provider adapts
// the schema to its dialect; see the provider packages.
type Schema struct {
	Name        string
	Description string
	JSON        json.RawMessage
	// Loose says the schema leaves parts free on purpose (an object with
	// no listed properties) and the caller validates the reply itself.
	// Providers with a strict mode (OpenAI) send a loose schema
	// non-strict; a schema that is not Loose but cannot be made strict is
	// rejected with a *SchemaError (ErrBadRequest) naming the path, before
	// any request is sent.
	Loose bool
}

// Request is one model call.
type Request struct {
	Messages []Message
	// Schema, when non-nil, asks for JSON output matching it; the provider
	// verifies that the reply is JSON and returns a *ParseError otherwise.
	// When nil, the reply is free text.
	Schema *Schema
	// MaxTokens caps the completion; 0 means the provider's default.
	MaxTokens int
	// Temperature, when non-nil, is sent as is; nil leaves the provider default.
	Temperature *float64
	// CacheKey, when set, groups requests that share a prefix so that the
	// provider routes them to the same prompt cache (OpenAI's
	// prompt_cache_key, sent to api.openai.com only); providers without
	// such a field ignore it.
	CacheKey string
	// AttemptTimeout, when positive, bounds each attempt at the call rather
	// than the whole call: WithRetry gives every attempt its own deadline
	// of this length (see GenerateAttempt), and the provider models use it
	// as their HTTP attempt timeout when it is shorter than their
	// configured one. Its expiry is ErrProviderUnavailable (retryable). The
	// caller's ctx still bounds everything; a Model that does neither
	// (scripted, a custom one) may ignore it, and does not implement
	// AttemptBounder, so that a caller can tell and bound the call itself.
	// WithAttemptTimeout sets the same through a context, for requests
	// that leave it zero.
	AttemptTimeout time.Duration
}

// Usage reports token counts as the provider reported them, normalised so
// that PromptTokens is every input token of the call: CachedTokens is the
// part of it read from the provider's prompt cache and CacheWriteTokens the
// part written to it (Anthropic bills writes at a premium). ReasoningTokens
// is the part of CompletionTokens the model spent thinking.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	TotalTokens      int `json:"total_tokens,omitempty"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Response is a model reply.
type Response struct {
	// Content is the reply: the raw JSON text when a Schema was requested
	// (Anthropic: the forced tool's input), otherwise the text.
	Content string
	Usage   Usage
	// StopReason is the provider's own finish reason ("stop", "end_turn",
	// "tool_use", "STOP", "length", ...), unmodified.
	StopReason string
	// Model is the model name the provider reported (or the requested one).
	Model string
	// Latency is the wall time of the successful HTTP exchange.
	Latency time.Duration
}

// Model is a chat model. Implementations are safe for concurrent use.
//
// Generate returns either a Response and nil, or an error. For reply errors
// (ErrTruncated, ErrRefused, ErrEmptyReply, ErrMalformedOutput) the Response
// is returned too, non-nil, so that callers can log usage and partial content;
// for transport and API errors it is nil. When ctx is cancelled Generate
// returns promptly with an error wrapping ctx.Err().
type Model interface {
	Generate(ctx context.Context, req Request) (*Response, error)
	// Name identifies the model, e.g. "openai:gpt-4.1".
	Name() string
}

// IdleCloser is implemented by models that own an HTTP client. Wrappers in
// this package forward it to the models they wrap.
type IdleCloser interface {
	CloseIdleConnections()
}

// CloseIdleConnections closes idle HTTP connections held by m, if m (or a
// model it wraps) owns any. Call it when done with a model.
func CloseIdleConnections(m Model) {
	if c, ok := m.(IdleCloser); ok {
		c.CloseIdleConnections()
	}
}
