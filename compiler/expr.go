package compiler

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/cost"

	"github.com/obelisk-plan/obelisk/lang"
)

// operandAt checks an expression that stands at place (see operand).
func (pc *planChecker) operandAt(place lang.Place, e lang.Expr, sc *scope, reads *[]*RefPath) *Operand {
	saved := pc.place
	pc.place = place
	defer func() { pc.place = saved }()
	return pc.operand(e, sc, reads)
}

// operand checks an expression and returns its operand, with its type.
// Every reference it reads is appended to reads.
func (pc *planChecker) operand(e lang.Expr, sc *scope, reads *[]*RefPath) *Operand {
	switch e := e.(type) {
	case *lang.Literal:
		if e.Kind == lang.LitDuration {
			pc.c.errorf(lang.TypeMismatch, e.Span, "a duration is not a value; write it as a string")
			return &Operand{Kind: OpConst, Type: AnyType, Span: e.Span}
		}
		if e.Kind == lang.LitString {
			pc.refInString(e, sc)
		}
		op := &take(&pc.operands, 1)[0]
		op.Kind, op.Const, op.Type, op.Span = OpConst, e.Value, TypeOfValue(e.Value), e.Span
		return op
	case *lang.Ref:
		rp, t, ok := pc.ref(e, sc)
		if ok {
			*reads = append(*reads, rp)
			if pc.nullAt != "" {
				// A plain reference is read without a check; in CEL,
				// nullSafety sees the checks.
				ref := rp.String()
				msg := fmt.Sprintf("%s may be null (it is %s), so %s cannot be read: check it in an expression, as in %s != null ? %s : …", pc.nullAt, pc.nullType, ref, pc.nullAt, ref)
				pc.c.errorf(lang.TypeMismatch, e.Span, "%s%s", msg, pc.nullHint(msg))
			}
			if pc.absentAt != "" {
				if pc.inOutput {
					// An output reads what is absent as null.
					t = t.orNull()
				} else {
					pc.c.errorf(lang.TypeMismatch, e.Span, "%s", absentMessage(pc.absentAt, rp.String()))
				}
			}
		}
		op := &take(&pc.operands, 1)[0]
		op.Kind, op.Ref, op.Type, op.Span = OpRef, rp, t, e.Span
		return op
	case *lang.ListExpr:
		defer func() { pc.c.nesting-- }()
		if !pc.c.enter(e.Span) {
			return &Operand{Kind: OpConst, Type: AnyType, Span: e.Span}
		}
		op := &Operand{Kind: OpList, Span: e.Span}
		allConst := true
		var elem *Type
		for _, el := range e.Elems {
			x := pc.operandAt(lang.Place{Kind: lang.PlaceElement}, el, sc, reads)
			op.Elems = append(op.Elems, x)
			allConst = allConst && x.IsConst()
			switch {
			case elem == nil:
				elem = x.Type
			case !sameType(elem, x.Type):
				if ok, _ := Assignable(x.Type, NumberType); ok && elem.Kind == KindInt || elem.Kind == KindNumber && x.Type.Kind == KindInt {
					elem = NumberType
				} else {
					elem = AnyType
				}
			}
		}
		if elem == nil {
			elem = AnyType
		}
		op.Type = ListOf(elem)
		if allConst {
			v, _ := constValue(e)
			return constOperand(v, e.Span)
		}
		return op
	case *lang.ObjectExpr:
		defer func() { pc.c.nesting-- }()
		if !pc.c.enter(e.Span) {
			return &Operand{Kind: OpConst, Type: AnyType, Span: e.Span}
		}
		op := &Operand{Kind: OpObject, Span: e.Span, Type: &Type{Kind: KindObject}}
		allConst := true
		seen := map[string]lang.Span{}
		for _, f := range e.Fields {
			if prev, ok := seen[f.Key.Name]; ok {
				d := pc.c.errorf(lang.DuplicateDecl, f.Key.Span, "key %s is given twice", f.Key.Name)
				related(d, pc.c.file.Name, prev, "first given here")
				continue
			}
			seen[f.Key.Name] = f.Key.Span
			x := pc.operandAt(lang.Place{Kind: lang.PlaceField, Name: f.Key.Name}, f.Value, sc, reads)
			op.Keys = append(op.Keys, f.Key.Name)
			op.Vals = append(op.Vals, x)
			op.Type.Fields = append(op.Type.Fields, &Field{Name: f.Key.Name, Type: x.Type})
			allConst = allConst && x.IsConst()
		}
		if allConst {
			v := make(map[string]any, len(op.Keys))
			for i, k := range op.Keys {
				v[k] = op.Vals[i].Const
			}
			return constOperand(v, e.Span)
		}
		return op
	case *lang.CELExpr:
		return pc.cel(e, sc, reads)
	case *lang.HoleExpr:
		return pc.hole(e, sc, reads)
	}
	return &Operand{Kind: OpConst, Type: AnyType}
}

