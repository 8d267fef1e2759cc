// Package wire is the HTTP plumbing shared by the provider packages: it
// posts a JSON body, enforces the per-attempt timeout, and turns transport
// failures and non-2xx answers into *llm.APIError.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/browseragent/browseragent/agent/llm"
)

// MaxBody bounds a response body; a larger one is a provider fault.
const MaxBody = 64 << 20

// ErrorParser extracts the provider's error code, message and retry hint
// from a non-2xx body. It must not fail: unknown bodies yield empty values.
type ErrorParser func(body []byte) (code, message string, retryAfter time.Duration)

// Call is one POST.
type Call struct {
	Provider string
	Client   *http.Client
	URL      string
	Header   http.Header
	Body     any
	// Timeout bounds this attempt (0: none beyond ctx). Its expiry is
	// reported as ErrProviderUnavailable; the caller's ctx expiring is
	// reported as ctx.Err().
	Timeout    time.Duration
	ParseError ErrorParser
	// Classify, when set, sees every non-2xx *llm.APIError after parsing
	// and may set its Class (quota, context length) from Code and Message.
	Classify func(*llm.APIError)
}

// Timeout returns the attempt timeout for a request: the provider's
// configured one, or the request's (llm.AttemptTimeout) when that is
// shorter.
func Timeout(ctx context.Context, configured time.Duration, req *llm.Request) time.Duration {
	if d := llm.AttemptTimeout(ctx, req); d > 0 && (configured <= 0 || d < configured) {
		return d
	}
	return configured
}

// Do performs the call and returns the 2xx body and the exchange's latency.
func Do(ctx context.Context, c Call) ([]byte, time.Duration, error) {
	payload, err := json.Marshal(c.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: encode request: %w: %v", c.Provider, llm.ErrBadRequest, err)
	}
	actx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %v", c.Provider, llm.ErrBadRequest, err)
	}
	for k, vs := range c.Header {
		hreq.Header[k] = vs
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	start := time.Now()
	res, err := c.Client.Do(hreq)
	if err != nil {
		return nil, 0, transportErr(ctx, actx, c, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxBody+1))
	latency := time.Since(start)
	if err != nil {
		return nil, 0, transportErr(ctx, actx, c, err)
	}
	if len(body) > MaxBody {
		return nil, 0, &llm.APIError{Provider: c.Provider, Message: fmt.Sprintf("response body exceeds %d bytes", MaxBody)}
	}
	if res.StatusCode/100 != 2 {
		ae := &llm.APIError{Provider: c.Provider, Status: res.StatusCode}
		if c.ParseError != nil {
			ae.Code, ae.Message, ae.RetryAfter = c.ParseError(body)
		}
		if ae.Message == "" {
			ae.Message = snippet(body)
		}
		if ra := retryAfter(res.Header); ra > 0 {
			ae.RetryAfter = ra
		}
		if c.Classify != nil {
			c.Classify(ae)
		}
		return nil, latency, ae
	}
	return body, latency, nil
}

// retryAfter reads Retry-After, or the millisecond variant some
// OpenAI-compatible servers send.
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d := llm.ParseRetryAfter(v, time.Now()); d > 0 {
			return d / 1000
		}
	}
	return llm.ParseRetryAfter(h.Get("Retry-After"), time.Now())
}

func transportErr(ctx, actx context.Context, c Call, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", c.Provider, ctx.Err())
	}
	if actx.Err() != nil {
		return &llm.APIError{Provider: c.Provider, Message: fmt.Sprintf("no answer within the attempt timeout of %s", c.Timeout), Err: err}
	}
	return &llm.APIError{Provider: c.Provider, Message: err.Error(), Err: err}
}

// Envelope reports a 2xx body that does not decode as the provider's
// response object: a proxy or provider fault, classified as unavailable.
func Envelope(provider string, body []byte, err error) error {
	return &llm.APIError{Provider: provider, Message: fmt.Sprintf("invalid response envelope: %v: %s", err, snippet(body)), Err: err}
}

func snippet(b []byte) string {
	const max = 300
	b = bytes.TrimSpace(b)
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Finish validates structured output: when a schema was requested, the
// content must be JSON. It returns resp and a *llm.ParseError (with the
// provider set) otherwise.
func Finish(provider string, req *llm.Request, resp *llm.Response) (*llm.Response, error) {
	if req.Schema == nil {
		return resp, nil
	}
	if _, err := llm.ExtractJSON(resp.Content); err != nil {
		if pe, ok := err.(*llm.ParseError); ok {
			pe.Provider = provider
		}
		return resp, err
	}
	return resp, nil
}

// Client is a provider's HTTP client: the caller's, which is never closed,
// or one of the provider's own, whose idle connections CloseIdle closes.
type Client struct {
	*http.Client
	owned bool
}

// OwnClient returns c, or a new client of the provider's own when c is nil.
func OwnClient(c *http.Client) Client {
	if c == nil {
		return Client{Client: NewClient(), owned: true}
	}
	return Client{Client: c}
}

// CloseIdle closes the idle connections of a client the provider owns.
func (c Client) CloseIdle() {
	if c.owned {
		c.Client.CloseIdleConnections()
	}
}

// NewClient returns an HTTP client with its own transport (a clone of
// http.DefaultTransport when that is an *http.Transport), so that the
// owning model can close its idle connections without touching others'.
func NewClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return &http.Client{Transport: t.Clone()}
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
}
