package pricing

import "sync"

// Default returns the built-in table: list prices as of AsOf, US dollars
// per million tokens, from the providers' public pricing pages (standard
// tier, short-context prices). OpenAI and Gemini charge nothing extra for
// cache writes (CacheWrite = Input); Anthropic's cache writes are its
// 5-minute ones (1.25 × input) and its cache reads 0.1 × input.
func Default() *Table { return defaultTable() }

var defaultTable = sync.OnceValue(func() *Table { return New(builtin...) })

// p builds a Price; cw < 0 means "cache writes cost the input price".
func p(in, cached, cw, out float64) Price {
	if cw < 0 {
		cw = in
	}
	return Price{Input: in, CachedInput: cached, CacheWrite: cw, Output: out}
}

// builtin is the table as of AsOf.
var builtin = []Entry{
	// OpenAI (platform.openai.com/docs/pricing, standard tier).
	{Provider: "openai", Model: "gpt-5", Price: p(1.25, 0.125, -1, 10), Aliases: []string{"gpt-5-chat-latest", "gpt-5-codex", "gpt-5.1", "gpt-5.1-chat-latest", "gpt-5.1-codex"}},
	{Provider: "openai", Model: "gpt-5-mini", Price: p(0.25, 0.025, -1, 2), Aliases: []string{"gpt-5.1-codex-mini"}},
	{Provider: "openai", Model: "gpt-5-nano", Price: p(0.05, 0.005, -1, 0.40)},
	{Provider: "openai", Model: "gpt-4.1", Price: p(2, 0.50, -1, 8)},
	{Provider: "openai", Model: "gpt-4.1-mini", Price: p(0.40, 0.10, -1, 1.60)},
	{Provider: "openai", Model: "gpt-4.1-nano", Price: p(0.10, 0.025, -1, 0.40)},
	{Provider: "openai", Model: "gpt-4o", Price: p(2.50, 1.25, -1, 10), Aliases: []string{"chatgpt-4o-latest"}},
	// The first gpt-4o snapshot kept its launch price.
	{Provider: "openai", Model: "gpt-4o-2024-05-13", Price: p(5, 5, -1, 15)},
	{Provider: "openai", Model: "gpt-4o-mini", Price: p(0.15, 0.075, -1, 0.60)},
	{Provider: "openai", Model: "o3", Price: p(2, 0.50, -1, 8)},
	{Provider: "openai", Model: "o4-mini", Price: p(1.10, 0.275, -1, 4.40)},
	{Provider: "openai", Model: "o3-mini", Price: p(1.10, 0.55, -1, 4.40)},

	// Anthropic (claude.com/pricing): input, cache hits, 5-minute cache
	// writes, output.
	{Provider: "anthropic", Model: "claude-opus-4-5", Price: p(5, 0.50, 6.25, 25)},
	{Provider: "anthropic", Model: "claude-opus-4-1", Price: p(15, 1.50, 18.75, 75)},
	{Provider: "anthropic", Model: "claude-opus-4", Price: p(15, 1.50, 18.75, 75), Aliases: []string{"claude-opus-4-0", "claude-4-opus"}},
	{Provider: "anthropic", Model: "claude-sonnet-4-5", Price: p(3, 0.30, 3.75, 15)},
	{Provider: "anthropic", Model: "claude-sonnet-4", Price: p(3, 0.30, 3.75, 15), Aliases: []string{"claude-sonnet-4-0", "claude-4-sonnet"}},
	{Provider: "anthropic", Model: "claude-3-7-sonnet", Price: p(3, 0.30, 3.75, 15), Aliases: []string{"claude-sonnet-3-7"}},
	{Provider: "anthropic", Model: "claude-haiku-4-5", Price: p(1, 0.10, 1.25, 5)},
	{Provider: "anthropic", Model: "claude-3-5-haiku", Price: p(0.80, 0.08, 1, 4), Aliases: []string{"claude-haiku-3-5"}},

	// Gemini (ai.google.dev/gemini-api/docs/pricing, paid tier, prompts up
	// to 200k tokens; thinking tokens are billed as output; implicit cache
	// hits at the context-caching price).
	{Provider: "gemini", Model: "gemini-2.5-pro", Price: p(1.25, 0.125, -1, 10)},
	{Provider: "gemini", Model: "gemini-2.5-flash", Price: p(0.30, 0.03, -1, 2.50)},
	{Provider: "gemini", Model: "gemini-2.5-flash-lite", Price: p(0.10, 0.01, -1, 0.40)},
	{Provider: "gemini", Model: "gemini-2.0-flash", Price: p(0.10, 0.025, -1, 0.40)},
	{Provider: "gemini", Model: "gemini-2.0-flash-lite", Price: p(0.075, 0.075, -1, 0.30)},
}
