package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/providers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	for spec, want := range map[string][2]string{
		"openai:gpt-4.1":              {"openai", "gpt-4.1"},
		"anthropic:claude-sonnet-4-5": {"anthropic", "claude-sonnet-4-5"},
		"Claude:claude-opus-4":        {"anthropic", "claude-opus-4"},
		"gemini:gemini-2.5-flash":     {"gemini", "gemini-2.5-flash"},
		"google:gemini-2.5-pro":       {"gemini", "gemini-2.5-pro"},
		"ollama:llama3.1:8b":          {"ollama", "llama3.1:8b"},
	} {
		p, m, err := providers.Parse(spec)
		if err != nil || p != want[0] || m != want[1] {
			t.Errorf("Parse(%q) = %q %q %v", spec, p, m, err)
		}
	}
	for _, spec := range []string{"", "gpt-4.1", "openai:", ":gpt", "cohere:command"} {
		if _, _, err := providers.Parse(spec); !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "openai") {
			t.Errorf("Parse(%q) err = %v", spec, err)
		}
	}
}

func TestMissingKeyNamesEnvVar(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"} {
		t.Setenv(v, "")
	}
	for spec, env := range map[string]string{
		"openai:gpt-4.1":              "OPENAI_API_KEY",
		"anthropic:claude-sonnet-4-5": "ANTHROPIC_API_KEY",
		"gemini:gemini-2.5-flash":     "GEMINI_API_KEY",
		"openrouter:openai/gpt-4.1":   "OPENROUTER_API_KEY",
	} {
		_, err := providers.New(spec, providers.Options{})
		var mk *llm.MissingKeyError
		if !errors.As(err, &mk) || !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), env) {
			t.Errorf("New(%q) err = %v", spec, err)
		}
	}
	// Ollama needs no key.
	m, err := providers.New("ollama:llama3.1", providers.Options{})
	if err != nil || m.Name() != "ollama:llama3.1" {
		t.Fatalf("ollama: %v", err)
	}
	llm.CloseIdleConnections(m)
}

func TestOllamaSpecSpeaksOpenAIWithoutKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer ollama" ||
			!strings.Contains(string(b), `"model":"llama3.1:8b"`) || !strings.Contains(string(b), `"max_tokens":100`) {
			t.Errorf("%s %v %s", r.URL.Path, r.Header, b)
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"llama3.1:8b","choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	}))
	defer srv.Close()
	t.Setenv("OLLAMA_BASE_URL", srv.URL+"/v1")
	m, err := providers.New("ollama:llama3.1:8b", providers.Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), llm.Request{
		Messages:  []llm.Message{llm.UserMessage(llm.Text("hi"))},
		Schema:    &llm.Schema{Name: "o", JSON: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)},
		MaxTokens: 100,
	})
	if err != nil || resp.Content != `{"ok":true}` || resp.Usage.TotalTokens != 8 {
		t.Fatalf("%v %v", resp, err)
	}
}

