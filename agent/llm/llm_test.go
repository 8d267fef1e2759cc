package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecodeJSON(t *testing.T) {
	type out struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	good := []string{
		`{"a":1,"b":"x"}`,
		"  \n{\"a\":1,\"b\":\"x\"}\n ",
		"```json\n{\"a\":1,\"b\":\"x\"}\n```",
		"```\n{\"a\":1,\"b\":\"x\"}\n```",
		"Here you go:\n```json\n{\"a\":1,\"b\":\"x\"}\n```\n",
		"\ufeff{\"a\":1,\"b\":\"x\"}",
		"```json {\"a\":1,\"b\":\"x\"}```",
		"<think>\nThe user wants {a}.\n</think>\n\n{\"a\":1,\"b\":\"x\"}",
	}
	for _, in := range good {
		var v out
		if err := llm.DecodeJSON(&llm.Response{Content: in}, &v); err != nil || v.A != 1 || v.B != "x" {
			t.Errorf("DecodeJSON(%q) = %v, %+v", in, err, v)
		}
	}
	// A JSON string holding a fence is left alone.
	var s struct{ T string }
	if err := llm.DecodeJSONString("{\"T\":\"use ```go``` here\"}", &s); err != nil || s.T != "use ```go``` here" {
		t.Errorf("fence inside JSON: %v %q", err, s.T)
	}
	bad := map[string]string{
		"":                         "no JSON",
		"   ":                      "no JSON",
		"```json\n```":             "no JSON",
		`{"a":1`:                   "unexpected end",
		`{"a":1} {"a":2}`:          "after the JSON value",
		`I cannot help with that.`: "invalid character",
		`{"a":"notanint"}`:         "cannot unmarshal",
		"\xff\xfe":                 "UTF-8",
	}
	for in, want := range bad {
		var v out
		err := llm.DecodeJSON(&llm.Response{Content: in}, &v)
		var pe *llm.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, llm.ErrMalformedOutput) {
			t.Errorf("DecodeJSON(%q) = %v, want *ParseError", in, err)
			continue
		}
		if errors.Is(err, llm.ErrProviderUnavailable) {
			t.Errorf("DecodeJSON(%q): malformed output must not look like an outage", in)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeJSON(%q) = %q, want it to mention %q", in, err, want)
		}
	}
	if err := llm.DecodeJSON(nil, &struct{}{}); !errors.Is(err, llm.ErrMalformedOutput) {
		t.Errorf("nil response: %v", err)
	}
	var pe *llm.ParseError
	if err := llm.DecodeJSONString(`{"a":1,}`, &out{}); !errors.As(err, &pe) || pe.Offset < 0 {
		t.Errorf("want offset in %v", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{"", "{}", "```json\n{\"a\":1}\n```", "```", "``````", "[1,2", "{\"a\":\"```\"}", "\ufeff", "x```json\n", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		err := llm.DecodeJSON(&llm.Response{Content: s}, &v)
		if err == nil {
			if _, err2 := llm.ExtractJSON(s); err2 != nil {
				t.Fatalf("DecodeJSON ok but ExtractJSON failed: %v", err2)
			}
			return
		}
		var pe *llm.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, llm.ErrMalformedOutput) || err.Error() == "" {
			t.Fatalf("bad input %q gave unclear error %v", s, err)
		}
		if len(pe.Content) > 600 {
			t.Fatalf("error content not clipped: %d bytes", len(pe.Content))
		}
	})
}

