package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrBadPrices is wrapped by the *FileError of a malformed prices file.
var ErrBadPrices = errors.New("pricing: malformed prices file")

// FileError says where a prices file is wrong: its name, the line, the
// model key and field concerned (when known), and what is wrong.
type FileError struct {
	Path  string
	Line  int
	Model string // the entry's key, "" when the error is outside an entry
	Field string // "input", "output", ...; "" when not about one field
	Err   error
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Model != "" {
		fmt.Fprintf(&b, "%q: ", e.Model)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap makes errors.Is(err, ErrBadPrices) true.
func (e *FileError) Unwrap() []error { return []error{ErrBadPrices, e.Err} }

// fileEntry is one model of a prices file.
type fileEntry struct {
	Input       *float64 `json:"input"`
	CachedInput *float64 `json:"cached_input"`
	CacheWrite  *float64 `json:"cache_write"`
	Output      *float64 `json:"output"`
	Aliases     []string `json:"aliases"`
}

// ParseOverrides reads a prices file and returns the entries it holds. The
// file is one JSON object whose keys are "provider:model" specs and whose
// values are prices in US dollars per million tokens:
//
//	{
//	  "_comment": "keys starting with _ are ignored",
//	  "openai:gpt-4.1-mini": {"input": 0.40, "cached_input": 0.10, "output": 1.60},
//	  "anthropic:claude-sonnet-4-5": {"input": 3, "cached_input": 0.30, "cache_write": 3.75, "output": 15},
//	  "openai:my-local-model": {"input": 0, "output": 0, "aliases": ["my-local"]}
//	}
//
// input and output are required; cached_input and cache_write default to
// input (no cache discount, no write premium). Prices may not be negative;
// unknown fields are errors. name labels errors (usually the file's path);
// every error is a *FileError wrapping ErrBadPrices with the line.
func ParseOverrides(name string, r io.Reader) ([]Entry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &FileError{Path: name, Err: err}
	}
	line := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	fail := func(off int64, model, field string, err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if field == "" {
				field = te.Field
			}
			err = fmt.Errorf("want a %s, got a JSON %s", te.Type, te.Value)
		}
		return &FileError{Path: name, Line: line(off), Model: model, Field: field, Err: err}
	}
	// skip moves an offset past the separators before the next token.
	skip := func(off int64) int64 {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return off
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fail(dec.InputOffset(), "", "", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fail(0, "", "", errors.New("want a JSON object of \"provider:model\": {prices}"))
	}
	var out []Entry
	seen := map[string]bool{}
	for dec.More() {
		off := skip(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(off, "", "", err)
		}
		key, _ := tok.(string)
		if strings.HasPrefix(key, "_") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fail(dec.InputOffset(), key, "", err)
			}
			continue
		}
		prov, model, ok := strings.Cut(key, ":")
		if !ok || strings.TrimSpace(prov) == "" || strings.TrimSpace(model) == "" {
			return nil, fail(off, key, "", errors.New("the key must be provider:model, e.g. openai:gpt-4.1-mini"))
		}
		if seen[key] {
			return nil, fail(off, key, "", errors.New("the model is listed twice"))
		}
		seen[key] = true
		// Decode the value on its own so that unknown fields are reported
		// against this entry.
		var raw json.RawMessage
		vline := skip(dec.InputOffset())
		if err := dec.Decode(&raw); err != nil {
			return nil, fail(vline, key, "", err)
		}
		var fe fileEntry
		ed := json.NewDecoder(bytes.NewReader(raw))
		ed.DisallowUnknownFields()
		if err := ed.Decode(&fe); err != nil {
			field, at := "", vline+ed.InputOffset()
			if s, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				field = strings.Trim(s, `"`)
				err = errors.New("unknown field (want input, cached_input, cache_write, output, aliases)")
				if i := bytes.Index(raw, []byte(`"`+field+`"`)); i >= 0 {
					at = vline + int64(i)
				}
			}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				if i := bytes.Index(raw, []byte(`"`+te.Field+`"`)); i >= 0 {
					at = vline + int64(i)
				}
			}
			return nil, fail(at, key, field, err)
		}
		e := Entry{Provider: prov, Model: model, Aliases: fe.Aliases}
		for _, f := range []struct {
			name string
			v    *float64
			dst  *float64
			def  *float64
		}{
			{"input", fe.Input, &e.Price.Input, nil},
			{"output", fe.Output, &e.Price.Output, nil},
			{"cached_input", fe.CachedInput, &e.Price.CachedInput, fe.Input},
			{"cache_write", fe.CacheWrite, &e.Price.CacheWrite, fe.Input},
		} {
			v := f.v
			if v == nil {
				v = f.def
			}
			if v == nil {
				return nil, fail(vline, key, f.name, errors.New("is required (US dollars per million tokens)"))
			}
			if *v < 0 {
				return nil, fail(vline, key, f.name, fmt.Errorf("is negative (%g)", *v))
			}
			*f.dst = *v
		}
		out = append(out, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), "", "", err)
	}
	if dec.More() {
		return nil, fail(dec.InputOffset(), "", "", errors.New("text after the JSON object"))
	}
	return out, nil
}

// LoadFile returns Default() with the entries of the prices file at path
// replacing or adding models (see ParseOverrides).
func LoadFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	defer f.Close()
	entries, err := ParseOverrides(path, f)
	if err != nil {
		return nil, err
	}
	return Default().Merge(entries...), nil
}
