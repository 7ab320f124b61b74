package lang

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Node is implemented by every node of the syntax tree.
type Node interface {
	// Range returns the source span the node was read from.
	Range() Span
}

// Comment is one comment line, including its "#" or "//" marker.
// BlankBefore records a blank line before it.
type Comment struct {
	Span
	Text        string
	BlankBefore bool
}

// Comments are the comments attached to a declaration, statement or field:
// the lines just before it and the comment at the end of its last line.
// BlankBefore records a blank line between the leading comments (or the
// previous node) and the node itself, which the printer keeps.
type Comments struct {
	Leading     []Comment
	Trailing    *Comment
	BlankBefore bool
}

// Doc returns the leading comment lines without their markers, joined by
// newlines: the node's documentation (a tool's or parameter's description).
func (c *Comments) Doc() string {
	if c == nil || len(c.Leading) == 0 || c.BlankBefore {
		return ""
	}
	// Only the group of lines directly above the node documents it.
	group := c.Leading
	for i := len(group) - 1; i > 0; i-- {
		if group[i].BlankBefore {
			group = group[i:]
			break
		}
	}
	lines := make([]string, len(group))
	for i, l := range group {
		lines[i] = commentBody(l.Text)
	}
	return strings.Join(lines, "\n")
}

func commentBody(text string) string {
	switch {
	case strings.HasPrefix(text, "//"):
		text = text[2:]
	case strings.HasPrefix(text, "#"):
		text = text[1:]
	}
	return strings.TrimPrefix(text, " ")
}

// docComments turns a description into leading comment lines.
func docComments(doc string) []Comment {
	if strings.TrimSpace(doc) == "" {
		return nil
	}
	var out []Comment
	for _, line := range strings.Split(strings.TrimRight(doc, "\n"), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			out = append(out, Comment{Text: "#"})
		} else {
			out = append(out, Comment{Text: "# " + line})
		}
	}
	return out
}

// File is a parsed plan: the main plan of a .plan file or of a JSON document.
type File struct {
	Span
	// Name is the file name given to the parser, used in diagnostics.
	Name string
	// Items are the declarations and steps in source order.
	Items []Item
	// Trailing holds comments after the last item.
	Trailing []Comment
	// InputValues holds the input given in a JSON context document, by
	// field name; nil for .plan text.
	InputValues map[string]any
	// JSON is set when the file was read from the JSON form, so that
	// suggested fixes are given in that form's terms.
	JSON bool
}

// Item is a top-level declaration or a step.
type Item interface {
	Node
	// Meta returns the comments attached to the item.
	Meta() *Comments
	itemNode()
}

// ModeDecl is `mode eager` or `mode lazy`.
type ModeDecl struct {
	Span
	Comments
	Mode *Ident
}

// PolicyDecl is `on failure abort|skip|continue|replan [max N]`: what the run
// does when a step fails.
type PolicyDecl struct {
	Span
	Comments
	Action *Ident
	// Max bounds the number of replans; nil when not given.
	Max *Literal
}

// ApproveDecl is a top-level `approve ["message"]`: a person approves the
// whole plan before any step runs.
type ApproveDecl struct {
	Span
	Comments
	Message *Literal // a string, or nil
}

// ImportDecl is `import "tools.json"`: tool signatures from a JSON file.
type ImportDecl struct {
	Span
	Comments
	Path *Literal
}

// TypeDecl is `type Name T`.
type TypeDecl struct {
	Span
	Comments
	Name *Ident
	Type TypeExpr
}

// ToolDecl declares a tool: `tool name(param: T, opt?: T) -> T [attributes]`.
// A declaration with no parameter list (`tool name`) says that the tool is
// provided by the environment (a tools file or the runtime) and takes its
// signature from there.
type ToolDecl struct {
	Span
	Comments
	Name *Ident
	// HasSignature is false for `tool name` without a parameter list.
	HasSignature bool
	Params       []*FieldDecl
	// MultilineParams records that the parameters were written one per
	// line, a layout the printer keeps.
	MultilineParams bool
	// Result is the output type, or nil when not declared (any).
	Result TypeExpr
	Attrs  []*ToolAttr
	// InputSchema and OutputSchema keep the JSON Schemas a tool was imported
	// from, so literals can be validated against every keyword (minimum,
	// pattern, …), not only against the type the signature shows.
	InputSchema  []byte
	OutputSchema []byte
	// Binding says how the runtime calls the tool, when a tools file gives
	// an "http" or "command" block; nil otherwise. A plan cannot give one.
	Binding *ToolBinding
}