// refInString warns of a string that holds what looks like a reference:
// the text stays text, which is rarely what was meant ("Hello
// $input.name").
func (pc *planChecker) refInString(l *lang.Literal, sc *scope) {
	text := l.StringValue()
	if !strings.ContainsAny(text, "$†") {
		return
	}
	elem := ""
	if sc != nil {
		elem = sc.elem
	}
	ref := lang.FindRefInText(text, elem)
	if ref == "" {
		return
	}
	shown := "†" + strings.TrimLeft(strings.TrimPrefix(ref, "†"), "$")
	d := pc.c.warnf(lang.ReferenceInString, l.Span, "this string holds %s as text, not as a reference: a string is never read as one", ref)
	if pc.c.file.JSON {
		d.Fix = &lang.Fix{Message: fmt.Sprintf("to use the value, write the argument as an expression that joins the parts: {\"_expr\": \"'…' + %s\"}", shown)}
	} else {
		d.Fix = &lang.Fix{Message: fmt.Sprintf("to use the value, write it outside the quotes and join the parts with +: \"…\" + %s", shown)}
	}
}

// constOperand is the operand of a constant list or object, typed by its
// value and conformed to that type: in [1, 2.5], a list of numbers, 1 is
// 1.0.
func constOperand(v any, span lang.Span) *Operand {
	t := TypeOfValue(v)
	if cv, msg := Conform(v, t, ""); msg == "" {
		v = cv
	}
	return &Operand{Kind: OpConst, Const: v, Type: t, Span: span}
}

// ref checks a reference: its root names the input, the state or the
// element of a for each; its path follows fields the types declare.
func (pc *planChecker) ref(r *lang.Ref, sc *scope) (*RefPath, *Type, bool) {
	c := pc.c
	pc.nullAt, pc.absentAt = "", ""
	rp := pc.refPath(r)
	root := r.Root.Name
	var t *Type
	done := 0 // the path elements read before walking the rest
	switch {
	case root == "state":
		if len(rp.Path) == 0 || rp.Path[0].IsIndex {
			c.errorf(lang.UndefinedReference, r.Span, "†state must be followed by a slot name: †state.NAME")
			return rp, AnyType, false
		}
		name := rp.Path[0].Field
		slot := pc.p.Slots[name]
		rp.state = slot
		if slot == nil || (len(slot.Writers) == 0 && len(slot.ErrorWriters) == 0 && !slot.HasInitial) {
			if sc != nil && containsString(sc.own, name) && slot != nil {
				t = slot.Type
				break
			}
			d := c.errorf(lang.UndefinedReference, r.Span, "no step writes †state.%s", name)
			if slot != nil {
				d.Message = fmt.Sprintf("†state.%s is declared in state, but no step writes it and it has no initial value", name)
			} else if s := lang.Closest(name, pc.writtenSlots()); s != "" {
				d.Message += fmt.Sprintf(" (did you mean †state.%s?)", s)
				sp := r.Path[0].Span
				replaceFix(d, lang.Span{Start: lang.Pos{Offset: sp.Start.Offset + 1, Line: sp.Start.Line, Column: sp.Start.Column + 1}, End: sp.End}, s, "read †state."+s)
			} else if ws := pc.writtenSlots(); len(ws) > 0 && len(ws) <= 12 {
				d.Message += "; the slots steps write are " + strings.Join(ws, ", ")
			}
			return rp, AnyType, false
		}
		t = slot.Type
		done = 1
		if pc.inOutput && pc.unwritten[slot.index-1] {
			pc.absentAt = shownPath(rp, 1)
		}
	case root == "input":
		if len(rp.Path) == 0 || rp.Path[0].IsIndex {
			t = pc.p.Input
			break
		}
		name := rp.Path[0].Field
		f := pc.p.Input.Field(name)
		if f == nil {
			fields := pc.p.Input.FieldNames()
			d := c.errorf(lang.UndefinedReference, r.Span, "the input has no field %s%s", name, didYouMean(name, fields))
			switch {
			case len(fields) == 0:
				d.Message += "; declare it in an input block: input { " + name + ": TYPE }"
			case lang.Closest(name, fields) == "":
				d.Message += "; its fields are " + strings.Join(fields, ", ")
			}
			return rp, AnyType, false
		}
		t = f.Type
		done = 1
		if _, def := pc.p.InputDefaults[name]; f.Optional && !def {
			pc.absentAt = shownPath(rp, 1)
		}
	case sc != nil && sc.elem != "" && root == sc.elem:
		t = sc.elemType
	default:
		msg := fmt.Sprintf("unknown reference †%s: references start with †input or †state", root)
		if sc != nil && sc.elem != "" {
			msg += ", or †" + sc.elem + " for the element of the for each"
		}
		c.errorf(lang.UndefinedReference, r.Root.Span, "%s", msg)
		return rp, AnyType, false
	}
	t, ok := pc.walk(t, rp, r, done)
	if !ok && root == "state" {
		pc.misread[rp.Path[0].Field] = true
	}
	return rp, t, ok
}

