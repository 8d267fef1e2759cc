package llm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Provider errors wrap exactly one of the API-level
// sentinels (via *APIError) or one of the reply-level sentinels, so callers
// can branch with errors.Is.
var (
	// ErrRateLimited: the provider answered 429 (or its equivalent).
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrProviderUnavailable: 5xx, 529 overloaded, a network failure, or the
	// per-attempt timeout expired. Never used for a reply that arrived but
	// could not be parsed.
	ErrProviderUnavailable = errors.New("llm: provider unavailable")
	// ErrAuth: 401/403, or a missing API key.
	ErrAuth = errors.New("llm: authentication failed")
	// ErrBadRequest: any other 4xx, or a request this package refuses to send
	// (invalid parts, invalid schema).
	ErrBadRequest = errors.New("llm: bad request")
	// ErrTruncated: the reply stopped at the token limit.
	ErrTruncated = errors.New("llm: reply truncated at max tokens")
	// ErrEmptyReply: the provider answered but the reply holds no content.
	ErrEmptyReply = errors.New("llm: empty reply")
	// ErrRefused: the model refused or a safety filter blocked the prompt or
	// the reply.
	ErrRefused = errors.New("llm: model refused")
	// ErrMalformedOutput: structured output was requested and the reply is not
	// JSON. Matched by *ParseError. This is a model failure, not an outage.
	ErrMalformedOutput = errors.New("llm: malformed model output")
	// ErrQuota: the account is out of credit or quota (OpenAI's 429
	// insufficient_quota, Anthropic's "credit balance is too low", HTTP 402).
	// A billing problem, not a rate limit: WithRetry does not retry it;
	// ShouldFallback switches to a fallback model, which bills elsewhere.
	ErrQuota = errors.New("llm: quota or credit exhausted")
	// ErrContextLength: the prompt is larger than the model's context window,
	// reported by the API (a 400) or detected by this package (a local
	// server that would truncate the prompt silently; see
	// *ContextLengthError). Not retried, and no fallback by default: the
	// same prompt needs to shrink.
	ErrContextLength = errors.New("llm: prompt exceeds the model's context window")
)

