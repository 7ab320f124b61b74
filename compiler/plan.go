package compiler

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/obelisk-plan/obelisk/lang"
)

// planChecker checks one plan: the main plan or a sub-plan.
type planChecker struct {
	c     *checker
	p     *Plan
	types *celTypes
	// all holds the references every step reads, by how it reads them,
	// step after step; readAt[i] is where step i's references start in
	// each list, and readAt[i+1] where they end.
	all    stepReads
	readAt []readAt
	// base is the scope of a step that is not a for each.
	base *scope
	// stateType is the type of †state: an object of every slot.
	stateType *Type
	// nullAt and nullType are what walk found of the last reference it
	// followed: the first part of it that may be null, and its type.
	nullAt   string
	nullType *Type
	// absentAt is the first part of that reference that may be absent:
	// an optional field (a?: T), or an optional input field without a
	// default; "" when there is none.
	absentAt string
	// inOutput is set while the plan's output is checked: an output
	// reads what is absent as null. unwritten marks the slots the output
	// may find unwritten, and outputState is the type of †state there,
	// where those slots are optional fields.
	inOutput    bool
	unwritten   []bool
	outputState *Type
	// conditions are, by slot, what must hold for the slot to be
	// written when the run ends (see writtenConditions).
	conditions [][]string
	// slots are the plan's slots in the order of their names
	// (Plan.SlotNames).
	slots []*Slot
	// labels maps step labels to their spans, for duplicate detection.
	labels map[string]lang.Span
	// onCycle marks the steps on or behind a dependency cycle.
	onCycle map[int]bool
	// misread holds the slots read through a reference that has an error
	// of its own (a field the slot's type lacks): they count as read, so
	// that the error does not also make them "never read".
	misread map[string]bool
	// shapes holds the type of every CEL expression shape checked
	// without errors; typeIDs numbers the types in their keys.
	shapes  map[celShape]*Type
	typeIDs map[*Type]uint32
	keyBuf  []byte
	// place is where the expression being checked stands, to explain a
	// syntax error in it; inText holds the arguments of the call being
	// checked that a syntax error shows are in another argument's text
	// (a comma missing between them), which are not missing.
	place  lang.Place
	inText map[string]bool
	// Memory for what every step has (arguments, their operands and
	// references, slots and their first writers), sized for the plan and
	// handed out by take.
	argMem    []Arg
	argPtrs   []*Arg
	operands  []Operand
	refPaths  []refPathMem
	slotMem   []Slot
	stepLists []*Step
}

// take hands out the next n elements of a pool, or new memory when the
// pool has fewer left. Appending to what it returns copies it.
func take[T any](pool *[]T, n int) []T {
	if len(*pool) < n {
		return make([]T, n)
	}
	r := (*pool)[:n:n]
	*pool = (*pool)[n:]
	return r
}

// appendStep appends s to a list of steps; the first element of the list
// comes from pool, as most lists have one.
func appendStep(list []*Step, s *Step, pool *[]*Step) []*Step {
	if list == nil {
		list = take(pool, 1)[:0]
	}
	return append(list, s)
}

type stepReads struct {
	data, when, expect []*RefPath
}

type readAt struct{ data, when, expect int32 }

// reads returns the references step i reads.
func (pc *planChecker) reads(i int) stepReads {
	a, b := pc.readAt[i], pc.readAt[i+1]
	return stepReads{pc.all.data[a.data:b.data], pc.all.when[a.when:b.when], pc.all.expect[a.expect:b.expect]}
}

// scope is what references may name besides input and state: the element
// of a for each.
type scope struct {
	elem     string
	elemType *Type
	env      *cel.Env
	// own lists the slots the step writes, which its expect may read.
	own []string
}

func (c *checker) checkPlan(p *Plan, items []lang.Item, params []*lang.FieldDecl, _ lang.TypeExpr) {
	pc := &planChecker{c: c, p: p, types: newCELTypes(), labels: map[string]lang.Span{}, onCycle: map[int]bool{}, misread: map[string]bool{}, shapes: map[celShape]*Type{}, typeIDs: map[*Type]uint32{}, inText: map[string]bool{}}
	steps := lang.Steps(items)
	pc.size(steps)
	pc.settings(items)
	pc.input(items, params)
	pc.state(items)
	pc.declareSteps(steps)
	pc.slotTypes()
	pc.env()
	pc.base = &scope{env: p.Env}
	for _, s := range p.Steps {
		pc.checkStep(s)
	}
	pc.output(items)
	order := pc.graph()
	if len(order) == len(p.Steps) {
		p.order = order
	}
	pc.gates(order)
	pc.warnings()
	pc.checkDefaults()
}

// size allocates the memory the plan's steps need in one piece each: the
// slots their output paths name, their arguments, an operand for each
// argument and a resolved reference for each that is one.
func (pc *planChecker) size(steps []*lang.Step) {
	slots, args, refs := 0, 0, 0
	for _, n := range steps {
		if n.Out != nil {
			slots++
			if n.Out.Error != nil {
				slots++
			}
		}
		if n.Call == nil {
			continue
		}
		args += len(n.Call.Args)
		for _, a := range n.Call.Args {
			if _, ok := a.Value.(*lang.Ref); ok {
				refs++
			}
		}
	}
	pc.p.Slots = make(map[string]*Slot, slots)
	pc.slotMem = make([]Slot, slots)
	pc.stepLists = make([]*Step, slots)
	pc.argMem = make([]Arg, args)
	pc.argPtrs = make([]*Arg, args)
	pc.operands = make([]Operand, args)
	pc.refPaths = make([]refPathMem, refs)
	pc.readAt = make([]readAt, len(steps)+1)
	pc.all = stepReads{data: make([]*RefPath, 0, args)}
}

