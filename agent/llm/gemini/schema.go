package gemini

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/browseragent/browseragent/agent/internal/schemax"
	"github.com/browseragent/browseragent/agent/llm"
)

// openAPIKeys are the Schema fields Gemini's responseSchema accepts.
var openAPIKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems",
	"minItems", "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
	"pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// Placeholder is the property given to a closed empty object schema (one
// that lists no properties and allows no others, such as a parameterless
// action's {"type":"object","properties":{},"additionalProperties":false}):
// Gemini rejects an OBJECT schema with empty properties ("properties:
// should be non-empty for OBJECT type"). The placeholder is optional, so
// the model may (and is told to) leave it out; a reply that writes it
// anyway has it removed, where the schema put it, before the caller sees
// it. An object that allows other keys (a free-form object or a map) never
// gets one.
const Placeholder = "_placeholder"

// legal is a schema adapted for the API: its tree, as sent, and the object
// schemas that were given the Placeholder.
type legal struct {
	root   any
	placed map[*schemax.Object]bool
}

// LegalSchema returns s.JSON with every closed empty object schema given
// the optional Placeholder property, and whether anything changed. Closed
// empty means: an object schema (type "object", or with "properties")
// listing no properties whose additionalProperties is false, or absent in
// a schema that is not Loose (a Loose schema's absent additionalProperties
// allows any keys, as JSON Schema says). Objects that allow other keys are
// left as they are: JSON Schema expresses them. An unchanged schema is
// returned as given, byte for byte. It is what responseJsonSchema is sent
// as. Errors wrap llm.ErrBadRequest.
func LegalSchema(s llm.Schema) (json.RawMessage, bool, error) {
	l, changed, err := legalize(s)
	if err != nil || !changed {
		return s.JSON, false, err
	}
	b, err := schemax.Marshal(l.root)
	return b, true, err
}