// APIError is an error reported by a provider's HTTP API, or a transport
// failure talking to it (Status 0). It matches (errors.Is) exactly one of
// ErrRateLimited, ErrProviderUnavailable, ErrAuth, ErrBadRequest, ErrQuota,
// ErrContextLength: Class when the provider recognised the error's code or
// message, else the one chosen by status (402 is ErrQuota). It unwraps to
// the transport error if any.
type APIError struct {
	Provider string // the provider's name ("openai", "anthropic", "gemini", "ollama"), not the model's
	Status   int    // HTTP status; 0 for a network failure or attempt timeout
	Code     string // provider error type/code, e.g. "rate_limit_error", "RESOURCE_EXHAUSTED"
	Message  string // provider message, or the transport error text
	// Class, when non-nil, is the sentinel the provider recognised from the
	// body (ErrQuota for a 429 insufficient_quota, ErrContextLength for a
	// 400 "prompt is too long"); it overrides the status.
	Class error
	// RetryAfter is the server's Retry-After hint (0 when absent).
	RetryAfter time.Duration
	// Err is the underlying transport error, if any.
	Err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Status != 0 {
		b.WriteString(": HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
	} else {
		b.WriteString(": request failed")
	}
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Kind returns the sentinel this error matches.
func (e *APIError) Kind() error {
	switch {
	case e.Class != nil:
		return e.Class
	case e.Status == 402:
		return ErrQuota
	case e.Status == 0 || e.Status >= 500:
		return ErrProviderUnavailable
	case e.Status == 429:
		return ErrRateLimited
	case e.Status == 401 || e.Status == 403:
		return ErrAuth
	default:
		return ErrBadRequest
	}
}

// Is reports whether target is the sentinel for this error's status.
func (e *APIError) Is(target error) bool { return target == e.Kind() }

// Unwrap returns the transport error, if any.
func (e *APIError) Unwrap() error { return e.Err }

// ParseError reports structured output that is not valid JSON. It matches
// ErrMalformedOutput.
type ParseError struct {
	Provider string // may be empty (DecodeJSON on a bare string)
	// Content is the offending reply, truncated to 512 bytes.
	Content string
	// Offset is the byte offset of the syntax error in the (fence-stripped)
	// content, or -1 when unknown.
	Offset int64
	Err    error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString("malformed model output")
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at byte %d", e.Offset)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Content != "" {
		fmt.Fprintf(&b, " (reply %q)", e.Content)
	}
	return b.String()
}

// Is matches ErrMalformedOutput.
func (e *ParseError) Is(target error) bool { return target == ErrMalformedOutput }

// Unwrap returns the JSON error.
func (e *ParseError) Unwrap() error { return e.Err }

// ReplyError wraps a reply-level sentinel (ErrTruncated, ErrRefused,
// ErrEmptyReply) with the provider's detail.
type ReplyError struct {
	Provider   string
	Kind       error  // one of ErrTruncated, ErrRefused, ErrEmptyReply
	StopReason string // provider's finish reason or block reason
	Detail     string // e.g. the refusal text
}

func (e *ReplyError) Error() string {
	s := e.Provider + ": " + strings.TrimPrefix(e.Kind.Error(), "llm: ")
	if e.StopReason != "" {
		s += " (" + e.StopReason + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns Kind.
func (e *ReplyError) Unwrap() error { return e.Kind }

// MissingKeyError reports a provider constructed without an API key. It
// matches ErrAuth.
type MissingKeyError struct {
	Provider string
	EnvVars  []string // the variables consulted, in order
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("%s: no API key: set %s or pass one explicitly", e.Provider, strings.Join(e.EnvVars, " or "))
}

// Is matches ErrAuth.
func (e *MissingKeyError) Is(target error) bool { return target == ErrAuth }

// ContextLengthError reports a prompt that does not fit the model's context
// window, found by this package rather than by the API: before sending
// (Reported 0: the estimate exceeds Window) or from a reply whose reported
// prompt size shows the server truncated the prompt. It matches
// ErrContextLength.
type ContextLengthError struct {
	Provider string
	Model    string
	// Window is the context size the provider was configured with; 0 when
	// it is not known (the truncation was seen in the reply alone).
	Window int
	// Estimated is this package's estimate of the prompt's tokens.
	Estimated int
	// Reported is the prompt size the server reported (0 before sending).
	Reported int
	// Hint says how to raise the window.
	Hint string
}

func (e *ContextLengthError) Error() string {
	var b strings.Builder
	if e.Window > 0 {
		fmt.Fprintf(&b, "%s: prompt does not fit the context window of %s (%d tokens): ", e.Provider, e.Model, e.Window)
	} else {
		fmt.Fprintf(&b, "%s: prompt does not fit the context window of %s: ", e.Provider, e.Model)
	}
	if e.Reported > 0 {
		fmt.Fprintf(&b, "the server read %d prompt tokens where about %d were sent, so it truncated the prompt", e.Reported, e.Estimated)
	} else {
		fmt.Fprintf(&b, "about %d prompt tokens; not sent", e.Estimated)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Is matches ErrContextLength.
func (e *ContextLengthError) Is(target error) bool { return target == ErrContextLength }

// SchemaError reports a schema a provider cannot send as asked, found
// before any request is made: Path is a JSON path into the schema ("$" is
// the root, e.g. "$.properties.action.items") and Reason says what is
// wrong there. It matches ErrBadRequest.
type SchemaError struct {
	Provider string
	Schema   string // the schema's Name
	Path     string
	Reason   string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s: schema %q at %s: %s", e.Provider, e.Schema, e.Path, e.Reason)
}

// Is matches ErrBadRequest.
func (e *SchemaError) Is(target error) bool { return target == ErrBadRequest }

// Retryable reports whether err is worth retrying against the same model:
// rate limits and unavailability (5xx, network, attempt timeout). Quota
// and context-length errors are not.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrProviderUnavailable)
}

// ParseRetryAfter parses a Retry-After header value (delta seconds, possibly
// fractional, or an HTTP date) relative to now. It returns 0 when absent or
// unparseable.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || f > 86400 {
			return 0
		}
		return time.Duration(f * float64(time.Second))
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