func (pc *planChecker) writtenSlots() []string {
	var out []string
	for i, n := range pc.p.SlotNames {
		s := pc.slots[i]
		if len(s.Writers) > 0 || len(s.ErrorWriters) > 0 || s.HasInitial {
			out = append(out, n)
		}
	}
	return out
}

// walk follows the path of a reference, from its element done on, through
// a type.
//
// It sets nullAt to the first part of the path that may be null, and
// nullType to its type, or nullAt to ""; and absentAt, unless set
// already, to the first optional field it reads.
func (pc *planChecker) walk(t *Type, rp *RefPath, r *lang.Ref, done int) (*Type, bool) {
	pc.nullAt = ""
	for i, e := range rp.Path[done:] {
		span := r.Path[done+i].Span
		if t.Kind == KindAny {
			return AnyType, true
		}
		if t.Nullable && pc.nullAt == "" {
			pc.nullAt, pc.nullType = shownPath(rp, done+i), t
		}
		if e.IsIndex {
			if t.Kind != KindList {
				pc.c.errorf(lang.TypeMismatch, span, "%s is %s, not a list: it cannot be indexed with [%d]", shownPath(rp, done+i), describeKind(t), e.Index)
				return AnyType, false
			}
			t = t.Elem
			continue
		}
		switch {
		case t.Kind == KindObject && t.Open && len(t.Fields) == 0:
			return AnyType, true
		case t.Kind == KindObject:
			f := t.Field(e.Field)
			if f == nil {
				names := t.FieldNames()
				d := pc.c.errorf(lang.TypeMismatch, span, "%s has no field %s%s; %s has fields %s", shownPath(rp, done+i), e.Field, didYouMean(e.Field, names), t, strings.Join(names, ", "))
				if s := lang.Closest(e.Field, names); s != "" && !pc.quoted(r, done+i) {
					replaceFix(d, lang.Span{Start: lang.Pos{Offset: span.Start.Offset + 1, Line: span.Start.Line, Column: span.Start.Column + 1}, End: span.End}, s, "read ."+s)
				}
				return AnyType, false
			}
			if f.Optional && pc.absentAt == "" {
				pc.absentAt = shownPath(rp, done+i+1)
			}
			t = f.Type
		case t.Kind == KindList:
			shown := shownPath(rp, done+i)
			pc.c.errorf(lang.TypeMismatch, span, "%s is a list %s, which has no field %s: index it first, as in %s[0].%s", shown, t, e.Field, shown, e.Field)
			return AnyType, false
		default:
			pc.c.errorf(lang.TypeMismatch, span, "%s is %s, which has no fields", shownPath(rp, done+i), describeKind(t))
			return AnyType, false
		}
	}
	return t, true
}

