package openai

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// StrictSchema adapts a JSON Schema for OpenAI's strict structured outputs:
// every object schema with properties gets additionalProperties:false and
// lists all its properties in required; a property that was optional is made
// nullable (its type gains "null", or it is wrapped in anyOf with
// {"type":"null"}), so the model writes null where it would have omitted it.
// Key order is preserved. ok is false when the schema cannot be made strict
// (an object allowing arbitrary extra properties); the caller then sends it
// non-strict. Errors wrap llm.ErrBadRequest.
func StrictSchema(raw json.RawMessage) (adapted json.RawMessage, ok bool, err error) {
	root, err := schemax.Parse(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	ok = true
	schemax.Walk(root, func(o *schemax.Object) {
		if ap, has := o.Get("additionalProperties"); has && ap != false {
			ok = false
			return
		}
		props, _ := o.Get("properties")
		po, isObj := props.(*schemax.Object)
		if !isObj {
			if isObjectType(o) {
				o.Set("additionalProperties", false)
			}
			return
		}
		o.Set("additionalProperties", false)
		var required []string
		if rq, ok := o.Get("required"); ok {
			if a, ok := rq.([]any); ok {
				for _, r := range a {
					if s, ok := r.(string); ok {
						required = append(required, s)
					}
				}
			}
		}
		all := make([]any, 0, len(po.Keys()))
		for _, k := range po.Keys() {
			all = append(all, k)
			if !slices.Contains(required, k) {
				v, _ := po.Get(k)
				po.Set(k, nullable(v))
			}
		}
		o.Set("required", all)
	})
	if !ok {
		return nil, false, nil
	}
	b, err := json.Marshal(root)
	return b, true, err
}

func isObjectType(o *schemax.Object) bool {
	t, _ := o.Get("type")
	if t == "object" {
		return true
	}
	if a, ok := t.([]any); ok {
		return slices.Contains(a, any("object"))
	}
	return false
}

func nullable(v any) any {
	o, ok := v.(*schemax.Object)
	if !ok {
		return v
	}
	if t, has := o.Get("type"); has {
		switch t := t.(type) {
		case string:
			if t != "null" {
				o.Set("type", []any{t, "null"})
				addNullEnum(o)
			}
			return o
		case []any:
			if !slices.Contains(t, any("null")) {
				o.Set("type", append(t, "null"))
				addNullEnum(o)
			}
			return o
		}
	}
	if a, has := o.Get("anyOf"); has {
		if arr, ok := a.([]any); ok {
			n := schemax.NewObject()
			n.Set("type", "null")
			o.Set("anyOf", append(arr, n))
			return o
		}
	}
	w := schemax.NewObject()
	n := schemax.NewObject()
	n.Set("type", "null")
	w.Set("anyOf", []any{o, n})
	return w
}

func addNullEnum(o *schemax.Object) {
	if e, ok := o.Get("enum"); ok {
		if arr, ok := e.([]any); ok && !slices.Contains(arr, nil) {
			o.Set("enum", append(arr, nil))
		}
	}
}
