package toolkit

import (
	"bytes"
	"encoding/json"
)

// openAPINullable rewrites OpenAPI's "nullable": true, which JSON Schema
// does not know, into JSON Schema, wherever the plan language reads it
// (lang/schema.go): a schema with a type, or an enum, and none of $ref,
// const, anyOf, oneOf and allOf, accepts null besides its values. The
// checker takes such a schema as T?; without the rewrite the validator
// refuses the null the checker let through. A schema that does not parse
// is returned as it is, for the validator to report.
func openAPINullable(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"nullable"`)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	v = nullableSchema(v, 0)
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// schemaMaps and schemaLists are the keywords whose values are maps and
// lists of schemas; schemaKeys those whose value is a schema.
var (
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems", "items"}
	schemaKeys  = []string{"additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
)

func nullableSchema(v any, depth int) any {
	s, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return v
	}
	for _, k := range schemaMaps {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				m[name] = nullableSchema(sub, depth+1)
			}
		}
	}
	for _, k := range schemaLists {
		if l, ok := s[k].([]any); ok {
			for i, sub := range l {
				l[i] = nullableSchema(sub, depth+1)
			}
		}
	}
	for _, k := range schemaKeys {
		if sub, ok := s[k]; ok {
			s[k] = nullableSchema(sub, depth+1)
		}
	}
	if n, ok := s["nullable"].(bool); !ok || !n {
		return s
	}
	for _, k := range []string{"$ref", "const", "anyOf", "oneOf", "allOf"} {
		if _, ok := s[k]; ok {
			return s
		}
	}
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
	case []any:
		if !containsNull(t) {
			s["type"] = append(t, "null")
		}
	}
	if e, ok := s["enum"].([]any); ok && !containsNull(e) {
		s["enum"] = append(e, nil)
	}
	return s
}

func containsNull(l []any) bool {
	for _, x := range l {
		if x == nil || x == "null" {
			return true
		}
	}
	return false
}
