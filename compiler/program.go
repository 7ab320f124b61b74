package compiler

import (
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/dominikbraun/graph"

	"github.com/obelisk-plan/obelisk/lang"
)

// Program is a compiled plan: its steps with dense integer dependencies, in
// the form the interpreter runs, and the analysis of its graph.
type Program struct {
	// Plan is the checked plan the program was compiled from; Info holds
	// the file's tools, types and sub-plans.
	Plan *Plan
	Info *Info
	// Steps are the plan's steps; Pred[i] and Succ[i] list the steps step
	// i waits for and the steps that wait for it, each once, sorted.
	Steps []*Step
	Pred  [][]int32
	Succ  [][]int32
	// Order is a topological order of the steps.
	Order []int32
	// Slots indexes the plan's slots: SlotIndex[name] is the position of a
	// slot in Plan.SlotNames.
	SlotIndex map[string]int
	// Sub holds the compiled sub-plans by name.
	Sub map[string]*Program
	// Analysis is the static analysis of the graph.
	Analysis *Analysis
	// Initial lists the positions of the slots that have an initial
	// value (a state block's), so that a run fills them without walking
	// every slot.
	Initial []int32
	// CallArgs are the arguments of every step, in one piece, in the
	// order of the steps and of their arguments: step i's are
	// CallArgs[ArgStart[i]:ArgStart[i+1]]. A run evaluates them from here
	// without reaching into each operand. Both are nil for a program not
	// made by Compile.
	CallArgs []CallArg
	ArgStart []int32

	celMu    sync.Mutex
	programs map[celProgramKey]cel.Program
	dag      graph.Graph[int, int]
	dagOnce  sync.Once
}

// ErrNotChecked is returned by Compile for a plan whose check found errors.
var ErrNotChecked = errors.New("the plan has errors; check it first")

// Options configure compilation.
type Options struct {
	// DefaultLatency is the latency assumed for a step whose tool declares
	// none (default 100ms); DefaultModelLatency for a model tool (default
	// 2s).
	DefaultLatency      time.Duration
	DefaultModelLatency time.Duration
	// MaxParallel is the parallelism the estimates assume (default 8).
	MaxParallel int
}

func (o Options) withDefaults() Options {
	if o.DefaultLatency <= 0 {
		o.DefaultLatency = 100 * time.Millisecond
	}
	if o.DefaultModelLatency <= 0 {
		o.DefaultModelLatency = 2 * time.Second
	}
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	return o
}

