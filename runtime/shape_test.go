package runtime

import (
	"encoding/json"
	"testing"
)

// TestShapeAgreesWithValidator: for every schema and value here, when the
// shape accepts the value the JSON Schema validator accepts it too, and the
// shape accepts the common valid cases (so that it saves work).
func TestShapeAgreesWithValidator(t *testing.T) {
	schemas := []string{
		`{}`, `true`,
		`{"type": "integer"}`, `{"type": "number"}`, `{"type": "string", "description": "a name"}`,
		`{"type": "boolean"}`, `{"type": "null"}`, `{"type": "array", "items": {"type": "string"}}`,
		`{"type": "object", "properties": {"name": {"type": "string"}, "times": {"type": "integer"}}, "required": ["name"]}`,
		`{"type": "object", "properties": {"a": {}}, "additionalProperties": false}`,
		`{"type": "object", "additionalProperties": {"type": "integer"}}`,
		`{"properties": {"a": {"type": "integer"}}}`,
		`{"type": "object", "properties": {"ms": {"type": "integer"}, "in0": {}, "in1": {}}}`,
		`{"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}`,
		// Not simple: always the validator's.
		`{"type": "string", "minLength": 2}`, `{"enum": [1, 2]}`, `{"type": ["string", "null"]}`, `{"$ref": "#/$defs/x", "$defs": {"x": {}}}`,
	}
	values := []any{
		nil, true, int64(3), 2.5, 3.0, "ab", "", []any{}, []any{"a", "b"}, []any{"a", int64(1)},
		map[string]any{}, map[string]any{"name": "Ada"}, map[string]any{"name": "Ada", "times": int64(2)},
		map[string]any{"name": int64(1)}, map[string]any{"times": int64(2)}, map[string]any{"a": int64(1)},
		map[string]any{"a": int64(1), "b": "x"}, map[string]any{"ms": int64(0), "in0": int64(4), "in1": "x"},
		[]any{map[string]any{"x": 1.5}, map[string]any{"x": int64(2)}}, []any{map[string]any{"y": 1.5}},
	}
	accepted := 0
	for _, raw := range schemas {
		compiled, err := compileSchema("test", json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		sh := shapeOf(json.RawMessage(raw))
		for _, v := range values {
			if sh == nil || !sh.accepts(v) {
				continue
			}
			accepted++
			if err := compiled.Validate(v); err != nil {
				t.Errorf("schema %s: the shape accepts %#v, the validator says %v", raw, v, err)
			}
		}
	}
	if accepted < 40 {
		t.Errorf("the shapes accepted only %d values: they save little", accepted)
	}
	for _, raw := range schemas[len(schemas)-4:] {
		if shapeOf(json.RawMessage(raw)) != nil {
			t.Errorf("%s is read as a simple shape", raw)
		}
	}
}

// FuzzShape: whatever JSON value and schema, a value the shape accepts is
// one the validator accepts.
func FuzzShape(f *testing.F) {
	f.Add(`{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}`, `{"a": 1}`)
	f.Add(`{"type": "array", "items": {"type": "number"}}`, `[1, 2.5]`)
	f.Add(`{"additionalProperties": false}`, `{"x": null}`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		sh := shapeOf(json.RawMessage(schema))
		if sh == nil {
			return
		}
		v, err := DecodeJSON([]byte(value))
		if err != nil || !sh.accepts(v) {
			return
		}
		compiled, err := compileSchema("fuzz", json.RawMessage(schema))
		if err != nil {
			return
		}
		if err := compiled.Validate(v); err != nil {
			t.Fatalf("schema %s: the shape accepts %s, the validator says %v", schema, value, err)
		}
	})
}