func TestAPIErrorKinds(t *testing.T) {
	cases := []struct {
		status int
		want   error
	}{{0, llm.ErrProviderUnavailable}, {500, llm.ErrProviderUnavailable}, {529, llm.ErrProviderUnavailable},
		{429, llm.ErrRateLimited}, {401, llm.ErrAuth}, {403, llm.ErrAuth}, {400, llm.ErrBadRequest}, {404, llm.ErrBadRequest}}
	all := []error{llm.ErrProviderUnavailable, llm.ErrRateLimited, llm.ErrAuth, llm.ErrBadRequest, llm.ErrMalformedOutput}
	for _, c := range cases {
		var err error = &llm.APIError{Provider: "p", Status: c.status}
		for _, s := range all {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("status %d: errors.Is(%v) = %v", c.status, s, got)
			}
		}
	}
	classed := []struct {
		err  error
		want error
	}{
		{&llm.APIError{Status: 402}, llm.ErrQuota},
		{&llm.APIError{Status: 429, Class: llm.ErrQuota}, llm.ErrQuota},
		{&llm.APIError{Status: 400, Class: llm.ErrContextLength}, llm.ErrContextLength},
		{&llm.ContextLengthError{Provider: "ollama", Window: 4096, Estimated: 5000}, llm.ErrContextLength},
		{&llm.SchemaError{Provider: "openai", Schema: "s", Path: "$.properties.x", Reason: "free-form"}, llm.ErrBadRequest},
	}
	for _, c := range classed {
		for _, s := range append(all, llm.ErrQuota, llm.ErrContextLength) {
			if got := errors.Is(c.err, s); got != (s == c.want) {
				t.Errorf("%v: errors.Is(%v) = %v", c.err, s, got)
			}
		}
	}
	if d := llm.ParseRetryAfter("2", time.Now()); d != 2*time.Second {
		t.Errorf("Retry-After 2 = %v", d)
	}
	if d := llm.ParseRetryAfter("0.25", time.Now()); d != 250*time.Millisecond {
		t.Errorf("Retry-After 0.25 = %v", d)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := llm.ParseRetryAfter(now.Add(3*time.Second).Format(time.RFC1123), now); d != 3*time.Second {
		t.Errorf("Retry-After date = %v", d)
	}
	for _, v := range []string{"", "soon", "-1"} {
		if d := llm.ParseRetryAfter(v, now); d != 0 {
			t.Errorf("Retry-After %q = %v", v, d)
		}
	}
}

// funcModel adapts a function to llm.Model (a fake model for the wrappers'
// own logic; providers are tested against HTTP servers in their packages).
type funcModel struct {
	name  string
	calls atomic.Int32
	f     func(n int) (*llm.Response, error)
}

func (m *funcModel) Name() string { return m.name }
func (m *funcModel) Generate(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	return m.f(int(m.calls.Add(1)))
}

var req = llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text("hi"))}}

