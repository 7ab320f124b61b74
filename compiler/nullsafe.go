package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/obelisk-plan/obelisk/lang"
)

// CEL lets a value that may be null (a T? of the plan) go where a value
// is needed: `†state.a.count + 1` checks when count is an int?, and fails
// at run time when it is null. nullSafety closes that gap: in a checked
// expression, a value that may be null may be compared (== and != null),
// chosen between (c ? x : y), put in a list or map, or given to dyn() and
// type(); anywhere else it must first be checked. A check narrows: in
// `x != null ? A : B`, and in `x != null && A`, x is not null in A, as it
// is in B of `x == null ? A : B` and of `x == null || B`.
//
// The types of the plan say what may be null: CEL's own types forget it
// for lists and maps.

// parseChecked parses an expression to be checked: parseCEL, and then
// each comparison with the null literal, x == null and x != null, compares
// with dyn(null) instead. CEL's checker forgets that a list or map field
// may be null and refuses the comparison; dyn(null) is the same null at
// run time, and CEL compares anything with a dyn.
func parseChecked(env *cel.Env, text string) (*cel.Ast, *cel.Issues) {
	a, iss := parseCEL(env, text)
	if iss.Err() != nil {
		return a, iss
	}
	native := a.NativeRep()
	next := ast.MaxID(native)
	fac := ast.NewExprFactory()
	ast.PostOrderVisit(native.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		c := e.AsCall()
		if fn := c.FunctionName(); fn != "_==_" && fn != "_!=_" || len(c.Args()) != 2 {
			return
		}
		for _, x := range c.Args() {
			if x.Kind() == ast.LiteralKind && x.AsLiteral() == types.NullValue {
				x.SetKindCase(fac.NewCall(0, "dyn", fac.NewLiteral(next, types.NullValue)))
				next++
			}
		}
	}))
	return a, iss
}

// isNullLiteral reports the literal null, and dyn(null).
func isNullLiteral(e ast.Expr) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		return e.AsLiteral() == types.NullValue
	case ast.CallKind:
		c := e.AsCall()
		return c.FunctionName() == "dyn" && len(c.Args()) == 1 && !c.IsMemberFunction() && isNullLiteral(c.Args()[0])
	}
	return false
}

// nullCheck is the state of one expression's check.
type nullCheck struct {
	pc   *planChecker
	e    *lang.CELExpr
	a    *ast.AST
	vars map[string]*Type // the plan types of the variables in scope
	elem string           // the element of the for each, or ""
	bad  bool
}

// nullSafety reports every value of e that may be null where CEL needs a
// value. It returns whether it reported none, whether e's value itself
// may be null, and whether it is a list some of whose elements may be.
func (pc *planChecker) nullSafety(e *lang.CELExpr, checked *cel.Ast, sc *scope) (ok, nullable, elems bool) {
	a := checked.NativeRep()
	state := pc.stateType
	if pc.inOutput {
		state = pc.outputState
	}
	n := &nullCheck{pc: pc, e: e, a: a, vars: map[string]*Type{"state": state, "input": pc.p.Input}}
	if sc != nil && sc.elem != "" {
		n.vars[sc.elem], n.elem = sc.elemType, sc.elem
	}
	n.walk(a.Expr(), nil)
	return !n.bad, n.nullable(a.Expr(), nil), n.elemNullable(a.Expr(), nil)
}

// facts holds the expressions known not to be null, by key.
type facts map[string]bool

func (f facts) with(g facts) facts {
	if len(g) == 0 {
		return f
	}
	out := make(facts, len(f)+len(g))
	for k := range f {
		out[k] = true
	}
	for k := range g {
		out[k] = true
	}
	return out
}

// without drops the facts about a variable that a comprehension shadows.
func (f facts) without(names ...string) facts {
	var out facts
	for k := range f {
		root := k
		if i := strings.IndexAny(k, ".["); i >= 0 {
			root = k[:i]
		}
		drop := false
		for _, n := range names {
			drop = drop || n != "" && root == n
		}
		if drop {
			if out == nil {
				out = make(facts, len(f))
				for k2 := range f {
					out[k2] = true
				}
			}
			delete(out, k)
		}
	}
	if out == nil {
		return f
	}
	return out
}

