package compiler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/obelisk-plan/obelisk/lang"
)

// Kind is the kind of a Type.
type Kind uint8

// The kinds of plan values.
const (
	KindAny Kind = iota
	KindNull
	KindBool
	KindInt
	KindNumber
	KindString
	KindList
	KindObject
	KindEnum
)

// Type is the type of a plan value: a JSON value with a shape.
type Type struct {
	Kind Kind
	// Name is the declared name of the type ("Receipt"), for messages.
	Name string
	// Nullable is set for T?: the value may also be null.
	Nullable bool
	// Elem is the element type of a list.
	Elem *Type
	// Fields are an object's fields in declaration order. Open is set for
	// a free-form object (`object`): any fields, of any type.
	Fields []*Field
	Open   bool
	// Values are an enum's constants: strings, int64s, float64s or bools.
	Values []any

	// index finds fields of large objects; copies of a type share it.
	index *fieldIndex
}

type fieldIndex struct {
	once sync.Once
	m    map[string]*Field
}

// Field is a field of an object type.
type Field struct {
	Name     string
	Type     *Type
	Optional bool
	Doc      string
}

// The built-in types.
var (
	// AnyType accepts every value; nothing is known about it.
	AnyType = &Type{Kind: KindAny}
	// NullType holds only null.
	NullType = &Type{Kind: KindNull}
	// BoolType, IntType, NumberType and StringType are the scalars.
	BoolType   = &Type{Kind: KindBool}
	IntType    = &Type{Kind: KindInt}
	NumberType = &Type{Kind: KindNumber}
	StringType = &Type{Kind: KindString}
	// ObjectType is a free-form object.
	ObjectType = &Type{Kind: KindObject, Open: true}
	// ErrorType is the value a failed step writes to the error slot of
	// `-> †state.ok || †state.err`.
	ErrorType = &Type{Kind: KindObject, Name: "error", Fields: []*Field{
		{Name: "code", Type: StringType, Doc: "what kind of failure: tool-error, timeout, invalid-output, canceled, rejected, panic"},
		{Name: "message", Type: StringType, Doc: "what went wrong"},
		{Name: "tool", Type: StringType, Doc: "the tool that failed"},
		{Name: "step", Type: StringType, Doc: "the step that failed"},
	}}
)

// builtinTypes are the type names every plan can use.
var builtinTypes = map[string]*Type{
	"any": AnyType, "null": NullType, "bool": BoolType, "int": IntType,
	"number": NumberType, "string": StringType, "object": ObjectType, "error": ErrorType,
}

// ListOf returns the type [elem].
func ListOf(elem *Type) *Type { return &Type{Kind: KindList, Elem: elem} }

// Field returns the field of an object type by name, or nil.
func (t *Type) Field(name string) *Field {
	if len(t.Fields) <= 16 || t.index == nil {
		for _, f := range t.Fields {
			if f.Name == name {
				return f
			}
		}
		return nil
	}
	t.index.once.Do(func() {
		t.index.m = make(map[string]*Field, len(t.Fields))
		for _, f := range t.Fields {
			if _, dup := t.index.m[f.Name]; !dup {
				t.index.m[f.Name] = f
			}
		}
	})
	return t.index.m[name]
}

// indexed prepares an object type for fast field lookup when it is large.
func (t *Type) indexed() *Type {
	if len(t.Fields) > 16 && t.index == nil {
		t.index = &fieldIndex{}
	}
	return t
}

// FieldNames returns the names of an object type's fields, in order.
func (t *Type) FieldNames() []string {
	names := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name
	}
	return names
}

// String formats the type as it is written in a plan; a declared type by
// its name.
func (t *Type) String() string {
	if t == nil {
		return "any"
	}
	if t.Name != "" {
		if t.Nullable && !strings.HasSuffix(t.Name, "?") {
			return t.Name + "?"
		}
		return t.Name
	}
	var s string
	switch t.Kind {
	case KindAny:
		s = "any"
	case KindNull:
		return "null"
	case KindBool:
		s = "bool"
	case KindInt:
		s = "int"
	case KindNumber:
		s = "number"
	case KindString:
		s = "string"
	case KindList:
		s = "[" + t.Elem.String() + "]"
	case KindEnum:
		parts := make([]string, len(t.Values))
		for i, v := range t.Values {
			parts[i] = valueText(v)
		}
		s = strings.Join(parts, " | ")
	case KindObject:
		if t.Open && len(t.Fields) == 0 {
			s = "object"
			break
		}
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			opt := ""
			if f.Optional {
				opt = "?"
			}
			parts[i] = fieldName(f.Name) + opt + ": " + f.Type.String()
		}
		s = "{" + strings.Join(parts, ", ") + "}"
	}
	if t.Nullable && t.Kind != KindAny {
		if t.Kind == KindEnum {
			return "(" + s + ")?"
		}
		return s + "?"
	}
	return s
}

