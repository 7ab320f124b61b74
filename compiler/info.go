// Package compiler checks plans and compiles them to executable graphs.
//
// Check resolves every name of a parsed plan (tools, types, slots, input
// fields, sub-plans), infers the type of every state slot from the step
// that writes it, checks every argument, reference and CEL expression
// against those types, builds the dependency graph and rejects cycles. It
// reports every problem as a lang.Diagnostic and records what it resolved
// in side tables (Info), leaving the syntax tree untouched.
package compiler

import (
	"sync"
	"time"

	"cel.dev/cel-go/cel"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// Effect says what calling a tool does to the world.
type Effect uint8

// The effects, from the most to the least dangerous. A tool that declares
// none is irreversible.
const (
	Irreversible Effect = iota // its effect cannot be undone (a payment, an email)
	Idempotent                 // calling it again has no further effect
	Pure                       // it only reads
)

// String returns "irreversible", "idempotent" or "pure".
func (e Effect) String() string {
	return [...]string{"irreversible", "idempotent", "pure"}[e]
}

// Tool is a resolved tool signature, or a sub-plan seen as a tool.
type Tool struct {
	Name   string
	Doc    string
	Params []*Param
	Result *Type
	Effect Effect
	// Model is set for tools that call a language model.
	Model bool
	// Latency and Tokens are declared estimates; zero when not declared.
	Latency time.Duration
	Tokens  int
	// Plan is the sub-plan when the tool is one.
	Plan *Plan
	// InputSchema is the JSON Schema the tool was imported from, if any.
	InputSchema []byte
	// Decl is the declaration; File names the file it is in: the plan's,
	// an imported file's, or "" for the operator's definition
	// (Config.Tools), the only kind whose http or command block
	// (Decl.Binding) may be bound to run.
	Decl *lang.ToolDecl
	File string

	// Built once from Params, on first use.
	paramsOnce         sync.Once
	paramIndex         map[string]*Param
	defaults, required []*Param
	// decoded is InputSchema decoded, on first use.
	decodedOnce sync.Once
	decoded     map[string]any
	// closes is set when InputSchema may close an object
	// (additionalProperties), read on first use.
	mayCloseOnce sync.Once
	closes       bool

	// schema validates constant arguments against InputSchema as the
	// runtime validates a call's arguments; built on first use, nil when
	// the tool has no input schema or one that does not compile.
	schemaOnce sync.Once
	schema     *toolkit.Schema
	// paramSchemas holds, per parameter name, the part of the input
	// schema its value must match, and defaultErrs why a parameter's
	// default does not match its part; both are made once for the tool,
	// so that checking a call allocates nothing for its schema.
	paramSchemasOnce sync.Once
	paramSchemas     map[string]*toolkit.Schema
	defaultErrs      map[*Param]error
}

// argSchema returns the validator of the tool's input schema, or nil.
func (t *Tool) argSchema() *toolkit.Schema {
	t.schemaOnce.Do(func() {
		if len(t.InputSchema) == 0 {
			return
		}
		if s, err := toolkit.NewSchema(t.Name+"/input", t.InputSchema); err == nil {
			t.schema = s
		}
	})
	return t.schema
}

// paramSchema returns the schema the argument name of the tool must
// match, or nil when the input schema says nothing of it that way. The
// schemas of the tool's parameters are looked up once, on first use.
func (t *Tool) paramSchema(name string) *toolkit.Schema {
	s := t.argSchema()
	if s == nil {
		return nil
	}
	t.paramSchemasOnce.Do(func() {
		t.paramSchemas = make(map[string]*toolkit.Schema, len(t.Params))
		for _, p := range t.Params {
			sub, seen := t.paramSchemas[p.Name]
			if !seen {
				sub, _ = s.Property(p.Name)
				t.paramSchemas[p.Name] = sub
			}
			if p.HasDefault && sub != nil {
				if err := sub.Validate(p.Default); err != nil {
					if t.defaultErrs == nil {
						t.defaultErrs = map[*Param]error{}
					}
					t.defaultErrs[p] = err
				}
			}
		}
	})
	if sub, ok := t.paramSchemas[name]; ok {
		return sub
	}
	sub, _ := s.Property(name)
	return sub
}

// defaultError returns why the default of parameter p does not match
// the tool's input schema, or nil when it does or the schema says
// nothing of p.
func (t *Tool) defaultError(p *Param) error {
	if t.paramSchema(p.Name) == nil {
		return nil
	}
	return t.defaultErrs[p]
}

func (t *Tool) indexParams() {
	t.paramsOnce.Do(func() {
		t.paramIndex = make(map[string]*Param, len(t.Params))
		for _, p := range t.Params {
			if _, dup := t.paramIndex[p.Name]; !dup {
				t.paramIndex[p.Name] = p
			}
			switch {
			case p.HasDefault:
				t.defaults = append(t.defaults, p)
			case !p.Optional:
				t.required = append(t.required, p)
			}
		}
	})
}

// Defaults returns the parameters that have a default value.
func (t *Tool) Defaults() []*Param {
	t.indexParams()
	return t.defaults
}

// Required returns the parameters a call must pass: neither optional nor
// with a default.
func (t *Tool) Required() []*Param {
	t.indexParams()
	return t.required
}

// Param returns the parameter with the given name, or nil.
func (t *Tool) Param(name string) *Param {
	if len(t.Params) <= 16 {
		for _, p := range t.Params {
			if p.Name == name {
				return p
			}
		}
		return nil
	}
	t.indexParams()
	return t.paramIndex[name]
}

// Param is a tool parameter.
type Param struct {
	Name     string
	Type     *Type
	Optional bool
	// Default is the value used when the argument is omitted.
	Default    any
	HasDefault bool
	Doc        string
}

// Plan is a checked plan: the main plan of a file or a sub-plan.
type Plan struct {
	// Name is "" for the main plan.
	Name string
	Span lang.Span
	// Mode is the declared mode, "eager" or "lazy", or "" when the plan
	// declares none; RunMode says which applies.
	Mode string
	// Policy is what the run does when a step fails.
	Policy Policy
	// Approve is set when a person must approve the whole plan; Message
	// is what to show them.
	Approve        bool
	ApproveMessage string
	// Input is the object type of the plan's input (a sub-plan's
	// parameters); InputDefaults holds the values of fields with defaults.
	Input         *Type
	InputDefaults map[string]any
	// Steps are in source order.
	Steps []*Step
	// Slots holds every state slot; SlotNames lists them sorted.
	Slots     map[string]*Slot
	SlotNames []string
	// Output is the plan's output expression (nil when the plan has none:
	// its result is then the whole state) and OutputType its type.
	Output     *Operand
	OutputType *Type
	// Env is the CEL environment the plan's expressions were checked in.
	Env *cel.Env
	// order is a topological order of the steps, when they have no cycle.
	order []int
	// slots are the slots in the order of SlotNames.
	slots []*Slot
}

// RunMode returns the mode the plan runs in: its declared mode, else lazy
// when it asks for approval as a whole (which needs the whole plan before
// anything runs), else eager, the default of seed 003.
func (p *Plan) RunMode() string {
	switch {
	case p.Mode != "":
		return p.Mode
	case p.Approve:
		return "lazy"
	}
	return "eager"
}

// Policy is a plan's failure policy.
type Policy struct {
	// Action is "abort", "skip", "continue" or "replan".
	Action string
	// MaxReplans bounds replanning; 0 means the default.
	MaxReplans int
}

// Slot is a state slot.
type Slot struct {
	Name string
	// Type is the slot's type: its declared type, else its writers'
	// output type, else the type of its initial value when no step
	// writes it, else any.
	Type *Type
	// Declared is the type the state block declares, or nil.
	Declared *Type
	// Initial is the value the state block gives the slot before the plan
	// starts; HasInitial says whether there is one.
	Initial    any
	HasInitial bool
	// Writers are the steps that write the slot; Readers those that read
	// it. ErrorWriters write it as the error alternative of `||`.
	Writers      []*Step
	ErrorWriters []*Step
	Readers      []*Step
	// ReadByOutput is set when the plan's output reads the slot.
	ReadByOutput bool
	// Span is where the slot is first declared or written.
	Span lang.Span
	// While the dependency graph is built: the last step found reading
	// the slot, and how many do.
	readBy  *Step
	readers int32
	// index is 1 + the slot's position in Plan.SlotNames.
	index int32
}

// Step is a checked step.
type Step struct {
	Node *lang.Step
	// Index is the step's position in Plan.Steps; ID is its label, or the
	// tool's name with "#n" added when the tool is called more than once.
	Index int
	ID    string
	Tool  *Tool
	Args  []*Arg
	// Out and ErrOut are the slots the step writes on success and, with
	// `||`, on failure; "" when absent.
	Out, ErrOut string
	// OutType is the type of the value written to Out (a list for a for
	// each). SlotType is the type of the slot Out, which the value
	// conforms to as well: OutType itself, or another type when another
	// step decides the slot's type (this step's OutType may be any).
	OutType  *Type
	SlotType *Type
	// Deps are the steps this one waits for, sorted by index, each once,
	// but for a step whose slot and error slot are both read: it has a
	// dependency through each (and never runs, since only one of them is
	// written).
	Deps []Dep
	// Each is the for-each clause, or nil.
	Each *Each
	// When is the step's condition, or nil.
	When *Operand
	// Expects are checkable success criteria, all of which must hold;
	// Criteria are sentences for an evaluator model to judge.
	Expects  []*Operand
	Criteria []string
	Retry    int
	Backoff  time.Duration
	Timeout  time.Duration
	Fallback *Fallback
	// Approve is set when a person approves the step before it runs.
	Approve        bool
	ApproveMessage string
	// Result is the known result (the `result` option): the tool is not
	// called.
	Result *Operand
	// Gated is set when an approval gate (this step's, an ancestor's, or
	// the plan's) comes before the step.
	Gated bool
	// Task is set for a task: a goal and the candidates a model chooses
	// among when the step runs; Tool is nil then.
	Task *Task
	// Hint is the step's routing hint as the operator declares it (a
	// near miss mapped to it), or "" when it has none or it was dropped.
	Hint string

	// outSlot and errSlot are 1 + the positions of Out and ErrOut in
	// Plan.SlotNames, set by Compile; 0 when absent or not compiled.
	outSlot, errSlot int32
}

// OutIndex returns the position of Out in Plan.SlotNames; ok is false
// when the step writes no slot or its plan is not compiled.
func (s *Step) OutIndex() (pos int, ok bool) { return int(s.outSlot) - 1, s.outSlot > 0 }

// ErrOutIndex returns the position of ErrOut in Plan.SlotNames; ok is
// false when the step has no error slot or its plan is not compiled.
func (s *Step) ErrOutIndex() (pos int, ok bool) { return int(s.errSlot) - 1, s.errSlot > 0 }

// ToolName is the name of the tool or sub-plan the step calls, whether it
// was resolved or not; "task" for a task.
func (s *Step) ToolName() string {
	if s.Tool != nil {
		return s.Tool.Name // the same name, without reaching into the tree
	}
	return s.Node.Callee()
}

// Task is what a task step leaves to a model: the goal, and the tools and
// sub-plans it may choose among. The model chooses one candidate and fills
// its arguments; the result must fit the step's slot.
type Task struct {
	// Goal is the goal's text and Reads the references in it, whose
	// values the model is given.
	Goal  string
	Reads []*RefPath
	// Candidates are the tools and sub-plans the model may choose, the
	// ones the plan lists (narrowed to those its hint routes to), or
	// those the hint routes to when the plan lists none. Each is one the
	// checker resolved: the operator's, or one the plan declares.
	Candidates []*Tool
}

// Candidate returns the candidate of the given name, or nil: a model's
// choice is taken only when it names one.
func (t *Task) Candidate(name string) *Tool {
	for _, c := range t.Candidates {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Holes returns the arguments of the step that a model fills when it
// runs, in order.
func (s *Step) Holes() []*Arg {
	var out []*Arg
	for _, a := range s.Args {
		if a.Value != nil && a.Value.Kind == OpHole {
			out = append(out, a)
		}
	}
	return out
}

// Dep is a dependency of a step on an earlier one.
type Dep struct {
	Step int
	// Slot is the slot through which the step depends; Kind says how it
	// reads it.
	Slot string
	Kind DepKind
	// slot is 1 + the position of Slot in Plan.SlotNames, set by Compile.
	slot int32
}

// SlotIndex returns the position of Slot in Plan.SlotNames; ok is false
// until the plan is compiled.
func (d Dep) SlotIndex() (pos int, ok bool) { return int(d.slot) - 1, d.slot > 0 }

// DepKind says how a step reads the slot it depends through.
type DepKind uint8

// The dependency kinds.
const (
	DepData  DepKind = iota // an argument or the for-each list reads the slot
	DepWhen                 // only the when condition (or expect) reads it
	DepError                // the slot is the error alternative of the writer
)

// String returns "data", "when" or "error".
func (k DepKind) String() string { return [...]string{"data", "when", "error"}[k] }

// Arg is a checked argument.
type Arg struct {
	Name  string
	Param *Param
	Value *Operand
}

// Each is a checked for-each clause.
type Each struct {
	Var  string
	List *Operand
	// Max bounds the number of elements; ElemType is the element's type.
	Max      int
	ElemType *Type
}

// Fallback is the tool called when the step's tool fails.
type Fallback struct {
	Tool *Tool
	Args []*Arg
}

// Info is what Check resolved about a file.
type Info struct {
	// File is the file that was checked.
	File *lang.File
	// Main is the file's plan; Plans holds it and its sub-plans by name
	// ("" for the main plan).
	Main  *Plan
	Plans map[string]*Plan
	// Tools are the tools the plan can call, by name.
	Tools map[string]*Tool
	// Types are the declared types, by name.
	Types map[string]*Type
	// Imports are the files the plan imported, in the order it names
	// them: what to keep to check it again (see planfile.Source).
	Imports []Import
}