// key names a path (a variable, its fields and constant indexes) so that
// a check of it can be recognised where it is read; "" for any other
// expression.
func key(e ast.Expr) string {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent()
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return ""
		}
		if k := key(s.Operand()); k != "" {
			return k + "." + s.FieldName()
		}
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != "_[_]" || len(c.Args()) != 2 || c.Args()[1].Kind() != ast.LiteralKind {
			return ""
		}
		k := key(c.Args()[0])
		if k == "" {
			return ""
		}
		switch v := c.Args()[1].AsLiteral().(type) {
		case types.Int:
			return k + "[" + strconv.FormatInt(int64(v), 10) + "]"
		case types.String:
			return k + "[" + strconv.Quote(string(v)) + "]"
		}
	}
	return ""
}

// ptype returns the plan type of a path, or nil when e is not one or
// its type is not known.
func (n *nullCheck) ptype(e ast.Expr) *Type {
	switch e.Kind() {
	case ast.IdentKind:
		return n.vars[e.AsIdent()]
	case ast.SelectKind:
		s := e.AsSelect()
		t := n.ptype(s.Operand())
		switch {
		case t == nil || s.IsTestOnly():
			return nil
		case t.Kind == KindAny || t.Kind == KindObject && len(t.Fields) == 0:
			return AnyType
		case t.Kind == KindObject:
			if f := t.Field(s.FieldName()); f != nil {
				return f.Type
			}
		}
	case ast.ListKind:
		// A list of paths of one type, as in [†state.a, †state.b].map(…).
		var elem *Type
		for _, x := range e.AsList().Elements() {
			t := n.ptype(x)
			if t == nil || elem != nil && t != elem {
				return nil
			}
			elem = t
		}
		if elem != nil {
			return ListOf(elem)
		}
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != "_[_]" || len(c.Args()) != 2 {
			return nil
		}
		switch t := n.ptype(c.Args()[0]); {
		case t == nil:
			return nil
		case t.Kind == KindList:
			return t.Elem
		case t.Kind == KindAny || t.Kind == KindObject && len(t.Fields) == 0:
			return AnyType
		}
	}
	return nil
}

// nullable reports whether e may be null where facts hold.
func (n *nullCheck) nullable(e ast.Expr, f facts) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		return isNullLiteral(e)
	case ast.IdentKind, ast.SelectKind:
		if e.Kind() == ast.SelectKind && e.AsSelect().IsTestOnly() {
			return false
		}
		if t := n.ptype(e); t != nil {
			return mayBeNull(t) && !f[key(e)]
		}
	case ast.CallKind:
		c := e.AsCall()
		switch c.FunctionName() {
		case "_?_:_":
			if len(c.Args()) == 3 {
				ok, notOK := n.guards(c.Args()[0], true), n.guards(c.Args()[0], false)
				return n.nullable(c.Args()[1], f.with(ok)) || n.nullable(c.Args()[2], f.with(notOK))
			}
		case "_[_]":
			if t := n.ptype(e); t != nil {
				return mayBeNull(t) && !f[key(e)]
			}
		}
	case ast.ListKind, ast.MapKind, ast.ComprehensionKind:
		return false
	}
	if k := key(e); k != "" && f[k] {
		return false
	}
	return celNullable(n.a.GetType(e.ID()))
}

// mayBeNull reports whether a value of plan type t may be null.
func mayBeNull(t *Type) bool {
	return t.Nullable || t.Kind == KindNull
}

// celNullable reports whether a CEL type holds null besides its values:
// null itself, a wrapper, a nullable object. dyn is not checked.
func celNullable(t *types.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.ErrorKind, types.TypeParamKind, types.OpaqueKind:
		return false
	case types.NullTypeKind:
		return true
	}
	return t.IsAssignableType(types.NullType)
}

