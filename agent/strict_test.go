package agent

import (
	"testing"

	"github.com/browseragent/browseragent/agent/llm/openai"
)

// The reply schema must survive OpenAI's strict-mode adaptation (strict:
// true), otherwise the provider falls back to unconstrained output.
func TestOutputSchemaStrictCompatible(t *testing.T) {
	for _, set := range [][]ActionSpec{offeredDefault(), DefaultRegistry().offered("", MatchDomain, nil, true)} {
		_, ok, err := openai.StrictSchema(outputSchema(set, 5).JSON)
		if err != nil || !ok {
			t.Fatalf("strict adaptation: ok=%v err=%v", ok, err)
		}
	}
	spec, _, err := structuredDone([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := openai.StrictSchema(outputSchema([]ActionSpec{*spec}, 5).JSON); err != nil || !ok {
		t.Fatalf("structured done: ok=%v err=%v", ok, err)
	}
}
