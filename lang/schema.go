package lang

import (
	"sort"
	"strconv"
	"strings"
)

// schemaConv converts JSON Schemas (as jvalues) to type expressions. Local
// references ("#/$defs/Name", "#/definitions/Name") are inlined; a reference
// cycle becomes any.
type schemaConv struct {
	root     *jvalue
	visiting map[string]bool
}

func newSchemaConv(root *jvalue) *schemaConv {
	return &schemaConv{root: root, visiting: map[string]bool{}}
}

// typeOf returns the type expression a schema describes. JSON Schema says
// more than a type can (minimum, pattern, format); those keywords are kept
// in the raw schema for validation, not in the type.
func (c *schemaConv) typeOf(s *jvalue) TypeExpr {
	if s == nil {
		return &NamedType{Name: "any"}
	}
	span := s.span
	if s.kind == jBool { // true accepts anything; false nothing, which we treat as any
		return &NamedType{Span: span, Name: "any"}
	}
	if s.kind != jObject {
		return &NamedType{Span: span, Name: "any"}
	}
	if ref := s.get("$ref"); ref != nil && ref.kind == jString {
		return c.ref(ref)
	}
	if cv := s.get("const"); cv != nil {
		if l := jsonLiteral(cv); l != nil {
			return &EnumType{Span: span, Values: []*Literal{l}}
		}
	}
	if ev := s.get("enum"); ev != nil && ev.kind == jArray && len(ev.arr) > 0 {
		var vals []*Literal
		hasNull := false
		for _, e := range ev.arr {
			if e.kind == jNull {
				hasNull = true
				continue
			}
			l := jsonLiteral(e)
			if l == nil {
				return &NamedType{Span: span, Name: "any"} // enum of objects: not expressible
			}
			vals = append(vals, l)
		}
		var t TypeExpr = &EnumType{Span: span, Values: vals}
		if len(vals) == 0 {
			t = &NamedType{Span: span, Name: "null"}
		}
		if hasNull && len(vals) > 0 || nullable(s) {
			t = &OptionalType{Span: span, Elem: t}
		}
		return t
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts := s.get(key); alts != nil && alts.kind == jArray {
			return c.union(s, alts.arr)
		}
	}
	if all := s.get("allOf"); all != nil && all.kind == jArray {
		return c.allOf(s, all.arr)
	}
	var t TypeExpr
	tv := s.get("type")
	switch {
	case tv == nil:
		if s.get("properties") != nil {
			t = c.object(s)
		} else if s.get("items") != nil {
			t = c.array(s)
		} else {
			t = &NamedType{Span: span, Name: "any"}
		}
	case tv.kind == jString:
		t = c.typeNamed(s, tv.str)
	case tv.kind == jArray:
		var names []string
		hasNull := false
		for _, e := range tv.arr {
			if e.kind != jString {
				continue
			}
			if e.str == "null" {
				hasNull = true
			} else {
				names = append(names, e.str)
			}
		}
		switch {
		case len(names) == 1:
			t = c.typeNamed(s, names[0])
		case len(names) == 2 && hasNumberAndInteger(names):
			t = &NamedType{Span: span, Name: "number"}
		case len(names) == 0 && hasNull:
			t = &NamedType{Span: span, Name: "null"}
		default:
			t = &NamedType{Span: span, Name: "any"}
		}
		if hasNull && len(names) > 0 {
			t = &OptionalType{Span: span, Elem: t}
		}
	default:
		t = &NamedType{Span: span, Name: "any"}
	}
	if nullable(s) {
		if _, ok := t.(*OptionalType); !ok {
			t = &OptionalType{Span: span, Elem: t}
		}
	}
	return t
}

func hasNumberAndInteger(names []string) bool {
	sort.Strings(names)
	return names[0] == "integer" && names[1] == "number"
}

// nullable reports the OpenAPI "nullable: true" keyword.
func nullable(s *jvalue) bool {
	n := s.get("nullable")
	return n != nil && n.kind == jBool && n.b
}

