// Package pricing turns token usage into money: a table of the common
// models' list prices (US dollars per million tokens, as of AsOf), looked
// up by the "provider:model" spec a Model's Name returns, and Cost, which
// prices an llm.Usage by kind of token.
//
// Lookup rules (Table.Lookup): the provider is canonicalised (claude →
// anthropic, google → gemini); "ollama" models are local and cost 0; an
// OpenRouter spec "openrouter:vendor/model" is priced as vendor:model
// (OpenRouter passes the vendor's list price through); the model name is
// lower-cased, a "models/" prefix dropped, and dots in Anthropic names read
// as dashes (claude-sonnet-4.5 = claude-sonnet-4-5). A name is then found
// exactly, as an alias, or after dropping a dated snapshot suffix
// (-20250929, -2025-04-14, -latest, -preview-06-17, @20250929): so
// claude-sonnet-4-5-20250929 is claude-sonnet-4-5 and gpt-4.1-mini-2025-04-14
// is gpt-4.1-mini. Nothing else is guessed: gpt-5-pro is not gpt-5. A model
// not found has an unknown price (ErrUnknownModel), never 0.
//
// The table is overridable by a JSON file (ParseOverrides, LoadFile): its
// entries replace or add models. An alias names its entry, not a price, so
// an override of a model's name reprices its aliases too.
//
// Not modelled: long-context tiers (Gemini 2.5 Pro and Claude Sonnet 4.x
// above 200k prompt tokens cost more; the agent's prompts stay far below),
// Anthropic's 1-hour cache writes (the 5-minute price is used), batch and
// priority tiers, audio input, and storage fees of explicit caches.
package pricing

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/agent/llm"
)

// AsOf is the date of the list prices in the built-in table. Prices change:
// override them with a file (ParseOverrides) when they do.
const AsOf = "2025-11-25"

// ErrUnknownModel is wrapped by Lookup's error for a model the table does
// not hold: its cost is unknown, not zero.
var ErrUnknownModel = errors.New("pricing: no price known for the model")

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	// Input is the price of input tokens that are neither read from nor
	// written to a prompt cache.
	Input float64 `json:"input"`
	// CachedInput is the price of input tokens read from the provider's
	// prompt cache (OpenAI's cached input, Anthropic's cache hits, Gemini's
	// context-cache price).
	CachedInput float64 `json:"cached_input"`
	// CacheWrite is the price of input tokens written to the cache
	// (Anthropic's 5-minute cache write; for the others it equals Input:
	// they charge nothing extra).
	CacheWrite float64 `json:"cache_write"`
	// Output is the price of completion tokens; reasoning (thinking) tokens
	// are part of the completion and billed at this price by every provider
	// in the table.
	Output float64 `json:"output"`
}

// Cost is what a model call (or a sum of them) cost, in US dollars, by kind
// of token. The kinds add up to Total; Reasoning is the part of Output spent
// on reasoning tokens (already in Output, shown for information).
//
// A Cost with Unpriced models is partial: those models' calls are not in
// it, because their price is unknown. Show such a cost as "cost unknown".
type Cost struct {
	Input       float64 `json:"input_usd"`
	CachedInput float64 `json:"cached_input_usd"`
	CacheWrite  float64 `json:"cache_write_usd"`
	Output      float64 `json:"output_usd"`
	Reasoning   float64 `json:"reasoning_usd,omitempty"`
	Total       float64 `json:"total_usd"`
	// Unpriced are the models (specs) with calls in the sum whose price is
	// unknown, sorted, without repeats.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Known reports whether every call in the cost was priced.
func (c Cost) Known() bool { return len(c.Unpriced) == 0 }

// Add adds o to c (the unpriced models are merged).
func (c *Cost) Add(o Cost) {
	c.Input += o.Input
	c.CachedInput += o.CachedInput
	c.CacheWrite += o.CacheWrite
	c.Output += o.Output
	c.Reasoning += o.Reasoning
	c.Total += o.Total
	for _, m := range o.Unpriced {
		c.AddUnpriced(m)
	}
}

// AddUnpriced records that a call of model (a spec) could not be priced.
func (c *Cost) AddUnpriced(model string) {
	i := sort.SearchStrings(c.Unpriced, model)
	if i < len(c.Unpriced) && c.Unpriced[i] == model {
		return
	}
	c.Unpriced = append(c.Unpriced, "")
	copy(c.Unpriced[i+1:], c.Unpriced[i:])
	c.Unpriced[i] = model
}

// String words the cost for people: "$0.0021", or "cost unknown (no price
// for openai:local)" when a model's price is unknown.
func (c Cost) String() string {
	if !c.Known() {
		return "cost unknown (no price for " + strings.Join(c.Unpriced, ", ") + ")"
	}
	return FormatUSD(c.Total)
}

// FormatUSD writes dollars with the precision small amounts need: $0 for
// zero, two significant digits below a cent ($0.0021, $0.000034), four
// decimals below a dollar ($0.0123), cents above ($12.34).
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		return fmt.Sprintf("$%.*f", int(math.Ceil(-math.Log10(v)))+1, v)
	case v < 1:
		return fmt.Sprintf("$%.4f", v)
	default:
		return fmt.Sprintf("$%.2f", v)
	}
}