// TestCrossProviderFallback: OpenAI keeps answering 503, the retries run
// out, and the Anthropic fallback answers; a malformed Anthropic reply in
// the reverse set-up is returned as is, without touching the fallback.
func TestCrossProviderFallback(t *testing.T) {
	var openaiHits, anthropicHits atomic.Int32
	malformed := atomic.Bool{}
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openaiHits.Add(1)
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`)
	}))
	defer oa.Close()
	an := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		anthropicHits.Add(1)
		content := `[{"type":"tool_use","id":"toolu_1","name":"agent_output","input":{"thinking":"t","action":[]}}]`
		if malformed.Load() {
			content = `[{"type":"text","text":"Sorry, here is my plan: click it"}]`
		}
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":`+content+`,"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`)
	}))
	defer an.Close()
	retry := &llm.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}
	primary, err := providers.New("openai:gpt-4.1", providers.Options{APIKey: "k", BaseURL: oa.URL, HTTPClient: oa.Client(), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	fallback, err := providers.New("anthropic:claude-sonnet-4-5", providers.Options{APIKey: "k", BaseURL: an.URL, HTTPClient: an.Client(), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{
		Messages: []llm.Message{llm.UserMessage(llm.Text("go"))},
		Schema:   &llm.Schema{Name: "agent_output", JSON: json.RawMessage(`{"type":"object","properties":{"thinking":{"type":"string"},"action":{"type":"array"}}}`)},
	}
	resp, err := llm.WithFallback(primary, fallback).Generate(context.Background(), req)
	if err != nil || resp.Model != "claude-sonnet-4-5" || openaiHits.Load() != 2 || anthropicHits.Load() != 1 {
		t.Fatalf("resp=%v err=%v hits openai=%d anthropic=%d", resp, err, openaiHits.Load(), anthropicHits.Load())
	}

	malformed.Store(true)
	openaiHits.Store(0)
	anthropicHits.Store(0)
	_, err = llm.WithFallback(fallback, primary).Generate(context.Background(), req)
	if !errors.Is(err, llm.ErrMalformedOutput) || errors.Is(err, llm.ErrProviderUnavailable) || anthropicHits.Load() != 1 || openaiHits.Load() != 0 {
		t.Fatalf("err=%v hits openai=%d anthropic=%d", err, openaiHits.Load(), anthropicHits.Load())
	}
}

// "ollama" refuses before sending only a prompt larger than a window it
// was told ($OLLAMA_CONTEXT_LENGTH or Options.ContextWindow), saying how
// to raise it; without one (Ollama's default depends on the GPU) it sends
// the prompt and catches a truncation in the reply.
func TestOllamaContextWindow(t *testing.T) {
	var hits atomic.Int32
	var numCtx atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		// Ollama cuts the prompt to num_ctx and reports what it kept.
		n := min(len(b)/3, int(numCtx.Load()))
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"llama3.1:8b","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, n, n+1)
	}))
	defer srv.Close()
	t.Setenv("OLLAMA_BASE_URL", srv.URL+"/v1")
	req := func(bytes int) llm.Request {
		return llm.Request{Messages: []llm.Message{llm.UserMessage(llm.Text(strings.Repeat("x", bytes)))}}
	}
	gen := func(o providers.Options, r llm.Request) (*llm.Response, error) {
		o.HTTPClient = srv.Client()
		o.Retry = &llm.RetryPolicy{MaxAttempts: 1}
		m, err := providers.New("ollama:llama3.1:8b", o)
		if err != nil {
			t.Fatal(err)
		}
		return m.Generate(context.Background(), r)
	}
	var ce *llm.ContextLengthError

	// No window configured: a prompt above 4,096 tokens goes to a server
	// with a larger default (a 24 GiB GPU's 32k) and is answered.
	t.Setenv("OLLAMA_CONTEXT_LENGTH", "")
	numCtx.Store(32768)
	if _, err := gen(providers.Options{}, req(40000)); err != nil || hits.Load() != 1 { // about 10,000 tokens
		t.Fatalf("unconfigured window: %v, hits %d", err, hits.Load())
	}
	// The same prompt on a small GPU's 4,096: sent, and the reply shows
	// the cut.
	numCtx.Store(4096)
	resp, err := gen(providers.Options{}, req(40000))
	if !errors.As(err, &ce) || ce.Window != 0 || ce.Reported != 4096 || resp == nil || hits.Load() != 2 ||
		!strings.Contains(err.Error(), "OLLAMA_CONTEXT_LENGTH") {
		t.Fatalf("truncated with an unknown window: %v %v, hits %d", resp, err, hits.Load())
	}

	// A configured window refuses before sending, saying how to raise it.
	t.Setenv("OLLAMA_CONTEXT_LENGTH", "8192")
	numCtx.Store(8192)
	_, err = gen(providers.Options{}, req(40000))
	if !errors.As(err, &ce) || !errors.Is(err, llm.ErrContextLength) || ce.Window != 8192 || ce.Reported != 0 ||
		!strings.Contains(err.Error(), "OLLAMA_CONTEXT_LENGTH") || hits.Load() != 2 {
		t.Fatalf("err = %v, hits = %d", err, hits.Load())
	}
	if _, err := gen(providers.Options{}, req(20000)); err != nil {
		t.Fatalf("within the configured window: %v", err)
	}
	// Estimated under the window, but the server's tokenizer counts more:
	// its reply shows the prompt cut to its window.
	t.Setenv("OLLAMA_CONTEXT_LENGTH", "")
	numCtx.Store(4096)
	resp, err = gen(providers.Options{ContextWindow: 4096}, req(15000))
	if !errors.Is(err, llm.ErrContextLength) || resp == nil || resp.Usage.PromptTokens != 4096 {
		t.Fatalf("truncated: %v %v", resp, err)
	}
	hits.Store(0)
	if _, err := gen(providers.Options{ContextWindow: -1}, req(40000)); err != nil || hits.Load() != 1 {
		t.Fatalf("check off: the request is sent as before: %v, hits %d", err, hits.Load())
	}
	t.Setenv("OLLAMA_CONTEXT_LENGTH", "lots")
	if _, err := providers.New("ollama:llama3.1", providers.Options{}); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("bad env: %v", err)
	}
}
