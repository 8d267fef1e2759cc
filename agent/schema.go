package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/agent/internal/schemax"
)

// ErrSchema is wrapped by errors about a parameter type that cannot be turned
// into a JSON schema, or a value that does not fit a schema.
var ErrSchema = errors.New("agent: schema")

// SchemaOf derives the JSON schema of a Go parameter type by reflection and
// returns it as JSON text, ready for ActionSpec.Params. It is how custom
// actions (Register) get their parameter schema. The rules are small on
// purpose:
//
//   - the type must be a struct (or pointer to one); its exported fields are
//     the properties, named by their `json` tag (`json:"-"` skips a field);
//   - a field is required unless its tag has ",omitempty" or it is a pointer;
//   - `description:"..."` documents a field for the model;
//   - `enum:"a,b,c"` restricts a string field to those values;
//   - supported kinds: string, bool, the integer and float kinds, slices and
//     arrays, nested structs and pointers to these. Maps and
//     json.RawMessage are rejected (an error wrapping ErrSchema naming the
//     field): a free-form object or value cannot be constrained by a
//     provider's strict mode (OpenAI's), and one such field would turn the
//     whole reply schema non-strict. Use a struct with named fields, or a
//     string holding JSON that the action decodes itself.
//
// Properties are listed in field order, and each schema reads type,
// description, enum before its parts: the model sees, and with constrained
// decoding writes, the parameters in this order. The "required" list is
// sorted. Every object schema gets "additionalProperties": false, so a reply
// that invents a parameter is an error the model reads, and a struct
// without exported fields is the closed empty object: what SchemaOf returns
// always passes Registry.Add's strict check (the one the openai provider
// makes).
func SchemaOf(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: parameters must be a struct, got %s", ErrSchema, t)
	}
	o, err := schemaOfType(t, "", map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	return schemax.Marshal(o)
}

// freeFormAdvice is what to use instead of a free-form parameter.
const freeFormAdvice = "use a struct with named fields, or a string holding JSON"

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// schemaOfType builds the schema of t; tag is the struct field's tag, for
// its description and enum.
func schemaOfType(t reflect.Type, tag reflect.StructTag, seen map[reflect.Type]bool) (*schemax.Object, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	o := schemax.NewObject()
	doc := func() {
		if d := tag.Get("description"); d != "" {
			o.Set("description", d)
		}
		if e := tag.Get("enum"); e != "" {
			var vals []any
			for _, v := range strings.Split(e, ",") {
				vals = append(vals, strings.TrimSpace(v))
			}
			o.Set("enum", vals)
		}
	}
	if t == rawMessageType {
		return nil, fmt.Errorf("%w: json.RawMessage is any JSON value, which a strict schema cannot express: %s", ErrSchema, freeFormAdvice)
	}
	switch t.Kind() {
	case reflect.String:
		o.Set("type", "string")
		doc()
	case reflect.Bool:
		o.Set("type", "boolean")
		doc()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		o.Set("type", "integer")
		doc()
	case reflect.Float32, reflect.Float64:
		o.Set("type", "number")
		doc()
	case reflect.Slice, reflect.Array:
		items, err := schemaOfType(t.Elem(), "", seen)
		if err != nil {
			return nil, err
		}
		o.Set("type", "array")
		doc()
		o.Set("items", items)
	case reflect.Map:
		return nil, fmt.Errorf("%w: %s is a free-form object, which a strict schema cannot express: %s", ErrSchema, t, freeFormAdvice)
	case reflect.Struct:
		if seen[t] {
			return nil, fmt.Errorf("%w: recursive type %s", ErrSchema, t)
		}
		seen[t] = true
		defer delete(seen, t)
		props := schemax.NewObject()
		required := []string{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, omit := f.Name, false
			if tag, ok := f.Tag.Lookup("json"); ok {
				parts := strings.Split(tag, ",")
				if parts[0] == "-" && len(parts) == 1 {
					continue
				}
				if parts[0] != "" {
					name = parts[0]
				}
				for _, p := range parts[1:] {
					if p == "omitempty" || p == "omitzero" {
						omit = true
					}
				}
			}
			fs, err := schemaOfType(f.Type, f.Tag, seen)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			props.Set(name, fs)
			if !omit && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
		sort.Strings(required)
		o.Set("type", "object")
		doc()
		o.Set("properties", props)
		o.Set("required", required)
		o.Set("additionalProperties", false)
	default:
		return nil, fmt.Errorf("%w: unsupported kind %s", ErrSchema, t)
	}
	return o, nil
}

// ValidateJSON checks value against schema, a JSON schema given as JSON text
// (the subset this package emits and a caller's output schema commonly uses:
// type, properties, required, additionalProperties, minProperties,
// maxProperties, items, minItems, maxItems, enum, anyOf). An empty schema accepts every value; key order does not matter
// here. It returns an error naming the first path that does not fit; the
// error wraps ErrSchema.
func ValidateJSON(schema, value json.RawMessage) error {
	var s map[string]any
	if len(bytes.TrimSpace(schema)) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return fmt.Errorf("%w: the schema is not a JSON object: %v", ErrSchema, err)
		}
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrSchema, err)
	}
	return validateValue(s, v, "$")
}