// Cost prices u: the input tokens that are neither cache reads nor cache
// writes at Input, cache reads at CachedInput, cache writes at CacheWrite,
// and every completion token (reasoning included) at Output.
func (p Price) Cost(u llm.Usage) Cost {
	plain := max(u.PromptTokens-u.CachedTokens-u.CacheWriteTokens, 0)
	const m = 1e6
	c := Cost{
		Input:       float64(plain) * p.Input / m,
		CachedInput: float64(u.CachedTokens) * p.CachedInput / m,
		CacheWrite:  float64(u.CacheWriteTokens) * p.CacheWrite / m,
		Output:      float64(u.CompletionTokens) * p.Output / m,
		Reasoning:   float64(u.ReasoningTokens) * p.Output / m,
	}
	c.Total = c.Input + c.CachedInput + c.CacheWrite + c.Output
	return c
}

// Entry is one model of a Table.
type Entry struct {
	// Provider is the canonical provider: openai, anthropic, gemini.
	Provider string
	// Model is the model's name at the provider, lower case.
	Model string
	Price Price
	// Aliases are other names of the same model and price.
	Aliases []string
}

// Table is a price table. The zero value is empty; Default returns the
// built-in one. A Table is read-only after it is built (Merge returns a new
// one), so it is safe for concurrent use.
//
// An alias names its entry, not a price: a later entry of the same name
// replaces the price, and the aliases follow it (overriding openai:gpt-5
// prices gpt-5.1 and gpt-5-codex too). A later entry whose name (or alias)
// is an alias of an earlier one takes that name over: the earlier entry
// keeps its other names.
type Table struct {
	// names maps every name and alias ("provider:model") to its entry's
	// key, the entry's own name.
	names   map[string]string
	entries map[string]*Entry
	// order is the entries' keys in the order they were first added.
	order []string
}

// New returns a table of entries; a later entry (or alias) replaces an
// earlier one of the same provider and name.
func New(entries ...Entry) *Table {
	t := &Table{names: map[string]string{}, entries: map[string]*Entry{}}
	for _, e := range entries {
		t.put(e)
	}
	return t
}

func (t *Table) put(e Entry) {
	p := canonicalProvider(e.Provider)
	key := p + ":" + normalizeModel(p, e.Model)
	cur := t.entries[key]
	if cur == nil {
		t.release(key)
		cur = &Entry{Provider: p, Model: normalizeModel(p, e.Model)}
		t.entries[key] = cur
		if !slices.Contains(t.order, key) {
			t.order = append(t.order, key)
		}
		t.names[key] = key
	}
	cur.Price = e.Price
	for _, a := range e.Aliases {
		an := normalizeModel(p, a)
		ak := p + ":" + an
		if ak == key || t.names[ak] == key {
			continue
		}
		if old := t.entries[ak]; old != nil {
			// The alias names an earlier entry: this one replaces it, and
			// that entry's aliases (names of the same model) come along.
			delete(t.entries, ak)
			for _, oa := range old.Aliases {
				t.names[p+":"+oa] = key
				cur.Aliases = append(cur.Aliases, oa)
			}
		} else {
			t.release(ak)
		}
		t.names[ak] = key
		cur.Aliases = append(cur.Aliases, an)
	}
}

