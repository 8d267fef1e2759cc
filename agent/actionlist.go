package agent

import (
	"fmt"
	"strings"

	"github.com/browseragent/browseragent/agent/internal/schemax"
)

// actionSignature renders an action's parameters compactly for the prompt:
//
//	name{index: int, text, clear?: bool}
//
// Parameters are listed in the order of Params; "?" marks an optional one;
// the type is left out for a string and written for the others (int,
// number, bool, [T] for a list, {…} for an object); an enum lists its values
// (a|b|c); a parameter's description follows it in parentheses.
func actionSignature(s ActionSpec) string {
	o, err := parseSchema(s.Params)
	if err != nil {
		return s.Name + "{}"
	}
	return s.Name + objectSignature(o)
}

// objectSignature is {p1, p2?: int, …} for an object schema.
func objectSignature(o *schemax.Object) string {
	pv, _ := o.Get("properties")
	props, _ := pv.(*schemax.Object)
	if props == nil {
		return "{}"
	}
	required := map[string]bool{}
	if rv, ok := o.Get("required"); ok {
		if rs, ok := rv.([]any); ok {
			for _, r := range rs {
				if n, ok := r.(string); ok {
					required[n] = true
				}
			}
		}
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range props.Keys() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		if !required[k] {
			b.WriteByte('?')
		}
		v, _ := props.Get(k)
		p, _ := v.(*schemax.Object)
		if p == nil {
			continue
		}
		if t := typeSignature(p); t != "" {
			b.WriteString(": " + t)
		}
		if d, ok := p.Get("description"); ok {
			if ds, ok := d.(string); ok && ds != "" {
				fmt.Fprintf(&b, " (%s)", ds)
			}
		}
	}
	b.WriteByte('}')
	return b.String()
}

// typeSignature is the short type of a property schema; "" for a plain
// string (the common case, left implicit).
func typeSignature(p *schemax.Object) string {
	if ev, ok := p.Get("enum"); ok {
		if es, ok := ev.([]any); ok {
			vals := make([]string, 0, len(es))
			for _, e := range es {
				if e != nil {
					vals = append(vals, fmt.Sprint(e))
				}
			}
			return strings.Join(vals, "|")
		}
	}
	if av, ok := p.Get("anyOf"); ok {
		if as, ok := av.([]any); ok {
			var alts []string
			for _, a := range as {
				if ao, ok := a.(*schemax.Object); ok {
					if t, _ := ao.Get("type"); t == "null" {
						continue
					}
					t := typeSignature(ao)
					if t == "" {
						t = "string"
					}
					alts = append(alts, t)
				}
			}
			return strings.Join(alts, "|")
		}
	}
	var types []string
	switch t, _ := p.Get("type"); t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
	}
	if len(types) == 1 && types[0] == "string" {
		return ""
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		switch t {
		case "integer":
			out = append(out, "int")
		case "boolean":
			out = append(out, "bool")
		case "array":
			item := "any"
			if iv, ok := p.Get("items"); ok {
				if io, ok := iv.(*schemax.Object); ok {
					if item = typeSignature(io); item == "" {
						item = "string"
					}
				}
			}
			out = append(out, "["+item+"]")
		case "object":
			out = append(out, objectSignature(p))
		default:
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "any"
	}
	return strings.Join(out, "|")
}

// actionLine is an action's line in the prompt: its signature, then what
// it does.
func actionLine(s ActionSpec) string {
	if s.Description == "" {
		return actionSignature(s)
	}
	return actionSignature(s) + ": " + s.Description
}

// actionList is the compact action list of the system prompt, one line per
// action, in the order given.
func actionList(specs []ActionSpec) string {
	var b strings.Builder
	for _, s := range specs {
		b.WriteString(actionLine(s))
		b.WriteByte('\n')
	}
	return b.String()
}
