package compiler

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/stdlib"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"

	"github.com/obelisk-plan/obelisk/lang"
)

// baseEnv is the CEL environment every plan's environment extends: the
// standard library, with arithmetic that mixes int and double
// (mixedArithmetic), and the string, math, list and set extensions, with
// the cost models of celcost.go and the int overloads of mathForInts.
// Building it takes milliseconds, so it is built once; it is never
// modified.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.StdLib(cel.StdLibSubset(env.NewLibrarySubset().AddExcludedFunctions(arithmetic()...))),
		cel.EagerlyValidateDeclarations(true),
	}
	opts = append(opts, mixedArithmetic()...)
	opts = append(opts,
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
	base, err := cel.NewCustomEnv(append(opts, mathForInts()...)...)
	if err != nil {
		return nil, err
	}
	// As cel.NewEnv does: the base is validated once, the environments
	// that extend it are not.
	return base.Extend(cel.EagerlyValidateDeclarations(false))
})

// arithmeticOps are the arithmetic operators that mixedArithmetic
// declares again, with the word that starts their overload IDs.
var arithmeticOps = map[string]string{operators.Add: "add", operators.Subtract: "subtract", operators.Multiply: "multiply", operators.Divide: "divide"}

// arithmetic lists the arithmetic operators, to leave them out of the
// standard library.
func arithmetic() []*env.Function {
	out := make([]*env.Function, 0, len(arithmeticOps))
	for name := range arithmeticOps {
		out = append(out, &env.Function{Name: name})
	}
	return out
}

// mixedArithmetic declares + - * / as the standard library does, with the
// same overloads, and with an int or uint on one side and a double on the
// other too: the integer is taken as a double, and so is the result (1 +
// 0.5 is 1.5). A value of type any is dyn to CEL, and holds an int or a
// double as its JSON says (3 or 3.5): with these overloads, †x.v * 2.0
// is defined whichever it holds. Division of two ints stays integer
// division; % is not mixed (a double has no %).
func mixedArithmetic() []cel.EnvOption {
	mixed := [][2]*cel.Type{
		{cel.IntType, cel.DoubleType}, {cel.DoubleType, cel.IntType},
		{cel.UintType, cel.DoubleType}, {cel.DoubleType, cel.UintType},
	}
	var out []cel.EnvOption
	for _, fn := range stdlib.Functions() {
		name := fn.Name()
		prefix, ok := arithmeticOps[name]
		if !ok {
			continue
		}
		var opts []cel.FunctionOpt
		for _, o := range fn.OverloadDecls() {
			opts = append(opts, cel.Overload(o.ID(), o.ArgTypes(), o.ResultType()))
		}
		for _, m := range mixed {
			id := fmt.Sprintf("%s_%s_%s", prefix, overloadTypeName(m[0]), overloadTypeName(m[1]))
			opts = append(opts, cel.Overload(id, []*cel.Type{m[0], m[1]}, cel.DoubleType))
		}
		opts = append(opts, cel.SingletonBinaryBinding(mixedBinary(name)))
		out = append(out, cel.Function(name, opts...))
	}
	return out
}

// overloadTypeName names a type in an overload ID as the standard
// library does: int64, uint64, double.
func overloadTypeName(t *cel.Type) string {
	switch t {
	case cel.IntType:
		return "int64"
	case cel.UintType:
		return "uint64"
	}
	return "double"
}

// mixedBinary is the implementation of an arithmetic operator: the
// standard library's, after an int or uint beside a double is made a
// double.
func mixedBinary(op string) func(lhs, rhs ref.Val) ref.Val {
	apply := func(lhs, rhs ref.Val) ref.Val {
		switch op {
		case operators.Add:
			if a, ok := lhs.(traits.Adder); ok {
				return a.Add(rhs)
			}
		case operators.Subtract:
			if a, ok := lhs.(traits.Subtractor); ok {
				return a.Subtract(rhs)
			}
		case operators.Multiply:
			if a, ok := lhs.(traits.Multiplier); ok {
				return a.Multiply(rhs)
			}
		case operators.Divide:
			if a, ok := lhs.(traits.Divider); ok {
				return a.Divide(rhs)
			}
		}
		return types.MaybeNoSuchOverloadErr(lhs)
	}
	return func(lhs, rhs ref.Val) ref.Val {
		switch l := lhs.(type) {
		case types.Int:
			if r, ok := rhs.(types.Double); ok {
				return apply(types.Double(l), r)
			}
		case types.Uint:
			if r, ok := rhs.(types.Double); ok {
				return apply(types.Double(l), r)
			}
		case types.Double:
			switch r := rhs.(type) {
			case types.Int:
				return apply(l, types.Double(r))
			case types.Uint:
				return apply(l, types.Double(r))
			}
		}
		return apply(lhs, rhs)
	}
}

// mathForInts adds int and uint overloads to the math functions that
// take only a double (math.ceil, floor, round, trunc, isInf, isNaN,
// isFinite), so that they are defined on a dyn value that holds an
// integer: an integer is its own ceiling, floor, rounding and truncation,
// as a double, and is finite.
func mathForInts() []cel.EnvOption {
	toDouble := func(v ref.Val) ref.Val {
		switch n := v.(type) {
		case types.Int:
			return types.Double(n)
		case types.Uint:
			return types.Double(n)
		}
		return types.MaybeNoSuchOverloadErr(v)
	}
	finite := func(ref.Val) ref.Val { return types.True }
	notFinite := func(ref.Val) ref.Val { return types.False }
	var out []cel.EnvOption
	for _, f := range []struct {
		name   string
		result *cel.Type
		impl   func(ref.Val) ref.Val
	}{
		{"ceil", cel.DoubleType, toDouble}, {"floor", cel.DoubleType, toDouble},
		{"round", cel.DoubleType, toDouble}, {"trunc", cel.DoubleType, toDouble},
		{"isInf", cel.BoolType, notFinite}, {"isNaN", cel.BoolType, notFinite},
		{"isFinite", cel.BoolType, finite},
	} {
		out = append(out, cel.Function("math."+f.name,
			cel.Overload("math_"+f.name+"_int", []*cel.Type{cel.IntType}, f.result, cel.UnaryBinding(f.impl)),
			cel.Overload("math_"+f.name+"_uint", []*cel.Type{cel.UintType}, f.result, cel.UnaryBinding(f.impl)),
		))
	}
	return out
}

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
	case msg == "invalid int literal" || msg == "invalid uint literal":
		return msg + ": it is beyond the range of 64-bit integers; write it as a number (1.5e30) or as a string"
	case strings.Contains(msg, "'_%_'"):
		return msg + ": % takes two ints (or two uints); convert a number with int(x)"
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
