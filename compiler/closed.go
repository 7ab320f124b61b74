package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A tool's JSON Schema may close an object to the properties it lists
// (additionalProperties: false), which no plan type says: an object type
// accepts objects with more fields. An argument whose type has, or may
// have, a field that the parameter's schema closes out fails validation
// at run time, so the checker refuses it. A constant is validated whole
// against the schema; this is for the values the plan computes.

// parsedSchema returns the tool's input schema, decoded once, or nil.
func (t *Tool) parsedSchema() map[string]any {
	t.decodedOnce.Do(func() {
		if len(t.InputSchema) > 0 {
			_ = json.Unmarshal(t.InputSchema, &t.decoded)
		}
	})
	return t.decoded
}

// closedArgument says what is wrong with an argument of type t for a
// parameter whose schema closes out a field the argument may have, or "".
func closedArgument(tool *Tool, param *Param, t *Type) string {
	if t == nil || !(t.Kind == KindObject && len(t.Fields) > 0 || t.Kind == KindList) || !tool.mayClose() {
		return "" // no field to close out, or a schema that closes none
	}
	root := tool.parsedSchema()
	if root == nil {
		return ""
	}
	props, _ := root["properties"].(map[string]any)
	e, names := closedExtra(t, props[param.Name], root, 0)
	if e == "" {
		return ""
	}
	i := strings.LastIndex(e, ".")
	takes, first := "none", "…"
	if len(names) > 0 {
		takes, first = strings.Join(names, ", "), names[0]
	}
	return fmt.Sprintf("argument %s of %s: at %s%s the tool's schema takes only the properties it lists (%s; additionalProperties is false), and the value may have %s: pass an object of the fields it takes, as in {%s: …}",
		param.Name, tool.Name, param.Name, e[:i], takes, e[i+1:], first)
}

// closedExtra returns the path, from a value of type typ, of a field it
// may have that the schema s closes out, such as ".b" or ".items[].c", and
// the properties the schema lists there; "" when there is none, or when
// the schema is beyond this reading (it then stays for the run to
// validate). root is the schema document, for $ref.
func closedExtra(typ *Type, s any, root map[string]any, depth int) (string, []string) {
	m := resolveSchema(s, root, depth)
	if m == nil || typ == nil || depth > 32 {
		return "", nil
	}
	switch {
	case typ.Kind == KindObject && len(typ.Fields) > 0:
		props, _ := m["properties"].(map[string]any)
		closed := m["additionalProperties"] == false
		for _, f := range typ.Fields {
			ps, listed := props[f.Name]
			if !listed {
				if closed {
					names := make([]string, 0, len(props))
					for n := range props {
						names = append(names, n)
					}
					slices.Sort(names)
					return "." + f.Name, names
				}
				continue
			}
			if e, names := closedExtra(f.Type, ps, root, depth+1); e != "" {
				return "." + f.Name + e, names
			}
		}
	case typ.Kind == KindList:
		if e, names := closedExtra(typ.Elem, m["items"], root, depth+1); e != "" {
			return "[]" + e, names
		}
	}
	return "", nil
}

// resolveSchema follows a local $ref and takes the one alternative of an
// anyOf or oneOf besides null, or of an allOf; it returns nil for
// anything else than an object schema it can read.
func resolveSchema(s any, root map[string]any, depth int) map[string]any {
	for range 8 {
		m, ok := s.(map[string]any)
		if !ok || depth > 32 {
			return nil
		}
		if ref, ok := m["$ref"].(string); ok {
			s = nil
			for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
				if name, ok := strings.CutPrefix(ref, prefix); ok {
					if defs, ok := root[strings.Trim(prefix[1:], "/")].(map[string]any); ok {
						s = defs[name]
					}
				}
			}
			continue
		}
		alts, _ := m["anyOf"].([]any)
		if alts == nil {
			alts, _ = m["oneOf"].([]any)
		}
		if all, ok := m["allOf"].([]any); ok && alts == nil {
			if len(all) != 1 {
				return nil
			}
			alts = all
		}
		if alts == nil {
			return m
		}
		var one any
		for _, a := range alts {
			if am, ok := a.(map[string]any); ok && am["type"] == "null" && len(am) == 1 {
				continue
			}
			if one != nil {
				return nil
			}
			one = a
		}
		s = one
	}
	return nil
}

// mayClose reports whether the tool's input schema may say
// additionalProperties: one that does not, even escaped, closes no
// object, and need not be decoded to know it. It is read once per tool.
func (t *Tool) mayClose() bool {
	t.mayCloseOnce.Do(func() {
		t.closes = bytes.Contains(t.InputSchema, []byte(`"additionalProperties"`)) || bytes.IndexByte(t.InputSchema, '\\') >= 0
	})
	return t.closes
}