func validateValue(s map[string]any, v any, path string) error {
	if s == nil {
		return nil
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		var first error
		for _, alt := range anyOf {
			as, _ := alt.(map[string]any)
			err := validateValue(as, v, path)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if reflect.DeepEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: %s: %v is not one of %v", ErrSchema, path, v, enum)
		}
	}
	typ := s["type"]
	if types, ok := typ.([]any); ok {
		for _, t := range types {
			ts, _ := t.(string)
			if typeMatches(ts, v) {
				typ = ts
				break
			}
		}
		if _, still := typ.([]any); still {
			return fmt.Errorf("%w: %s: want one of types %v, got %s", ErrSchema, path, types, jsonKind(v))
		}
	}
	ts, _ := typ.(string)
	if ts != "" && !typeMatches(ts, v) {
		return fmt.Errorf("%w: %s: want %s, got %s", ErrSchema, path, ts, jsonKind(v))
	}
	switch x := v.(type) {
	case map[string]any:
		if m, ok := s["minProperties"].(float64); ok && float64(len(x)) < m {
			return fmt.Errorf("%w: %s: fewer than %v properties", ErrSchema, path, m)
		}
		if m, ok := s["maxProperties"].(float64); ok && float64(len(x)) > m {
			return fmt.Errorf("%w: %s: more than %v properties", ErrSchema, path, m)
		}
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := x[name]; !ok {
				return fmt.Errorf("%w: %s: missing required property %q", ErrSchema, path, name)
			}
			required[name] = true
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			// An optional property sent as null is absent: strict-mode
			// providers (OpenAI) make optional properties required but
			// nullable, so a conforming reply carries nulls for them.
			if x[k] == nil && !required[k] {
				continue
			}
			if ps, ok := props[k].(map[string]any); ok {
				if err := validateValue(ps, x[k], path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%w: %s: unknown property %q", ErrSchema, path, k)
				}
			case map[string]any:
				if err := validateValue(ap, x[k], path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validateValue(items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		if m, ok := s["minItems"].(float64); ok && float64(len(x)) < m {
			return fmt.Errorf("%w: %s: fewer than %v items", ErrSchema, path, m)
		}
		if m, ok := s["maxItems"].(float64); ok && float64(len(x)) > m {
			return fmt.Errorf("%w: %s: more than %v items", ErrSchema, path, m)
		}
	}
	return nil
}

func typeMatches(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "null":
		return v == nil
	}
	return true
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// noParams is the schema of an action without parameters.
const noParams = `{"type":"object","properties":{},"additionalProperties":false}`

// parseSchema decodes a schema, which must be a JSON object, keeping its key
// order. Errors wrap ErrSchema.
func parseSchema(raw json.RawMessage) (*schemax.Object, error) {
	v, err := schemax.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrSchema, err)
	}
	o, ok := v.(*schemax.Object)
	if !ok {
		return nil, fmt.Errorf("%w: a schema must be a JSON object", ErrSchema)
	}
	return o, nil
}

// normalizeSchema returns a schema as compact JSON text with its keys in the
// order given: the order is behaviour (see ActionSpec.Params), so it never
// goes through a Go map. Errors wrap ErrSchema.
func normalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	o, err := parseSchema(raw)
	if err != nil {
		return nil, err
	}
	return schemax.Marshal(o)
}

// checkStrict returns an error wrapping ErrSchema, naming the JSON path
// ("$" is the root, as schemax.WalkPath writes it) and the reason, for the
// first part of schema the agent cannot offer:
//
//   - "$ref", "oneOf" or "allOf": ValidateJSON does not implement them and
//     the compact action signature cannot show them (use anyOf, or a
//     struct);
//   - what a strict provider mode cannot constrain (schemax.NotStrict, the
//     check the openai provider makes too): a map (additionalProperties
//     other than false), an object that lists no properties without
//     additionalProperties:false (the root too: Registry.Add closes a
//     parameterless root first), a subschema without a type.
//
// nil when the whole schema can be strict.
func checkStrict(schema *schemax.Object) error {
	var err error
	schemax.WalkPath(schema, "$", func(o *schemax.Object, p string) bool {
		for _, k := range []string{"$ref", "oneOf", "allOf"} {
			if _, ok := o.Get(k); ok {
				err = fmt.Errorf("%w: %s uses %q, which the agent does not support (its validation and the compact action list cannot follow it): use anyOf, or a struct with named fields", ErrSchema, p, k)
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if path, reason := schemax.NotStrict(schema); path != "" {
		return fmt.Errorf("%w: %s: %s, which a strict schema cannot express: %s", ErrSchema, path, reason, freeFormAdvice)
	}
	return nil
}

// closeParameterless turns a parameterless root ({"type":"object"} or
// {"type":"object","properties":{}} without additionalProperties) into the
// closed empty object noParams describes, keeping its other keys.
func closeParameterless(o *schemax.Object) {
	if _, has := o.Get("additionalProperties"); has || !schemax.IsObjectType(o) {
		return
	}
	if p, has := o.Get("properties"); has {
		if po, ok := p.(*schemax.Object); !ok || len(po.Keys()) > 0 {
			return
		}
	} else {
		o.Set("properties", schemax.NewObject())
	}
	o.Set("additionalProperties", false)
}
