// Package gemini is an llm.Model for the Google Gemini API
// (POST {base}/v1beta/models/{model}:generateContent, key in the
// x-goog-api-key header).
//
// Structured output sets generationConfig.responseMimeType
// "application/json" and, by default, generationConfig.responseJsonSchema
// with the schema unchanged (standard JSON Schema, supported by the Gemini
// 2.5+ models). Config.OpenAPISchema instead sends responseSchema, Gemini's
// OpenAPI 3.0 subset: the schema is converted (see OpenAPISchema). System
// messages become systemInstruction; the assistant role is sent as "model".
// Images must be inline (Data or data: URL): the API does not fetch remote
// URLs. In both schema modes a closed empty object schema (a parameterless
// action's) gets an optional placeholder property (see Placeholder),
// because the API rejects an OBJECT with empty properties; an object that
// allows other keys is sent as it is in responseJsonSchema and refused
// (a *llm.SchemaError, before sending) in responseSchema, which cannot
// express it.
//
// Prompt caching is implicit on Gemini 2.5+ models: a request whose prefix
// (systemInstruction, then contents) repeats a recent one is billed at the
// cached rate, with nothing on the wire; systemInstruction is always sent
// first. Usage reports cachedContentTokenCount as CachedTokens and
// thoughtsTokenCount as ReasoningTokens; candidatesTokenCount excludes the
// thoughts, so CompletionTokens is candidates + thoughts.
//
// Errors: a 400 whose message says the input "exceeds the maximum number of
// tokens" is llm.ErrContextLength. Quota errors (429 RESOURCE_EXHAUSTED) stay
// llm.ErrRateLimited: the API does not tell a billing stop from a rate limit
// in a shape this package relies on.
package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/internal/wire"
)

// DefaultBaseURL is the Gemini API base (without /v1beta).
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Config configures a Model. Zero fields take the documented defaults.
type Config struct {
	// Model is the model id (required), e.g. "gemini-2.5-flash".
	Model string
	// APIKey defaults to $GEMINI_API_KEY, then $GOOGLE_API_KEY; required.
	APIKey string
	// BaseURL defaults to $GEMINI_BASE_URL, then DefaultBaseURL.
	BaseURL string
	// HTTPClient defaults to a client owned by the Model.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; default 90s.
	Timeout time.Duration
	// OpenAPISchema sends responseSchema (converted, see OpenAPISchema)
	// instead of responseJsonSchema, for models without JSON Schema
	// support. A schema with a free-form object (such as the agent's
	// compact reply schema) is then refused before sending.
	OpenAPISchema bool
}

// Model talks to one Gemini model. Safe for concurrent use.
type Model struct {
	cfg    Config
	url    string
	client wire.Client
}

// New returns a Model; a missing key is a *llm.MissingKeyError naming
// GEMINI_API_KEY and GOOGLE_API_KEY.
func New(cfg Config) (*Model, error) {
	cfg.Model = strings.TrimPrefix(cfg.Model, "models/")
	if cfg.Model == "" {
		return nil, fmt.Errorf("gemini: %w: empty model name", llm.ErrBadRequest)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("GEMINI_API_KEY")
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("GOOGLE_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, &llm.MissingKeyError{Provider: "gemini", EnvVars: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("GEMINI_BASE_URL")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1beta")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 90 * time.Second
	}
	m := &Model{cfg: cfg, client: wire.OwnClient(cfg.HTTPClient),
		url: cfg.BaseURL + "/v1beta/models/" + url.PathEscape(cfg.Model) + ":generateContent"}
	return m, nil
}

// Name returns "gemini:model".
func (m *Model) Name() string { return "gemini:" + m.cfg.Model }

// BoundsAttempts is true (llm.AttemptBounder): the attempt timeout in
// force (Request.AttemptTimeout or llm.WithAttemptTimeout), when shorter
// than Config.Timeout, bounds each HTTP attempt.
func (m *Model) BoundsAttempts() bool { return true }

// CloseIdleConnections closes idle connections of the Model's own client.
func (m *Model) CloseIdleConnections() {
	m.client.CloseIdle()
}