// ToolBinding is the "http" or "command" block of a tool definition in a
// tools file, kept as JSON text for the runtime to read. The checker does
// not look at it.
type ToolBinding struct {
	Span
	// Kind is "http" or "command".
	Kind string
	// File is the name the tools file was read under.
	File string
	// JSON is the block's text.
	JSON []byte
}

// ToolAttr is a tool attribute: an effect (`pure`, `idempotent`,
// `irreversible`), `model` (the tool calls a language model), `latency D` or
// `tokens N`.
type ToolAttr struct {
	Span
	Name  *Ident
	Value *Literal // the duration or count, or nil
}

// InputDecl is `input { field: T … }`: the fields the plan's input has.
type InputDecl struct {
	Span
	Comments
	Fields []*FieldDecl
}

// StateDecl is `state { slot: T … }`: the state schema. A field with a value
// (`slot: T = v`) is a slot already written when the plan starts.
type StateDecl struct {
	Span
	Comments
	Fields []*FieldDecl
}

// PlanDecl is a sub-plan, callable like a tool:
// `plan name(param: T) -> T { steps… output … }`.
type PlanDecl struct {
	Span
	Comments
	Name            *Ident
	Params          []*FieldDecl
	MultilineParams bool
	Result          TypeExpr // nil when not declared
	Items           []Item
	// Closing holds comments before the closing brace.
	Closing []Comment
}

// OutputDecl is `output EXPR`: the plan's result.
type OutputDecl struct {
	Span
	Comments
	Value Expr
}

// Step is one call of the plan:
//
//	[label:] [for each x in LIST [max N]:] tool(arg: value, …) [-> †state.ok [|| †state.err]] [options]
type Step struct {
	Span
	Comments
	Label *Ident // nil when not given
	Each  *Each  // nil unless the step is a `for each`
	// Call is the call the step makes; nil for a task, which names a goal
	// and the candidates a model chooses among instead (Task).
	Call *Call
	Task *Task
	Out  *Outputs // nil when the result is not written
	// Options are when, expect, retry, timeout, fallback, approve,
	// result and hint, in source order.
	Options []Option
	// LineComments holds the comments at the end of the step's lines
	// before its last one (which has Comments.Trailing): index 0 is the
	// call's line, index i the line of option i. Entries may be nil.
	LineComments []*Comment
}

// Task is a step a model completes when it runs:
// `task "goal" using [tool, plan, …]`. The model chooses one candidate and
// fills its arguments; Refs are the references the goal's text reads,
// whose values it is given.
type Task struct {
	Span
	Goal *Literal
	Refs []*Ref
	// Using lists the candidates, tools or sub-plans; nil when the step
	// gives none (a hint then says who does it).
	Using []*Ident
}

// Head returns the span of the step's call, or of its task.
func (s *Step) Head() Span {
	if s.Task != nil {
		return s.Task.Span
	}
	return s.Call.Span
}

// Callee returns the name of the tool or sub-plan the step calls, or
// "task" for a task.
func (s *Step) Callee() string {
	if s.Task != nil {
		return "task"
	}
	return s.Call.Tool.Name
}

// Each is the `for each x in LIST [max N]:` clause of a step: the call runs
// once per element of LIST, with †x naming the element, and the step's
// output is the list of results.
type Each struct {
	Span
	Var  *Ident
	List Expr
	Max  *Literal // nil when not given
}

// Call is a tool or sub-plan call with named arguments.
type Call struct {
	Span
	Tool *Ident
	Args []*Arg
	// Multiline records that the arguments were written one per line, a
	// layout the printer keeps.
	Multiline bool
}