func fieldName(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return lang.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func valueText(v any) string {
	switch v := v.(type) {
	case string:
		return lang.Quote(v)
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// nonNull returns t without its null alternative.
func (t *Type) nonNull() *Type {
	if !t.Nullable {
		return t
	}
	c := *t
	c.Nullable = false
	return &c
}

// orNull returns t with a null alternative.
// withNull returns t, or null, when null is set, else t alone.
func (t *Type) withNull(null bool) *Type {
	if null {
		return t.orNull()
	}
	if !t.Nullable {
		return t
	}
	c := *t
	c.Nullable = false
	return &c
}

func (t *Type) orNull() *Type {
	if t.Nullable || t.Kind == KindAny || t.Kind == KindNull {
		return t
	}
	c := *t
	c.Nullable = true
	return &c
}

// Assignable reports whether a value of type src may be used where dst is
// expected. When it may not, why says what does not fit. The rules are
// structural: int fits number, a string enum fits string, an object fits
// where every field the target requires is present (and required) with a
// type that fits, lists by element. any fits everywhere and accepts
// everything, since nothing is known about it before the run.
func Assignable(src, dst *Type) (ok bool, why string) {
	return assignable(src, dst, 0)
}

func assignable(src, dst *Type, depth int) (bool, string) {
	if src == nil || dst == nil || src.Kind == KindAny || dst.Kind == KindAny || depth > 32 {
		return true, ""
	}
	if src.Kind == KindNull {
		if dst.Nullable || dst.Kind == KindNull {
			return true, ""
		}
		return false, fmt.Sprintf("null is not %s", describeKind(dst))
	}
	if src.Nullable && !dst.Nullable && dst.Kind != KindNull {
		return false, fmt.Sprintf("%s may be null, and %s may not", src, dst)
	}
	switch dst.Kind {
	case KindNull:
		return false, fmt.Sprintf("%s is not null", src)
	case KindBool, KindString, KindInt:
		if src.Kind == dst.Kind {
			return true, ""
		}
		if dst.Kind == KindString && src.Kind == KindEnum && allStrings(src.Values) {
			return true, ""
		}
		if dst.Kind == KindInt && src.Kind == KindEnum && allInts(src.Values) {
			return true, ""
		}
	case KindNumber:
		if src.Kind == KindNumber || src.Kind == KindInt {
			return true, ""
		}
		if src.Kind == KindEnum && allNumbers(src.Values) {
			return true, ""
		}
	case KindEnum:
		if src.Kind == KindEnum {
			for _, v := range src.Values {
				if !containsValue(dst.Values, v) {
					return false, fmt.Sprintf("%s is not one of %s", valueText(v), dst)
				}
			}
			return true, ""
		}
		if src.Kind == KindString && allStrings(dst.Values) {
			return false, fmt.Sprintf("any string may come, and only %s is accepted", dst)
		}
	case KindList:
		if src.Kind == KindList {
			if ok, why := assignable(src.Elem, dst.Elem, depth+1); !ok {
				return false, "list elements: " + why
			}
			return true, ""
		}
	case KindObject:
		if src.Kind != KindObject {
			break
		}
		if dst.Open && len(dst.Fields) == 0 || src.Open && len(src.Fields) == 0 {
			return true, ""
		}
		for _, df := range dst.Fields {
			sf := src.Field(df.Name)
			if sf == nil {
				if df.Optional || src.Open {
					continue
				}
				return false, fmt.Sprintf("field %s is required by %s and missing", df.Name, dst)
			}
			if sf.Optional && !df.Optional {
				return false, fmt.Sprintf("field %s is optional in %s and required in %s", df.Name, src, dst)
			}
			if ok, why := assignable(sf.Type, df.Type, depth+1); !ok {
				return false, fmt.Sprintf("field %s: %s", df.Name, why)
			}
		}
		return true, ""
	}
	return false, fmt.Sprintf("%s is not %s", describeKind(src), describeKind(dst))
}

// describeKind names a type with its article, for messages: "an int",
// "a list [string]", "one of "a" | "b"", "Receipt".
func describeKind(t *Type) string {
	if t == nil {
		return "any value"
	}
	if t.Name != "" {
		return t.String()
	}
	s := t.String()
	switch t.Kind {
	case KindAny:
		return "any value"
	case KindNull:
		return "null"
	case KindInt:
		return "an " + s
	case KindList:
		return "a list " + s
	case KindObject:
		if t.Open && len(t.Fields) == 0 {
			return "an " + s
		}
		return "an object " + s
	case KindEnum:
		return "one of " + s
	}
	return "a " + s
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

func allInts(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(int64); !ok {
			return false
		}
	}
	return true
}

func allNumbers(vs []any) bool {
	for _, v := range vs {
		switch v.(type) {
		case int64, float64:
		default:
			return false
		}
	}
	return true
}

func containsValue(vs []any, v any) bool {
	for _, w := range vs {
		if equalValues(v, w) {
			return true
		}
	}
	return false
}

func equalValues(a, b any) bool {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
	}
	return a == b
}

// sameType reports whether two types describe the same values, so two
// writers of one slot agree.
func sameType(a, b *Type) bool {
	ok1, _ := Assignable(a, b)
	ok2, _ := Assignable(b, a)
	return ok1 && ok2
}

// ---------------------------------------------------------------- values

// CheckValue checks a JSON value (nil, bool, int64, float64, string, []any,
// map[string]any) against a type and returns what does not fit, or "".
// path names the value in the message ("amount", "items[2].name"). A
// value fits when Conform accepts it.
func CheckValue(v any, t *Type, path string) string {
	_, msg := Conform(v, t, path)
	return msg
}

// Conform returns a JSON value (nil, bool, int64, float64, string, []any,
// map[string]any) as the value of type t, or what does not fit. It is the
// rule for every value that enters a plan's state or its expressions (the
// input, tool results, initial values, sub-plan outputs, values restored
// from a journal): in a place typed number, a number is a float64 (an
// integer becomes one); in a place typed int it is an int64 (a float
// without a fraction becomes one when it is below 2^53, where no other
// number rounds to it; any other float does not fit, and nothing is
// rounded); an enum of
// numbers holds its constants' kind, int64 when they are all integers,
// float64 otherwise; a place typed any keeps what it is given. Lists and
// objects conform element by element and field by field, through
// nullable and optional types; the fields a type does not declare are
// kept as they are. Conform never changes v: a list or object is copied
// where something in it changes, and v is returned itself when it
// conforms already. path names the value in the message ("amount",
// "items[2].name").
func Conform(v any, t *Type, path string) (any, string) {
	out, _, err := conform(v, t, 0)
	if err == nil {
		return out, ""
	}
	for i := len(err.path) - 1; i >= 0; i-- {
		if e := err.path[i]; e.elem {
			path += "[" + strconv.Itoa(e.index) + "]"
		} else {
			path = joinPath(path, e.field)
		}
	}
	if path == "" {
		return nil, err.what
	}
	return nil, path + ": " + err.what
}

// misfit is what does not fit in a value: what, at path, innermost
// first. It is made only when something does not fit, so that conforming
// allocates nothing when nothing changes.
type misfit struct {
	what string
	path []pathElem
}

// pathElem is a field, or an element of a list.
type pathElem struct {
	field string
	index int
	elem  bool
}

func misfitf(format string, args ...any) *misfit {
	return &misfit{what: fmt.Sprintf(format, args...)}
}

// maxExactInt is 2^53: a float64 holds every integer below it exactly,
// and no other number rounds to one of them.
const maxExactInt = 1 << 53

// conform is Conform; changed reports whether the value it returns is
// not v (a number converted, a list or object copied).
func conform(v any, t *Type, depth int) (out any, changed bool, err *misfit) {
	if t == nil || t.Kind == KindAny || depth > 64 {
		return v, false, nil
	}
	if v == nil {
		if t.Nullable || t.Kind == KindNull {
			return nil, false, nil
		}
		return nil, false, misfitf("null is not %s", describeKind(t))
	}
	switch t.Kind {
	case KindNull:
		return nil, false, misfitf("%s is not null", describeValue(v))
	case KindBool:
		if _, ok := v.(bool); ok {
			return v, false, nil
		}
	case KindString:
		if _, ok := v.(string); ok {
			return v, false, nil
		}
	case KindInt:
		switch n := v.(type) {
		case int64:
			return v, false, nil
		case float64:
			i, msg := exactInt(n)
			if msg != "" {
				return nil, false, &misfit{what: msg}
			}
			return i, true, nil
		}
	case KindNumber:
		switch n := v.(type) {
		case int64:
			return float64(n), true, nil
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				return nil, false, misfitf("%v is not a number JSON can hold", n)
			}
			return v, false, nil
		}
	case KindEnum:
		if !containsValue(t.Values, v) {
			if len(t.Values) <= 12 {
				return nil, false, misfitf("%s is not one of %s", describeValue(v), t.nonNull())
			}
			return nil, false, misfitf("%s is not one of the %d allowed values", describeValue(v), len(t.Values))
		}
		// The enum's CEL type is int when its constants are all
		// integers, double when they are numbers (see celType).
		switch n := v.(type) {
		case float64:
			if allInts(t.Values) {
				return int64(n), true, nil // equal to one of the integers
			}
		case int64:
			if allNumbers(t.Values) && !allInts(t.Values) {
				return float64(n), true, nil
			}
		}
		return v, false, nil
	case KindList:
		list, ok := v.([]any)
		if !ok {
			break
		}
		var out []any // a copy, once an element changes
		for i, e := range list {
			cv, ch, err := conform(e, t.Elem, depth+1)
			if err != nil {
				err.path = append(err.path, pathElem{index: i, elem: true})
				return nil, false, err
			}
			if ch && out == nil {
				out = slices.Clone(list)
			}
			if out != nil {
				out[i] = cv
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case KindObject:
		obj, ok := v.(map[string]any)
		if !ok {
			break
		}
		var out map[string]any // a copy, once a field changes
		for _, f := range t.Fields {
			fv, present := obj[f.Name]
			if !present {
				if !f.Optional {
					return nil, false, misfitf("missing required field %s", f.Name)
				}
				continue
			}
			cv, ch, err := conform(fv, f.Type, depth+1)
			if err != nil {
				err.path = append(err.path, pathElem{field: f.Name})
				return nil, false, err
			}
			if ch && out == nil {
				out = maps.Clone(obj)
			}
			if out != nil {
				out[f.Name] = cv
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	}
	return nil, false, misfitf("%s is not %s", describeValue(v), describeKind(t.nonNull()))
}

// exactInt returns a float64 as the int64 it holds exactly, or why it
// does not fit an int: it has a fraction, it is beyond the range of an
// int64, or it is beyond 2^53, where a float64 may have been rounded from
// the integer it was decoded from.
func exactInt(n float64) (int64, string) {
	switch {
	case n != math.Trunc(n) || math.IsNaN(n):
		return 0, fmt.Sprintf("%s is not an integer", valueText(n))
	case n < -(1<<63) || n >= 1<<63:
		return 0, fmt.Sprintf("%s is beyond the range of an int (64-bit): declare it number, or send it as a string", valueText(n))
	case math.Abs(n) >= maxExactInt:
		return 0, fmt.Sprintf("%s is a float beyond 2^53, which may have been rounded: send the integer without a fraction or exponent, or declare it number", valueText(n))
	}
	return int64(n), ""
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "the string " + lang.Quote(v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int64, float64:
		return "the number " + valueText(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

// TypeOfValue returns the most precise type of a JSON value: an int64 is
// an int, a float64 a number (1.0 is a number, as it is written).
func TypeOfValue(v any) *Type {
	switch v := v.(type) {
	case nil:
		return NullType
	case bool:
		return BoolType
	case int64:
		return IntType
	case float64:
		// A float64 is a double in CEL, whatever its fraction: 2.0 is a
		// number, as the JSON form's input (50.0) is.
		return NumberType
	case string:
		return StringType
	case []any:
		var elem *Type
		for _, e := range v {
			t := TypeOfValue(e)
			switch {
			case elem == nil:
				elem = t
			case sameType(elem, t):
			case elem.Kind == KindInt && t.Kind == KindNumber || elem.Kind == KindNumber && t.Kind == KindInt:
				elem = NumberType
			default:
				elem = AnyType
			}
		}
		if elem == nil {
			elem = AnyType
		}
		return ListOf(elem)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t := &Type{Kind: KindObject}
		for _, k := range keys {
			t.Fields = append(t.Fields, &Field{Name: k, Type: TypeOfValue(v[k])})
		}
		return t
	}
	return AnyType
}

// Expr returns the type as a type expression of the plan language. A
// declared type is written by its name.
func (t *Type) Expr() lang.TypeExpr {
	if t == nil {
		return &lang.NamedType{Name: "any"}
	}
	var e lang.TypeExpr
	switch {
	case t.Name != "" && t.Name != "state" && t.Name != "input":
		e = &lang.NamedType{Name: t.Name}
		if t.Nullable {
			return &lang.OptionalType{Elem: e}
		}
		return e
	case t.Kind == KindAny:
		return &lang.NamedType{Name: "any"}
	case t.Kind == KindNull:
		return &lang.NamedType{Name: "null"}
	case t.Kind == KindBool:
		e = &lang.NamedType{Name: "bool"}
	case t.Kind == KindInt:
		e = &lang.NamedType{Name: "int"}
	case t.Kind == KindNumber:
		e = &lang.NamedType{Name: "number"}
	case t.Kind == KindString:
		e = &lang.NamedType{Name: "string"}
	case t.Kind == KindList:
		e = &lang.ListType{Elem: t.Elem.Expr()}
	case t.Kind == KindEnum:
		et := &lang.EnumType{}
		for _, v := range t.Values {
			if l, ok := lang.ValueExpr(v).(*lang.Literal); ok {
				et.Values = append(et.Values, l)
			}
		}
		e = et
	case t.Kind == KindObject && len(t.Fields) == 0:
		e = &lang.NamedType{Name: "object"}
	default:
		ot := &lang.ObjectType{}
		for _, f := range t.Fields {
			ot.Fields = append(ot.Fields, &lang.FieldDecl{
				Name:     &lang.Ident{Name: f.Name, Quoted: !lang.IsPlainName(f.Name)},
				Optional: f.Optional,
				Type:     f.Type.Expr(),
			})
		}
		e = ot
	}
	if t.Nullable {
		return &lang.OptionalType{Elem: e}
	}
	return e
}

// ---------------------------------------------------------------- JSON Schema

// Schema returns the JSON Schema of a type, ready for encoding/json.
func (t *Type) Schema() map[string]any {
	return typeSchema(t, 0)
}

func typeSchema(t *Type, depth int) map[string]any {
	if t == nil || depth > 32 {
		return map[string]any{}
	}
	var out map[string]any
	switch t.Kind {
	case KindAny:
		return map[string]any{}
	case KindNull:
		return map[string]any{"type": "null"}
	case KindBool:
		out = map[string]any{"type": "boolean"}
	case KindInt:
		out = map[string]any{"type": "integer"}
	case KindNumber:
		out = map[string]any{"type": "number"}
	case KindString:
		out = map[string]any{"type": "string"}
	case KindList:
		out = map[string]any{"type": "array", "items": typeSchema(t.Elem, depth+1)}
	case KindEnum:
		vals := slices.Clone(t.Values)
		if t.Nullable {
			vals = append(vals, nil)
		}
		out = map[string]any{"enum": vals}
		if allStrings(t.Values) {
			out["type"] = "string"
			if t.Nullable {
				out["type"] = []any{"string", "null"}
			}
		}
		return out
	case KindObject:
		out = map[string]any{"type": "object"}
		if len(t.Fields) > 0 {
			props := map[string]any{}
			var req []any
			for _, f := range t.Fields {
				fs := typeSchema(f.Type, depth+1)
				if f.Doc != "" {
					fs["description"] = f.Doc
				}
				props[f.Name] = fs
				if !f.Optional {
					req = append(req, f.Name)
				}
			}
			out["properties"] = props
			if len(req) > 0 {
				out["required"] = req
			}
		}
	}
	if t.Nullable {
		out["type"] = []any{out["type"], "null"}
	}
	return out
}