type inlineData struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type part struct {
	Text       string      `json:"text,omitempty"`
	InlineData *inlineData `json:"inlineData,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type generationConfig struct {
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
}

type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type response struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

// buildRequest returns the request body and, when the schema sent was
// given placeholders, the adapted schema (for stripPlaceholder).
func (m *Model) buildRequest(req *llm.Request) (_ *request, sent *legal, _ error) {
	// systemInstruction precedes contents in the body, the order of the
	// implicit cache's prefix.
	out := &request{}
	var sys []part
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			sys = append(sys, part{Text: msg.TextContent()})
			continue
		}
		role := "user"
		if msg.Role == llm.RoleAssistant {
			role = "model"
		}
		c := content{Role: role}
		for _, p := range msg.Parts {
			if p.Image == nil {
				c.Parts = append(c.Parts, part{Text: p.Text})
				continue
			}
			mt, data, inline, err := p.Image.Inline()
			if err != nil {
				return nil, nil, err
			}
			if !inline {
				return nil, nil, fmt.Errorf("%w: remote image URL %q: Gemini needs inline image data (set Image.Data)", llm.ErrBadRequest, p.Image.URL)
			}
			c.Parts = append(c.Parts, part{InlineData: &inlineData{MimeType: mt, Data: base64.StdEncoding.EncodeToString(data)}})
		}
		out.Contents = append(out.Contents, c)
	}
	if len(out.Contents) == 0 {
		return nil, nil, fmt.Errorf("%w: no user or assistant message", llm.ErrBadRequest)
	}
	if len(sys) > 0 {
		out.SystemInstruction = &content{Parts: sys}
	}
	gc := &generationConfig{MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature}
	if s := req.Schema; s != nil {
		gc.ResponseMimeType = "application/json"
		if m.cfg.OpenAPISchema {
			l, err := openAPI(*s)
			if err != nil {
				return nil, nil, err
			}
			if gc.ResponseSchema, err = schemax.Marshal(l.root); err != nil {
				return nil, nil, err
			}
			sent = l
		} else {
			l, changed, err := legalize(*s)
			if err != nil {
				return nil, nil, err
			}
			gc.ResponseJSONSchema = s.JSON
			if changed {
				if gc.ResponseJSONSchema, err = schemax.Marshal(l.root); err != nil {
					return nil, nil, err
				}
				sent = l
			}
		}
	}
	if gc.MaxOutputTokens > 0 || gc.Temperature != nil || gc.ResponseMimeType != "" {
		out.GenerationConfig = gc
	}
	return out, sent, nil
}

// Generate sends one generateContent request. finishReason MAX_TOKENS is
// llm.ErrTruncated; promptFeedback.blockReason and the safety finish reasons
// (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, ...) are
// llm.ErrRefused; no candidate or no text is llm.ErrEmptyReply. Thought parts
// are skipped. CompletionTokens includes thinking tokens, so that Prompt +
// Completion = Total as the API reports it.
func (m *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	body, sent, err := m.buildRequest(&req)
	if err != nil {
		var se *llm.SchemaError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("gemini: %w", err)
	}
	h := http.Header{}
	h.Set("x-goog-api-key", m.cfg.APIKey)
	raw, latency, err := wire.Do(ctx, wire.Call{
		Provider: "gemini", Client: m.client.Client, URL: m.url, Header: h, Body: body,
		Timeout: wire.Timeout(ctx, m.cfg.Timeout, &req), ParseError: parseError, Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, wire.Envelope("gemini", raw, err)
	}
	um := r.UsageMetadata
	resp := &llm.Response{Model: r.ModelVersion, Latency: latency, Usage: llm.Usage{
		PromptTokens:     um.PromptTokenCount,
		CompletionTokens: um.CandidatesTokenCount + um.ThoughtsTokenCount,
		TotalTokens:      um.TotalTokenCount,
		CachedTokens:     um.CachedContentTokenCount,
		ReasoningTokens:  um.ThoughtsTokenCount,
	}}
	if resp.Model == "" {
		resp.Model = m.cfg.Model
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		resp.StopReason = pf.BlockReason
		return resp, &llm.ReplyError{Provider: "gemini", Kind: llm.ErrRefused, StopReason: pf.BlockReason, Detail: pf.BlockReasonMessage}
	}
	if len(r.Candidates) == 0 {
		return resp, &llm.ReplyError{Provider: "gemini", Kind: llm.ErrEmptyReply, Detail: "no candidates"}
	}
	c := r.Candidates[0]
	resp.StopReason = c.FinishReason
	var b strings.Builder
	for _, p := range c.Content.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	resp.Content = b.String()
	switch c.FinishReason {
	case "", "STOP", "FINISH_REASON_UNSPECIFIED":
	case "MAX_TOKENS":
		return resp, &llm.ReplyError{Provider: "gemini", Kind: llm.ErrTruncated, StopReason: c.FinishReason}
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return resp, &llm.ReplyError{Provider: "gemini", Kind: llm.ErrRefused, StopReason: c.FinishReason, Detail: c.FinishMessage}
	}
	if strings.TrimSpace(resp.Content) == "" {
		return resp, &llm.ReplyError{Provider: "gemini", Kind: llm.ErrEmptyReply, StopReason: c.FinishReason, Detail: c.FinishMessage}
	}
	if req.Schema != nil {
		resp.Content = stripPlaceholder(resp.Content, sent)
	}
	return wire.Finish("gemini", &req, resp)
}

// classify recognises a prompt larger than the model's input limit.
func classify(ae *llm.APIError) {
	if ae.Status == 400 && strings.Contains(ae.Message, "exceeds the maximum number of tokens") {
		ae.Class = llm.ErrContextLength
	}
}

// parseError reads {"error": {"code", "message", "status", "details"}},
// taking the retry hint from a google.rpc.RetryInfo detail.
func parseError(body []byte) (code, msg string, retry time.Duration) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		// Errors may come as a one-element array.
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			return parseError(arr[0])
		}
		return "", "", 0
	}
	for _, d := range e.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if dd, err := time.ParseDuration(d.RetryDelay); err == nil {
				retry = dd
			}
		}
	}
	return e.Error.Status, e.Error.Message, retry
}