// settings reads mode, failure policy and plan approval.
func (pc *planChecker) settings(items []lang.Item) {
	var mode, policy, approve lang.Node
	for _, it := range items {
		switch d := it.(type) {
		case *lang.ModeDecl:
			if mode != nil {
				pc.dup("mode", d.Span, mode.Range())
				continue
			}
			mode = d
			pc.p.Mode = d.Mode.Name
		case *lang.PolicyDecl:
			if policy != nil {
				pc.dup("failure policy", d.Span, policy.Range())
				continue
			}
			policy = d
			pc.p.Policy = Policy{Action: d.Action.Name}
			if d.Max != nil {
				n := d.Max.IntValue()
				if n < 1 || n > 100 {
					pc.c.errorf(lang.InvalidOption, d.Max.Span, "max replans must be between 1 and 100, not %d", n)
				} else {
					pc.p.Policy.MaxReplans = int(n)
				}
			}
		case *lang.ApproveDecl:
			if approve != nil {
				pc.dup("plan approval", d.Span, approve.Range())
				continue
			}
			approve = d
			pc.p.Approve = true
			pc.p.ApproveMessage = d.Message.StringValue()
		}
	}
	if pc.p.Approve && pc.p.Mode == "eager" {
		d := pc.c.errorf(lang.InvalidOption, approve.Range(), "a plan in eager mode cannot be approved as a whole: its steps run as they arrive; use mode lazy, or approve individual steps")
		related(d, pc.c.file.Name, mode.Range(), "eager mode is set here")
	}
}

func (pc *planChecker) dup(what string, span, prev lang.Span) {
	d := pc.c.errorf(lang.DuplicateDecl, span, "%s is set twice", what)
	related(d, pc.c.file.Name, prev, "first set here")
}

// input builds the plan's input type from its input block or, for a
// sub-plan, its parameters.
func (pc *planChecker) input(items []lang.Item, params []*lang.FieldDecl) {
	p := pc.p
	p.Input = &Type{Kind: KindObject, Name: "input"}
	p.InputDefaults = map[string]any{}
	fields := params
	var first lang.Span
	for _, it := range items {
		d, ok := it.(*lang.InputDecl)
		if !ok {
			continue
		}
		if first.IsValid() {
			pc.dup("input", d.Span, first)
			continue
		}
		first = d.Span
		fields = d.Fields
	}
	seen := map[string]bool{}
	for _, f := range fields {
		name := f.Name.Name
		if seen[name] {
			pc.c.errorf(lang.DuplicateDecl, f.Name.Span, "input field %s is declared twice", name)
			continue
		}
		seen[name] = true
		fld := &Field{Name: name, Type: pc.c.typeOf(f.Type), Optional: f.Optional, Doc: f.Doc()}
		if f.Default != nil {
			v, ok := constValue(f.Default)
			switch {
			case !ok:
				pc.c.errorf(lang.TypeMismatch, f.Default.Range(), "the default of input field %s must be a constant", name)
			default:
				if cv, msg := Conform(v, fld.Type, ""); msg != "" {
					pc.c.errorf(lang.TypeMismatch, f.Default.Range(), "default of input field %s: %s", name, msg)
				} else {
					p.InputDefaults[name] = cv
				}
			}
		}
		p.Input.Fields = append(p.Input.Fields, fld)
	}
}

// state reads the state block: declared slot types and initial values.
func (pc *planChecker) state(items []lang.Item) {
	var first lang.Span
	for _, it := range items {
		d, ok := it.(*lang.StateDecl)
		if !ok {
			continue
		}
		if first.IsValid() {
			pc.dup("state", d.Span, first)
			continue
		}
		first = d.Span
		for _, f := range d.Fields {
			name := f.Name.Name
			if _, ok := pc.p.Slots[name]; ok {
				pc.c.errorf(lang.DuplicateDecl, f.Name.Span, "state slot %s is declared twice", name)
				continue
			}
			slot := &Slot{Name: name, Declared: pc.c.typeOf(f.Type), Span: f.Name.Span}
			if f.Default != nil {
				v, ok := constValue(f.Default)
				switch {
				case !ok:
					pc.c.errorf(lang.TypeMismatch, f.Default.Range(), "the initial value of slot %s must be a constant", name)
				default:
					if cv, msg := Conform(v, slot.Declared, ""); msg != "" {
						pc.c.errorf(lang.TypeMismatch, f.Default.Range(), "initial value of slot %s: %s", name, msg)
					} else {
						v = cv
					}
					slot.Initial, slot.HasInitial = v, true
				}
			}
			pc.p.Slots[name] = slot
		}
	}
}

