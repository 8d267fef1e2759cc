package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.uber.org/zap"
)

// RetryPolicy configures WithRetry. Zero fields take the documented defaults.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, the first included.
	// Default 3; 1 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; it doubles on each
	// further attempt. Default 1s. Tests set it to a millisecond.
	BaseDelay time.Duration
	// MaxDelay caps the computed backoff. Default 30s.
	MaxDelay time.Duration
	// MaxRetryAfter bounds how long a server's Retry-After may make us wait.
	// A longer hint ends the retries at once and returns the error, so that a
	// fallback model can take over. Default 60s.
	MaxRetryAfter time.Duration
	// Jitter returns a number in [0,1); default math/rand/v2.Float64. The
	// wait is backoff/2 + Jitter()*backoff/2 ("equal jitter"), or the
	// Retry-After hint when that is longer.
	Jitter func() float64
	// Retry decides whether an error is retried; default Retryable (rate
	// limits and unavailability; never auth, bad requests, or reply errors).
	Retry func(error) bool
	// Logger receives one Info line per retry; default zap.NewNop().
	Logger *zap.Logger
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	if p.Retry == nil {
		p.Retry = Retryable
	}
	if p.Logger == nil {
		p.Logger = zap.NewNop()
	}
	return p
}

// Delay returns the wait before attempt n+1 after failed attempt n (n ≥ 1)
// that returned err.
func (p RetryPolicy) Delay(n int, err error) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	d = d/2 + time.Duration(p.Jitter()*float64(d/2))
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > d {
		d = ae.RetryAfter
	}
	return d
}

// WithRetry wraps m so that retryable errors (see RetryPolicy.Retry) are
// retried with exponential backoff and jitter, honouring Retry-After. Waits
// stop at once when ctx is done; the error then wraps ctx.Err(). When the
// attempts are exhausted the last error is returned unchanged (it still
// matches its sentinel). The wrapper has m's Name.
//
// Request.AttemptTimeout, when set, bounds each attempt separately: every
// attempt gets a context with that deadline (on top of ctx's), and an
// attempt that runs out of it while ctx is still live fails with an
// *APIError matching ErrProviderUnavailable, which is retried like any
// outage. ctx alone bounds the whole call, attempts and waits included.
func WithRetry(m Model, p RetryPolicy) Model {
	return &retryModel{m: m, p: p.withDefaults()}
}

type retryModel struct {
	m Model
	p RetryPolicy
}

func (r *retryModel) Name() string          { return r.m.Name() }
func (r *retryModel) CloseIdleConnections() { CloseIdleConnections(r.m) }

// BoundsAttempts is true: every attempt runs under GenerateAttempt.
func (r *retryModel) BoundsAttempts() bool { return true }

func (r *retryModel) Generate(ctx context.Context, req Request) (*Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := GenerateAttempt(ctx, r.m, req)
		if err == nil || attempt >= r.p.MaxAttempts || ctx.Err() != nil || !r.p.Retry(err) {
			return resp, err
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > r.p.MaxRetryAfter {
			return resp, err
		}
		d := r.p.Delay(attempt, err)
		r.p.Logger.Info("llm: retrying", zap.String("model", r.m.Name()), zap.Int("attempt", attempt),
			zap.Duration("wait", d), zap.Error(err))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("llm: %s: waiting to retry after %v: %w", r.m.Name(), err, ctx.Err())
		case <-t.C:
		}
	}
}

type attemptKey struct{}

// WithAttemptTimeout returns a context that carries d as the attempt
// timeout of the Generate calls made with it, for callers that do not build
// the Request themselves: it acts as Request.AttemptTimeout on requests
// that do not set one. Unlike context.WithTimeout it puts no deadline on
// ctx; cancel releases the returned context like any CancelFunc.
func WithAttemptTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithValue(ctx, attemptKey{}, d))
}

// AttemptTimeout returns the attempt timeout in force for req: its
// AttemptTimeout, else the one ctx carries (WithAttemptTimeout), else 0.
func AttemptTimeout(ctx context.Context, req *Request) time.Duration {
	if req.AttemptTimeout > 0 {
		return req.AttemptTimeout
	}
	d, _ := ctx.Value(attemptKey{}).(time.Duration)
	return max(d, 0)
}

