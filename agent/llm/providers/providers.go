// Package providers builds an llm.Model from a "provider:model" spec string,
// such as "openai:gpt-4.1", "anthropic:claude-sonnet-4-5",
// "gemini:gemini-2.5-flash" or "ollama:llama3.1:8b" (only the first colon
// separates provider and model).
package providers

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/anthropic"
	"github.com/browseragent/browseragent/agent/llm/gemini"
	"github.com/browseragent/browseragent/agent/llm/openai"
)

// Default bases for the OpenAI-compatible providers.
const (
	OllamaBaseURL     = "http://localhost:11434/v1"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
)

// Options are shared by every provider. Zero fields take the provider's
// defaults (keys and bases from the environment, see each package).
type Options struct {
	APIKey     string
	BaseURL    string
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; default 90s.
	Timeout time.Duration
	// Retry wraps the model in llm.WithRetry with this policy; nil uses the
	// zero policy (3 attempts, 1s base). Set MaxAttempts to 1 to disable.
	Retry *llm.RetryPolicy
	// Logger is given to the retry wrapper; default zap.NewNop().
	Logger *zap.Logger
	// ContextWindow is the context size, in tokens, of an "ollama" server
	// (see openai.Config.ContextWindow), default $OLLAMA_CONTEXT_LENGTH (the
	// variable the Ollama server reads). Ollama's OpenAI-compatible
	// endpoint truncates a longer prompt to its num_ctx silently. When the
	// window is given (here or in the variable), a prompt estimated larger
	// is refused before sending and a reply that shows a truncation is
	// llm.ErrContextLength. When it is not, the window is unknown (Ollama
	// picks its default by the GPU's memory: 4,096 tokens below 24 GiB,
	// 32,768 up to 48 GiB, 262,144 above), so nothing is refused before
	// sending and only a reply that read less than half the estimated
	// prompt is reported (openai.Config.MinContextWindow, with
	// OllamaMinContext). Negative turns every check off. Other providers
	// ignore it: their APIs reject an oversized prompt themselves.
	ContextWindow int
	// DisableCache turns off Anthropic's cache_control markers.
	DisableCache bool
}

// OllamaMinContext is the smallest default context window of current
// Ollama releases (4,096 tokens, on a GPU with less than 24 GiB of memory;
// more memory gets 32,768 or 262,144). It is what the reply's truncation
// check assumes when no window is configured; nothing is refused before
// sending on its account.
const OllamaMinContext = 4096

// ollamaWindow returns the context window configured for an Ollama server
// (Options.ContextWindow, else $OLLAMA_CONTEXT_LENGTH): positive when
// given, 0 when not, -1 when the checks are off.
func ollamaWindow(o Options) (int, error) {
	if o.ContextWindow != 0 {
		return max(o.ContextWindow, -1), nil
	}
	if v := strings.TrimSpace(os.Getenv("OLLAMA_CONTEXT_LENGTH")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("llm: %w: OLLAMA_CONTEXT_LENGTH=%q is not a positive number of tokens", llm.ErrBadRequest, v)
		}
		return n, nil
	}
	return 0, nil
}

// Known lists the provider names New accepts.
func Known() []string {
	k := make([]string, 0, len(aliases))
	for name := range aliases {
		k = append(k, name)
	}
	sort.Strings(k)
	return k
}

var aliases = map[string]string{
	"openai": "openai", "anthropic": "anthropic", "claude": "anthropic",
	"gemini": "gemini", "google": "gemini", "ollama": "ollama", "openrouter": "openrouter",
}

// Parse splits a spec into its canonical provider name and model.
// Errors wrap llm.ErrBadRequest.
func Parse(spec string) (provider, model string, err error) {
	p, m, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || p == "" || m == "" {
		return "", "", fmt.Errorf("llm: %w: model spec %q: want provider:model (providers: %s)", llm.ErrBadRequest, spec, strings.Join(Known(), ", "))
	}
	canon, ok := aliases[strings.ToLower(p)]
	if !ok {
		return "", "", fmt.Errorf("llm: %w: model spec %q: unknown provider %q (known: %s)", llm.ErrBadRequest, spec, p, strings.Join(Known(), ", "))
	}
	return canon, m, nil
}

// New builds the model a spec names, wrapped in llm.WithRetry. A missing key
// is a *llm.MissingKeyError (matching llm.ErrAuth) naming the environment
// variable to set. "ollama" talks to $OLLAMA_BASE_URL or OllamaBaseURL
// without a key, checking prompts against Options.ContextWindow (or,
// without one, its replies for a truncation);
// "openrouter" uses $OPENROUTER_API_KEY. Request.CacheKey is sent (as
// prompt_cache_key) only by "openai" on OpenAI's own API, never to Ollama or
// OpenRouter: an OpenAI-compatible server may reject a field it does not
// know (see openai.Config.SendCacheKey).
func New(spec string, o Options) (llm.Model, error) {
	provider, model, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var m llm.Model
	switch provider {
	case "openai":
		m, err = openai.New(openai.Config{Model: model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: o.HTTPClient, Timeout: o.Timeout})
	case "ollama":
		base := firstNonEmpty(o.BaseURL, os.Getenv("OLLAMA_BASE_URL"), OllamaBaseURL)
		window, werr := ollamaWindow(o)
		if werr != nil {
			return nil, werr
		}
		minWindow := 0
		if window == 0 {
			minWindow = OllamaMinContext
		}
		m, err = openai.New(openai.Config{Model: model, Provider: "ollama", APIKey: firstNonEmpty(o.APIKey, "ollama"),
			BaseURL: base, HTTPClient: o.HTTPClient, Timeout: o.Timeout, LegacyMaxTokens: true,
			ContextWindow: max(window, 0), MinContextWindow: minWindow,
			ContextHint: "start the Ollama server with a larger OLLAMA_CONTEXT_LENGTH (or give the model a larger num_ctx) " +
				"and set the same OLLAMA_CONTEXT_LENGTH here (or providers.Options.ContextWindow)"})
	case "openrouter":
		key := firstNonEmpty(o.APIKey, os.Getenv("OPENROUTER_API_KEY"))
		if key == "" {
			return nil, &llm.MissingKeyError{Provider: "openrouter", EnvVars: []string{"OPENROUTER_API_KEY"}}
		}
		m, err = openai.New(openai.Config{Model: model, Provider: "openrouter", APIKey: key,
			BaseURL: firstNonEmpty(o.BaseURL, OpenRouterBaseURL), HTTPClient: o.HTTPClient, Timeout: o.Timeout})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: o.HTTPClient, Timeout: o.Timeout,
			DisableCache: o.DisableCache})
	case "gemini":
		m, err = gemini.New(gemini.Config{Model: model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: o.HTTPClient, Timeout: o.Timeout})
	}
	if err != nil {
		return nil, err
	}
	var p llm.RetryPolicy
	if o.Retry != nil {
		p = *o.Retry
	}
	if p.Logger == nil {
		p.Logger = o.Logger
	}
	return llm.WithRetry(m, p), nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