func (pc *planChecker) slot(name string, span lang.Span) *Slot {
	s, ok := pc.p.Slots[name]
	if !ok {
		s = &take(&pc.slotMem, 1)[0]
		s.Name, s.Span = name, span
		pc.p.Slots[name] = s
	}
	return s
}

// declareSteps creates the plan's steps, resolves their tools, gives them
// IDs and records the slots they write.
func (pc *planChecker) declareSteps(steps []*lang.Step) {
	c := pc.c
	c.steps += len(steps)
	// How many unlabeled steps call each tool, and how many of them have
	// been numbered. Steps that follow each other mostly call the same
	// tool, so the last one looked up is kept at hand.
	type toolUse struct{ unlabeled, numbered int }
	uses := map[string]*toolUse{}
	var lastName string
	var last *toolUse
	use := func(name string) *toolUse {
		if last == nil || name != lastName {
			if last = uses[name]; last == nil {
				last = &toolUse{}
				uses[name] = last
			}
			lastName = name
		}
		return last
	}
	for _, n := range steps {
		if n.Label != nil {
			if prev, ok := pc.labels[n.Label.Name]; ok {
				d := c.errorf(lang.DuplicateDecl, n.Label.Span, "step label %s is used twice", n.Label.Name)
				related(d, c.file.Name, prev, "first used here")
				continue
			}
			pc.labels[n.Label.Name] = n.Label.Span
		} else {
			use(n.Callee()).unlabeled++
		}
	}
	mem := make([]Step, len(steps)) // one allocation for all the steps
	// The IDs made up of a tool's name and a number are written into one
	// buffer, which becomes one string at the end.
	var ids []byte
	type idAt struct{ step, start, end int32 }
	var numbered []idAt
	var lastTool *Tool
	pc.p.Steps = slices.Grow(pc.p.Steps, len(steps))
	for i, n := range steps {
		s := &mem[i]
		s.Node, s.Index = n, i
		name := n.Callee()
		switch u := use(name); {
		case n.Label != nil:
			s.ID = n.Label.Name
		case u.unlabeled == 1 && !pc.labelTaken(name):
			s.ID = name
		default:
			if numbered == nil {
				numbered = make([]idAt, 0, u.unlabeled)
				ids = make([]byte, 0, u.unlabeled*(len(name)+6))
			}
			start := len(ids)
			for {
				u.numbered++
				ids = append(ids[:start], name...)
				ids = append(ids, '#')
				ids = strconv.AppendInt(ids, int64(u.numbered), 10)
				if _, taken := pc.labels[string(ids[start:])]; !taken {
					break
				}
			}
			numbered = append(numbered, idAt{int32(i), int32(start), int32(len(ids))})
		}
		switch {
		case n.Task != nil:
			// The model chooses the tool when the step runs; the
			// result is the slot's declared type (see task).
			s.Task = &Task{Goal: n.Task.Goal.StringValue()}
		case lastTool != nil && name == lastTool.Name:
			s.Tool = lastTool
		default:
			s.Tool = pc.lookupTool(n.Call)
			lastTool = s.Tool
		}
		s.OutType = AnyType
		if s.Tool != nil {
			s.OutType = s.Tool.Result
		}
		if s.Task != nil && n.Out != nil {
			if slot := pc.p.Slots[n.Out.Success.Slot()]; slot != nil && slot.Declared != nil {
				s.OutType = slot.Declared
			} else if t, _ := c.candidatesType(n); t != nil {
				s.OutType = t
			}
		}
		if n.Each != nil {
			s.OutType = ListOf(s.OutType)
		}
		if n.Out != nil {
			s.Out = n.Out.Success.Slot()
			slot := pc.slot(s.Out, n.Out.Success.Span)
			slot.Writers = appendStep(slot.Writers, s, &pc.stepLists)
			if n.Out.Error != nil {
				s.ErrOut = n.Out.Error.Slot()
				if s.ErrOut == s.Out {
					c.errorf(lang.ConflictingSlot, n.Out.Error.Span, "the success and error slots of a step must differ: both are †state.%s", s.Out)
					s.ErrOut = ""
				} else {
					es := pc.slot(s.ErrOut, n.Out.Error.Span)
					es.ErrorWriters = appendStep(es.ErrorWriters, s, &pc.stepLists)
				}
			}
		}
		pc.p.Steps = append(pc.p.Steps, s)
	}
	all := string(ids)
	for _, at := range numbered {
		mem[at.step].ID = all[at.start:at.end]
	}
}

func (pc *planChecker) labelTaken(name string) bool {
	_, ok := pc.labels[name]
	return ok
}

