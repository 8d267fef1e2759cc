package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// ExtractJSON returns the JSON value in a model reply: surrounding
// whitespace, a UTF-8 byte-order mark, a leading <think>…</think> block and
// a Markdown code fence (```json …
// ``` or ``` … ```, possibly preceded by prose) are removed. It returns a
// *ParseError (matching ErrMalformedOutput) when what remains is empty, is
// not valid JSON, or holds more than one value. The result aliases no input.
func ExtractJSON(content string) ([]byte, error) {
	s := stripFences(content)
	if s == "" {
		return nil, &ParseError{Content: clip(content), Offset: -1, Err: errors.New("no JSON in reply")}
	}
	b := []byte(s)
	if !utf8.Valid(b) {
		return nil, &ParseError{Content: clip(content), Offset: -1, Err: errors.New("reply is not valid UTF-8")}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, &ParseError{Content: clip(content), Offset: int64(len(s)), Err: errors.New("unexpected end of JSON input")}
		}
		return nil, parseErr(content, err)
	}
	if off := dec.InputOffset(); strings.TrimSpace(s[off:]) != "" {
		return nil, &ParseError{Content: clip(content), Offset: off, Err: errors.New("unexpected data after the JSON value")}
	}
	return raw, nil
}

// DecodeJSON decodes resp.Content (after ExtractJSON) into v. A nil resp, a
// reply that is not JSON, or JSON that does not fit v yields a *ParseError
// matching ErrMalformedOutput; v may then be partially filled.
func DecodeJSON(resp *Response, v any) error {
	if resp == nil {
		return &ParseError{Offset: -1, Err: errors.New("nil response")}
	}
	return DecodeJSONString(resp.Content, v)
}

// DecodeJSONString is DecodeJSON on a bare string.
func DecodeJSONString(content string, v any) error {
	b, err := ExtractJSON(content)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		if _, ok := err.(*json.InvalidUnmarshalError); ok {
			return err // programmer error, not a model failure
		}
		return parseErr(content, err)
	}
	return nil
}

func parseErr(content string, err error) *ParseError {
	pe := &ParseError{Content: clip(content), Offset: -1, Err: err}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		pe.Offset = se.Offset
	case errors.As(err, &te):
		pe.Offset = te.Offset
	}
	return pe
}

// stripFences trims the reply down to the JSON candidate.
func stripFences(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "\ufeff")
	s = strings.TrimSpace(s)
	// Reasoning models served through OpenAI-compatible servers (Ollama,
	// vLLM) may prefix the answer with their reasoning.
	if strings.HasPrefix(s, "<think>") {
		if _, after, ok := strings.Cut(s, "</think>"); ok {
			s = strings.TrimSpace(after)
		}
	}
	i := strings.Index(s, "```")
	if i < 0 {
		return s
	}
	// Only treat it as a fence when the text before it is not itself JSON
	// (a JSON string value may legitimately contain ```).
	if i > 0 && (s[0] == '{' || s[0] == '[') {
		return s
	}
	rest := s[i+3:]
	// Skip the info string ("json", "JSON", ...) up to the end of the line.
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		info := strings.TrimSpace(rest[:nl])
		if !strings.ContainsAny(info, "{[\"") {
			rest = rest[nl+1:]
		}
	} else {
		rest = strings.TrimLeft(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	}
	if j := strings.LastIndex(rest, "```"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest)
}

func clip(s string) string {
	const max = 512
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func jsonStd(b []byte, v any) error { return json.Unmarshal(b, v) }