func TestRetry(t *testing.T) {
	policy := llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	t.Run("retry after then success", func(t *testing.T) {
		m := &funcModel{name: "m", f: func(n int) (*llm.Response, error) {
			if n == 1 {
				return nil, &llm.APIError{Provider: "p", Status: 429, RetryAfter: 20 * time.Millisecond}
			}
			return &llm.Response{Content: "ok"}, nil
		}}
		start := time.Now()
		resp, err := llm.WithRetry(m, policy).Generate(context.Background(), req)
		if err != nil || resp.Content != "ok" || m.calls.Load() != 2 {
			t.Fatalf("got %v %v calls=%d", resp, err, m.calls.Load())
		}
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("Retry-After not honoured: retried after %v", el)
		}
	})
	t.Run("exhausted keeps sentinel", func(t *testing.T) {
		m := &funcModel{name: "m", f: func(int) (*llm.Response, error) { return nil, &llm.APIError{Provider: "p", Status: 503} }}
		_, err := llm.WithRetry(m, policy).Generate(context.Background(), req)
		if !errors.Is(err, llm.ErrProviderUnavailable) || m.calls.Load() != 3 {
			t.Fatalf("err=%v calls=%d", err, m.calls.Load())
		}
	})
	for name, e := range map[string]error{
		"bad request": &llm.APIError{Status: 400},
		"auth":        &llm.APIError{Status: 401},
		"quota":       &llm.APIError{Status: 429, Class: llm.ErrQuota},
		"credits":     &llm.APIError{Status: 402},
		"context":     &llm.APIError{Status: 400, Class: llm.ErrContextLength},
		"malformed":   &llm.ParseError{Offset: -1},
		"truncated":   &llm.ReplyError{Kind: llm.ErrTruncated},
	} {
		t.Run("no retry on "+name, func(t *testing.T) {
			m := &funcModel{name: "m", f: func(int) (*llm.Response, error) { return nil, e }}
			_, err := llm.WithRetry(m, policy).Generate(context.Background(), req)
			if err != e || m.calls.Load() != 1 {
				t.Fatalf("err=%v calls=%d", err, m.calls.Load())
			}
		})
	}
	t.Run("long retry-after gives up at once", func(t *testing.T) {
		m := &funcModel{name: "m", f: func(int) (*llm.Response, error) {
			return nil, &llm.APIError{Status: 429, RetryAfter: time.Hour}
		}}
		_, err := llm.WithRetry(m, policy).Generate(context.Background(), req)
		if !errors.Is(err, llm.ErrRateLimited) || m.calls.Load() != 1 {
			t.Fatalf("err=%v calls=%d", err, m.calls.Load())
		}
	})
	t.Run("cancel during backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		m := &funcModel{name: "m", f: func(int) (*llm.Response, error) {
			cancel()
			return nil, &llm.APIError{Status: 503}
		}}
		slow := llm.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}
		_, err := llm.WithRetry(m, slow).Generate(ctx, req)
		if err == nil || m.calls.Load() != 1 {
			t.Fatalf("err=%v calls=%d", err, m.calls.Load())
		}
	})
	t.Run("delay grows and is capped", func(t *testing.T) {
		p := llm.RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Jitter: func() float64 { return 0.999999 }}
		d1, d2, d5 := p.Delay(1, errors.New("x")), p.Delay(2, errors.New("x")), p.Delay(5, errors.New("x"))
		if d1 > 100*time.Millisecond || d2 <= d1 || d5 > 300*time.Millisecond || d5 < 150*time.Millisecond {
			t.Errorf("delays %v %v %v", d1, d2, d5)
		}
	})
}

// ctxModel answers after f, which sees the attempt's context; like the
// scripted model it knows nothing of Request.AttemptTimeout.
type ctxModel struct {
	calls atomic.Int32
	f     func(ctx context.Context, n int) (*llm.Response, error)
}

func (m *ctxModel) Name() string { return "ctx" }
func (m *ctxModel) Generate(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	return m.f(ctx, int(m.calls.Add(1)))
}