// lookupTool resolves the tool a call names, reporting unknown tools.
func (pc *planChecker) lookupTool(call *lang.Call) *Tool {
	c := pc.c
	name := call.Tool.Name
	if t, ok := c.info.Tools[name]; ok {
		return t
	}
	if _, ok := c.planDecls[name]; ok {
		return nil // a sub-plan in a call cycle, reported already
	}
	candidates := make([]string, 0, len(c.info.Tools))
	for n := range c.info.Tools {
		candidates = append(candidates, n)
	}
	sort.Strings(candidates)
	// Tools of several MCP servers that share a name are known only by
	// their qualified names (server.tool).
	var qualified []string
	for _, n := range candidates {
		if strings.HasSuffix(n, "."+name) {
			qualified = append(qualified, n)
		}
	}
	switch len(qualified) {
	case 0:
	case 1:
		d := c.errorf(lang.UnknownTool, call.Tool.Span, "unknown tool %s (did you mean %q?)", name, qualified[0])
		replaceFix(d, call.Tool.Span, qualified[0], fmt.Sprintf("call %s instead", qualified[0]))
		return nil
	default:
		c.errorf(lang.UnknownTool, call.Tool.Span, "unknown tool %s: %s share that name, so call one of them by its full name", name, strings.Join(qualified, " and "))
		return nil
	}
	d := c.errorf(lang.UnknownTool, call.Tool.Span, "unknown tool %s%s", name, didYouMean(name, candidates))
	if s := lang.Closest(name, candidates); s != "" {
		replaceFix(d, call.Tool.Span, s, fmt.Sprintf("call %s instead", s))
	} else if len(candidates) > 0 && len(candidates) <= 12 {
		d.Message += "; the available tools are " + strings.Join(candidates, ", ")
	} else if len(candidates) == 0 {
		d.Message += ": the plan declares no tools; declare it with `tool " + name + "(…) -> T` or give the checker a tools file that provides it (compiler.Config.Tools)"
	}
	return nil
}

// slotTypes gives every slot its type and reports writers that disagree.
func (pc *planChecker) slotTypes() {
	c := pc.c
	// Sorted by name, compared by their first eight bytes as a number
	// first, which orders them as the strings do when it differs.
	type named struct {
		prefix uint64
		name   string
		slot   *Slot
	}
	byName := make([]named, 0, len(pc.p.Slots))
	for n, s := range pc.p.Slots {
		var b [8]byte
		copy(b[:], n)
		byName = append(byName, named{binary.BigEndian.Uint64(b[:]), n, s})
	}
	slices.SortFunc(byName, func(a, b named) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(byName))
	slots := make([]*Slot, len(byName))
	for i, ns := range byName {
		names[i], slots[i] = ns.name, ns.slot
		ns.slot.index = int32(i) + 1
	}
	pc.p.SlotNames, pc.p.slots, pc.slots = names, slots, slots
	type writer struct {
		step *Step
		typ  *Type
		span lang.Span
	}
	var buf []writer // every slot's writers in turn
	for _, slot := range slots {
		name := slot.Name
		ws := buf[:0]
		for _, w := range slot.Writers {
			ws = append(ws, writer{w, w.OutType, w.Node.Out.Success.Span})
		}
		for _, w := range slot.ErrorWriters {
			ws = append(ws, writer{w, ErrorType, w.Node.Out.Error.Span})
		}
		if len(ws) > 1 {
			slices.SortStableFunc(ws, func(a, b writer) int { return a.span.Start.Offset - b.span.Start.Offset })
		}
		buf = ws
		var first *writer
		for i := range ws {
			w := &ws[i]
			if slot.Declared != nil {
				if ok, why := Assignable(w.typ, slot.Declared); !ok {
					d := c.errorf(lang.ConflictingSlot, w.span, "slot %s is declared as %s, but step %s writes %s to it: %s", name, slot.Declared, w.step.ID, w.typ, why)
					related(d, c.file.Name, slot.Span, "declared here")
					continue
				}
			}
			if w.typ.Kind == KindAny {
				continue
			}
			if first == nil {
				first = w
				continue
			}
			if !sameType(first.typ, w.typ) {
				d := c.errorf(lang.ConflictingSlot, w.span, "slot %s is written with two types: step %s writes %s and step %s writes %s", name, first.step.ID, first.typ, w.step.ID, w.typ)
				related(d, c.file.Name, first.span, "step %s writes %s here", first.step.ID, first.typ)
			}
		}
		switch {
		case slot.Declared != nil:
			// The declaration fixes the type; the writers' values,
			// which fit it, are conformed to it.
			slot.Type = slot.Declared
		case first != nil:
			slot.Type = first.typ
		case slot.HasInitial && len(ws) == 0:
			slot.Type = TypeOfValue(slot.Initial)
		default:
			// Written with any: its initial value says nothing of what
			// the writers write.
			slot.Type = AnyType
		}
		// Under on failure continue, a step that fails and has no error
		// slot writes null to its slot, and the steps that read it run.
		if pc.p.Policy.Action == "continue" {
			for _, w := range slot.Writers {
				if w.ErrOut == "" {
					slot.Type = slot.Type.orNull()
					break
				}
			}
		}
		for _, w := range slot.Writers {
			w.SlotType = slot.Type
		}
	}
}

// env builds the CEL environment of the plan: the variables state and
// input, typed by the plan's slots and input.
func (pc *planChecker) env() {
	state := &Type{Kind: KindObject, Name: "state", Fields: make([]*Field, len(pc.p.SlotNames))}
	fields := make([]Field, len(pc.p.SlotNames))
	for i, s := range pc.slots {
		fields[i] = Field{Name: s.Name, Type: s.Type}
		state.Fields[i] = &fields[i]
	}
	state.indexed()
	pc.p.Input.indexed()
	pc.stateType = state
	base, err := baseEnv()
	if err == nil {
		pc.p.Env, err = base.Extend(
			cel.CustomTypeProvider(pc.types),
			cel.Variable("state", pc.types.celType(state, "state")),
			cel.Variable("input", pc.types.celType(pc.p.Input, "input")),
		)
	}
	if err != nil {
		// Only a defect of ours can get here; report it rather than panic.
		pc.c.errorf(lang.TypeMismatch, pc.p.Span, "internal error: building the expression environment: %v", err)
	}
}