// guards returns the paths a condition proves not null when it is true
// (when is true) or false.
func (n *nullCheck) guards(c ast.Expr, when bool) facts {
	if c.Kind() == ast.SelectKind && c.AsSelect().IsTestOnly() {
		s := c.AsSelect()
		k := key(s.Operand())
		switch {
		case k == "":
		case when && k == "state" && n.pc.inOutput:
			return n.pc.conditionFacts(s.FieldName(), true)
		case when:
			// has(x.a): the field is present.
			return facts{presentKey(k + "." + s.FieldName()): true}
		case k == "state" && n.pc.inOutput:
			// !has(†state.a): what it proves (see writtenConditions).
			return n.pc.conditionFacts(s.FieldName(), false)
		}
	}
	if c.Kind() != ast.CallKind {
		return nil
	}
	call := c.AsCall()
	args := call.Args()
	switch fn := call.FunctionName(); {
	case (fn == "_!=_" && when || fn == "_==_" && !when) && len(args) == 2:
		if k := nullCompared(args[0], args[1]); k != "" {
			return facts{k: true}
		}
	case fn == "_&&_" && when, fn == "_||_" && !when:
		if len(args) == 2 {
			return n.guards(args[0], when).with(n.guards(args[1], when))
		}
	case fn == "!_" && len(args) == 1:
		return n.guards(args[0], !when)
	}
	return nil
}

// filtered returns what the condition of a filter proves of every
// element of the list it makes, for a comprehension over that list: in
// xs.filter(v, has(v.a)).map(w, w.a), w.a is present.
func (n *nullCheck) filtered(c ast.ComprehensionExpr) facts {
	r := c.IterRange()
	if r.Kind() != ast.ComprehensionKind || c.IterVar2() != "" {
		return nil
	}
	fc := r.AsComprehension()
	step := fc.LoopStep()
	if step.Kind() != ast.CallKind || step.AsCall().FunctionName() != "_?_:_" || len(step.AsCall().Args()) != 3 {
		return nil
	}
	args := step.AsCall().Args()
	add := args[1]
	if add.Kind() != ast.CallKind || add.AsCall().FunctionName() != "_+_" || len(add.AsCall().Args()) != 2 {
		return nil
	}
	l := add.AsCall().Args()[1]
	if l.Kind() != ast.ListKind || len(l.AsList().Elements()) != 1 {
		return nil
	}
	if e := l.AsList().Elements()[0]; e.Kind() != ast.IdentKind || e.AsIdent() != fc.IterVar() {
		return nil // a map, not a filter
	}
	var out facts
	for k := range n.guards(args[0], true) {
		rest, ok := strings.CutPrefix(k, fc.IterVar())
		if !ok || rest != "" && rest[0] != '.' && rest[0] != '[' && rest[0] != '#' {
			continue
		}
		if out == nil {
			out = facts{}
		}
		out[c.IterVar()+rest] = true
	}
	return out
}

// presentKey is the key of the fact that the optional field of a
// has(path) is present.
func presentKey(k string) string { return k + "#present" }

// present reports a select of an optional field that no has() proves
// present: CEL fails on a field that is absent.
func (n *nullCheck) present(e ast.Expr, f facts) {
	s := e.AsSelect()
	if s.IsTestOnly() {
		return
	}
	t := n.ptype(s.Operand())
	if t == nil {
		// Not a path, as the element of a list a map or a filter made:
		// the plan type of its CEL type.
		if ct := n.a.GetType(s.Operand().ID()); ct != nil && ct.Kind() == types.StructKind {
			t = n.pc.types.byName[ct.TypeName()]
		}
	}
	if t == nil || t.Kind != KindObject {
		return
	}
	fld := t.Field(s.FieldName())
	if fld == nil || !fld.Optional {
		return
	}
	if t == n.pc.p.Input {
		if _, def := n.pc.p.InputDefaults[fld.Name]; def {
			return
		}
	}
	if k := key(e); k != "" && f[presentKey(k)] {
		return
	}
	if t == n.pc.outputState && n.pc.provedWritten(fld.Name, f) {
		return
	}
	n.bad = true
	span := n.at(e)
	at, parent := n.shown(e), n.shown(s.Operand())
	if t == n.pc.outputState {
		n.pc.unwrittenRead(span, at, fld.Name)
		return
	}
	if at == "" || parent == "" {
		n.pc.c.errorf(lang.TypeMismatch, span, "in expression: the field %s is optional and may be absent: check it first with has(), or read it as .?%s.orValue(…)", fld.Name, fld.Name)
		return
	}
	n.pc.c.errorf(lang.TypeMismatch, span, "in expression: %s may be absent (the field %s is optional): check it first, as in has(%s) ? … : …, or read it as %s.?%s.orValue(…)", at, fld.Name, at, parent, fld.Name)
}

