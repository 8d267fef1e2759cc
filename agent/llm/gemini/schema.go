package gemini

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// openAPIKeys are the Schema fields Gemini's responseSchema accepts.
var openAPIKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems",
	"minItems", "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
	"pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// Placeholder is the property given to an object schema that lists none:
// Gemini rejects an OBJECT schema with empty properties ("properties:
// should be non-empty for OBJECT type"), which is the natural shape of a
// parameterless action (go_back) and of a free-form object. The
// placeholder is optional, so the model may (and is told to) leave it out;
// a reply that writes it anyway has it removed before the caller sees it.
const Placeholder = "_placeholder"

// LegalSchema returns the schema with every object schema that lists no
// properties given the optional Placeholder property (other keywords, such
// as additionalProperties, are kept), and whether anything changed. An
// unchanged schema is returned as given, byte for byte. It is what
// responseJsonSchema is sent as; OpenAPISchema applies it too.
func LegalSchema(raw json.RawMessage) (json.RawMessage, bool, error) {
	root, err := schemax.Parse(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	changed := false
	schemax.Walk(root, func(o *schemax.Object) {
		changed = placehold(o) || changed
	})
	if !changed {
		return raw, false, nil
	}
	b, err := json.Marshal(root)
	return b, true, err
}

// placehold gives o the placeholder property when o is an object schema
// without properties, dropping "required" entries that name none of them.
func placehold(o *schemax.Object) bool {
	p, hasProps := o.Get("properties")
	if po, ok := p.(*schemax.Object); ok && len(po.Keys()) > 0 {
		return false
	}
	if !hasProps && !isObjectType(o) {
		return false
	}
	ph := schemax.NewObject()
	ph.Set("type", "boolean")
	ph.Set("description", "Unused; always leave out.")
	props := schemax.NewObject()
	props.Set(Placeholder, ph)
	o.Set("properties", props)
	o.Delete("required")
	return true
}

func isObjectType(o *schemax.Object) bool {
	t, _ := o.Get("type")
	if t == "object" {
		return true
	}
	a, ok := t.([]any)
	return ok && slices.Contains(a, any("object"))
}

// stripPlaceholder removes the Placeholder key from every object of a JSON
// reply, keeping key order. It returns content unchanged when the key is
// absent or the content is not JSON.
func stripPlaceholder(content string) string {
	if !strings.Contains(content, `"`+Placeholder+`"`) {
		return content
	}
	raw, err := llm.ExtractJSON(content)
	if err != nil {
		return content
	}
	v, err := schemax.Parse(raw)
	if err != nil {
		return content
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case *schemax.Object:
			v.Delete(Placeholder)
			for _, k := range v.Keys() {
				x, _ := v.Get(k)
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	b, err := json.Marshal(v)
	if err != nil {
		return content
	}
	return string(b)
}

// OpenAPISchema converts a JSON Schema to Gemini's responseSchema dialect
// (an OpenAPI 3.0 subset): a type list with "null" becomes the other type
// plus nullable:true, unsupported keywords ($schema, additionalProperties,
// $defs, const, ...) are dropped, an object schema left without properties
// (a parameterless action, a free-form object, a map) gets the optional
// Placeholder property, and propertyOrdering records the properties' order
// (the API otherwise orders them alphabetically). The dialect cannot
// express a free-form object: such a field can only be answered with an
// empty object; use responseJsonSchema (the default) for schemas that need
// one. $ref is not resolved: a schema using it is rejected with
// llm.ErrBadRequest.
func OpenAPISchema(raw json.RawMessage) (json.RawMessage, error) {
	root, err := schemax.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	var bad error
	schemax.Walk(root, func(o *schemax.Object) {
		placehold(o)
		if _, ok := o.Get("$ref"); ok && bad == nil {
			bad = fmt.Errorf("%w: schema uses $ref, which responseSchema cannot express; use responseJsonSchema", llm.ErrBadRequest)
		}
		tv, _ := o.Get("type")
		if t, ok := tv.([]any); ok {
			var rest []any
			for _, x := range t {
				if x == "null" {
					o.Set("nullable", true)
				} else {
					rest = append(rest, x)
				}
			}
			if len(rest) == 1 {
				o.Set("type", rest[0])
			} else {
				o.Set("type", rest)
			}
		}
		if p, ok := o.Get("properties"); ok {
			if po, ok := p.(*schemax.Object); ok {
				order := make([]any, 0, len(po.Keys()))
				for _, k := range po.Keys() {
					order = append(order, k)
				}
				o.Set("propertyOrdering", order)
			}
		}
		for _, k := range slices.Clone(o.Keys()) {
			if !slices.Contains(openAPIKeys, k) {
				o.Delete(k)
			}
		}
	})
	if bad != nil {
		return nil, bad
	}
	return json.Marshal(root)
}