func TestAttemptTimeout(t *testing.T) {
	const attempt = 200 * time.Millisecond
	policy := llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	r := req
	r.AttemptTimeout = attempt
	t.Run("a stalled first attempt leaves time for the second", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, n int) (*llm.Response, error) {
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &llm.Response{Content: "ok"}, nil
		}}
		// A long overall bound: a first attempt bounded only by it would
		// stall for all of it. 10 s is headroom for a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := llm.WithRetry(m, policy).Generate(ctx, r)
		if err != nil || resp.Content != "ok" || m.calls.Load() != 2 {
			t.Fatalf("%v %v calls %d", resp, err, m.calls.Load())
		}
		if d := time.Since(start); d < attempt || d > 10*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("carried by the context", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, n int) (*llm.Response, error) {
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &llm.Response{Content: "ok"}, nil
		}}
		ctx, cancel := llm.WithAttemptTimeout(context.Background(), attempt)
		defer cancel()
		if _, has := ctx.Deadline(); has {
			t.Fatal("WithAttemptTimeout set a deadline on the whole call")
		}
		resp, err := llm.WithRetry(m, policy).Generate(ctx, req)
		if err != nil || resp.Content != "ok" || m.calls.Load() != 2 {
			t.Fatalf("%v %v calls %d", resp, err, m.calls.Load())
		}
		r2 := req
		r2.AttemptTimeout = time.Second
		if d := llm.AttemptTimeout(ctx, &r2); d != time.Second {
			t.Errorf("the request's own timeout must win: %s", d)
		}
	})
	t.Run("every attempt stalls", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		_, err := llm.WithRetry(m, llm.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}).Generate(context.Background(), r)
		var ae *llm.APIError
		if !errors.Is(err, llm.ErrProviderUnavailable) || !errors.As(err, &ae) || !strings.Contains(err.Error(), "attempt timed out after 200ms") ||
			!errors.Is(err, context.DeadlineExceeded) || m.calls.Load() != 2 {
			t.Fatalf("err = %v calls %d", err, m.calls.Load())
		}
	})
	t.Run("the caller's deadline is not an attempt timeout", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		ctx, cancel := context.WithTimeout(context.Background(), attempt/4)
		defer cancel()
		_, err := llm.WithRetry(m, policy).Generate(ctx, r)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, llm.ErrProviderUnavailable) || m.calls.Load() != 1 {
			t.Fatalf("err = %v calls %d", err, m.calls.Load())
		}
	})
	t.Run("the timeout names the provider, not the model", func(t *testing.T) {
		m := &namedCtxModel{name: "custom:model-1", ctxModel: ctxModel{f: func(ctx context.Context, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}}
		_, err := llm.GenerateAttempt(context.Background(), m, r)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Provider != "custom" || !errors.Is(err, llm.ErrProviderUnavailable) {
			t.Fatalf("err = %v (%#v)", err, ae)
		}
	})
	t.Run("a bad request at the deadline stays a bad request", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return nil, &llm.APIError{Provider: "p", Status: 400, Message: "bad schema"}
		}}
		_, err := llm.WithRetry(m, policy).Generate(context.Background(), r)
		if !errors.Is(err, llm.ErrBadRequest) || errors.Is(err, llm.ErrProviderUnavailable) || m.calls.Load() != 1 {
			t.Fatalf("err = %v calls %d", err, m.calls.Load())
		}
	})
	t.Run("a reply error at the deadline keeps its response", func(t *testing.T) {
		m := &ctxModel{f: func(ctx context.Context, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return &llm.Response{Content: `{"a":`, Usage: llm.Usage{CompletionTokens: 7}},
				&llm.ReplyError{Provider: "p", Kind: llm.ErrTruncated, StopReason: "length"}
		}}
		resp, err := llm.WithRetry(m, policy).Generate(context.Background(), r)
		if !errors.Is(err, llm.ErrTruncated) || errors.Is(err, llm.ErrProviderUnavailable) || m.calls.Load() != 1 {
			t.Fatalf("err = %v calls %d", err, m.calls.Load())
		}
		if resp == nil || resp.Usage.CompletionTokens != 7 {
			t.Fatalf("the reply error's response was dropped: %+v", resp)
		}
	})
}

type namedCtxModel struct {
	ctxModel
	name string
}

func (m *namedCtxModel) Name() string { return m.name }

func TestBoundsAttempts(t *testing.T) {
	custom := &ctxModel{}
	if llm.BoundsAttempts(custom) {
		t.Error("a custom model claims to bound its attempts")
	}
	if !llm.BoundsAttempts(llm.WithRetry(custom, llm.RetryPolicy{})) {
		t.Error("WithRetry does not bound its attempts")
	}
	if llm.BoundsAttempts(llm.WithFallback(llm.WithRetry(custom, llm.RetryPolicy{}), custom)) {
		t.Error("a fallback to an unbounded model claims to bound its attempts")
	}
	if !llm.BoundsAttempts(llm.WithFallback(llm.WithRetry(custom, llm.RetryPolicy{}), llm.WithRetry(custom, llm.RetryPolicy{}))) {
		t.Error("a fallback between bounded models does not bound its attempts")
	}
}