// absentMessage says that a reference read without a check crosses a
// part that may be absent.
func absentMessage(at, ref string) string {
	i := strings.LastIndex(at, ".")
	parent, field := at[:i], at[i+1:]
	return fmt.Sprintf("%s may be absent (the field %s is optional), so %s cannot be read without a check: read it in an expression, as in has(%s) ? %s : …, or %s.?%s.orValue(…)", at, field, ref, at, ref, parent, field)
}

// shownPath is how a diagnostic names the part of a reference read
// through its first n path elements.
func shownPath(rp *RefPath, n int) string {
	shown := "†" + rp.Root
	for _, e := range rp.Path[:n] {
		if e.IsIndex {
			shown = fmt.Sprintf("%s[%d]", shown, e.Index)
		} else {
			shown += "." + e.Field
		}
	}
	return shown
}

func (pc *planChecker) quoted(r *lang.Ref, i int) bool { return r.Path[i].Quoted }

// cel checks a CEL expression: its references first, then the expression
// against the types of everything it reads.
func (pc *planChecker) cel(e *lang.CELExpr, sc *scope, reads *[]*RefPath) *Operand {
	op := &Operand{Kind: OpCEL, Span: e.Span, Type: AnyType}
	ok := true
	for _, r := range e.Refs {
		rp, _, refOK := pc.ref(r, sc)
		if refOK {
			op.Refs = append(op.Refs, rp)
			*reads = append(*reads, rp)
		}
		ok = ok && refOK
	}
	env := pc.p.Env
	if sc != nil && sc.env != nil {
		env = sc.env
	}
	if !ok || env == nil {
		return op // the reference errors say what is wrong
	}
	op.Text = e.Text
	op.env = env
	op.expr = e
	shape, shareable := pc.celShape(e, env, sc)
	if t, ok := pc.shapes[shape]; ok && shareable {
		op.Type = t
		pc.bareNames(e, sc)
		return op
	}
	ast, iss := parseChecked(env, e.CELText())
	if iss.Err() != nil {
		if !pc.celMistake(e, iss.Errors()) {
			pc.celIssues(e, iss.Errors(), lang.ParseError)
		}
		return op
	}
	checked, iss := env.Check(ast)
	if iss.Err() != nil {
		pc.celIssues(e, iss.Errors(), lang.TypeMismatch)
		return op
	}
	op.checked = checked
	op.Type = pc.types.planType(checked.OutputType())
	// Whether the value, or the elements of a list, may be null is
	// nullSafety's to say: CEL forgets it for lists, and does not narrow.
	safe, nullable, elems := pc.nullSafety(e, checked, sc)
	if op.Type.Kind == KindList && op.Type.Elem != nil && op.Type.Elem.Nullable != elems && op.Type.Elem.Kind != KindNull {
		l := *op.Type
		l.Elem = op.Type.Elem.withNull(elems)
		op.Type = &l
	}
	op.Type = op.Type.withNull(nullable)
	if pc.celCost(e, env, checked) && safe && shareable {
		pc.shapes[shape] = op.Type
	}
	pc.bareNames(e, sc)
	return op
}

// celShape is what decides the check of a CEL expression: the
// environment, and the text with each reference replaced by the types it
// reads through. Two expressions of one shape parse to the same tree but
// for the names of the fields their references select, and those names
// lead CEL to the same types, so they check alike: an expression of a
// shape already checked without errors is not checked again (plans
// repeat the conditions of their steps, as in "size(†state.hitsN) > 0").
// The second result is false for an expression that cannot be keyed so.
type celShape struct {
	env  *cel.Env
	text string
}

