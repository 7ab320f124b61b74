package fill

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStrict: a schema is rewritten into the subset of strict Structured
// Outputs (which the fake server checks as OpenAI documents it), or
// refused when that subset cannot say it.
func TestStrict(t *testing.T) {
	ok := []string{
		`{"type": "number", "minimum": 0, "default": 3}`,
		`{"type": "object", "properties": {"a": {"type": "string", "minLength": 1}, "b": {"type": ["integer", "null"]}, "c": {"type": "array", "items": {"enum": ["x", "y"]}}}, "required": ["a"]}`,
		`{"anyOf": [{"type": "object", "properties": {"candidate": {"type": "string", "const": "f"}, "arguments": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false}}, "required": ["candidate", "arguments"], "additionalProperties": false}]}`,
	}
	for _, s := range ok {
		out, good := strictSchema(decode(t, s))
		if !good {
			t.Errorf("%s: refused", s)
			continue
		}
		if err := llmtest.CheckStrictSchema(wrap(out)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{`{}`, `{"type": "object"}`, `{"type": "array"}`, `{"$ref": "#/$defs/A"}`, `{"type": "object", "properties": {"a": {}}}`, `{"allOf": [{"type": "string"}]}`} {
		if _, good := strictSchema(decode(t, s)); good {
			t.Errorf("%s: taken", s)
		}
	}
}

// TestDropNullOptionals: the nulls strict mode makes a model give for an
// optional property that does not take null are dropped; others stay.
func TestDropNullOptionals(t *testing.T) {
	s := decode(t, `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": ["string", "null"]}}, "required": ["a"]}`)
	got := dropNullOptionals(map[string]any{"a": nil, "b": nil, "c": nil}, s, 0)
	if diff := cmp.Diff(map[string]any{"a": nil, "c": nil}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	task := decode(t, `{"anyOf": [{"type": "object", "properties": {"candidate": {"const": "f"}, "arguments": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x"]}}}]}`)
	got = dropNullOptionals(map[string]any{"candidate": "f", "arguments": map[string]any{"x": nil, "y": nil}}, task, 0)
	if diff := cmp.Diff(map[string]any{"candidate": "f", "arguments": map[string]any{"x": nil}}, got); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}
}

// TestAnswer reads the answers models give: fenced, after reasoning, with
// prose around.
func TestAnswer(t *testing.T) {
	for _, text := range []string{
		`{"value": 3}`,
		"```json\n{\"value\": 3}\n```",
		"<think>it is {\"value\": 2}</think>\nThe answer is {\"value\": 3}.",
	} {
		v, err := answer(text)
		if err != nil || v != int64(3) {
			t.Errorf("%q: %v %v", text, v, err)
		}
	}
	for _, text := range []string{"three", `{"amount": 3}`, `3`} {
		if _, err := answer(text); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}