func (c *schemaConv) typeNamed(s *jvalue, name string) TypeExpr {
	span := s.span
	switch name {
	case "string":
		return &NamedType{Span: span, Name: "string"}
	case "integer":
		return &NamedType{Span: span, Name: "int"}
	case "number", "float", "double":
		return &NamedType{Span: span, Name: "number"}
	case "boolean":
		return &NamedType{Span: span, Name: "bool"}
	case "null":
		return &NamedType{Span: span, Name: "null"}
	case "array":
		return c.array(s)
	case "object":
		return c.object(s)
	}
	return &NamedType{Span: span, Name: "any"}
}

func (c *schemaConv) array(s *jvalue) TypeExpr {
	items := s.get("items")
	if items == nil || items.kind == jArray { // missing, or an old-style tuple
		return &ListType{Span: s.span, Elem: &NamedType{Span: s.span, Name: "any"}}
	}
	return &ListType{Span: s.span, Elem: c.typeOf(items)}
}

func (c *schemaConv) object(s *jvalue) TypeExpr {
	props := s.get("properties")
	if props == nil || props.kind != jObject || len(props.obj) == 0 {
		return &NamedType{Span: s.span, Name: "object"}
	}
	return &ObjectType{Span: s.span, Fields: c.fields(s)}
}

// fields returns the properties of an object schema as field declarations,
// in the schema's order, with descriptions as doc comments and defaults.
func (c *schemaConv) fields(s *jvalue) []*FieldDecl {
	props := s.get("properties")
	if props == nil || props.kind != jObject {
		return nil
	}
	required := map[string]bool{}
	if req := s.get("required"); req != nil && req.kind == jArray {
		for _, r := range req.arr {
			if r.kind == jString {
				required[r.str] = true
			}
		}
	}
	var out []*FieldDecl
	for _, m := range props.obj {
		f := &FieldDecl{
			Span:     m.keySpan.Join(m.val.span),
			Name:     &Ident{Span: m.keySpan, Name: m.key, Quoted: !isPlainName(m.key)},
			Optional: !required[m.key],
			Type:     c.typeOf(m.val),
		}
		if m.val.kind == jObject {
			if d := m.val.get("description"); d != nil && d.kind == jString {
				f.Leading = docComments(d.str)
			}
			if def := m.val.get("default"); def != nil && f.Optional {
				f.Default = jsonToExpr(def, false)
			}
		}
		out = append(out, f)
	}
	return out
}

func (c *schemaConv) union(s *jvalue, alts []*jvalue) TypeExpr {
	var nonNull []*jvalue
	hasNull := false
	for _, a := range alts {
		if a.kind == jObject {
			if t := a.get("type"); t != nil && t.kind == jString && t.str == "null" && len(a.obj) == 1 {
				hasNull = true
				continue
			}
		}
		nonNull = append(nonNull, a)
	}
	var t TypeExpr
	if len(nonNull) == 1 {
		t = c.typeOf(nonNull[0])
	} else {
		// An enum spread over alternatives ({const: "a"}, {const: "b"}).
		var vals []*Literal
		for _, a := range nonNull {
			if et, ok := c.typeOf(a).(*EnumType); ok {
				vals = append(vals, et.Values...)
			} else {
				vals = nil
				break
			}
		}
		if vals != nil {
			t = &EnumType{Span: s.span, Values: vals}
		} else {
			t = &NamedType{Span: s.span, Name: "any"}
		}
	}
	if hasNull {
		if _, ok := t.(*OptionalType); !ok {
			t = &OptionalType{Span: s.span, Elem: t}
		}
	}
	return t
}

// allOf merges object schemas; anything else is the first schema's type.
func (c *schemaConv) allOf(s *jvalue, parts []*jvalue) TypeExpr {
	var fields []*FieldDecl
	for _, part := range parts {
		t := c.typeOf(part)
		ot, ok := t.(*ObjectType)
		if !ok {
			if len(parts) == 1 {
				return t
			}
			return &NamedType{Span: s.span, Name: "any"}
		}
		fields = append(fields, ot.Fields...)
	}
	return &ObjectType{Span: s.span, Fields: fields}
}