// checkStep checks one step's call, for each, and options.
func (pc *planChecker) checkStep(s *Step) {
	c := pc.c
	n := s.Node
	// The step's references go to the end of pc.all.
	r := &pc.all
	defer func() {
		pc.readAt[s.Index+1] = readAt{int32(len(r.data)), int32(len(r.when)), int32(len(r.expect))}
	}()
	base := pc.base
	callScope := base
	if n.Each != nil {
		s.Each = &Each{Var: n.Each.Var.Name, Max: c.limits.MaxForEach, ElemType: AnyType}
		if v := n.Each.Var.Name; v == "state" || v == "input" {
			c.errorf(lang.InvalidOption, n.Each.Var.Span, "the element of a for each cannot be named %s: that name is taken by †%s", v, v)
		}
		s.Each.List = pc.operandAt(lang.Place{Kind: lang.PlaceEach}, n.Each.List, base, &r.data)
		switch lt := s.Each.List.Type; {
		case lt.Kind == KindList:
			s.Each.ElemType = lt.Elem
			if lt.Nullable {
				text := lang.FormatExpr(n.Each.List)
				c.errorf(lang.TypeMismatch, n.Each.List.Range(), "for each needs a list, and %s is %s, which may be null: check it first, as in for each %s in (%s != null ? %s : []): …", text, lt, n.Each.Var.Name, text, text)
			}
		case lt.Kind != KindAny:
			c.errorf(lang.TypeMismatch, n.Each.List.Range(), "for each needs a list, and this is %s", describeKind(lt))
		}
		if n.Each.Max != nil {
			m := int(n.Each.Max.IntValue())
			switch {
			case m < 1:
				c.errorf(lang.InvalidOption, n.Each.Max.Span, "max must be at least 1, not %d", m)
			case m > c.limits.MaxForEach:
				c.errorf(lang.LimitExceeded, n.Each.Max.Span, "max %d is more than the limit of %d elements for a for each (compiler.Limits.MaxForEach)", m, c.limits.MaxForEach)
			default:
				s.Each.Max = m
			}
		}
		pc.eachSize(s, n.Each)
		callScope = &scope{elem: s.Each.Var, elemType: s.Each.ElemType, env: pc.elemEnv(s.Each.Var, s.Each.ElemType)}
	}
	switch {
	case n.Task != nil:
		if c.cfg.NoFiller {
			d := c.errorf(lang.NoFiller, n.Task.Goal.Span, "task %s is left for a model to complete, and this run has no model to choose its tool", s.ID)
			d.Fix = &lang.Fix{Message: "call one of its candidates instead, with `when` on each call if a rule decides which"}
		}
		pc.task(s, n, &r.data)
	case s.Tool != nil:
		s.Args = pc.args(n.Call, s.Tool, callScope, &r.data)
	default:
		pc.argsUnchecked(n.Call, callScope, &r.data)
	}
	seen := map[string]lang.Span{}
	for _, o := range n.Options {
		kw := o.Keyword()
		if prev, ok := seen[kw]; ok && kw != "expect" {
			d := c.errorf(lang.InvalidOption, o.Range(), "option %s is given twice", kw)
			related(d, c.file.Name, prev, "first given here")
			continue
		}
		seen[kw] = o.Range()
		pc.option(s, o, base, r)
	}
	if n.Task != nil {
		for _, kw := range []string{"result", "fallback"} {
			if sp, ok := seen[kw]; ok {
				c.errorf(lang.InvalidOption, sp, "%s does not apply to a task: a model chooses among its candidates when it runs; list another candidate in using […] instead", kw)
			}
		}
		pc.taskCandidates(s, n)
	}
	if s.Result != nil && n.Task == nil {
		for _, a := range s.Holes() {
			c.errorf(lang.InvalidOption, a.Value.Span, "argument %s is a hole, and the step's result is given, so its tool is not called and the hole is never filled: give the argument a value, or drop the result", a.Name)
		}
		for _, kw := range []string{"retry", "timeout", "fallback"} {
			if sp, ok := seen[kw]; ok {
				c.errorf(lang.InvalidOption, sp, "%s does not apply to a step whose result is given: the tool is not called", kw)
			}
		}
		if n.Each != nil {
			c.errorf(lang.InvalidOption, seen["result"], "a for each cannot have a given result; give the list to the step that reads it instead")
		}
	}
}

// elemEnv extends the plan's environment with a for-each element.
func (pc *planChecker) elemEnv(name string, t *Type) *cel.Env {
	if pc.p.Env == nil {
		return nil
	}
	env, err := pc.p.Env.Extend(cel.Variable(name, pc.types.celType(t, name)))
	if err != nil {
		return pc.p.Env
	}
	return env
}