// Arg is one named argument.
type Arg struct {
	Span
	Name  *Ident
	Value Expr
}

// Outputs are the output paths of a step: `-> †state.ok` or
// `-> †state.ok || †state.err`.
type Outputs struct {
	Span
	Success *Ref
	Error   *Ref // nil unless the `||` alternative is given
}

// Option is a step option.
type Option interface {
	Node
	// Keyword returns the option's keyword, such as "retry".
	Keyword() string
	optionNode()
}

// WhenOption is `when EXPR`: the step runs only if EXPR is true.
type WhenOption struct {
	Span
	Cond Expr
}

// ExpectOption is `expect EXPR`: a success criterion checked after the step.
// EXPR is a boolean CEL expression, or a string that states the criterion
// for an evaluator model.
type ExpectOption struct {
	Span
	Cond Expr
}

// RetryOption is `retry N [backoff D]`.
type RetryOption struct {
	Span
	Count   *Literal
	Backoff *Literal // a duration, or nil
}

// TimeoutOption is `timeout D`.
type TimeoutOption struct {
	Span
	Duration *Literal
}

// FallbackOption is `fallback tool(args…)`: called when the step's tool fails
// after its retries; it writes to the same output paths.
type FallbackOption struct {
	Span
	Call *Call
}

// ApproveOption is `approve ["message"]`: a person approves the step before
// it runs.
type ApproveOption struct {
	Span
	Message *Literal // a string, or nil
}

// HintOption is `hint NAME`: who should do the step (a researcher, a
// coder), which the operator maps to a tool set, an MCP server or a
// sub-plan. A name the operator does not declare is mapped to the closest
// one or dropped, with a warning.
type HintOption struct {
	Span
	Name *Ident
}

// ResultOption is `result EXPR`: the step's result is already known (a model
// supplied it), so the tool is not called.
type ResultOption struct {
	Span
	Value Expr
}

// Ident is a name: a label, a parameter, a type, or a tool name, which may
// contain dots and hyphens (`math.sum`, `get-weather`).
type Ident struct {
	Span
	Name string
	// Quoted is set for a name written as a string ("Content-Type": …).
	Quoted bool
}

// Expr is an argument value, a condition or an output expression.
type Expr interface {
	Node
	exprNode()
}

// LitKind is the kind of a Literal.
type LitKind uint8

// The literal kinds.
const (
	LitNull LitKind = iota
	LitBool
	LitInt
	LitFloat
	LitString
	LitDuration
)

// Literal is a constant. Value holds nil, a bool, an int64, a float64, a
// string or a time.Duration.
type Literal struct {
	Span
	Kind  LitKind
	Value any
	// Raw is the source text, which the printer keeps for numbers (1.50
	// stays 1.50); it is empty for literals made from JSON.
	Raw string
}

// Ref is a reference: †input.a.b, †state.x[0], or †item for the element of
// a `for each`. $ may be written for †.
type Ref struct {
	Span
	// ASCII records that the reference was written with $ instead of †.
	ASCII bool
	Root  *Ident
	Path  []*PathElem
}

// PathElem is one step of a reference path: a field (.name or ["name"]) or
// a list index ([0]).
type PathElem struct {
	Span
	Field   string
	Index   int
	IsIndex bool
	// Quoted records the ["name"] spelling of a field.
	Quoted bool
}

// ListExpr is [a, b, …].
type ListExpr struct {
	Span
	Elems     []Expr
	Multiline bool
}

// ObjectExpr is {key: value, …}.
type ObjectExpr struct {
	Span
	Fields    []*ObjectField
	Multiline bool
}

// ObjectField is one key: value pair of an ObjectExpr.
type ObjectField struct {
	Span
	Comments
	Key   *Ident
	Value Expr
}

// HoleExpr is an argument left for a model to fill when the step runs:
// `? "instruction"`. The value's type is the parameter's; Refs are the
// references the instruction's text reads, whose values the model is
// given.
type HoleExpr struct {
	Span
	Instruction *Literal
	Refs        []*Ref
}