func TestFallback(t *testing.T) {
	okFallback := func() *funcModel {
		return &funcModel{name: "fb", f: func(int) (*llm.Response, error) { return &llm.Response{Content: "{}", Model: "fb"}, nil }}
	}
	for name, c := range map[string]struct {
		err      error
		switched bool
	}{
		"rate limited":  {&llm.APIError{Status: 429}, true},
		"unavailable":   {&llm.APIError{Status: 502}, true},
		"network":       {&llm.APIError{Err: errors.New("connection refused")}, true},
		"auth":          {&llm.MissingKeyError{Provider: "p", EnvVars: []string{"K"}}, true},
		"bad request":   {&llm.APIError{Status: 400}, false},
		"quota":         {&llm.APIError{Status: 429, Code: "insufficient_quota", Class: llm.ErrQuota}, true},
		"context":       {&llm.APIError{Status: 400, Class: llm.ErrContextLength}, false},
		"local context": {&llm.ContextLengthError{Provider: "ollama", Window: 4096, Estimated: 5000}, false},
		"malformed":     {&llm.ParseError{Offset: -1, Err: errors.New("x")}, false},
		"truncated":     {&llm.ReplyError{Kind: llm.ErrTruncated}, false},
		"refused":       {&llm.ReplyError{Kind: llm.ErrRefused}, false},
		"empty":         {&llm.ReplyError{Kind: llm.ErrEmptyReply}, false},
		"ctx cancelled": {context.Canceled, false},
	} {
		t.Run(name, func(t *testing.T) {
			p := &funcModel{name: "p", f: func(int) (*llm.Response, error) { return nil, c.err }}
			fb := okFallback()
			m := llm.WithFallback(p, fb)
			resp, err := m.Generate(context.Background(), req)
			if c.switched {
				if err != nil || resp.Model != "fb" || fb.calls.Load() != 1 {
					t.Fatalf("want fallback answer, got %v %v", resp, err)
				}
			} else if !errors.Is(err, c.err) || fb.calls.Load() != 0 {
				t.Fatalf("want primary error %v unchanged, got %v, fallback calls %d", c.err, err, fb.calls.Load())
			}
		})
	}
	t.Run("both fail", func(t *testing.T) {
		p := &funcModel{name: "p", f: func(int) (*llm.Response, error) { return nil, &llm.APIError{Provider: "a", Status: 503} }}
		fb := &funcModel{name: "fb", f: func(int) (*llm.Response, error) { return nil, &llm.APIError{Provider: "b", Status: 401} }}
		m := llm.WithFallback(p, fb)
		_, err := m.Generate(context.Background(), req)
		if !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "503") || m.Name() != "p|fb" {
			t.Fatalf("err=%v", err)
		}
	})
}

func TestValidate(t *testing.T) {
	bad := []llm.Request{
		{},
		{Messages: []llm.Message{{Role: "tool", Parts: []llm.Part{llm.Text("x")}}}},
		{Messages: []llm.Message{{Role: llm.RoleUser}}},
		{Messages: []llm.Message{llm.UserMessage(llm.Part{Text: "x", Image: &llm.Image{URL: "http://x/y.png"}})}},
		{Messages: []llm.Message{llm.UserMessage(llm.Part{Image: &llm.Image{Data: []byte{1}}})}},
		{Messages: []llm.Message{llm.UserMessage(llm.Part{Image: &llm.Image{URL: "data:image/png;base64,!!"}})}},
		{Messages: []llm.Message{llm.UserMessage(llm.Text("x"))}, Schema: &llm.Schema{JSON: []byte(`{"type":"array"}`)}},
		{Messages: []llm.Message{llm.UserMessage(llm.Text("x"))}, Schema: &llm.Schema{JSON: []byte(`nope`)}},
		{Messages: []llm.Message{llm.UserMessage(llm.Text("x"))}, Schema: &llm.Schema{}},
	}
	for i, r := range bad {
		if err := r.Validate(); !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("case %d: Validate = %v, want ErrBadRequest", i, err)
		}
	}
	mt, b, err := llm.ParseDataURL("data:image/png;base64,iVBORw==")
	if err != nil || mt != "image/png" || len(b) != 4 {
		t.Errorf("ParseDataURL = %q %v %v", mt, b, err)
	}
	if n := (&llm.Schema{Name: "agent output/v1"}).ToolName(); n != "agent_output_v1" {
		t.Errorf("ToolName = %q", n)
	}
}