func (pc *planChecker) celShape(e *lang.CELExpr, env *cel.Env, sc *scope) (celShape, bool) {
	base := e.Span.Start.Offset
	if base+len(e.Text) != e.Span.End.Offset || strings.IndexByte(e.Text, 0) >= 0 {
		return celShape{}, false // a JSON string with escapes, or a NUL of its own
	}
	b := pc.keyBuf[:0]
	last := 0
	for _, r := range e.Refs {
		start, end := r.Span.Start.Offset-base, r.Span.End.Offset-base
		if start < last || end < start || end > len(e.Text) {
			return celShape{}, false
		}
		b = append(b, e.Text[last:start]...)
		b = append(b, 0)
		var ok bool
		if b, ok = pc.refShape(b, r, sc); !ok {
			return celShape{}, false
		}
		b = append(b, 0)
		last = end
	}
	b = append(b, e.Text[last:]...)
	pc.keyBuf = b
	return celShape{env: env, text: string(b)}, true
}

// refShape appends to b how a reference reads: its root, and for each
// element of its path how it is written and the type it leads to.
func (pc *planChecker) refShape(b []byte, r *lang.Ref, sc *scope) ([]byte, bool) {
	var t *Type
	path := r.Path
	switch root := r.Root.Name; {
	case root == "state":
		if len(path) == 0 || path[0].IsIndex || path[0].Quoted {
			return b, false
		}
		slot := pc.p.Slots[path[0].Field]
		if slot == nil {
			return b, false
		}
		t, path = slot.Type, path[1:]
		b = append(b, 's')
	case root == "input":
		t = pc.p.Input
		b = append(b, 'i')
	case sc != nil && sc.elem != "" && root == sc.elem:
		t = sc.elemType
		b = append(b, 'e')
	default:
		return b, false
	}
	b = pc.appendTypeID(b, t)
	for _, el := range path {
		switch {
		case t == nil:
			return b, false
		case t.Kind == KindAny:
			b = append(b, '*')
		case el.IsIndex:
			if t.Kind != KindList {
				return b, false
			}
			t = t.Elem
			b = append(b, '[')
		case t.Kind == KindObject && t.Open && len(t.Fields) == 0:
			t = AnyType
			b = append(b, '.')
		case t.Kind == KindObject:
			f := t.Field(el.Field)
			if f == nil {
				return b, false
			}
			t = f.Type
			b = append(b, '.')
		default:
			return b, false
		}
		if el.Quoted {
			b = append(b, '"')
		}
		b = pc.appendTypeID(b, t)
	}
	return b, true
}

// appendTypeID appends a number that stands for t in this plan.
func (pc *planChecker) appendTypeID(b []byte, t *Type) []byte {
	id, ok := pc.typeIDs[t]
	if !ok {
		id = uint32(len(pc.typeIDs))
		pc.typeIDs[t] = id
	}
	return binary.LittleEndian.AppendUint32(b, id)
}

// celCost reports an expression whose worst-case cost, as cel-go
// estimates it with unknown sizes taken as Limits.SizeHint, is over
// Limits.MaxCost: an untrusted plan could otherwise make every evaluation
// run to the interpreter's runtime limit.
//
// It returns false if it reported the expression.
func (pc *planChecker) celCost(e *lang.CELExpr, env *cel.Env, checked *cel.Ast) bool {
	lim := pc.c.limits
	// The estimate reads only the checked tree and the cost models of the
	// libraries, which every plan's environment takes from baseEnv; baseEnv
	// compiles its models once, where a plan's environment would compile
	// them for each plan.
	if base, err := baseEnv(); err == nil {
		env = base
	}
	est, err := env.EstimateCost(checked, sizeHint(lim.SizeHint))
	if err != nil || est.Max <= lim.MaxCost {
		return true
	}
	pc.c.errorf(lang.LimitExceeded, e.Span, "this expression may cost up to %s to evaluate, more than the limit of %d (a list, map or string of unknown size is taken to hold %d elements): iterate over fewer or smaller lists, or raise the limit (compiler.Limits.MaxCost) if the plan is trusted",
		costText(est.Max), lim.MaxCost, lim.SizeHint)
	return false
}

// costText prints a cost estimate; an unbounded one is "an unbounded
// amount".
func costText(c uint64) string {
	if c == math.MaxUint64 {
		return "an unbounded amount"
	}
	return strconv.FormatUint(c, 10)
}

