package schemax

import (
	"encoding/json"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRoundTripKeepsOrder(t *testing.T) {
	in := `{"z":1,"a":{"y":[true,null,"s",{"k":2.50}],"b":{}},"m":[]}`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil || string(out) != `{"z":1,"a":{"y":[true,null,"s",{"k":2.50}],"b":{}},"m":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	o := v.(*Object)
	o.Delete("a")
	o.Set("n", "x")
	o.Set("z", 2)
	o.Delete("missing")
	if out, _ := json.Marshal(o); string(out) != `{"z":2,"m":[],"n":"x"}` {
		t.Fatalf("%s", out)
	}
	for _, bad := range []string{``, `{`, `{"a":1}x`, `[1,]`, `{1:2}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestWalkVisitsSubschemas(t *testing.T) {
	v, _ := Parse([]byte(`{"properties":{"a":{"items":{"anyOf":[{"x":1},{"$defs":{"d":{"y":1}}}]}}},"additionalProperties":{"z":1}}`))
	n := 0
	Walk(v, func(*Object) { n++ })
	if n != 7 { // root, a, items, anyOf×2, d, additionalProperties
		t.Fatalf("visited %d", n)
	}
}

func TestNotStrict(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{},"additionalProperties":false}`:                                                              "",
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`:                   "",
		`{"type":"object","properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"type":"object","properties":{"z":{"enum":["x"]}}}}}`: "",
		`{"type":"object"}`:                             "$: " + ReasonNoProps,
		`{"type":"object","properties":{}}`:             "$: " + ReasonNoProps,
		`{"type":"object","additionalProperties":true}`: "$: " + ReasonMap,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`: "$.properties.m: " + ReasonMap,
		`{"type":"object","properties":{"o":{"type":"object","properties":{}}}}`:                          "$.properties.o: " + ReasonNoProps,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object"}}}}`:                 "$.properties.l.items: " + ReasonNoProps,
		`{"type":"object","properties":{"v":{}}}`:                                                         "$.properties.v: " + ReasonNoType,
		`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{}]}}}`:                           "$.properties.u.anyOf[1]: " + ReasonNoType,
		`[]`: "$: " + ReasonNotAnObj,
	} {
		v, err := Parse([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if p, r := NotStrict(v); p != "" {
			got = p + ": " + r
		}
		if got != want {
			t.Errorf("NotStrict(%s) = %q, want %q", schema, got, want)
		}
	}
}
