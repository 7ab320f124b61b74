package toolkit

import (
	"context"
	"encoding/json"
	"testing"
)

// The cases of this file are failures the generative soundness test
// (vm/soundness_test.go) found: plans that checked clean and failed at run
// time on something the checker could have known.

// TestOpenAPINullable: a schema with OpenAPI's "nullable": true accepts
// null where the plan language reads it as T? (a type or an enum, no $ref
// or combinator), in arguments and results; the validator used to refuse
// the null the checker let through. Beside a $ref, which the language
// reads alone, null is still refused.
func TestOpenAPINullable(t *testing.T) {
	const in = `{"type": "object", "properties": {
  "o": {"type": "object", "nullable": true, "properties": {"a": {"type": "integer"}}},
  "n": {"type": ["integer"], "nullable": true, "maximum": 5},
  "e": {"enum": ["a", "b"], "nullable": true},
  "l": {"type": "array", "items": {"type": "string", "nullable": true}},
  "r": {"$ref": "#/$defs/R", "nullable": true}
}, "$defs": {"R": {"type": "string"}}}`
	const out = `{"type": "object", "properties": {"v": {"type": "string", "nullable": true}}, "required": ["v"]}`
	reg := NewRegistry()
	reg.MustRegister(Definition{Name: "f", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)},
		ToolFunc(func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"v": nil}, nil }))
	args := map[string]any{"o": nil, "n": nil, "e": nil, "l": []any{"x", nil}}
	if _, err := reg.Call(context.Background(), "f", args); err != nil {
		t.Errorf("nulls where the schema says nullable: %v", err)
	}
	if _, err := reg.Call(context.Background(), "f", map[string]any{"n": int64(6)}); err == nil {
		t.Error("the other keywords of a nullable schema are lost: 6 passed maximum 5")
	}
	if _, err := reg.Call(context.Background(), "f", map[string]any{"e": "c"}); err == nil {
		t.Error("a nullable enum accepted a value outside it")
	}
	if _, err := reg.Call(context.Background(), "f", map[string]any{"r": nil}); err == nil {
		t.Error("null beside a $ref, which the checker reads as a string, was accepted")
	}
	if got := string(reg.Definitions()[0].InputSchema); got != in {
		t.Errorf("the definition changed: %s", got)
	}
}
