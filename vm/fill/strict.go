package fill

import (
	"slices"
)

// The schemas of tools say what they take in full JSON Schema; constrained
// output takes a subset (OpenAI's strict Structured Outputs: every object
// closed and listing all its properties as required, a few keywords).
// strictSchema rewrites a schema into that subset when it can: an optional
// property becomes required and may be null (and a null the model gives
// for it is dropped again, dropNullOptionals), and keywords the subset
// lacks are left out, since the run validates the answer against the
// whole schema anyway. A schema it cannot say (any value, an object open
// to any property, a reference) is asked for without constraint.

// strictKeep are the keywords kept as they are.
var strictKeep = map[string]bool{
	"description": true, "title": true, "enum": true, "const": true,
	"pattern": true, "format": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
}

// strictMaxNesting is how deeply strict mode nests objects.
const strictMaxNesting = 10

// strictSchema returns a schema in the subset constrained output takes, and
// false when it cannot be said there.
func strictSchema(s map[string]any) (map[string]any, bool) {
	return strict(s, 0)
}

func strict(s map[string]any, depth int) (map[string]any, bool) {
	if len(s) == 0 || depth > strictMaxNesting {
		return nil, false // any value
	}
	if _, ok := s["$ref"]; ok {
		return nil, false
	}
	if _, ok := s["allOf"]; ok {
		return nil, false
	}
	out := map[string]any{}
	for k, v := range s {
		if strictKeep[k] {
			out[k] = v
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := s[key].([]any)
		if !ok {
			continue
		}
		var list []any
		for _, a := range alts {
			as, ok := a.(map[string]any)
			if !ok {
				return nil, false
			}
			st, ok := strict(as, depth)
			if !ok {
				return nil, false
			}
			list = append(list, st)
		}
		out["anyOf"] = list
	}
	t, typed := s["type"]
	if !typed {
		if _, ok := out["anyOf"]; ok {
			return out, true
		}
		if _, ok := out["enum"]; ok {
			return out, true
		}
		if _, ok := out["const"]; ok {
			return out, true
		}
		return nil, false
	}
	out["type"] = t
	if hasType(t, "array") {
		items, ok := s["items"].(map[string]any)
		if !ok {
			return nil, false
		}
		it, ok := strict(items, depth)
		if !ok {
			return nil, false
		}
		out["items"] = it
	}
	if hasType(t, "object") {
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			return nil, false // open to any property
		}
		required := requiredOf(s)
		sp := make(map[string]any, len(props))
		names := make([]any, 0, len(props))
		for name, p := range props {
			ps, ok := p.(map[string]any)
			if !ok {
				return nil, false
			}
			st, ok := strict(ps, depth+1)
			if !ok {
				return nil, false
			}
			if !slices.Contains(required, name) && !allowsNull(st) {
				st = map[string]any{"anyOf": []any{st, map[string]any{"type": "null"}}}
			}
			sp[name] = st
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b any) int {
			if a.(string) < b.(string) {
				return -1
			}
			return 1
		})
		out["properties"] = sp
		out["required"] = names
		out["additionalProperties"] = false
	}
	return out, true
}

func hasType(t any, name string) bool {
	switch t := t.(type) {
	case string:
		return t == name
	case []any:
		return slices.Contains(t, any(name))
	}
	return false
}

func requiredOf(s map[string]any) []string {
	var out []string
	switch r := s["required"].(type) {
	case []any:
		for _, x := range r {
			if n, ok := x.(string); ok {
				out = append(out, n)
			}
		}
	case []string:
		out = r
	}
	return out
}

// allowsNull reports whether a schema takes null.
func allowsNull(s map[string]any) bool {
	if hasType(s["type"], "null") {
		return true
	}
	if e, ok := s["enum"].([]any); ok && slices.Contains(e, any(nil)) {
		return true
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if as, ok := a.(map[string]any); ok && allowsNull(as) {
				return true
			}
		}
	}
	return false
}

// dropNullOptionals removes, from an answer to a schema made strict, the
// nulls given for optional properties that do not take null: strict mode
// made the model give them.
func dropNullOptionals(v any, s map[string]any, depth int) any {
	if s == nil || depth > 64 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		required := requiredOf(s)
		for k, e := range x {
			ps, _ := props[k].(map[string]any)
			if e == nil && ps != nil && !slices.Contains(required, k) && !allowsNull(ps) {
				delete(x, k)
				continue
			}
			x[k] = dropNullOptionals(e, ps, depth+1)
		}
		if alt := matchingAlternative(x, s); alt != nil {
			return dropNullOptionals(x, alt, depth+1)
		}
	case []any:
		items, _ := s["items"].(map[string]any)
		for i, e := range x {
			x[i] = dropNullOptionals(e, items, depth+1)
		}
	}
	return v
}

// matchingAlternative returns the alternative of an anyOf or oneOf whose
// constant properties the object has: a task's answer names its
// candidate.
func matchingAlternative(obj map[string]any, s map[string]any) map[string]any {
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, _ := s[key].([]any)
		for _, a := range alts {
			as, _ := a.(map[string]any)
			props, _ := as["properties"].(map[string]any)
			matched := false
			for name, p := range props {
				ps, _ := p.(map[string]any)
				if c, ok := ps["const"]; ok {
					if obj[name] != c {
						matched = false
						break
					}
					matched = true
				}
			}
			if matched {
				return as
			}
		}
	}
	return nil
}
