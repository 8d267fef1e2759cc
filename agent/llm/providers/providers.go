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
// without a key; "openrouter" uses $OPENROUTER_API_KEY.
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
		m, err = openai.New(openai.Config{Model: model, Provider: "ollama", APIKey: firstNonEmpty(o.APIKey, "ollama"),
			BaseURL: base, HTTPClient: o.HTTPClient, Timeout: o.Timeout, LegacyMaxTokens: true})
	case "openrouter":
		key := firstNonEmpty(o.APIKey, os.Getenv("OPENROUTER_API_KEY"))
		if key == "" {
			return nil, &llm.MissingKeyError{Provider: "openrouter", EnvVars: []string{"OPENROUTER_API_KEY"}}
		}
		m, err = openai.New(openai.Config{Model: model, Provider: "openrouter", APIKey: key,
			BaseURL: firstNonEmpty(o.BaseURL, OpenRouterBaseURL), HTTPClient: o.HTTPClient, Timeout: o.Timeout})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: o.HTTPClient, Timeout: o.Timeout})
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