// release takes the alias name away from the entry it names, if any.
func (t *Table) release(name string) {
	owner, ok := t.names[name]
	if !ok || owner == name {
		return
	}
	delete(t.names, name)
	if e := t.entries[owner]; e != nil {
		_, an, _ := strings.Cut(name, ":")
		e.Aliases = slices.DeleteFunc(slices.Clone(e.Aliases), func(a string) bool { return a == an })
	}
}

// Merge returns a table holding t's entries and then more's (which replace
// t's of the same name). t is not changed.
func (t *Table) Merge(more ...Entry) *Table {
	return New(append(t.Entries(), more...)...)
}

// Entries returns the table's entries, each once with its current price
// and aliases (lower case), in the order they were first added.
func (t *Table) Entries() []Entry {
	if t == nil {
		return nil
	}
	var out []Entry
	for _, k := range t.order {
		if e := t.entries[k]; e != nil {
			c := *e
			c.Aliases = slices.Clone(e.Aliases)
			out = append(out, c)
		}
	}
	return out
}

// price returns the price of a normalised "provider:model" name or alias.
func (t *Table) price(name string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	k, ok := t.names[name]
	if !ok {
		return Price{}, false
	}
	e := t.entries[k]
	if e == nil {
		return Price{}, false
	}
	return e.Price, true
}

// providerAliases canonicalise a spec's provider, as package providers does.
var providerAliases = map[string]string{"claude": "anthropic", "google": "gemini"}

func canonicalProvider(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	if c, ok := providerAliases[p]; ok {
		return c
	}
	return p
}

func normalizeModel(provider, m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	m = strings.TrimPrefix(m, "models/")
	if provider == "anthropic" {
		m = strings.ReplaceAll(m, ".", "-")
	}
	return m
}

// snapshot matches the dated or versioned suffix a provider adds to a
// model family's name: -20250929, -2025-04-14, -latest, -preview-06-17,
// -preview-05-2025, -exp-0827, -001, @20250929 (Vertex).
var snapshot = regexp.MustCompile(`(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-(?:preview|exp)(?:-\d{2}-\d{2,4}|-\d{4})?|-\d{3})$`)

// Lookup returns the price of spec ("provider:model"), following the rules
// in the package doc. The error wraps ErrUnknownModel when the table has no
// price for it (a spec without a provider is unknown too).
func (t *Table) Lookup(spec string) (Price, error) {
	prov, model, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || prov == "" || model == "" {
		return Price{}, fmt.Errorf("%w: %q (want provider:model)", ErrUnknownModel, spec)
	}
	prov = canonicalProvider(prov)
	if prov == "ollama" {
		if p, ok := t.price("ollama:" + normalizeModel(prov, model)); ok {
			return p, nil
		}
		return Price{}, nil // local: no bill
	}
	if prov == "openrouter" {
		if v, m, ok := strings.Cut(model, "/"); ok {
			if p, ok := t.price("openrouter:" + strings.ToLower(model)); ok {
				return p, nil
			}
			if v == "google" {
				v = "gemini"
			}
			return t.Lookup(v + ":" + m)
		}
	}
	if t != nil {
		name := normalizeModel(prov, model)
		for {
			if p, ok := t.price(prov + ":" + name); ok {
				return p, nil
			}
			cut := snapshot.ReplaceAllString(name, "")
			if cut == name || cut == "" {
				break
			}
			name = cut
		}
	}
	return Price{}, fmt.Errorf("%w: %s (add it with a prices file)", ErrUnknownModel, spec)
}

// Cost prices one call of spec. ok is false when the price is unknown; the
// Cost then lists spec in Unpriced and holds no dollars.
func (t *Table) Cost(spec string, u llm.Usage) (c Cost, ok bool) {
	p, err := t.Lookup(spec)
	if err != nil {
		c.AddUnpriced(spec)
		return c, false
	}
	return p.Cost(u), true
}