// args checks a call's arguments against the tool's parameters.
func (pc *planChecker) args(call *lang.Call, tool *Tool, sc *scope, reads *[]*RefPath) []*Arg {
	c := pc.c
	errorsBefore := len(c.diags)
	clear(pc.inText)
	out := take(&pc.argPtrs, len(call.Args))[:0]
	mem := take(&pc.argMem, len(call.Args))
	given := argSpans{args: call.Args}
	type rename struct {
		d    *lang.Diagnostic
		span lang.Span
		to   string
	}
	var renames []rename
	// wrongTool is set when the arguments are another tool's of the same
	// name (namesake): that is the one mistake, not the missing arguments.
	wrongTool := false
	for k, a := range call.Args {
		name := a.Name.Name
		if prev, ok := given.get(name, k); ok {
			d := c.errorf(lang.DuplicateArgument, a.Name.Span, "argument %s is passed twice", name)
			related(d, c.file.Name, prev, "first passed here")
			continue
		}
		given.add(name, a.Name.Span)
		param := tool.Param(name)
		op := pc.operandAt(lang.Place{Kind: lang.PlaceArgument, Call: call.Tool.Name, Name: name}, a.Value, sc, reads)
		if op != nil && op.Kind == OpHole && c.cfg.NoFiller {
			d := c.errorf(lang.NoFiller, a.Value.Range(), "argument %s of %s is left for a model to fill, and this run has no model to fill it", name, tool.Name)
			d.Fix = &lang.Fix{Message: "write the value: a reference or CEL when it comes from a result, a constant when it is known"}
		}
		if op != nil && op.Kind == OpHole && param != nil {
			// A model fills it with a value of the parameter's type,
			// which the run checks.
			op.Type = param.Type
			mem[k] = Arg{Name: name, Param: param, Value: op}
			out = append(out, &mem[k])
			continue
		}
		if param == nil {
			names := paramNames(tool)
			msg := fmt.Sprintf("%s has no parameter %s%s", tool.Name, name, didYouMean(name, names))
			if len(names) == 0 {
				msg = fmt.Sprintf("%s takes no arguments, and %s is passed", tool.Name, name)
			} else if lang.Closest(name, names) == "" {
				msg += "; its parameters are " + strings.Join(names, ", ")
			}
			alt := c.namesake(tool.Name, name)
			if alt != "" {
				msg += fmt.Sprintf("; another tool named %s, %s, has it: to call that one, write %s", tool.Name, alt, alt)
			}
			d := c.errorf(lang.UnknownArgument, a.Name.Span, "%s", msg)
			if s := lang.Closest(name, names); s != "" {
				renames = append(renames, rename{d, a.Name.Span, s})
			} else if alt != "" {
				replaceFix(d, call.Tool.Span, alt, "call "+alt)
				wrongTool = true
			}
			continue
		}
		pc.checkArg(a, op, param, tool)
		mem[k] = Arg{Name: name, Param: param, Value: op}
		out = append(out, &mem[k])
	}
	// A misspelt argument is one mistake: its fix renames it, and the
	// parameter it stands for is not reported missing as well.
	var renamed map[string]bool
	for _, r := range renames {
		if !given.has(r.to, len(call.Args)) && !renamed[r.to] {
			replaceFix(r.d, r.span, r.to, fmt.Sprintf("rename the argument to %s", r.to))
			if renamed == nil {
				renamed = map[string]bool{}
			}
			renamed[r.to] = true
		}
	}
	var missing []string
	for _, p := range tool.Required() {
		if !given.has(p.Name, len(call.Args)) && !renamed[p.Name] && !pc.inText[p.Name] {
			missing = append(missing, fmt.Sprintf("%s (%s)", p.Name, p.Type))
		}
	}
	if len(missing) > 0 && !wrongTool {
		word := "argument"
		if len(missing) > 1 {
			word = "arguments"
		}
		c.errorf(lang.MissingArgument, call.Span, "%s: missing required %s %s", tool.Name, word, strings.Join(missing, ", "))
	}
	pc.validateCall(call, out, tool, len(c.diags) > errorsBefore)
	return out
}

// argSpans finds the arguments of a call by name: by looking through the
// first ones when there are few, with a map when there are many.
type argSpans struct {
	args []*lang.Arg
	m    map[string]lang.Span
}

const argMapMin = 16

func (g *argSpans) add(name string, span lang.Span) {
	if len(g.args) < argMapMin {
		return
	}
	if g.m == nil {
		g.m = make(map[string]lang.Span, len(g.args))
	}
	if _, dup := g.m[name]; !dup {
		g.m[name] = span
	}
}

// get returns the span of the first argument named name among the first
// k.
func (g *argSpans) get(name string, k int) (lang.Span, bool) {
	if g.m != nil || len(g.args) >= argMapMin {
		s, ok := g.m[name]
		return s, ok
	}
	for _, a := range g.args[:k] {
		if a.Name.Name == name {
			return a.Name.Span, true
		}
	}
	return lang.Span{}, false
}

func (g *argSpans) has(name string, k int) bool {
	_, ok := g.get(name, k)
	return ok
}

func paramNames(t *Tool) []string {
	names := make([]string, len(t.Params))
	for i, p := range t.Params {
		names[i] = p.Name
	}
	return names
}

