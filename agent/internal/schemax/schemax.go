// Package schemax is an order-preserving JSON tree for JSON Schemas:
// package agent builds the action and reply schemas with it, and the
// providers adapt them with it. Key order matters: with constrained decoding
// the model generates properties in schema order (e.g. "thinking" before
// "action"), so a round trip through map[string]any would change behaviour.
package schemax

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Object is a JSON object with its key order.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an empty Object.
func NewObject() *Object { return &Object{vals: map[string]any{}} }

// Keys returns the keys in order. The slice must not be modified.
func (o *Object) Keys() []string { return o.keys }

// Get returns the value of k.
func (o *Object) Get(k string) (any, bool) { v, ok := o.vals[k]; return v, ok }

// Set sets k, appending it if new.
func (o *Object) Set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Delete removes k.
func (o *Object) Delete(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, kk := range o.keys {
		if kk == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// MarshalJSON writes the object in key order, without HTML escaping (see
// Marshal).
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Marshal is json.Marshal without HTML escaping: a schema is read by a
// model, which should see "<secret>" where the text says so, not
// "\u003csecret\u003e". (json.Marshal would escape an Object's output
// again; use this for the outermost call too.)
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Parse decodes raw into *Object, []any, string, json.Number, bool or nil.
func Parse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("schemax: trailing data after JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := NewObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("schemax: object key is %T", kt)
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.Set(k, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("schemax: unexpected %v", t)
	default:
		return tok, nil
	}
}

// Walk calls f on every schema object reachable through the JSON Schema
// keywords that hold subschemas, parents before children.
func Walk(v any, f func(*Object)) {
	o, ok := v.(*Object)
	if !ok {
		return
	}
	f(o)
	for _, k := range []string{"properties", "$defs", "definitions", "patternProperties"} {
		if m, ok := o.vals[k].(*Object); ok {
			for _, kk := range m.keys {
				Walk(m.vals[kk], f)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains"} {
		Walk(o.vals[k], f)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if a, ok := o.vals[k].([]any); ok {
			for _, e := range a {
				Walk(e, f)
			}
		}
	}
}

// WalkPath is Walk with the JSON path of each subschema ("$" is the root,
// then ".properties.name", ".items", ".anyOf[0]", ...): f runs on a node,
// then on its subschemas as f left them, until f returns false. It
// reports whether the walk ran to the end.
func WalkPath(v any, p string, f func(o *Object, path string) bool) bool {
	o, ok := v.(*Object)
	if !ok {
		return true
	}
	if !f(o, p) {
		return false
	}
	for _, k := range []string{"properties", "$defs", "definitions", "patternProperties"} {
		if m, ok := o.vals[k].(*Object); ok {
			for _, kk := range m.keys {
				if !WalkPath(m.vals[kk], p+"."+k+"."+kk, f) {
					return false
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains"} {
		if !WalkPath(o.vals[k], p+"."+k, f) {
			return false
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if a, ok := o.vals[k].([]any); ok {
			for i, e := range a {
				if !WalkPath(e, p+"."+k+"["+strconv.Itoa(i)+"]", f) {
					return false
				}
			}
		}
	}
	return true
}

// Reasons NotStrict gives.
const (
	ReasonMap      = "additionalProperties allows keys that are not listed (a map or free-form object)"
	ReasonNoProps  = "an object that lists no properties accepts any keys (a free-form object)"
	ReasonNoType   = "a schema without a type accepts any JSON value"
	ReasonNotAnObj = "a schema must be a JSON object"
)

// NotStrict is the one check of what a strict provider mode (OpenAI's
// strict structured outputs) can constrain, used by the agent at
// registration and by the openai provider before sending. It returns the
// JSON path ("$" is the root, as WalkPath writes it) of the first
// subschema that cannot be made strict, and the reason, or "" when the
// whole schema can be:
//
//   - an object whose additionalProperties is true or a schema (a map);
//   - an object schema (type "object", or with "properties") that lists
//     no properties and does not say additionalProperties:false, at the
//     root too ({"type":"object"} and {"type":"object","properties":{}}
//     are free-form; the closed empty object, a parameterless action's,
//     is strict);
//   - a subschema without "type", "enum", "const", "anyOf" or "$ref" ({},
//     a description alone: any JSON value).
//
// An object that lists properties without saying additionalProperties is
// strict: the provider closes it. v is a schema as Parse returns it.
func NotStrict(v any) (path, reason string) {
	if _, ok := v.(*Object); !ok {
		return "$", ReasonNotAnObj
	}
	WalkPath(v, "$", func(o *Object, p string) bool {
		ap, hasAP := o.Get("additionalProperties")
		if hasAP && ap != false {
			path, reason = p, ReasonMap
			return false
		}
		props, hasProps := o.Get("properties")
		po, _ := props.(*Object)
		if (po == nil || len(po.Keys()) == 0) && (IsObjectType(o) || hasProps) && !hasAP {
			path, reason = p, ReasonNoProps
			return false
		}
		typed := false
		for _, k := range []string{"type", "enum", "const", "anyOf", "$ref"} {
			if _, ok := o.Get(k); ok {
				typed = true
			}
		}
		if !typed {
			path, reason = p, ReasonNoType
			return false
		}
		return true
	})
	return path, reason
}

// IsObjectType reports whether o's "type" is, or includes, "object".
func IsObjectType(o *Object) bool {
	switch t := o.vals["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	}
	return false
}
