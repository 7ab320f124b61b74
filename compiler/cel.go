package compiler

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"

	"github.com/obelisk-plan/obelisk/lang"
)

// baseEnv is the CEL environment every plan's environment extends: the
// standard library and the string, math, list and set extensions, with the
// cost models of celcost.go. Building
// it takes milliseconds, so it is built once; it is never modified.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.DefaultUTCTimeZone(true),
		cel.ParserRecursionLimit(celMaxDepth),
		cel.ParserExpressionSizeLimit(celMaxSize),
		ext.Strings(),
		ext.Math(),
		ext.Lists(),
		ext.Sets(),
		cel.CostModel(celCostModels()...),
	)
})

// celTypes presents plan object types to CEL as struct types, so that CEL
// checks field names and field types. Values at run time are
// map[string]any; GetFrom and IsSet read them.
type celTypes struct {
	types.Provider // CEL's own types
	byName         map[string]*Type
	names          map[*Type]string
}

func newCELTypes() *celTypes {
	return &celTypes{Provider: types.NewEmptyRegistry(), byName: map[string]*Type{}, names: map[*Type]string{}}
}

// celType returns the CEL type of a plan type. Object types with fields
// become struct types named after their declared name or after hint, the
// path where they were first seen ("state.receipt").
func (p *celTypes) celType(t *Type, hint string) *types.Type {
	if t == nil {
		return types.DynType
	}
	var ct *types.Type
	switch t.Kind {
	case KindAny:
		return types.DynType
	case KindNull:
		return types.NullType
	case KindBool:
		ct = types.BoolType
	case KindInt:
		ct = types.IntType
	case KindNumber:
		ct = types.DoubleType
	case KindString:
		ct = types.StringType
	case KindEnum:
		switch {
		case allStrings(t.Values):
			ct = types.StringType
		case allInts(t.Values):
			ct = types.IntType
		case allNumbers(t.Values):
			ct = types.DoubleType
		default:
			ct = types.DynType
		}
	case KindList:
		ct = types.NewListType(p.celType(t.Elem, hint+"[]"))
	case KindObject:
		if len(t.Fields) == 0 {
			ct = types.NewMapType(types.StringType, types.DynType)
			break
		}
		name, ok := p.names[t]
		if !ok {
			// Struct names must not read like a path of variables
			// (state.x), which CEL would resolve as the type: anonymous
			// types are named after their capitalised path, "State.x".
			name = t.Name
			if name == "" || name == "state" || name == "input" {
				name = capitalize(hint)
			}
			base := name
			for i := 2; p.byName[name] != nil; i++ {
				name = fmt.Sprintf("%s#%d", base, i)
			}
			p.names[t] = name
			p.byName[name] = t
		}
		ct = types.NewObjectType(name)
	}
	if t.Nullable {
		return types.NewNullableType(ct)
	}
	return ct
}

func capitalize(s string) string {
	if s == "" {
		return "Value"
	}
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}