// argsUnchecked still checks the references of a call whose tool is
// unknown, so that their errors are reported too.
func (pc *planChecker) argsUnchecked(call *lang.Call, sc *scope, reads *[]*RefPath) {
	for _, a := range call.Args {
		pc.operandAt(lang.Place{Kind: lang.PlaceArgument, Call: call.Tool.Name, Name: a.Name.Name}, a.Value, sc, reads)
	}
}

// checkArg checks an argument's value against its parameter.
func (pc *planChecker) checkArg(a *lang.Arg, op *Operand, param *Param, tool *Tool) {
	if op == nil {
		return
	}
	if op.IsConst() {
		if msg := CheckValue(op.Const, param.Type, ""); msg != "" {
			pc.c.errorf(lang.TypeMismatch, a.Value.Range(), "argument %s of %s: %s", param.Name, tool.Name, msg)
			return
		}
		pc.validateArg(param, op, tool)
		return
	}
	if ok, why := fits(op, param.Type); !ok {
		pc.c.errorf(lang.TypeMismatch, a.Value.Range(), "argument %s of %s wants %s: %s%s", param.Name, tool.Name, param.Type, why, pc.nullHint(why))
		return
	}
	if msg := closedArgument(tool, param, op.Type); msg != "" {
		pc.c.errorf(lang.TypeMismatch, a.Value.Range(), "%s", msg)
		return
	}
	pc.validateArg(param, op, tool)
}

// fits checks a non-constant operand against a type: lists and objects
// element by element, so constants inside them are checked by value.
func fits(op *Operand, t *Type) (bool, string) {
	if t == nil || t.Kind == KindAny {
		return true, ""
	}
	switch op.Kind {
	case OpConst:
		if msg := CheckValue(op.Const, t, ""); msg != "" {
			return false, msg
		}
		return true, ""
	case OpList:
		if t.Kind == KindList {
			for i, e := range op.Elems {
				if ok, why := fits(e, t.Elem); !ok {
					return false, fmt.Sprintf("element %d: %s", i, why)
				}
			}
			return true, ""
		}
	case OpObject:
		if t.Kind == KindObject && !(t.Open && len(t.Fields) == 0) {
			for i, k := range op.Keys {
				if f := t.Field(k); f != nil {
					if ok, why := fits(op.Vals[i], f.Type); !ok {
						return false, fmt.Sprintf("field %s: %s", k, why)
					}
				}
			}
			for _, f := range t.Fields {
				if !f.Optional && !containsString(op.Keys, f.Name) {
					return false, fmt.Sprintf("missing required field %s", f.Name)
				}
			}
			return true, ""
		}
	}
	src := op.Type
	if ok, why := Assignable(src, t); !ok {
		if op.Kind == OpRef {
			return false, fmt.Sprintf("%s is %s", op.Ref, describeKind(src)) + tail(why, src, t)
		}
		return false, why
	}
	return true, ""
}

