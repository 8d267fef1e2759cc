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
// An object with no properties is kept only when it says
// additionalProperties:false (an empty object, such as a parameterless
// action's). Key order is preserved. ok is false when the schema cannot be
// made strict (see NotStrict for where and why); errors wrap
// llm.ErrBadRequest.
func StrictSchema(raw json.RawMessage) (adapted json.RawMessage, ok bool, err error) {
	adapted, path, _, err := strictSchema(raw)
	if err != nil || path != "" {
		return nil, false, err
	}
	return adapted, true, nil
}

// NotStrict returns the JSON path ("$" is the root) of the first subschema
// strict mode cannot express, and the reason, or "" when the whole schema
// can be made strict. It is schemax.NotStrict, the check the agent applies
// when an action is registered: an object whose additionalProperties is
// true or a schema (a map), an object that lists no properties without
// saying additionalProperties:false (the root included), or a subschema
// without a type ({}: any JSON value). Errors wrap llm.ErrBadRequest.
func NotStrict(raw json.RawMessage) (path, reason string, err error) {
	_, path, reason, err = strictSchema(raw)
	return path, reason, err
}

func strictSchema(raw json.RawMessage) (adapted json.RawMessage, path, reason string, err error) {
	root, err := schemax.Parse(raw)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	// Check on the schema as written, so that the path is the caller's.
	if path, reason = schemax.NotStrict(root); path != "" {
		return nil, path, reason, nil
	}
	schemax.WalkPath(root, "$", func(o *schemax.Object, _ string) bool {
		props, _ := o.Get("properties")
		po, isObj := props.(*schemax.Object)
		if !isObj {
			return true
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
		return true
	})
	b, err := schemax.Marshal(root)
	return b, "", "", err
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