// Compile lowers a checked plan to a program. The diagnostics of Check must
// hold no error. Compile runs in time linear in the size of the plan.
func Compile(info *Info, diags lang.Diagnostics, opts Options) (*Program, error) {
	if diags.HasErrors() || info == nil || info.Main == nil {
		return nil, ErrNotChecked
	}
	opts = opts.withDefaults()
	subs := map[string]*Program{}
	names := make([]string, 0, len(info.Plans))
	for n := range info.Plans {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// Sub-plans are compiled callees first, so a caller's estimates can
	// use its callees' critical paths.
	var compile func(name string) (*Program, error)
	compiling := map[string]bool{}
	compile = func(name string) (*Program, error) {
		if p, ok := subs[name]; ok {
			return p, nil
		}
		if compiling[name] {
			return nil, fmt.Errorf("sub-plan %s calls itself", name)
		}
		compiling[name] = true
		plan := info.Plans[name]
		for _, s := range plan.Steps {
			callees := []*Tool{s.Tool}
			if s.Task != nil {
				callees = s.Task.Candidates
			}
			for _, t := range callees {
				if t != nil && t.Plan != nil {
					if _, err := compile(t.Plan.Name); err != nil {
						return nil, err
					}
				}
			}
		}
		p, err := lower(plan, info, subs, opts)
		if err != nil {
			return nil, err
		}
		if name != "" {
			subs[name] = p
		}
		return p, nil
	}
	for _, n := range names {
		if _, err := compile(n); err != nil {
			return nil, err
		}
	}
	return compile("")
}

// lower builds the program of one plan.
func lower(plan *Plan, info *Info, subs map[string]*Program, opts Options) (*Program, error) {
	n := len(plan.Steps)
	p := &Program{
		Plan:      plan,
		Info:      info,
		Steps:     plan.Steps,
		Pred:      make([][]int32, n),
		Succ:      make([][]int32, n),
		SlotIndex: make(map[string]int, len(plan.SlotNames)),
		Sub:       subs,
		programs:  map[celProgramKey]cel.Program{},
	}
	for i, name := range plan.SlotNames {
		p.SlotIndex[name] = i
	}
	resolveSlots(plan, p.SlotIndex)
	// Every step's predecessors in one piece, and its successors in
	// another.
	// A step may depend twice on one step, through its slot and its
	// error slot; it is one edge.
	edges := 0
	nsucc := make([]int32, n)
	for _, s := range plan.Steps {
		for k, d := range s.Deps {
			if k == 0 || s.Deps[k-1].Step != d.Step {
				edges++
				nsucc[d.Step]++
			}
		}
	}
	preds, succs := make([]int32, edges), make([]int32, edges)
	off := int32(0)
	for i, k := range nsucc {
		if k > 0 {
			p.Succ[i] = succs[off : off : off+k]
		}
		off += k
	}
	for i, s := range plan.Steps {
		if len(s.Deps) == 0 {
			continue
		}
		u := 0
		for k, d := range s.Deps {
			if k == 0 || s.Deps[k-1].Step != d.Step {
				u++
			}
		}
		p.Pred[i] = take(&preds, u)[:0]
		for k, d := range s.Deps {
			if k == 0 || s.Deps[k-1].Step != d.Step {
				p.Pred[i] = append(p.Pred[i], int32(d.Step))
				p.Succ[d.Step] = append(p.Succ[d.Step], int32(i))
			}
		}
	}
	order := plan.order // the checker's, when it found no cycle
	if len(order) != n {
		var rest []int
		if order, rest = topoOrder(plan.Steps); len(rest) > 0 {
			return nil, fmt.Errorf("plan %q has a cycle", plan.Name)
		}
	}
	p.Order = make([]int32, len(order))
	for i, s := range order {
		p.Order[i] = int32(s)
	}
	p.Analysis = analyze(p, opts)
	for i, name := range plan.SlotNames {
		if sl := plan.Slots[name]; sl != nil && sl.HasInitial {
			p.Initial = append(p.Initial, int32(i))
		}
	}
	p.CallArgs, p.ArgStart = callArgs(plan.Steps)
	return p, nil
}

// CallArgKind says how the interpreter evaluates an argument.
type CallArgKind uint8

// The kinds of arguments.
const (
	// ArgOperand is evaluated from its operand.
	ArgOperand CallArgKind = iota
	// ArgConst is a constant scalar (nil, bool, int64, float64, string):
	// CallArg.Const.
	ArgConst
	// ArgSlot reads a slot whole (†state.x): the slot at CallArg.Slot.
	ArgSlot
	// ArgHole is left for a model to fill.
	ArgHole
)

// CallArg is an argument of a step's call, in the form the interpreter
// evaluates it: most are a constant or a slot read whole.
type CallArg struct {
	Name  string
	Kind  CallArgKind
	Slot  int32
	Const any
	Value *Operand
}

// callArgs flattens the arguments of steps whose slots are resolved.
func callArgs(steps []*Step) ([]CallArg, []int32) {
	n := 0
	for _, s := range steps {
		n += len(s.Args)
	}
	out := make([]CallArg, 0, n)
	start := make([]int32, len(steps)+1)
	for i, s := range steps {
		start[i] = int32(len(out))
		for _, a := range s.Args {
			ca := CallArg{Name: a.Name, Value: a.Value}
			switch v := a.Value; {
			case v.Kind == OpHole:
				ca.Kind = ArgHole
			case v.Kind == OpConst && isScalar(v.Const):
				ca.Kind, ca.Const = ArgConst, v.Const
			case v.Kind == OpRef && v.Ref.Root == "state" && len(v.Ref.Path) == 1 && v.Ref.slot > 0:
				ca.Kind, ca.Slot = ArgSlot, v.Ref.slot-1
			}
			out = append(out, ca)
		}
	}
	start[len(steps)] = int32(len(out))
	return out, start
}

// isScalar reports whether a constant is a JSON scalar, which nothing can
// change and which needs no copy.
func isScalar(v any) bool {
	switch v.(type) {
	case nil, bool, int64, float64, string:
		return true
	}
	return false
}

// resolveSlots records in the plan's steps and references the positions
// of the slots they name, so that the interpreter does not look them up
// by name. The positions are 1-based, 0 meaning unknown.
func resolveSlots(plan *Plan, index map[string]int) {
	pos := func(name string) int32 {
		if i, ok := index[name]; ok {
			return int32(i) + 1
		}
		return 0
	}
	ref := func(r *RefPath) {
		switch {
		case r == nil:
		case r.state != nil: // the checker found the slot
			r.slot = r.state.index
		case r.Root == "state" && len(r.Path) > 0 && !r.Path[0].IsIndex:
			r.slot = pos(r.Path[0].Field)
		}
	}
	operand := func(o *Operand) {
		switch {
		case o == nil || o.Kind == OpConst:
			return
		case o.Kind == OpRef: // most arguments, without walking
			ref(o.Ref)
			return
		}
		o.Walk(func(x *Operand) {
			ref(x.Ref)
			for _, r := range x.Refs {
				ref(r)
			}
		})
	}
	if len(plan.slots) == len(plan.SlotNames) {
		// The checker's slots, in order, know the steps that write them.
		for i, sl := range plan.slots {
			for _, w := range sl.Writers {
				w.outSlot = int32(i) + 1
			}
			for _, w := range sl.ErrorWriters {
				w.errSlot = int32(i) + 1
			}
		}
	} else {
		for _, s := range plan.Steps {
			if s.Out != "" {
				s.outSlot = pos(s.Out)
			}
			if s.ErrOut != "" {
				s.errSlot = pos(s.ErrOut)
			}
		}
	}
	for _, s := range plan.Steps {
		// A dependency is on a slot its step writes: its error slot for
		// an error dependency, else its slot.
		for k, d := range s.Deps {
			if w := plan.Steps[d.Step]; d.Kind == DepError {
				s.Deps[k].slot = w.errSlot
			} else {
				s.Deps[k].slot = w.outSlot
			}
		}
		for _, a := range s.Args {
			operand(a.Value)
		}
		if s.Fallback != nil {
			for _, a := range s.Fallback.Args {
				operand(a.Value)
			}
		}
		if s.Each != nil {
			operand(s.Each.List)
		}
		operand(s.When)
		operand(s.Result)
		for _, x := range s.Expects {
			operand(x)
		}
	}
	operand(plan.Output)
}

// Graph returns the plan as a graph of the dominikbraun/graph library:
// vertices are step indexes, edges are dependencies. Attributes carry what
// a drawing shows: a vertex's label and shape; an edge's slot ("label"),
// kind ("kind": data, when or error) and style (when dependencies dashed,
// error dependencies red). It is built on first use; the interpreter does
// not need it.
func (p *Program) Graph() graph.Graph[int, int] {
	p.dagOnce.Do(func() {
		g := graph.New(graph.IntHash, graph.Directed(), graph.Acyclic())
		for i, s := range p.Steps {
			label := s.ID
			if s.Tool != nil && s.Tool.Name != s.ID {
				label += "\\n" + s.Tool.Name
			}
			if s.Task != nil {
				label += "\\ntask: " + taskCandidates(s.Task, " | ")
			}
			attrs := []func(*graph.VertexProperties){
				graph.VertexAttribute("label", label),
				graph.VertexAttribute("shape", "box"),
			}
			if s.Approve {
				attrs = append(attrs, graph.VertexAttribute("peripheries", "2"))
			}
			if s.Each != nil {
				attrs = append(attrs, graph.VertexAttribute("style", "rounded"))
			}
			_ = g.AddVertex(i, attrs...)
		}
		for i, s := range p.Steps {
			for _, d := range s.Deps {
				attrs := []func(*graph.EdgeProperties){
					graph.EdgeAttribute("label", d.Slot),
					graph.EdgeAttribute("kind", d.Kind.String()),
				}
				switch d.Kind {
				case DepWhen:
					attrs = append(attrs, graph.EdgeAttribute("style", "dashed"))
				case DepError:
					attrs = append(attrs, graph.EdgeAttribute("color", "red"), graph.EdgeAttribute("fontcolor", "red"))
				}
				_ = g.AddEdge(d.Step, i, attrs...)
			}
		}
		p.dag = g
	})
	return p.dag
}

// CEL returns the program of a CEL operand, compiled once for each cost
// limit and cached. The program stops an evaluation that costs more than
// costLimit (0 takes DefaultMaxCost), calls whose work could outgrow
// what is left of the limit before they start (see celcost.go), and checks
// the context of ContextEval every 100 iterations of a comprehension.
// Programs are safe for concurrent use.
func (p *Program) CEL(op *Operand, costLimit uint64) (cel.Program, error) {
	if costLimit == 0 {
		costLimit = DefaultMaxCost
	}
	p.celMu.Lock()
	defer p.celMu.Unlock()
	key := celProgramKey{op, costLimit}
	if prg, ok := p.programs[key]; ok {
		return prg, nil
	}
	env := op.env
	if env == nil {
		env = p.Plan.Env
	}
	checked := op.checked
	if checked == nil && env != nil && op.expr != nil {
		// An expression of a shape checked before: the same check,
		// now for this text.
		ast, iss := parseChecked(env, op.expr.CELText())
		if iss.Err() == nil {
			ast, iss = env.Check(ast)
		}
		if err := iss.Err(); err != nil {
			return nil, fmt.Errorf("compiling expression %q: %w", op.Text, err)
		}
		checked = ast
	}
	if env == nil || checked == nil {
		return nil, fmt.Errorf("expression %q was not checked", op.Text)
	}
	opts, err := celProgramOptions(costLimit)
	if err != nil {
		return nil, fmt.Errorf("compiling expression %q: %w", op.Text, err)
	}
	prg, err := env.Program(checked, opts...)
	if err != nil {
		return nil, fmt.Errorf("compiling expression %q: %w", op.Text, err)
	}
	p.programs[key] = prg
	return prg, nil
}

// celProgramKey is what a compiled CEL program is cached by.
type celProgramKey struct {
	op    *Operand
	limit uint64
}

// taskCandidates joins the names of a task's candidates.
func taskCandidates(t *Task, sep string) string {
	names := make([]string, len(t.Candidates))
	for i, c := range t.Candidates {
		names[i] = c.Name
	}
	return strings.Join(names, sep)
}

// Programs yields the program under the name "", then each of its
// sub-plans once, by name in order: the one walk over a compiled plan and
// its sub-plans.
func (p *Program) Programs() iter.Seq2[string, *Program] {
	return func(yield func(string, *Program) bool) {
		if !yield("", p) {
			return
		}
		names := make([]string, 0, len(p.Sub))
		for name, sub := range p.Sub {
			if sub != p {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			if !yield(name, p.Sub[name]) {
				return
			}
		}
	}
}

// CalledTools returns the tools the program and its sub-plans may call,
// each once, in the order the plan's steps and then its sub-plans' (see
// Programs) first name them: the steps' tools, their
// fallbacks and the candidates of their tasks. Sub-plans are not tools
// and are left out, as are the tools of steps whose result is known (the
// `result` option), which are never called.
func (p *Program) CalledTools() []*Tool { return p.tools(false) }

// NamedTools returns the tools the program and its sub-plans name, as
// CalledTools does, with those of steps whose result is known: every tool
// whose signature the plan was checked against.
func (p *Program) NamedTools() []*Tool { return p.tools(true) }

func (p *Program) tools(known bool) []*Tool {
	seen := map[string]bool{}
	var out []*Tool
	for _, prog := range p.Programs() {
		for _, s := range prog.Steps {
			if s.Result != nil && !known {
				continue
			}
			tools := []*Tool{s.Tool}
			if s.Fallback != nil {
				tools = append(tools, s.Fallback.Tool)
			}
			if s.Task != nil {
				tools = append(tools, s.Task.Candidates...)
			}
			for _, t := range tools {
				if t == nil || t.Plan != nil || seen[t.Name] {
					continue
				}
				seen[t.Name] = true
				out = append(out, t)
			}
		}
	}
	return out
}
