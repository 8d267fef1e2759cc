package gemini

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// openAPIKeys are the Schema fields Gemini's responseSchema accepts.
var openAPIKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems",
	"minItems", "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
	"pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// OpenAPISchema converts a JSON Schema to Gemini's responseSchema dialect
// (an OpenAPI 3.0 subset): a type list with "null" becomes the other type
// plus nullable:true, unsupported keywords ($schema, additionalProperties,
// $defs, const, ...) are dropped, and propertyOrdering records the
// properties' order (the API otherwise orders them alphabetically). $ref is
// not resolved: a schema using it is rejected with llm.ErrBadRequest.
func OpenAPISchema(raw json.RawMessage) (json.RawMessage, error) {
	root, err := schemax.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	var bad error
	schemax.Walk(root, func(o *schemax.Object) {
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
