package vm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// engine is the deterministic core of a run: it decides which steps are
// ready, skips the ones that cannot run and why, evaluates arguments,
// records outcomes, writes slots and applies the failure policy. It is not
// safe for concurrent use: a driver calls it under one lock, except
// prepare, which only reads the slots of steps that have finished and
// which the dispatcher calls for several steps at once, outside its lock.
type engine struct {
	prog    *compiler.Program
	plan    *compiler.Plan
	sc      scope
	res     []*StepResult
	remain  []int32
	decided []bool
	// released, cands and ready are the lists release and settle return
	// or work on, kept from one call to the next.
	released, cands, ready []int
	// ctx ends the evaluation of the conditions, expectations and output;
	// a step's arguments are evaluated under the context prepare is given.
	ctx context.Context
	// costLimit bounds the cost of one evaluation of a CEL expression,
	// the conversion of its value included; 0 takes the default.
	costLimit uint64
	// prefix is prepended to step IDs in events ("research#1/").
	prefix string
	emit   func(Event, *StepResult)
	// clock returns the time and the time since the run started.
	clock func() (time.Time, time.Duration)
	// stop is set when the policy stops the run: abort, or replan (which
	// lets running steps finish and dispatches nothing new).
	stop     error
	replanAt *StepResult
	round    int
	// waiting counts the steps that wait for a decision another process
	// records; awaiting says why the whole run waits, when it does.
	waiting  int
	awaiting string
	// In a dry run, an expectation that fails on invented values is a
	// problem to report, not a failure (sim), and a condition that cannot
	// be known before the run lets the step run and is reported
	// (onUnknown).
	sim       bool
	onProblem func(step, code, message string)
	onUnknown func(s *compiler.Step)
	// fills completes the steps' holes and tasks; nil fails them.
	fills stepFiller
	// history records the calls of the run and of the work it is part
	// of (see History); nil compares nothing.
	history *History
}

// newEngine prepares a run of prog with the given input. state holds slot
// values already written (a replanned run's completed work); the plan's
// initial values fill the rest. Its expressions are evaluated under ctx,
// each within costLimit (0 takes the default).
func newEngine(ctx context.Context, prog *compiler.Program, input map[string]any, state map[string]any, emit func(Event, *StepResult), clock func() (time.Time, time.Duration), costLimit uint64) (*engine, error) {
	plan := prog.Plan
	n := len(prog.Steps)
	e := &engine{
		prog:      prog,
		plan:      plan,
		res:       make([]*StepResult, n),
		remain:    make([]int32, n),
		decided:   make([]bool, n),
		ctx:       ctx,
		costLimit: costLimit,
		emit:      emit,
		clock:     clock,
	}
	in, err := checkInput(plan, input)
	if err != nil {
		return nil, err
	}
	e.sc = scope{
		slots:   make([]any, len(plan.SlotNames)),
		written: make([]bool, len(plan.SlotNames)),
		index:   prog.SlotIndex,
		input:   in,
	}
	// The state block's initial values, then the slots already written,
	// without looking every slot up by name.
	if prog.ArgStart != nil {
		for _, i := range prog.Initial {
			name := plan.SlotNames[i]
			if _, written := state[name]; !written {
				e.sc.slots[i], e.sc.written[i] = toolkit.CopyJSON(plan.Slots[name].Initial), true
			}
		}
	} else {
		for name, slot := range plan.Slots {
			if _, written := state[name]; slot.HasInitial && !written {
				i := prog.SlotIndex[name]
				e.sc.slots[i], e.sc.written[i] = toolkit.CopyJSON(slot.Initial), true
			}
		}
	}
	for name, v := range state {
		if i, ok := prog.SlotIndex[name]; ok {
			// A replanned plan may give the slot another type.
			cv, msg := conform(v, plan.Slots[name].Type, "")
			if msg != "" {
				return nil, fmt.Errorf("†state.%s does not fit its type in the new plan, %s: %s", name, plan.Slots[name].Type, msg)
			}
			e.sc.slots[i], e.sc.written[i] = cv, true
		}
	}
	results := make([]StepResult, n) // zeroed: only what is set is written
	for i, s := range prog.Steps {
		r := &results[i]
		r.ID, r.Tool, r.Status = s.ID, s.ToolName(), StatusPending
		e.res[i] = r
		e.remain[i] = int32(len(prog.Pred[i]))
		if e.remain[i] > 0 {
			r.Status = StatusBlocked
		}
	}
	return e, nil
}