// CELExpr is an expression in CEL (https://cel.dev), kept as source text.
// References inside it are written as elsewhere (†state.x); Refs lists them
// in order of appearance.
type CELExpr struct {
	Span
	Text string
	Refs []*Ref
}

// TypeExpr is a type written in a declaration.
type TypeExpr interface {
	Node
	typeNode()
}

// NamedType is a built-in type (string, int, number, bool, null, any,
// object) or a type declared with `type`.
type NamedType struct {
	Span
	Name string
}

// ListType is [T].
type ListType struct {
	Span
	Elem TypeExpr
}

// ObjectType is {field: T, opt?: T, …}.
type ObjectType struct {
	Span
	Fields    []*FieldDecl
	Multiline bool
}

// EnumType is a union of constants, usually strings: "a" | "b".
type EnumType struct {
	Span
	Values []*Literal
}

// OptionalType is T?: a T or null.
type OptionalType struct {
	Span
	Elem TypeExpr
}

// FieldDecl is a parameter, an input field, a state slot or an object type's
// field: `name[?]: T [= value]`.
type FieldDecl struct {
	Span
	Comments
	Name     *Ident
	Optional bool
	Type     TypeExpr
	// Default is the value after "=": a parameter's default, an input
	// field's default, or a state slot's initial value.
	Default Expr
}

func (*ModeDecl) itemNode()    {}
func (*PolicyDecl) itemNode()  {}
func (*ApproveDecl) itemNode() {}
func (*ImportDecl) itemNode()  {}
func (*TypeDecl) itemNode()    {}
func (*ToolDecl) itemNode()    {}
func (*InputDecl) itemNode()   {}
func (*StateDecl) itemNode()   {}
func (*PlanDecl) itemNode()    {}
func (*OutputDecl) itemNode()  {}
func (*Step) itemNode()        {}

// Meta returns the item's comments.
func (c *Comments) Meta() *Comments { return c }

func (*WhenOption) optionNode()     {}
func (*ExpectOption) optionNode()   {}
func (*RetryOption) optionNode()    {}
func (*TimeoutOption) optionNode()  {}
func (*FallbackOption) optionNode() {}
func (*ApproveOption) optionNode()  {}
func (*ResultOption) optionNode()   {}
func (*HintOption) optionNode()     {}

// Keyword returns "when".
func (*WhenOption) Keyword() string { return "when" }

// Keyword returns "expect".
func (*ExpectOption) Keyword() string { return "expect" }

// Keyword returns "retry".
func (*RetryOption) Keyword() string { return "retry" }

// Keyword returns "timeout".
func (*TimeoutOption) Keyword() string { return "timeout" }

// Keyword returns "fallback".
func (*FallbackOption) Keyword() string { return "fallback" }

// Keyword returns "approve".
func (*ApproveOption) Keyword() string { return "approve" }

// Keyword returns "result".
func (*ResultOption) Keyword() string { return "result" }

// Keyword returns "hint".
func (*HintOption) Keyword() string { return "hint" }

func (*Literal) exprNode()    {}
func (*Ref) exprNode()        {}
func (*ListExpr) exprNode()   {}
func (*ObjectExpr) exprNode() {}
func (*CELExpr) exprNode()    {}
func (*HoleExpr) exprNode()   {}

func (*NamedType) typeNode()    {}
func (*ListType) typeNode()     {}
func (*ObjectType) typeNode()   {}
func (*EnumType) typeNode()     {}
func (*OptionalType) typeNode() {}

// Duration returns the literal's value as a duration, or 0 if it is not a
// duration literal.
func (l *Literal) Duration() time.Duration {
	if l == nil {
		return 0
	}
	d, _ := l.Value.(time.Duration)
	return d
}

// IntValue returns the literal's value as an int64, or 0 if it is not an
// integer literal.
func (l *Literal) IntValue() int64 {
	if l == nil {
		return 0
	}
	n, _ := l.Value.(int64)
	return n
}

// StringValue returns the literal's value as a string, or "" if it is not a
// string literal.
func (l *Literal) StringValue() string {
	if l == nil {
		return ""
	}
	s, _ := l.Value.(string)
	return s
}

