package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
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
// (a|b|c, [a|b] on a list), a const is its value, and a value that is not
// a plain word is quoted as JSON ("a b"|""); bounds follow the type
// (int 1..9, number >=0, int <9), then a string's format and pattern
// (string date-time /^[a-z]+$/); a parameter's description follows it in
// parentheses.
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
	list := false
	if t, _ := p.Get("type"); t == "array" {
		list = true
	}
	if cv, ok := p.Get("const"); ok {
		return literal(cv)
	}
	if ev, ok := p.Get("enum"); ok {
		if es, ok := ev.([]any); ok {
			vals := make([]string, 0, len(es))
			for _, e := range es {
				if e != nil {
					vals = append(vals, literal(e))
				}
			}
			if list {
				return "[" + strings.Join(vals, "|") + "]"
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
	out := make([]string, 0, len(types))
	for _, t := range types {
		switch t {
		case "integer":
			out = append(out, "int"+bounds(p))
		case "number":
			out = append(out, "number"+bounds(p))
		case "boolean":
			out = append(out, "bool")
		case "string":
			out = append(out, "string"+stringForm(p))
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
	if len(out) == 1 && out[0] == "string" {
		return ""
	}
	if len(out) == 0 {
		return "any"
	}
	return strings.Join(out, "|")
}

// plainWord matches an enum or const value written as is in a signature.
var plainWord = regexp.MustCompile(`^[\pL\pN_.+-]+$`)

// literal writes an enum or const value: a plain word (letters, digits,
// "_", ".", "+", "-") as is, anything else (a space, "|", the empty
// string, a number, a bool) as JSON.
func literal(v any) string {
	if s, ok := v.(string); ok && plainWord.MatchString(s) {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// bounds is a number's range: " 1..9", " >=0", " <=9", " >0", " <9"
// (minimum, maximum, exclusiveMinimum, exclusiveMaximum); "" without.
func bounds(p *schemax.Object) string {
	num := func(k string) (string, bool) {
		v, ok := p.Get(k)
		if !ok {
			return "", false
		}
		switch v.(type) {
		case float64, int, int64, json.Number:
			return fmt.Sprint(v), true
		}
		return "", false
	}
	lo, hasLo := num("minimum")
	hi, hasHi := num("maximum")
	xlo, hasXlo := num("exclusiveMinimum")
	xhi, hasXhi := num("exclusiveMaximum")
	var parts []string
	switch {
	case hasLo && hasHi:
		return " " + lo + ".." + hi
	case hasLo:
		parts = append(parts, ">="+lo)
	case hasXlo:
		parts = append(parts, ">"+xlo)
	}
	switch {
	case hasHi:
		parts = append(parts, "<="+hi)
	case hasXhi:
		parts = append(parts, "<"+xhi)
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

// stringForm is a string's format and pattern: " date-time /^a+$/"; "".
func stringForm(p *schemax.Object) string {
	var b strings.Builder
	if f, ok := p.Get("format"); ok {
		if fs, ok := f.(string); ok && fs != "" {
			b.WriteString(" " + fs)
		}
	}
	if pt, ok := p.Get("pattern"); ok {
		if ps, ok := pt.(string); ok && ps != "" {
			b.WriteString(" /" + ps + "/")
		}
	}
	return b.String()
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