// nullCompared returns the key of the path a comparison with null
// compares, or "".
func nullCompared(x, y ast.Expr) string {
	switch {
	case isNullLiteral(y):
		return key(x)
	case isNullLiteral(x):
		return key(y)
	}
	return ""
}

// nullTolerant are the functions that take a null anywhere: equality,
// dyn and type, and the optional values' constructors and default.
var nullTolerant = map[string]bool{
	"_==_": true, "_!=_": true, "dyn": true, "type": true,
	"optional.of": true, "optional.ofNonZeroValue": true, "orValue": true,
	"@not_strictly_false": true,
}

// elemStrict are the functions that need every element of a list they
// are given to be a value: they order, join, flatten or format them.
var elemStrict = map[string]bool{
	"sort": true, "join": true, "flatten": true, "format": true,
	"math.@max": true, "math.@min": true, // math.greatest and math.least
}

// elemNullable reports whether e is a list some of whose elements may be
// null: a list literal with such an element, a path of a type [T?], the
// result of a map or filter whose element may be null, or a list whose
// CEL type says so.
func (n *nullCheck) elemNullable(e ast.Expr, f facts) bool {
	switch e.Kind() {
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			if n.nullable(x, f) {
				return true
			}
		}
		return false
	case ast.ComprehensionKind:
		// map and filter add one element at each step: [x], taken when
		// the condition around it holds.
		c := e.AsComprehension()
		inner := f.without(c.IterVar(), c.IterVar2(), c.AccuVar())
		step := c.LoopStep()
		if step.Kind() == ast.CallKind && step.AsCall().FunctionName() == "_?_:_" && len(step.AsCall().Args()) == 3 {
			inner = inner.with(n.guards(step.AsCall().Args()[0], true))
			step = step.AsCall().Args()[1]
		}
		if step.Kind() == ast.CallKind && step.AsCall().FunctionName() == "_+_" && len(step.AsCall().Args()) == 2 {
			if l := step.AsCall().Args()[1]; l.Kind() == ast.ListKind && len(l.AsList().Elements()) == 1 {
				saved, had := n.vars[c.IterVar()]
				delete(n.vars, c.IterVar())
				if t := n.ptype(c.IterRange()); t != nil && t.Kind == KindList && c.IterVar2() == "" {
					n.vars[c.IterVar()] = t.Elem
				}
				defer func() {
					if had {
						n.vars[c.IterVar()] = saved
					} else {
						delete(n.vars, c.IterVar())
					}
				}()
				return n.nullable(l.AsList().Elements()[0], inner)
			}
		}
	}
	if t := n.ptype(e); t != nil {
		return t.Kind == KindList && t.Elem != nil && mayBeNull(t.Elem)
	}
	if t := n.a.GetType(e.ID()); t != nil && t.Kind() == types.ListKind && len(t.Parameters()) == 1 {
		return celNullable(t.Parameters()[0])
	}
	return false
}

// needElems reports e if it is a list whose elements may be null.
func (n *nullCheck) needElems(e ast.Expr, fn string, f facts) {
	if !n.elemNullable(e, f) {
		return
	}
	n.bad = true
	span := n.at(e)
	name := map[string]string{"math.@max": "math.greatest", "math.@min": "math.least"}[fn]
	if name == "" {
		name = fn
	}
	what, as := "this list", "list"
	if k := n.shown(e); k != "" {
		what, as = k, k
	}
	if fn == "format" {
		n.pc.c.errorf(lang.TypeMismatch, span, "in expression: the values of %s may be null, and format needs values: check each first, as in [x != null ? x : 0]", what)
		return
	}
	n.pc.c.errorf(lang.TypeMismatch, span, "in expression: the elements of %s may be null, and %s needs values: leave the nulls out first, as in %s.filter(v, v != null)", what, name, as)
}

// at is where e starts in the plan's text: the expression's span when
// its position is not known.
func (n *nullCheck) at(e ast.Expr) lang.Span {
	if loc := n.a.SourceInfo().GetStartLocation(e.ID()); loc.Line() > 0 {
		start := celPos(n.e, loc.Line(), loc.Column())
		return lang.Span{Start: start, End: start}
	}
	return n.e.Span
}