// setRound makes the engine's steps those of a replanning round, those
// that will not run included.
func (e *engine) setRound(round int) {
	e.round = round
	for _, r := range e.res {
		r.Round = round
	}
}

// InputError reports input that does not match the plan's input block.
type InputError struct{ Problems []string }

// Error lists the problems.
func (e *InputError) Error() string {
	return "the input does not match the plan: " + strings.Join(e.Problems, "; ")
}

// checkInput fills defaults and checks the input against the plan's input
// type, conforming each value to its field's type (see compiler.Conform).
func checkInput(plan *compiler.Plan, input map[string]any) (map[string]any, error) {
	in := make(map[string]any, len(input)+len(plan.InputDefaults))
	for k, v := range input {
		in[k] = v
	}
	var problems []string
	for _, f := range plan.Input.Fields {
		v, ok := in[f.Name]
		if !ok {
			if d, has := plan.InputDefaults[f.Name]; has {
				in[f.Name] = toolkit.CopyJSON(d)
				continue
			}
			if !f.Optional {
				problems = append(problems, fmt.Sprintf("field %s (%s) is required", f.Name, f.Type))
			}
			continue
		}
		cv, msg := conform(v, f.Type, f.Name)
		if msg != "" {
			problems = append(problems, msg)
		}
		in[f.Name] = cv
	}
	for _, k := range sortedKeys(in) {
		if plan.Input.Field(k) == nil {
			problems = append(problems, fmt.Sprintf("field %s is not declared by the plan's input", k))
		}
	}
	if len(problems) > 0 {
		return nil, &InputError{Problems: problems}
	}
	return in, nil
}

func (e *engine) event(ev Event) { e.stepEvent(ev, nil) }

// stepEvent emits an event that decides a step, with the step's result
// for the journal.
func (e *engine) stepEvent(ev Event, r *StepResult) {
	if e.emit == nil {
		return
	}
	ev.Time, ev.Elapsed = e.clock()
	if ev.Step != "" {
		ev.Step = e.prefix + ev.Step
	}
	e.emit(ev, r)
}

// extend moves the engine to a program that begins with the same steps,
// in the same order, and adds new ones (eager mode admits steps as they
// arrive). It keeps every slot written and every step decided, recounts
// the dependencies of the steps not yet decided, and returns the new steps
// that wait for nothing.
func (e *engine) extend(prog *compiler.Program) []int {
	written := map[string]any{}
	for i, name := range e.plan.SlotNames {
		if e.sc.written[i] {
			written[name] = e.sc.slots[i]
		}
	}
	n0 := len(e.prog.Steps)
	e.prog, e.plan = prog, prog.Plan
	e.sc.index = prog.SlotIndex
	e.sc.slots = make([]any, len(prog.Plan.SlotNames))
	e.sc.written = make([]bool, len(prog.Plan.SlotNames))
	for i, name := range prog.Plan.SlotNames {
		if v, ok := written[name]; ok {
			e.sc.slots[i], e.sc.written[i] = v, true
		} else if slot := prog.Plan.Slots[name]; slot.HasInitial {
			e.sc.slots[i], e.sc.written[i] = toolkit.CopyJSON(slot.Initial), true
		}
	}
	for i := n0; i < len(prog.Steps); i++ {
		s := prog.Steps[i]
		e.res = append(e.res, &StepResult{ID: s.ID, Tool: s.ToolName(), Status: StatusPending, Round: e.round})
		e.remain = append(e.remain, 0)
		e.decided = append(e.decided, false)
	}
	var ready []int
	for i := range prog.Steps {
		if e.decided[i] {
			continue
		}
		n := int32(0)
		for _, p := range prog.Pred[i] {
			switch e.res[p].Status {
			case StatusCompleted, StatusFailed, StatusSkipped:
			default:
				n++
			}
		}
		e.remain[i] = n
		if n == 0 {
			ready = append(ready, i)
		} else {
			e.res[i].Status = StatusBlocked
		}
	}
	return ready
}