// sizeHint is a cost estimator that gives every value of unknown size the
// same size.
type sizeHint uint64

// EstimateSize implements cost.Estimator.
func (h sizeHint) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: uint64(h)}
}

// EstimateCallCost implements cost.Estimator: calls cost what cel-go
// says.
func (sizeHint) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// bareNames reports references written without †, which CEL would accept
// as variables (state.x) but which the dependency graph would miss.
func (pc *planChecker) bareNames(e *lang.CELExpr, sc *scope) {
	for _, u := range e.FreeNames() {
		if u.Name != "state" && u.Name != "input" && (sc == nil || u.Name != sc.elem) {
			continue
		}
		pos, end := advance(e, u.Offset), advance(e, u.Offset+len(u.Name))
		d := pc.c.errorf(lang.UndefinedReference, lang.Span{Start: pos, End: end}, "write †%s instead of %s: a reference starts with †", u.Name, u.Name)
		replaceFix(d, lang.Span{Start: pos, End: pos}, "†", "add †")
	}
}

// advance returns the file position of byte offset off in e.Text.
func advance(e *lang.CELExpr, off int) lang.Pos {
	line, lineStart := 1, 0
	for i := 0; i < off && i < len(e.Text); i++ {
		if e.Text[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	col := len([]rune(e.Text[lineStart:off]))
	return celPos(e, line, col)
}

// celMistake reports a syntax error of CEL as a mistake of the plan's
// syntax, when lang.ExplainCELError knows it: one diagnostic, in the
// plan's terms, instead of CEL's. It reports whether it did.
func (pc *planChecker) celMistake(e *lang.CELExpr, errs []*common.Error) bool {
	if len(errs) == 0 || e.Span.Start.Offset+len(e.Text) != e.Span.End.Offset {
		return false // the text does not map onto the file (a JSON string with escapes)
	}
	first := errs[0]
	for _, err := range errs[1:] {
		if l, f := err.Location, first.Location; l != nil && f != nil && (l.Line() < f.Line() || l.Line() == f.Line() && l.Column() < f.Column()) {
			first = err
		}
	}
	off := len(e.Text)
	if loc := first.Location; loc != nil && loc.Line() > 0 {
		off = celPos(e, loc.Line(), loc.Column()).Offset - e.Span.Start.Offset
	}
	m, ok := lang.ExplainCELError(e, pc.place, off, first.Message)
	if !ok {
		return false
	}
	d := pc.c.errorf(lang.ParseError, lang.Span{Start: advance(e, m.Offset), End: advance(e, m.End)}, "%s", m.Message)
	if m.Insert != "" {
		p := advance(e, m.InsertAt)
		replaceFix(d, lang.Span{Start: p, End: p}, m.Insert, "insert "+lang.Quote(m.Insert))
	}
	if m.NextArg != "" {
		pc.inText[m.NextArg] = true
	}
	return true
}

// celIssues reports CEL's errors at their places in the file.
func (pc *planChecker) celIssues(e *lang.CELExpr, errs []*common.Error, code lang.Code) {
	sort.SliceStable(errs, func(i, j int) bool {
		li, lj := errs[i].Location, errs[j].Location
		return li.Line() < lj.Line() || li.Line() == lj.Line() && li.Column() < lj.Column()
	})
	for _, err := range errs {
		span := e.Span
		if loc := err.Location; loc != nil && loc.Line() > 0 {
			start := celPos(e, loc.Line(), loc.Column())
			end := start
			// One character, unless CEL points past the expression's end
			// (an expression cut short).
			rel := start.Offset - e.Span.Start.Offset
			if start.Offset < e.Span.End.Offset && e.Span.Start.Offset+len(e.Text) == e.Span.End.Offset && rel >= 0 {
				_, n := utf8.DecodeRuneInString(e.Text[rel:])
				end.Offset += n
				end.Column++
			}
			span = lang.Span{Start: start, End: end}
		}
		pc.c.errorf(code, span, "in expression: %s", celMessage(err.Message))
	}
}
