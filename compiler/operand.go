package compiler

import (
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/obelisk-plan/obelisk/lang"
)

// OperandKind is the kind of an Operand.
type OperandKind uint8

// The operand kinds.
const (
	OpConst  OperandKind = iota // a constant value
	OpRef                       // a reference
	OpList                      // a list of operands
	OpObject                    // an object of operands
	OpCEL                       // a CEL expression
	OpHole                      // an argument a model fills when the step runs
)

// Operand is a checked expression in the form the interpreter evaluates: a
// constant, a reference, a list or object of operands, or a CEL program.
type Operand struct {
	Kind OperandKind
	// Const is the value of a constant: nil, bool, int64, float64,
	// string, []any or map[string]any.
	Const any
	Ref   *RefPath
	// Elems are a list's elements; Keys and Vals an object's fields.
	Elems []*Operand
	Keys  []string
	Vals  []*Operand
	// Text is a CEL expression's source as written in the plan, or a
	// hole's instruction, and Refs the references it reads.
	Text string
	Refs []*RefPath
	// Type is the operand's static type.
	Type *Type
	Span lang.Span
	// env is the CEL environment the expression was checked in.
	env *cel.Env
	// checked is the checked expression; nil for an expression of a
	// shape already checked (see celShape), which Program.CEL checks
	// when it first compiles it.
	checked *cel.Ast
	expr    *lang.CELExpr
}

// RefPath is a resolved reference: a root (input, state, or a for-each
// element) and a path of fields and indexes.
type RefPath struct {
	Root string
	Path []PathElem
	Span lang.Span
	// slot is 1 + the position in Plan.SlotNames of the slot a †state
	// reference reads, set by Compile.
	slot int32
	// state is the slot a †state reference reads, set by Check.
	state *Slot
}

// SlotIndex returns the position in Plan.SlotNames of the slot a †state
// reference reads; ok is false for other references, and until the plan
// is compiled.
func (r *RefPath) SlotIndex() (pos int, ok bool) { return int(r.slot) - 1, r.slot > 0 }

// PathElem is one step of a reference path.
type PathElem struct {
	Field   string
	Index   int
	IsIndex bool
}

// Slot returns the state slot a †state reference reads, or "".
func (r *RefPath) Slot() string {
	if r.Root != "state" || len(r.Path) == 0 || r.Path[0].IsIndex {
		return ""
	}
	return r.Path[0].Field
}

// String formats the reference as written in a plan.
func (r *RefPath) String() string {
	var b strings.Builder
	b.WriteString("†")
	b.WriteString(r.Root)
	for _, e := range r.Path {
		if e.IsIndex {
			b.WriteString("[" + strconv.Itoa(e.Index) + "]")
		} else if fieldName(e.Field) == e.Field {
			b.WriteString("." + e.Field)
		} else {
			b.WriteString("[" + lang.Quote(e.Field) + "]")
		}
	}
	return b.String()
}

// IsConst reports whether the operand is a constant, with no reference.
func (o *Operand) IsConst() bool { return o != nil && o.Kind == OpConst }

// Walk calls fn for the operand and every operand inside it.
func (o *Operand) Walk(fn func(*Operand)) {
	if o == nil {
		return
	}
	fn(o)
	for _, e := range o.Elems {
		e.Walk(fn)
	}
	for _, v := range o.Vals {
		v.Walk(fn)
	}
}

// Refs returns every reference the operand reads, in order.
func (o *Operand) AllRefs() []*RefPath {
	var out []*RefPath
	o.Walk(func(x *Operand) {
		switch x.Kind {
		case OpRef:
			out = append(out, x.Ref)
		case OpCEL, OpHole:
			out = append(out, x.Refs...)
		}
	})
	return out
}

// refPathMem holds a resolved reference with a path of one element, the
// most common kind.
type refPathMem struct {
	ref  RefPath
	path [1]PathElem
}

// refPath resolves a reference's path; one of one element takes its
// memory from the plan's pool.
func (pc *planChecker) refPath(r *lang.Ref) *RefPath {
	var p *RefPath
	switch len(r.Path) {
	case 0:
		p = &RefPath{}
	case 1:
		m := &take(&pc.refPaths, 1)[0]
		p = &m.ref
		p.Path = m.path[:1:1]
	default:
		p = &RefPath{Path: make([]PathElem, len(r.Path))}
	}
	p.Root, p.Span = r.Root.Name, r.Span
	for i, e := range r.Path {
		p.Path[i] = PathElem{Field: e.Field, Index: e.Index, IsIndex: e.IsIndex}
	}
	return p
}