// roots returns the steps that wait for nothing.
func (e *engine) roots() []int {
	var out []int
	for i := range e.prog.Steps {
		if e.remain[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

// settle decides the candidates whose dependencies have all finished:
// each either becomes ready or is skipped, and skipping may make more
// candidates. It returns the ready steps in index order, in a list that
// holds until the next settle.
func (e *engine) settle(cands []int) []int {
	// cands may be the list of a release, which the finishing and skipping
	// below reuse.
	e.cands = append(e.cands[:0], cands...)
	ready := e.ready[:0]
	for k := 0; k < len(e.cands); k++ {
		i := e.cands[k]
		if e.decided[i] {
			continue
		}
		if e.stop != nil {
			if e.replanAt == nil {
				e.cands = append(e.cands, e.skip(i, "the run stopped: "+e.stop.Error())...)
			}
			continue
		}
		reason, err := e.blocked(i)
		switch {
		case err != nil:
			e.cands = append(e.cands, e.finish(i, outcome{err: err})...)
		case reason != "":
			e.cands = append(e.cands, e.skip(i, reason)...)
		default:
			e.decided[i] = true
			e.res[i].Status = StatusPending // ready, waiting for a free slot
			ready = append(ready, i)
		}
	}
	sortInts(ready)
	e.ready = ready
	return ready
}

// blocked says why a step whose dependencies have finished cannot run: a
// slot it reads was not written, or its condition is false. err is set
// when the condition cannot be evaluated.
func (e *engine) blocked(i int) (string, *StepError) {
	s := e.prog.Steps[i]
	for _, d := range s.Deps {
		idx, ok := d.SlotIndex()
		if !ok {
			idx = e.sc.index[d.Slot]
		}
		if e.sc.written[idx] {
			continue
		}
		return e.unwrittenReason(s, d), nil
	}
	if s.When != nil {
		if e.ctx != nil && e.ctx.Err() != nil {
			return "the run stopped: " + context.Cause(e.ctx).Error(), nil
		}
		v, err := e.eval(e.ctx, s.When, &e.sc)
		if err == nil {
			var ok bool
			ok, err = truthy(v)
			if err == nil && !ok {
				return "its condition is false: when " + s.When.Text, nil
			}
			if errors.Is(err, errUnknown) {
				if e.onUnknown != nil {
					e.onUnknown(s) // a symbolic run takes both ways
				}
				return "", nil
			}
		}
		if err != nil {
			return "", &StepError{Code: errorCode(err, "condition-error"), Message: fmt.Sprintf("cannot evaluate the condition of %s: %v", s.ID, err), Tool: s.ToolName(), Step: s.ID}
		}
	}
	return "", nil
}

// unwrittenReason explains why the slot of a dependency was not written.
func (e *engine) unwrittenReason(s *compiler.Step, d compiler.Dep) string {
	w := e.prog.Steps[d.Step]
	r := e.res[d.Step]
	slot := "†state." + d.Slot
	switch {
	case d.Kind == compiler.DepError && r.Status == StatusCompleted:
		return fmt.Sprintf("%s was not written: %s succeeded, so its error alternative was not taken", slot, w.ID)
	case r.Status == StatusSkipped:
		return fmt.Sprintf("%s was not written: %s was skipped (%s)", slot, w.ID, r.Reason)
	case r.Status == StatusFailed && r.Handled:
		return fmt.Sprintf("%s was not written: %s failed and wrote its error to †state.%s", slot, w.ID, w.ErrOut)
	case r.Status == StatusFailed:
		return fmt.Sprintf("%s was not written: %s failed", slot, w.ID)
	}
	return slot + " was not written"
}

// callSpec is what a driver does to run a step: call a tool (once, or once
// per element of a for each) or take the known result.
type callSpec struct {
	i    int
	step *compiler.Step
	// tool is the step's tool, or the candidate its task chose (nil in
	// a dry run, which chooses none).
	tool     *compiler.Tool
	args     map[string]any
	elems    []map[string]any
	fallback []map[string]any // per element, or one for a plain call
	known    any
	hasKnown bool
	// subs and round are the engine's sub-plans and replanning round
	// when the step was prepared, which the step's worker reads: an
	// eager run may extend the engine's program meanwhile.
	subs  map[string]*compiler.Program
	round int
	// call is the context of the call of a plain step, made with the
	// spec to save an allocation; eval the context its arguments are
	// evaluated under.
	call callCtx
	eval boundCtx
	// identity is the identity of the call, once the history has been
	// asked (see History).
	identity *callID
}

// specBlock hands out call specs from blocks of specBlockSize (as many
// as fill 8 KiB, a size class of the allocator with little left over),
// one allocation for many steps. A worker has its own, and needs no lock. A
// spec is never handed out twice: the context of its call lives in it,
// and a tool may keep that context. A block is freed once none of its
// specs is reachable.
type specBlock struct{ free []callSpec }

const specBlockSize = 8192 / unsafe.Sizeof(callSpec{})

// next returns a zeroed spec not handed out before.
func (b *specBlock) next() *callSpec {
	if b == nil {
		return new(callSpec)
	}
	if len(b.free) == 0 {
		b.free = make([]callSpec, specBlockSize)
	}
	spec := &b.free[0]
	b.free = b.free[1:]
	return spec
}

// done lets go of the values of a spec whose calls have returned, so that
// its block does not keep them while its worker runs other steps. The
// event, the tool or the journal that keeps them keeps them alive.
func (spec *callSpec) done() {
	spec.args, spec.elems, spec.fallback, spec.known = nil, nil, nil, nil
}

// boundCtx is the context a step's arguments are evaluated under: the
// CEL expressions among them are bounded by the step's time limit
// (timeout, when it is not 0), from the start of the first (see
// evalCEL). Most steps have none, and need no timer.
type boundCtx struct {
	context.Context
	timeout  time.Duration
	deadline time.Time
}

// prepare evaluates a ready step's arguments under ctx; the CEL
// expressions among them together take at most timeout (0: no bound
// but ctx's).
// The spec comes from specs (nil: a new one).
func (e *engine) prepare(ctx context.Context, i int, timeout time.Duration, fills stepFiller, specs *specBlock) (*callSpec, *StepError) {
	s := e.prog.Steps[i]
	spec := specs.next() // zeroed: only what is set is written
	spec.i, spec.step, spec.tool, spec.subs, spec.round = i, s, s.Tool, e.prog.Sub, e.round
	spec.eval.Context, spec.eval.timeout = ctx, timeout
	ctx = &spec.eval
	fail := func(code, format string, args ...any) *StepError {
		return &StepError{Code: code, Message: fmt.Sprintf(format, args...), Tool: s.ToolName(), Step: s.ID}
	}
	// failed is the error of an expression that cannot be evaluated: its
	// arguments are invalid, unless a limit stopped it.
	failed := func(err error, format string, args ...any) *StepError {
		return fail(errorCode(err, toolkit.CodeInvalidArguments), format, args...)
	}
	if s.Result != nil {
		v, err := e.eval(ctx, s.Result, &e.sc)
		if err != nil {
			return nil, failed(err, "evaluating the given result: %v", err)
		}
		spec.known, spec.hasKnown = v, true
		return spec, nil
	}
	if s.Task != nil {
		if fills == nil {
			return nil, fail(CodeNoFiller, "task %s is left for a model to complete, and the run has no model", s.ID)
		}
		tctx, cancel := bounded(ctx)
		tool, args, serr := fills.task(tctx, e, s, &e.sc)
		cancel()
		if serr != nil {
			return nil, serr
		}
		spec.tool, spec.args = tool, args
		return spec, nil
	}
	if s.Each == nil {
		args, err := e.stepArgs(ctx, i, s, &e.sc)
		if err != nil {
			return nil, failed(err, "%v", err)
		}
		if e.holes(i) {
			if serr := e.fillHoles(ctx, fills, s, s.ID, args, &e.sc); serr != nil {
				return nil, serr
			}
		}
		spec.args = args
		if s.Fallback != nil && s.Fallback.Tool != nil {
			fa, err := e.args(ctx, s.Fallback.Args, s.Fallback.Tool, &e.sc)
			if err != nil {
				return nil, failed(err, "fallback: %v", err)
			}
			spec.fallback = []map[string]any{fa}
		}
		return spec, nil
	}
	lv, err := e.eval(ctx, s.Each.List, &e.sc)
	if err != nil {
		return nil, failed(err, "evaluating the list of the for each: %v", err)
	}
	if _, ok := lv.(Unknown); ok {
		lv = []any{Unknown{}}
	} else if s.Each.List.Kind == compiler.OpList {
		// A list written in the plan, of references and constants: its
		// elements take the list's type (an int among numbers is one).
		cv, msg := conform(lv, s.Each.List.Type, "")
		if msg != "" {
			return nil, fail(toolkit.CodeInvalidArguments, "the list of the for each: %s", msg)
		}
		lv = cv
	}
	list, ok := lv.([]any)
	if !ok {
		return nil, fail(toolkit.CodeInvalidArguments, "the for each needs a list, and got %s", describe(lv))
	}
	if len(list) > s.Each.Max {
		return nil, fail(toolkit.CodeLimitExceeded, "the list has %d elements, more than the for each's max of %d", len(list), s.Each.Max)
	}
	for k, el := range list {
		sc := e.sc
		sc.elem, sc.elemVal = s.Each.Var, el
		args, err := e.stepArgs(ctx, i, s, &sc)
		if err != nil {
			return nil, failed(err, "element %s: %v", describe(el), err)
		}
		if e.holes(i) {
			if serr := e.fillHoles(ctx, fills, s, fmt.Sprintf("%s[%d]", s.ID, k), args, &sc); serr != nil {
				return nil, serr
			}
		}
		spec.elems = append(spec.elems, args)
		if s.Fallback != nil && s.Fallback.Tool != nil {
			fa, err := e.args(ctx, s.Fallback.Args, s.Fallback.Tool, &sc)
			if err != nil {
				return nil, failed(err, "fallback: %v", err)
			}
			spec.fallback = append(spec.fallback, fa)
		}
	}
	return spec, nil
}

// stepArgs evaluates the arguments of step i (s) and adds the defaults of
// omitted parameters, from the program's flattened arguments when it has
// them (see compiler.Program.CallArgs): a constant or a slot read whole
// is taken without evaluating its operand.
//
// Every call gets a map of its own, never reused: the tool may keep it,
// and so may the StepStarted event that carries it, the journal that
// records it, an approval request and the run's history. The map is made
// at its final size.
func (e *engine) stepArgs(ctx context.Context, i int, s *compiler.Step, sc *scope) (map[string]any, error) {
	prog := e.prog
	if prog.ArgStart == nil || i+1 >= len(prog.ArgStart) {
		return e.args(ctx, s.Args, s.Tool, sc)
	}
	args := prog.CallArgs[prog.ArgStart[i]:prog.ArgStart[i+1]]
	var defaults []*compiler.Param
	if s.Tool != nil {
		defaults = s.Tool.Defaults()
	}
	out := make(map[string]any, len(args)+len(defaults))
	for k := range args {
		a := &args[k]
		switch a.Kind {
		case compiler.ArgHole:
			continue // filled by fillHoles
		case compiler.ArgConst:
			out[a.Name] = a.Const
			continue
		case compiler.ArgSlot:
			if sc.written[a.Slot] {
				out[a.Name] = sc.slots[a.Slot]
				continue
			}
		}
		v, err := e.eval(ctx, a.Value, sc)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", a.Name, err)
		}
		out[a.Name] = v
	}
	for _, p := range defaults {
		if _, given := out[p.Name]; !given {
			out[p.Name] = toolkit.CopyJSON(p.Default)
		}
	}
	return out, nil
}

// holes reports whether step i (s) has an argument left for a model to
// fill, from the program's flattened arguments; without them, it may
// (fillHoles looks).
func (e *engine) holes(i int) bool {
	prog := e.prog
	if prog.ArgStart == nil || i+1 >= len(prog.ArgStart) {
		return true
	}
	for _, a := range prog.CallArgs[prog.ArgStart[i]:prog.ArgStart[i+1]] {
		if a.Kind == compiler.ArgHole {
			return true
		}
	}
	return false
}

// args evaluates a call's arguments and adds the defaults of omitted
// parameters.
func (e *engine) args(ctx context.Context, args []*compiler.Arg, tool *compiler.Tool, sc *scope) (map[string]any, error) {
	out := make(map[string]any, len(args))
	for _, a := range args {
		if a.Value.Kind == compiler.OpHole {
			continue // filled by fillHoles
		}
		v, err := e.eval(ctx, a.Value, sc)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", a.Name, err)
		}
		out[a.Name] = v
	}
	if tool != nil {
		for _, p := range tool.Defaults() {
			if _, given := out[p.Name]; !given {
				out[p.Name] = toolkit.CopyJSON(p.Default)
			}
		}
	}
	return out, nil
}

// outcome is what a driver reports of a step it ran.
type outcome struct {
	value    any
	err      *StepError
	attempts int
	retries  int
	start    time.Duration
	duration time.Duration
	// restored is set for the outcome of a step that finished in an
	// earlier process of the run: it was checked then, and comes with
	// its verdicts. Otherwise verdicts are the evaluator's, for the
	// step's criteria in words.
	restored bool
	verdicts []Verdict
	// waiting is set when the step waits for a decision that another
	// process will record (an approval): it is not finished.
	waiting bool
	// tool is the candidate a task chose, or nil.
	tool *compiler.Tool
	// call is the identity of the step's call, to record it under in the
	// history once it finishes (see History); repeats, the step of an
	// earlier part of the work whose outcome this is.
	call    *callID
	repeats *StepRef
	// conformed is set when value was conformed to the step's type
	// already (see conformOutcome).
	conformed bool
}

// conformOutcome conforms the result of step s to its type, as finish
// would (see conformResult); a driver calls it before it takes the lock
// under which it finishes the step, since it reads only the step and its
// result.
func (e *engine) conformOutcome(s *compiler.Step, out outcome) outcome {
	if out.err == nil && !out.waiting && !out.conformed && (s.Tool != nil || s.Task != nil) {
		out.value, out.err = e.conformResult(s, out.tool, out.value)
		out.conformed = true
	}
	return out
}

// finish records a step's outcome: it validates the result, checks the
// step's expectations, writes its slots, applies the failure policy, and
// returns the steps that no longer wait for anything.
func (e *engine) finish(i int, out outcome) []int {
	s := e.prog.Steps[i]
	r := e.res[i]
	e.decided[i] = true
	r.Attempts, r.Retries, r.Start, r.Duration, r.Round = out.attempts, out.retries, out.start, out.duration, e.round
	if out.restored {
		// Checked when it was recorded; its verdicts come with it.
		r.Verdicts = out.verdicts
	}
	if out.tool != nil {
		r.Tool = out.tool.Name
	}
	r.Repeats = out.repeats
	defer e.remember(i, out.call)
	if out.err == nil && !out.conformed && (s.Tool != nil || s.Task != nil) {
		// The one place a step's result enters the state: whatever
		// produced it (a tool, a mock, a recording, a sub-plan, the
		// journal of an earlier process), it conforms to its type.
		out.value, out.err = e.conformResult(s, out.tool, out.value)
	}
	if out.err == nil && !out.restored {
		out.err = e.expect(s, r, out.value, out.verdicts)
	}
	if out.err == nil {
		r.Status, r.Result = StatusCompleted, out.value
		if s.Out != "" {
			e.write(s.Out, s.OutIndex, out.value)
		}
		ev := Event{Type: StepCompleted, Step: s.ID, Tool: r.Tool, Attempt: out.attempts, Result: out.value, Duration: out.duration}
		if out.restored {
			ev.Type, ev.Verdict, ev.Reason = StepRestored, string(StatusCompleted), out.repeated()
		}
		e.stepEvent(ev, r)
		return e.release(i)
	}
	if out.err.Step == "" {
		out.err.Step = s.ID
	}
	if out.err.Tool == "" {
		out.err.Tool = r.Tool
	}
	r.Status, r.Error = StatusFailed, out.err
	switch {
	case s.ErrOut != "":
		r.Handled = true
		e.write(s.ErrOut, s.ErrOutIndex, out.err.Value())
	case e.plan.Policy.Action == "continue":
		r.Reason = "on failure continue: its dependents run with null in its slot"
		if s.Out != "" {
			e.write(s.Out, s.OutIndex, nil)
		}
	case e.plan.Policy.Action == "skip":
		r.Reason = "on failure skip: the steps that read its result are skipped"
	case e.plan.Policy.Action == "replan":
		r.Reason = "on failure replan"
		if e.stop == nil {
			e.stop = fmt.Errorf("step %s failed: %s", s.ID, out.err.Message)
			e.replanAt = r
		}
	default:
		r.Reason = "on failure abort"
		if e.stop == nil {
			e.stop = fmt.Errorf("step %s failed: %s", s.ID, out.err.Message)
		}
	}
	ev := Event{Type: StepFailed, Step: s.ID, Tool: r.Tool, Attempt: out.attempts, Error: out.err, Reason: r.Reason, Duration: out.duration}
	if out.restored {
		ev.Type, ev.Verdict = StepRestored, string(StatusFailed)
		if why := out.repeated(); why != "" {
			ev.Reason = why + "; " + r.Reason
		}
	}
	e.stepEvent(ev, r)
	return e.release(i)
}

// conform is compiler.Conform, but for a value that holds an Unknown (in
// a symbolic dry run), which is taken as it is: it stands for a value of
// the type.
func conform(v any, t *compiler.Type, path string) (any, string) {
	cv, msg := compiler.Conform(v, t, path)
	if msg != "" && holdsUnknown(v, 0) {
		return v, ""
	}
	return cv, msg
}

// holdsUnknown reports whether v is or holds an Unknown.
func holdsUnknown(v any, depth int) bool {
	switch v := v.(type) {
	case Unknown:
		return true
	case []any:
		for _, e := range v {
			if depth < 64 && holdsUnknown(e, depth+1) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if depth < 64 && holdsUnknown(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// conformResult conforms a step's result to its type and to the type of
// its slot (see compiler.Conform), or fails the step with
// invalid-output.
func (e *engine) conformResult(s *compiler.Step, chosen *compiler.Tool, v any) (any, *StepError) {
	name, outType := s.ToolName(), s.OutType
	if chosen != nil {
		// A task's candidate: its own result type first, then the
		// task's, which its slot declares.
		name = chosen.Name
		cv, msg := conform(v, chosen.Result, "")
		if msg != "" {
			return nil, &StepError{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("the result of %s does not match its type %s: %s", name, chosen.Result, msg), Tool: name, Step: s.ID}
		}
		v = cv
	}
	cv, msg := conform(v, outType, "")
	if msg != "" {
		return nil, &StepError{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("the result of %s does not match its type %s: %s", name, outType, msg), Tool: name, Step: s.ID}
	}
	if s.SlotType != nil && s.SlotType != outType {
		if cv, msg = conform(cv, s.SlotType, ""); msg != "" {
			return nil, &StepError{Code: toolkit.CodeInvalidOutput, Message: fmt.Sprintf("the result of %s does not fit †state.%s, of type %s: %s", name, s.Out, s.SlotType, msg), Tool: name, Step: s.ID}
		}
	}
	return cv, nil
}

// expect evaluates a step's expectations on its result. A false one fails
// the step; criteria for an evaluator take the evaluator's verdicts, or
// are recorded as unjudged when there are none.
func (e *engine) expect(s *compiler.Step, r *StepResult, value any, judged []Verdict) *StepError {
	if len(s.Expects) == 0 && len(s.Criteria) == 0 {
		return nil
	}
	// The expectations see the step's result in its slot. It is put there
	// for them and taken out again (the engine has one user at a time),
	// rather than copying every slot for each step that has an expectation.
	sc := e.sc
	if s.Out != "" {
		idx := sc.slot(s.Out, s.OutIndex)
		old, had := sc.slots[idx], sc.written[idx]
		sc.slots[idx], sc.written[idx] = value, true
		defer func() { sc.slots[idx], sc.written[idx] = old, had }()
	}
	for _, x := range s.Expects {
		v, err := e.eval(e.finishing(), x, &sc)
		if errorCode(err, "") == toolkit.CodeLimitExceeded {
			return &StepError{Code: toolkit.CodeLimitExceeded, Message: fmt.Sprintf("cannot evaluate the expectation %s: %v", x.Text, err), Tool: r.Tool, Step: s.ID}
		}
		verdict, note := "pass", ""
		if err == nil {
			var ok bool
			ok, err = truthy(v)
			if err == nil && !ok {
				verdict = "fail"
			}
		}
		if errors.Is(err, errUnknown) {
			verdict, note, err = VerdictUnjudged, "known after the run", nil
		}
		if err != nil {
			verdict, note = "fail", err.Error()
		}
		r.Verdicts = append(r.Verdicts, Verdict{Criterion: x.Text, Verdict: verdict, Note: note})
		e.event(Event{Type: StepVerdict, Step: s.ID, Tool: r.Tool, Verdict: verdict, Message: x.Text, Reason: note})
		if verdict == "fail" {
			msg := "expectation does not hold: " + x.Text
			if note != "" {
				msg += " (" + note + ")"
			}
			if e.sim {
				e.onProblem(e.prefix+s.ID, toolkit.CodeExpectFailed, msg+" on the simulated values")
				continue
			}
			return &StepError{Code: toolkit.CodeExpectFailed, Message: msg, Tool: r.Tool, Step: s.ID}
		}
	}
	if len(judged) > 0 {
		for _, v := range judged {
			r.Verdicts = append(r.Verdicts, v)
			e.event(Event{Type: StepVerdict, Step: s.ID, Tool: r.Tool, Verdict: v.Verdict, Message: v.Criterion, Reason: v.Note})
		}
		for _, v := range judged {
			if v.Verdict == VerdictFail {
				msg := "the evaluator judges that the result does not meet: " + v.Criterion
				if v.Note != "" {
					msg += " (" + v.Note + ")"
				}
				return &StepError{Code: toolkit.CodeExpectFailed, Message: msg, Tool: r.Tool, Step: s.ID}
			}
		}
		return nil
	}
	for _, c := range s.Criteria {
		r.Verdicts = append(r.Verdicts, Verdict{Criterion: c, Verdict: VerdictUnjudged, Note: NoEvaluator})
		e.event(Event{Type: StepVerdict, Step: s.ID, Tool: r.Tool, Verdict: VerdictUnjudged, Message: c, Reason: NoEvaluator})
	}
	return nil
}

// write writes a slot of a step: its Out or its ErrOut, with the method
// that gives its position.
func (e *engine) write(slot string, pos func() (int, bool), v any) {
	idx := e.sc.slot(slot, pos)
	e.sc.slots[idx], e.sc.written[idx] = v, true
}

// skip marks a step skipped and returns the steps that no longer wait.
func (e *engine) skip(i int, reason string) []int {
	s := e.prog.Steps[i]
	r := e.res[i]
	e.decided[i] = true
	r.Status, r.Reason, r.Round = StatusSkipped, reason, e.round
	e.stepEvent(Event{Type: StepSkipped, Step: s.ID, Tool: r.Tool, Reason: reason}, r)
	return e.release(i)
}

// release counts a finished step off its successors and returns those
// left waiting for nothing, in a list that holds until the next release.
func (e *engine) release(i int) []int {
	out := e.released[:0]
	for _, j := range e.prog.Succ[i] {
		e.remain[j]--
		if e.remain[j] == 0 {
			out = append(out, int(j))
		}
	}
	e.released = out
	return out
}

// undecided returns the steps that were never reached (after a stop).
func (e *engine) undecided() []int {
	var out []int
	for i := range e.prog.Steps {
		if !e.decided[i] {
			out = append(out, i)
		}
	}
	return out
}

// output evaluates the plan's output over the slots written so far; a
// reference to a slot not written reads null.
func (e *engine) output() (any, error) {
	if e.plan.Output == nil {
		return e.state(), nil
	}
	sc := e.sc
	sc.lenient = true
	return e.eval(e.finishing(), e.plan.Output, &sc)
}

// finishing is the context of the expressions that judge work already
// done, the expectations of a step that returned and the output: the
// engine's, or one that does not end once the run has stopped, for the
// cost limit alone bounds them then.
func (e *engine) finishing() context.Context {
	if e.ctx != nil && e.ctx.Err() != nil {
		return context.WithoutCancel(e.ctx)
	}
	return e.ctx
}

// state returns the written slots.
func (e *engine) state() map[string]any {
	out := make(map[string]any, len(e.plan.SlotNames))
	for i, name := range e.plan.SlotNames {
		if e.sc.written[i] {
			out[name] = e.sc.slots[i]
		}
	}
	return out
}

// result builds the run's result.
func (e *engine) result() *Result {
	r := &Result{State: e.state(), CriticalPath: e.prog.Analysis.CriticalLatency, Steps: make([]*StepResult, 0, len(e.res))}
	for _, sr := range e.res {
		r.Steps = append(r.Steps, sr)
		switch sr.Status {
		case StatusCompleted:
			r.Completed++
		case StatusFailed:
			if sr.Handled {
				r.Handled++
			} else {
				r.Failed++
			}
		case StatusSkipped:
			r.Skipped++
		}
		r.Retries += sr.Retries
		r.Unjudged += unjudged(sr)
	}
	return r
}

// unjudged counts the criteria in words of a step that no evaluator
// judged.
func unjudged(r *StepResult) int {
	n := 0
	for _, v := range r.Verdicts {
		// A run journaled before NoEvaluator said why noted only its start.
		if v.Verdict == VerdictUnjudged && strings.HasPrefix(v.Note, "no evaluator is configured") {
			n++
		}
	}
	return n
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
