package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/internal/jsonschema"
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

// A simple schema's validator is compiled only when a value needs it; a
// schema that is not valid is still refused when the tool is registered.
func TestRegistryCompilesSimpleSchemasLazily(t *testing.T) {
	r := NewRegistry()
	def := Definition{Name: "t", InputSchema: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "description": "a count"}}, "required": ["n"]}`)}
	if err := r.Register(def, ToolFunc(func(ctx context.Context, args map[string]any) (any, error) { return nil, nil })); err != nil {
		t.Fatal(err)
	}
	e, _ := r.lookup("t")
	if e.input.unit.compiled != nil {
		t.Error("the validator of a simple schema was compiled at registration")
	}
	if _, err := r.Call(context.Background(), "t", map[string]any{"n": int64(1)}); err != nil {
		t.Fatal(err)
	}
	if e.input.unit.compiled != nil {
		t.Error("a value the shape accepts compiled the validator")
	}
	_, err := r.Call(context.Background(), "t", map[string]any{"n": "one"})
	if err == nil || !strings.Contains(err.Error(), "at /n: got string, want integer") {
		t.Errorf("bad argument: %v", err)
	}
	for _, bad := range []string{`{"type": "object", "description": 5}`, `{"type": "objekt"}`, `{"type": "object", "required": "n"}`} {
		if err := r.Register(Definition{Name: "bad" + bad, InputSchema: json.RawMessage(bad)}, ToolFunc(func(ctx context.Context, args map[string]any) (any, error) { return nil, nil })); err == nil {
			t.Errorf("registered a tool with the invalid schema %s", bad)
		}
	}
}

// compileSchema compiles a schema document now.
func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + strings.ReplaceAll(name, " ", "_") + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// shapeOf reads a schema as a shape, or returns nil when it is not JSON
// or uses anything else than a shape reads.
func shapeOf(raw json.RawMessage) *shape {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return shapeOfValue(v, 0)
}