func tail(why string, src, dst *Type) string {
	generic := fmt.Sprintf("%s is not %s", describeKind(src), describeKind(dst))
	if why == generic {
		return ""
	}
	return ": " + why
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// option checks one step option.
func (pc *planChecker) option(s *Step, o lang.Option, base *scope, r *stepReads) {
	c := pc.c
	switch o := o.(type) {
	case *lang.WhenOption:
		s.When = pc.operandAt(lang.Place{Kind: lang.PlaceStatement, Name: "when"}, o.Cond, base, &r.when)
		s.When.Text = lang.FormatExpr(o.Cond)
		pc.wantBool("when", s.When)
	case *lang.ExpectOption:
		if l, ok := o.Cond.(*lang.Literal); ok && l.Kind == lang.LitString {
			if strings.TrimSpace(l.StringValue()) == "" {
				c.errorf(lang.InvalidOption, l.Span, "the expect criterion is empty: state what a good result looks like")
				return
			}
			s.Criteria = append(s.Criteria, l.StringValue())
			if !c.cfg.HasEvaluator {
				d := c.warnf(lang.UnjudgedCriterion, l.Span, "no evaluator will judge this criterion: only an evaluator model judges a criterion in words (obelisk agent, or vm.Options.Evaluator), and the run records it as unjudged")
				d.Fix = &lang.Fix{Message: "state it as a condition on the result (expect size(†state.x) > 0), or run the plan where an evaluator judges it"}
				if c.file.JSON {
					d.Fix.Message = "state it as a condition on the result in \"_expect\" (\"size(†state.x) > 0\"), or run the plan where an evaluator judges it"
				}
			}
			return
		}
		own := &scope{env: base.env, own: []string{s.Out, s.ErrOut}}
		x := pc.operandAt(lang.Place{Kind: lang.PlaceStatement, Name: "expect"}, o.Cond, own, &r.expect)
		x.Text = lang.FormatExpr(o.Cond)
		pc.wantBool("expect", x)
		s.Expects = append(s.Expects, x)
	case *lang.RetryOption:
		n := o.Count.IntValue()
		if n < 0 || n > 100 {
			c.errorf(lang.InvalidOption, o.Count.Span, "retry takes a count from 0 to 100, not %d", n)
		} else {
			s.Retry = int(n)
		}
		if o.Backoff != nil {
			if d := durationOf(o.Backoff); d <= 0 {
				c.errorf(lang.InvalidOption, o.Backoff.Span, "backoff must be longer than 0")
			} else {
				s.Backoff = d
			}
		}
	case *lang.TimeoutOption:
		if d := durationOf(o.Duration); d <= 0 {
			c.errorf(lang.InvalidOption, o.Duration.Span, "timeout must be longer than 0")
		} else {
			s.Timeout = d
		}
	case *lang.FallbackOption:
		for _, a := range o.Call.Args {
			if h, ok := a.Value.(*lang.HoleExpr); ok {
				c.errorf(lang.InvalidOption, h.Span, "argument %s of the fallback %s is a hole: a fallback's arguments are given, not filled by a model; give it a value, or make the fallback a candidate of a task", a.Name.Name, o.Call.Tool.Name)
			}
		}
		fb := &Fallback{Tool: pc.lookupTool(o.Call)}
		sc := base
		if s.Each != nil {
			sc = &scope{elem: s.Each.Var, elemType: s.Each.ElemType, env: pc.elemEnv(s.Each.Var, s.Each.ElemType)}
		}
		if fb.Tool == nil {
			pc.argsUnchecked(o.Call, sc, &r.data)
		} else {
			fb.Args = pc.args(o.Call, fb.Tool, sc, &r.data)
			if s.Tool != nil {
				if ok, why := Assignable(fb.Tool.Result, s.Tool.Result); !ok {
					c.errorf(lang.TypeMismatch, o.Call.Tool.Span, "fallback %s returns %s, but %s returns %s and both write the same slots: %s", fb.Tool.Name, fb.Tool.Result, s.Tool.Name, s.Tool.Result, why)
				}
			}
		}
		s.Fallback = fb
	case *lang.ApproveOption:
		s.Approve = true
		s.ApproveMessage = o.Message.StringValue()
	case *lang.HintOption:
		pc.hint(s, o)
	case *lang.ResultOption:
		s.Result = pc.operandAt(lang.Place{Kind: lang.PlaceStatement, Name: "result"}, o.Value, base, &r.data)
		if s.Tool != nil && s.Result != nil {
			if ok, why := fits(s.Result, s.Tool.Result); !ok {
				c.errorf(lang.TypeMismatch, o.Value.Range(), "the result of %s is %s: %s", s.Tool.Name, s.Tool.Result, why)
			}
		}
	}
}

// nullHint explains, under on failure continue, why a slot may be null.
func (pc *planChecker) nullHint(msg string) string {
	if pc.p.Policy.Action != "continue" || !strings.Contains(msg, "may be null") {
		return ""
	}
	return " (under on failure continue, a step that fails writes null to its slot; give it an error slot, -> †state.x || †state.err, to keep null out)"
}

func (pc *planChecker) wantBool(what string, op *Operand) {
	if op == nil || op.Type == nil {
		return
	}
	if op.IsConst() {
		if _, ok := op.Const.(bool); !ok {
			pc.c.errorf(lang.TypeMismatch, op.Span, "%s needs a condition (true or false), and this is %s", what, describeValue(op.Const))
		}
		return
	}
	if ok, _ := Assignable(op.Type, BoolType); !ok || op.Type.Nullable {
		pc.c.errorf(lang.TypeMismatch, op.Span, "%s needs a condition (a bool), and this is %s", what, describeKind(op.Type))
	}
}

// outputStateType sets conditions, unwritten and outputState.
func (pc *planChecker) outputStateType() {
	pc.writtenConditions()
	pc.unwritten = make([]bool, len(pc.slots))
	pc.outputState = pc.stateType
	for k, c := range pc.conditions {
		if len(c) == 0 {
			continue
		}
		pc.unwritten[k] = true
		if pc.outputState == pc.stateType {
			t := *pc.stateType
			t.index = nil
			t.Fields = make([]*Field, len(t.Fields))
			for i, f := range pc.stateType.Fields {
				c := *f
				t.Fields[i] = &c
			}
			t.indexed()
			pc.outputState = &t
		}
		pc.outputState.Fields[k].Optional = true
	}
}

// output checks the plan's output expression.
func (pc *planChecker) output(items []lang.Item) {
	var first lang.Span
	for _, it := range items {
		d, ok := it.(*lang.OutputDecl)
		if !ok {
			continue
		}
		if first.IsValid() {
			pc.dup("output", d.Span, first)
			continue
		}
		first = d.Span
		var reads []*RefPath
		pc.outputStateType()
		pc.inOutput = true
		pc.p.Output = pc.operandAt(lang.Place{Kind: lang.PlaceStatement, Name: "output"}, d.Value, &scope{env: pc.p.Env}, &reads)
		pc.inOutput = false
		pc.p.OutputType = pc.p.Output.Type
		for _, r := range reads {
			if slot := pc.p.Slots[r.Slot()]; slot != nil {
				slot.ReadByOutput = true
			}
		}
	}
	if pc.p.Output == nil {
		// Without an output, the plan's result is its final state.
		t := &Type{Kind: KindObject, Fields: make([]*Field, len(pc.p.SlotNames))}
		fields := make([]Field, len(pc.p.SlotNames))
		for i, s := range pc.slots {
			fields[i] = Field{Name: s.Name, Type: s.Type, Optional: true}
			t.Fields[i] = &fields[i]
		}
		pc.p.OutputType = t
	}
}