func legalize(s llm.Schema) (*legal, bool, error) {
	root, err := schemax.Parse(s.JSON)
	if err != nil {
		return nil, false, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	l := &legal{root: root, placed: map[*schemax.Object]bool{}}
	schemax.Walk(root, func(o *schemax.Object) {
		if closedEmpty(o, s.Loose) {
			placehold(o)
			l.placed[o] = true
		}
	})
	return l, len(l.placed) > 0, nil
}

// isObjectSchema reports whether o describes an object: its type is or
// includes "object", or it lists properties.
func isObjectSchema(o *schemax.Object) bool {
	if _, ok := o.Get("properties"); ok {
		return true
	}
	t, _ := o.Get("type")
	if t == "object" {
		return true
	}
	a, ok := t.([]any)
	return ok && slices.Contains(a, any("object"))
}

// listsNone reports whether o's properties are absent or empty.
func listsNone(o *schemax.Object) bool {
	p, _ := o.Get("properties")
	po, ok := p.(*schemax.Object)
	return !ok || len(po.Keys()) == 0
}

// closedEmpty reports whether o is an object schema that lists no
// properties and allows no other keys (see LegalSchema).
func closedEmpty(o *schemax.Object, loose bool) bool {
	if !isObjectSchema(o) || !listsNone(o) {
		return false
	}
	ap, has := o.Get("additionalProperties")
	return ap == false || (!has && !loose)
}

// freeForm returns why o is an object schema that allows keys it does not
// list (additionalProperties true or a schema, or absent on an object of a
// Loose schema that lists none), or "".
func freeForm(o *schemax.Object, loose bool) string {
	if !isObjectSchema(o) {
		return ""
	}
	ap, has := o.Get("additionalProperties")
	switch {
	case has && ap != false:
		return "additionalProperties allows keys that are not listed (a map or free-form object)"
	case !has && loose && listsNone(o):
		return "an object that lists no properties accepts any keys (a free-form object)"
	}
	return ""
}

// placehold gives o the placeholder property, dropping "required" (which
// can name none of the properties it did not have).
func placehold(o *schemax.Object) {
	ph := schemax.NewObject()
	ph.Set("type", "boolean")
	ph.Set("description", "Unused; always leave out.")
	props := schemax.NewObject()
	props.Set(Placeholder, ph)
	o.Set("properties", props)
	o.Delete("required")
}

// stripPlaceholder removes the Placeholder key from the objects of a JSON
// reply that the schema gave one (following properties, items,
// additionalProperties, anyOf/oneOf/allOf and local $refs), keeping key
// order; the same key inside free-form data stays. It returns content
// unchanged when the key is absent, the content is not JSON or nothing was
// removed.
func stripPlaceholder(content string, l *legal) string {
	if l == nil || len(l.placed) == 0 || !strings.Contains(content, `"`+Placeholder+`"`) {
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
	if !l.strip(v, l.root, 0) {
		return content
	}
	b, err := schemax.Marshal(v)
	if err != nil {
		return content
	}
	return string(b)
}

// strip removes the placeholder from v where schema s put one and reports
// whether it removed any. depth bounds $ref cycles.
func (l *legal) strip(v, s any, depth int) bool {
	so, ok := s.(*schemax.Object)
	if !ok || depth > 64 {
		return false
	}
	removed := false
	if ref, ok := so.Get("$ref"); ok {
		removed = l.strip(v, l.resolve(ref), depth+1) || removed
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := so.Get(k)
		a, _ := alts.([]any)
		for _, alt := range a {
			removed = l.strip(v, alt, depth+1) || removed
		}
	}
	switch v := v.(type) {
	case *schemax.Object:
		if l.placed[so] {
			if _, ok := v.Get(Placeholder); ok {
				v.Delete(Placeholder)
				removed = true
			}
		}
		props, _ := so.Get("properties")
		po, _ := props.(*schemax.Object)
		ap, _ := so.Get("additionalProperties")
		for _, k := range v.Keys() {
			x, _ := v.Get(k)
			var ks any = ap
			if po != nil {
				if ps, ok := po.Get(k); ok {
					ks = ps
				}
			}
			removed = l.strip(x, ks, depth+1) || removed
		}
	case []any:
		items, _ := so.Get("items")
		prefix, _ := so.Get("prefixItems")
		pa, _ := prefix.([]any)
		for i, x := range v {
			is := items
			if i < len(pa) {
				is = pa[i]
			}
			removed = l.strip(x, is, depth+1) || removed
		}
	}
	return removed
}

// resolve returns the subschema a local $ref ("#/$defs/X",
// "#/definitions/X", "#/properties/a/items") names, or nil.
func (l *legal) resolve(ref any) any {
	r, _ := ref.(string)
	if r != "#" && !strings.HasPrefix(r, "#/") {
		return nil
	}
	cur := l.root
	for _, tok := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(r, "#"), "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *schemax.Object:
			cur, _ = c.Get(tok)
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// OpenAPISchema converts s.JSON to Gemini's responseSchema dialect (an
// OpenAPI 3.0 subset): a type list with "null" becomes the other type
// plus nullable:true, unsupported keywords ($schema, additionalProperties,
// $defs, const, ...) are dropped, a closed empty object schema (a
// parameterless action's) gets the optional Placeholder property (see
// LegalSchema), and propertyOrdering records the properties' order (the
// API otherwise orders them alphabetically).
//
// The dialect cannot express an object that allows keys it does not list
// (additionalProperties true or a schema, such as the agent's compact
// action item, or an object of a Loose schema that lists no properties):
// such a schema is refused with a *llm.SchemaError (llm.ErrBadRequest)
// naming the path, rather than narrowed to an empty object; send it as
// responseJsonSchema (the default, Config.OpenAPISchema false), or, for
// the agent, use its full action schema (agent.ActionSchemaFull). $ref is
// not resolved: a schema using it is a *llm.SchemaError too.
func OpenAPISchema(s llm.Schema) (json.RawMessage, error) {
	l, err := openAPI(s)
	if err != nil {
		return nil, err
	}
	return schemax.Marshal(l.root)
}

func openAPI(s llm.Schema) (*legal, error) {
	root, err := schemax.Parse(s.JSON)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %v", llm.ErrBadRequest, err)
	}
	var bad *llm.SchemaError
	schemax.WalkPath(root, "$", func(o *schemax.Object, p string) bool {
		if _, ok := o.Get("$ref"); ok {
			bad = &llm.SchemaError{Provider: "gemini", Schema: s.ToolName(), Path: p,
				Reason: "$ref, which responseSchema cannot express; send responseJsonSchema (the default: Config.OpenAPISchema false)"}
			return false
		}
		if why := freeForm(o, s.Loose); why != "" {
			bad = &llm.SchemaError{Provider: "gemini", Schema: s.ToolName(), Path: p,
				Reason: why + ", which responseSchema cannot express; send responseJsonSchema (the default: Config.OpenAPISchema false), " +
					"or list the properties (the agent: ActionSchemaFull)"}
			return false
		}
		return true
	})
	if bad != nil {
		return nil, bad
	}
	l := &legal{root: root, placed: map[*schemax.Object]bool{}}
	schemax.Walk(root, func(o *schemax.Object) {
		if closedEmpty(o, s.Loose) {
			placehold(o)
			l.placed[o] = true
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
	return l, nil
}