// FindStructType implements types.Provider.
func (p *celTypes) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.byName[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (p *celTypes) FindStructFieldNames(name string) ([]string, bool) {
	if t, ok := p.byName[name]; ok {
		return t.FieldNames(), true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (p *celTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	t, ok := p.byName[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	f := t.Field(field)
	if f == nil {
		return nil, false
	}
	return &types.FieldType{
		Type: p.celType(f.Type, name+"."+field),
		IsSet: func(target any) bool {
			m, ok := target.(map[string]any)
			if !ok {
				return false
			}
			_, present := m[field]
			return present
		},
		GetFrom: func(target any) (any, error) {
			m, ok := target.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("no such field %q: the value is not an object", field)
			}
			v, present := m[field]
			if !present {
				return nil, fmt.Errorf("no such field %q", field)
			}
			return v, nil
		},
	}, true
}

// NewValue implements types.Provider: CEL object literals of plan types
// are not supported, maps are written instead.
func (p *celTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.byName[name]; ok {
		return types.NewErr("cannot construct %s in an expression: write a map {\"field\": value}", name)
	}
	return p.Provider.NewValue(name, fields)
}

// planType converts a CEL type back to a plan type.
func (p *celTypes) planType(t *types.Type) *Type {
	if t == nil {
		return AnyType
	}
	switch t.Kind() {
	case types.BoolKind:
		return BoolType
	case types.IntKind, types.UintKind:
		return IntType
	case types.DoubleKind:
		return NumberType
	case types.StringKind:
		return StringType
	case types.NullTypeKind:
		return NullType
	case types.ListKind:
		if ps := t.Parameters(); len(ps) == 1 {
			return ListOf(p.planType(ps[0]))
		}
		return ListOf(AnyType)
	case types.MapKind:
		return ObjectType
	case types.StructKind:
		if pt, ok := p.byName[t.TypeName()]; ok {
			return pt
		}
		return AnyType
	case types.OpaqueKind:
		if t.TypeName() == "optional_type" {
			if ps := t.Parameters(); len(ps) == 1 {
				return p.planType(ps[0]).orNull()
			}
		}
	}
	if t.IsAssignableType(types.NullType) && len(t.Parameters()) == 0 && t.Kind() != types.DynKind {
		// A nullable wrapper: the wrapped scalar or null.
		switch t.TypeName() {
		case "google.protobuf.BoolValue":
			return BoolType.orNull()
		case "google.protobuf.Int64Value", "google.protobuf.Int32Value":
			return IntType.orNull()
		case "google.protobuf.DoubleValue":
			return NumberType.orNull()
		case "google.protobuf.StringValue":
			return StringType.orNull()
		}
	}
	return AnyType
}

// celPos maps a CEL issue location (1-based line, 0-based column in code
// points, within the expression) to a position in the plan file.
func celPos(e *lang.CELExpr, line, col int) lang.Pos {
	text := e.Text
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	lineStart := off
	for c := 0; c < col && off < len(text) && text[off] != '\n'; c++ {
		_, n := utf8.DecodeRuneInString(text[off:])
		off += n
	}
	p := lang.Pos{Offset: e.Span.Start.Offset + off}
	if e.Span.Start.Offset+len(e.Text) != e.Span.End.Offset {
		// The text does not map byte for byte onto the file (a JSON
		// string with escapes): point at the whole expression.
		return e.Span.Start
	}
	if line <= 1 {
		p.Line = e.Span.Start.Line
		p.Column = e.Span.Start.Column + utf8.RuneCountInString(text[lineStart:off])
	} else {
		p.Line = e.Span.Start.Line + line - 1
		p.Column = 1 + utf8.RuneCountInString(text[lineStart:off])
	}
	return p
}

// celMessage turns a CEL checker message into one that tells a plan's
// author what to write.
func celMessage(msg string) string {
	switch {
	case strings.Contains(msg, "(double, int)") || strings.Contains(msg, "(int, double)"):
		return msg + ": CEL does not mix int and double in arithmetic; write 2.0 instead of 2, or double(x)"
	case strings.HasPrefix(msg, "undeclared reference to"):
		if name, _, ok := strings.Cut(strings.TrimPrefix(msg, "undeclared reference to '"), "'"); ok && celSpelling[name] != "" {
			return msg + ": " + celSpelling[name]
		}
		return msg + ": CEL knows no such function or variable; references are written †state.slot, †input.field or †element"
	}
	return msg
}

// celSpelling says how CEL writes what a model often writes in the words
// of another language.
var celSpelling = map[string]string{
	"True": "CEL spells it true", "TRUE": "CEL spells it true", "False": "CEL spells it false", "FALSE": "CEL spells it false",
	"None": "CEL spells it null", "nil": "CEL spells it null", "NULL": "CEL spells it null", "Null": "CEL spells it null", "undefined": "CEL spells it null",
	"len": "CEL measures a list, map or string with size(x)", "length": "CEL measures a list, map or string with size(x)",
	"str": "CEL converts to a string with string(x)", "float": "CEL converts to a number with double(x)",
}