// shown is how a message writes a path: with † for a reference.
func (n *nullCheck) shown(e ast.Expr) string {
	k := key(e)
	if k == "" {
		return ""
	}
	root, _, _ := strings.Cut(k, ".")
	root, _, _ = strings.Cut(root, "[")
	if root == "state" || root == "input" || root == n.elem {
		return "†" + k
	}
	return k
}

// walk checks e and what it contains, where facts hold.
func (n *nullCheck) walk(e ast.Expr, f facts) {
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		n.need(s.Operand(), f)
		n.present(e, f)
		n.walk(s.Operand(), f)
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			n.walk(x, f)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if en.Kind() == ast.MapEntryKind {
				m := en.AsMapEntry()
				n.need(m.Key(), f)
				n.walk(m.Key(), f)
				n.walk(m.Value(), f)
			}
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		n.need(c.IterRange(), f)
		n.walk(c.IterRange(), f)
		n.walk(c.AccuInit(), f)
		// The loop's variables: the element (or key) of the range, and
		// the accumulator, whose plan type is not known.
		saved := map[string]*Type{}
		for _, v := range []string{c.IterVar(), c.IterVar2(), c.AccuVar()} {
			if v != "" {
				if _, ok := saved[v]; !ok {
					saved[v] = n.vars[v]
				}
				delete(n.vars, v)
			}
		}
		if t := n.ptype(c.IterRange()); t != nil && c.IterVar2() == "" {
			switch {
			case t.Kind == KindList:
				n.vars[c.IterVar()] = t.Elem
			case t.Kind == KindObject:
				n.vars[c.IterVar()] = StringType
			}
		}
		inner := f.without(c.IterVar(), c.IterVar2(), c.AccuVar()).with(n.filtered(c))
		n.walk(c.LoopCondition(), inner)
		n.walk(c.LoopStep(), inner)
		n.walk(c.Result(), inner)
		for v, t := range saved {
			if t == nil {
				delete(n.vars, v)
			} else {
				n.vars[v] = t
			}
		}
	case ast.CallKind:
		c := e.AsCall()
		args := c.Args()
		fn := c.FunctionName()
		switch {
		case fn == "_?_:_" && len(args) == 3:
			n.need(args[0], f)
			n.walk(args[0], f)
			n.walk(args[1], f.with(n.guards(args[0], true)))
			n.walk(args[2], f.with(n.guards(args[0], false)))
			return
		case (fn == "_&&_" || fn == "_||_") && len(args) == 2:
			n.need(args[0], f)
			n.walk(args[0], f)
			g := f.with(n.guards(args[0], fn == "_&&_"))
			n.need(args[1], g)
			n.walk(args[1], g)
			return
		case fn == "@in" && len(args) == 2:
			n.need(args[1], f)
		case !nullTolerant[fn]:
			if c.IsMemberFunction() {
				n.need(c.Target(), f)
			}
			for _, x := range args {
				n.need(x, f)
			}
		}
		if elemStrict[fn] {
			if c.IsMemberFunction() {
				n.needElems(c.Target(), fn, f)
			}
			for _, x := range args {
				n.needElems(x, fn, f)
			}
		}
		if c.IsMemberFunction() {
			n.walk(c.Target(), f)
		}
		for _, x := range args {
			n.walk(x, f)
		}
	}
}

// need reports e if it may be null.
func (n *nullCheck) need(e ast.Expr, f facts) {
	if !n.nullable(e, f) {
		return
	}
	n.bad = true
	span := n.at(e)
	k := n.shown(e)
	if k == "" {
		n.pc.c.errorf(lang.TypeMismatch, span, "in expression: this value may be null, and is used where a value is needed: check it first (x != null ? … : …)")
		return
	}
	is := ""
	if t := n.ptype(e); t != nil {
		is = ", a " + t.String() + ","
	}
	msg := fmt.Sprintf("in expression: %s%s may be null, and is used where a value is needed: check it first, as in %s != null ? … : …", k, is, k)
	n.pc.c.errorf(lang.TypeMismatch, span, "%s%s", msg, n.pc.nullHint(msg))
}