// IsState reports whether the reference reads or writes the plan's state
// (†state.…).
func (r *Ref) IsState() bool { return r.Root.Name == "state" }

// IsInput reports whether the reference reads the plan's input (†input.…).
func (r *Ref) IsInput() bool { return r.Root.Name == "input" }

// Slot returns the state slot a †state reference names (its first path
// element), or "" for other references.
func (r *Ref) Slot() string {
	if !r.IsState() || len(r.Path) == 0 || r.Path[0].IsIndex {
		return ""
	}
	return r.Path[0].Field
}

// String formats the reference with † (or $ if it was written so).
func (r *Ref) String() string {
	var b strings.Builder
	writeRef(&b, r, r.ASCII)
	return b.String()
}

// Steps returns the steps among items, in order.
func Steps(items []Item) []*Step {
	n := 0
	for _, it := range items {
		if _, ok := it.(*Step); ok {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]*Step, 0, n)
	for _, it := range items {
		if s, ok := it.(*Step); ok {
			out = append(out, s)
		}
	}
	return out
}

// CELText returns the expression as CEL reads it: the † or $ that starts
// each reference becomes one space, so †state.x reads the CEL variable
// state, and comments become spaces; every character keeps its column.
func (e *CELExpr) CELText() string {
	src := []byte(e.Text)
	s := newScanner(src, 0, 1, false)
	out := make([]byte, 0, len(src))
	last := 0
	for {
		t := s.next()
		if t.Kind == tokEOF {
			break
		}
		n := t.Span.End.Offset
		switch {
		case t.Kind == tokDagger && n < len(src) && (isIdentStart(src[n]) || src[n] >= 0x80):
			out = append(out, src[last:t.Span.Start.Offset]...)
			out = append(out, ' ')
			last = n
		case t.Kind == tokComment:
			// A comment between the lines of the expression: one space
			// per character, so columns after it do not move.
			out = append(out, src[last:t.Span.Start.Offset]...)
			for range []rune(string(src[t.Span.Start.Offset:n])) {
				out = append(out, ' ')
			}
			last = n
		}
	}
	return string(append(out, src[last:]...))
}

// NameUse is an identifier of a CEL expression that is neither a field
// selection (after '.') nor a reference (after † or $).
type NameUse struct {
	Name string
	// Offset is the byte offset of the name in the expression's Text.
	Offset int
}

// FreeNames returns the names an expression uses as variables or
// functions, in order.
func (e *CELExpr) FreeNames() []NameUse {
	s := newScanner([]byte(e.Text), 0, 1, false)
	var out []NameUse
	prev := tokEOF
	for {
		t := s.next()
		if t.Kind == tokEOF {
			return out
		}
		if t.Kind == tokIdent && prev != tokDot && prev != tokDagger {
			out = append(out, NameUse{Name: t.Text, Offset: t.Span.Start.Offset})
		}
		if t.Kind != tokNewline && t.Kind != tokComment {
			prev = t.Kind
		}
	}
}

// ValueExpr returns the expression that writes a JSON value: nil, bool,
// int64 (or int), float64, string, []any or map[string]any (keys sorted).
// Other values are written as their JSON encoding's string.
func ValueExpr(v any) Expr {
	switch v := v.(type) {
	case nil:
		return &Literal{Kind: LitNull}
	case bool:
		return &Literal{Kind: LitBool, Value: v}
	case int:
		return &Literal{Kind: LitInt, Value: int64(v)}
	case int64:
		return &Literal{Kind: LitInt, Value: v}
	case float64:
		return &Literal{Kind: LitFloat, Value: v}
	case string:
		return &Literal{Kind: LitString, Value: v}
	case []any:
		l := &ListExpr{}
		for _, e := range v {
			l.Elems = append(l.Elems, ValueExpr(e))
		}
		return l
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := &ObjectExpr{}
		for _, k := range keys {
			o.Fields = append(o.Fields, &ObjectField{Key: &Ident{Name: k, Quoted: !isPlainName(k)}, Value: ValueExpr(v[k])})
		}
		return o
	}
	return &Literal{Kind: LitString, Value: fmt.Sprint(v)}
}