func (c *schemaConv) ref(ref *jvalue) TypeExpr {
	path := ref.str
	if c.visiting[path] || c.root == nil {
		return &NamedType{Span: ref.span, Name: "any"}
	}
	var target *jvalue
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(path, prefix); ok {
			target = c.root.get(strings.Trim(prefix[1:], "/")).get(unescapePointer(name))
		}
	}
	if path == "#" {
		target = c.root
	}
	if target == nil {
		return &NamedType{Span: ref.span, Name: "any"}
	}
	c.visiting[path] = true
	defer delete(c.visiting, path)
	return c.typeOf(target)
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// jsonLiteral returns a literal for a scalar JSON value, or nil.
func jsonLiteral(v *jvalue) *Literal {
	if v.kind == jArray || v.kind == jObject {
		return nil
	}
	return literalIn(new(Literal), v)
}

// literalIn is jsonLiteral for a null, boolean, number or string, written
// to l.
func literalIn(l *Literal, v *jvalue) *Literal {
	switch v.kind {
	case jNull:
		*l = Literal{Span: v.span, Kind: LitNull}
	case jBool:
		*l = Literal{Span: v.span, Kind: LitBool, Value: v.b}
	case jString:
		*l = Literal{Span: v.span, Kind: LitString, Value: v.str}
	case jNumber:
		if n, err := strconv.ParseInt(v.str, 10, 64); err == nil {
			*l = Literal{Span: v.span, Kind: LitInt, Value: n, Raw: v.str}
		} else {
			f, _ := strconv.ParseFloat(v.str, 64)
			*l = Literal{Span: v.span, Kind: LitFloat, Value: f, Raw: v.str}
		}
	}
	return l
}

// TypeSchema returns the JSON Schema of a type expression, as a value ready
// for encoding/json. resolve looks up declared type names; it may be nil.
// Unknown names become {} (any value).
func TypeSchema(t TypeExpr, resolve func(name string) TypeExpr) map[string]any {
	return typeSchema(t, resolve, map[string]bool{})
}

func typeSchema(t TypeExpr, resolve func(string) TypeExpr, seen map[string]bool) map[string]any {
	switch t := t.(type) {
	case *NamedType:
		switch t.Name {
		case "string":
			return map[string]any{"type": "string"}
		case "int":
			return map[string]any{"type": "integer"}
		case "number":
			return map[string]any{"type": "number"}
		case "bool":
			return map[string]any{"type": "boolean"}
		case "null":
			return map[string]any{"type": "null"}
		case "object":
			return map[string]any{"type": "object"}
		case "any":
			return map[string]any{}
		}
		if resolve != nil && !seen[t.Name] {
			if rt := resolve(t.Name); rt != nil {
				seen[t.Name] = true
				defer delete(seen, t.Name)
				return typeSchema(rt, resolve, seen)
			}
		}
		return map[string]any{}
	case *ListType:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem, resolve, seen)}
	case *OptionalType:
		inner := typeSchema(t.Elem, resolve, seen)
		if ty, ok := inner["type"].(string); ok {
			out := copyMap(inner)
			out["type"] = []any{ty, "null"}
			if e, ok := out["enum"].([]any); ok {
				out["enum"] = append(append([]any(nil), e...), nil)
			}
			return out
		}
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case *EnumType:
		vals := make([]any, len(t.Values))
		allStrings := true
		for i, v := range t.Values {
			vals[i] = v.Value
			if v.Kind != LitString {
				allStrings = false
			}
		}
		out := map[string]any{"enum": vals}
		if allStrings {
			out["type"] = "string"
		}
		return out
	case *ObjectType:
		return FieldsSchema(t.Fields, resolve)
	}
	return map[string]any{}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// FieldsSchema returns the JSON Schema of an object with the given fields:
// a tool's inputSchema from its parameters, or a state schema.
func FieldsSchema(fields []*FieldDecl, resolve func(name string) TypeExpr) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range fields {
		ps := typeSchema(f.Type, resolve, map[string]bool{})
		if doc := f.Doc(); doc != "" {
			ps = copyMap(ps)
			ps["description"] = doc
		}
		if l, ok := f.Default.(*Literal); ok {
			ps = copyMap(ps)
			ps["default"] = l.Value
		}
		props[f.Name.Name] = ps
		if !f.Optional {
			required = append(required, f.Name.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}