// GenerateAttempt calls m.Generate once under the attempt timeout
// (AttemptTimeout(ctx, &req), when set): the attempt gets its own
// deadline. When that deadline, not ctx's, ended the attempt (the error
// wraps context.DeadlineExceeded, the attempt's context expired and ctx is
// still live), the error becomes an *APIError (Status 0) matching
// ErrProviderUnavailable that names the timeout and unwraps to the
// model's error; Provider is the part of m.Name() before its first ':'
// ("openai" for "openai:gpt-4.1"). Any other error (a 400, a ReplyError
// that arrives as the deadline passes, an error already matching
// ErrProviderUnavailable) is returned as the model returned it, and so is
// resp in every case. With no AttemptTimeout it is m.Generate(ctx, req).
func GenerateAttempt(ctx context.Context, m Model, req Request) (*Response, error) {
	req.AttemptTimeout = AttemptTimeout(ctx, &req)
	if req.AttemptTimeout <= 0 {
		return m.Generate(ctx, req)
	}
	actx, cancel := context.WithTimeout(ctx, req.AttemptTimeout)
	defer cancel()
	resp, err := m.Generate(actx, req)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrProviderUnavailable) &&
		ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return resp, &APIError{Provider: providerOf(m.Name()), Message: fmt.Sprintf("attempt timed out after %s", req.AttemptTimeout), Err: err}
	}
	return resp, err
}

// providerOf returns the provider part of a model name ("openai" for
// "openai:gpt-4.1"), or the name when it has none.
func providerOf(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		return name[:i]
	}
	return name
}

// AttemptBounder is implemented by models that bound each attempt by the
// attempt timeout themselves (Request.AttemptTimeout, or the one
// WithAttemptTimeout puts in the context): the provider models (openai,
// anthropic, gemini), WithRetry's wrapper, and WithFallback's when both
// its models do. BoundsAttempts reports whether they do. A caller that
// passes an attempt timeout to any other Model (a custom or scripted one)
// gets no bound from it and must bound the call itself, e.g. with
// context.WithTimeout; see BoundsAttempts.
type AttemptBounder interface {
	BoundsAttempts() bool
}

// BoundsAttempts reports whether m honours attempt timeouts (see
// AttemptBounder).
func BoundsAttempts(m Model) bool {
	b, ok := m.(AttemptBounder)
	return ok && b.BoundsAttempts()
}

// ShouldFallback is the default fallback rule: switch to the fallback model
// when the primary is rate limited, unavailable (5xx, network, timeout),
// rejects our credentials (a misconfigured primary key should not stop an
// agent whose fallback is configured), or is out of quota or credit (the
// fallback bills another account). Never on a malformed, truncated,
// refused or empty reply (a model answered; another model is not the fix the
// caller asked for), a bad request, a prompt too long for the context
// window (add it with FallbackWhen when the fallback's window is larger),
// or cancellation.
func ShouldFallback(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrProviderUnavailable) || errors.Is(err, ErrAuth) ||
		errors.Is(err, ErrQuota)
}

// FallbackOption configures WithFallback.
type FallbackOption func(*fallbackModel)

// FallbackWhen replaces ShouldFallback.
func FallbackWhen(f func(error) bool) FallbackOption {
	return func(m *fallbackModel) { m.when = f }
}

// FallbackLogger sets the logger (one Warn line per switch); default no-op.
func FallbackLogger(l *zap.Logger) FallbackOption {
	return func(m *fallbackModel) { m.log = l }
}

// WithFallback returns a Model that calls primary and, when that fails with
// an error accepted by the rule (default ShouldFallback) and ctx is still
// live, calls fallback with the same request. The decision is per call: the
// next call tries primary again. Response.Model tells which model answered.
// If both fail, the error wraps the fallback's error and mentions the
// primary's. Name is "primary|fallback". Wrap each side in WithRetry first if
// you want retries before switching.
func WithFallback(primary, fallback Model, opts ...FallbackOption) Model {
	m := &fallbackModel{primary: primary, fallback: fallback, when: ShouldFallback, log: zap.NewNop()}
	for _, o := range opts {
		o(m)
	}
	return m
}

type fallbackModel struct {
	primary, fallback Model
	when              func(error) bool
	log               *zap.Logger
}

func (f *fallbackModel) Name() string { return f.primary.Name() + "|" + f.fallback.Name() }

// BoundsAttempts is true when both models bound their attempts.
func (f *fallbackModel) BoundsAttempts() bool {
	return BoundsAttempts(f.primary) && BoundsAttempts(f.fallback)
}

func (f *fallbackModel) CloseIdleConnections() {
	CloseIdleConnections(f.primary)
	CloseIdleConnections(f.fallback)
}

func (f *fallbackModel) Generate(ctx context.Context, req Request) (*Response, error) {
	resp, err := f.primary.Generate(ctx, req)
	if err == nil || ctx.Err() != nil || !f.when(err) {
		return resp, err
	}
	f.log.Warn("llm: switching to fallback model", zap.String("primary", f.primary.Name()),
		zap.String("fallback", f.fallback.Name()), zap.Error(err))
	resp2, err2 := f.fallback.Generate(ctx, req)
	if err2 != nil {
		return resp2, fmt.Errorf("fallback %s failed after primary %s failed (%v): %w", f.fallback.Name(), f.primary.Name(), err, err2)
	}
	return resp2, nil
}
