package vm

import (
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// SimOptions configure Simulate.
type SimOptions struct {
	// MaxParallel bounds the steps running at once (default 8).
	MaxParallel int
	// Seed makes the invented values: the same seed gives the same run.
	Seed uint64
	// Mocks answers the tools it has; the others return values invented
	// from their output types.
	Mocks *toolkit.Mocks
	// Symbolic invents no values: what cannot be known before the run is
	// carried as Unknown, and each condition that depends on it is taken
	// both ways.
	Symbolic bool
	// Observer receives the run's events, in virtual time.
	Observer Observer
	// MaxCost bounds the cost of evaluating one CEL expression, as in
	// Options; 0 takes the default.
	MaxCost uint64
}

// SimResult is the outcome of a dry run.
type SimResult struct {
	*Result
	// Waves are the moments, in virtual time, at which steps start, with
	// the steps that start then: the schedule.
	Waves []Wave `json:"waves"`
	// LevelLatency is what a level-by-level executor would take.
	LevelLatency time.Duration `json:"levelLatencyNs"`
	// Problems are what the dry run found: failures, expectations that do
	// not hold on the simulated values.
	Problems []Problem `json:"problems"`
	// Branches are the choices left to the run: conditions on values known
	// only then, and error alternatives.
	Branches []Branch `json:"branches"`
	// Approvals are the approval gates the run would stop at.
	Approvals []string `json:"approvals"`
	// Fills are what the run leaves to a model: each hole, whose value is
	// known only after the run, and each task, with the candidates it
	// may choose.
	Fills []Fill `json:"fills"`
}

// Fill is a hole or a task of a plan, as a dry run shows it.
type Fill struct {
	Step string `json:"step"`
	// Tool and Argument name a hole; Candidates a task's tools and
	// sub-plans.
	Tool        string   `json:"tool,omitempty"`
	Argument    string   `json:"argument,omitempty"`
	Instruction string   `json:"instruction"`
	Type        string   `json:"type"`
	Candidates  []string `json:"candidates,omitempty"`
	Hint        string   `json:"hint,omitempty"`
}

// Wave is the steps that start at one moment of a dry run.
type Wave struct {
	At    time.Duration `json:"atNs"`
	Steps []string      `json:"steps"`
}

// Problem is something a dry run found wrong.
type Problem struct {
	Step    string `json:"step"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Branch is a choice the plan leaves to the run.
type Branch struct {
	Step string `json:"step"`
	// Condition is the when condition, or "" for an error alternative.
	Condition string `json:"condition,omitempty"`
	// IfTrue and IfFalse say what happens either way.
	IfTrue  string `json:"ifTrue"`
	IfFalse string `json:"ifFalse"`
}

// Simulate runs a program without calling any tool. Every tool returns
// its mock's answer or a value invented from its output type
// (deterministically, from the seed), takes its declared or estimated
// latency in virtual time, and branches follow the simulated values. The
// schedule is the one the interpreter follows: dataflow, up to MaxParallel
// steps at once.
func Simulate(ctx context.Context, prog *compiler.Program, input map[string]any, opts SimOptions) (*SimResult, error) {
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 8
	}
	s := &simulator{opts: opts, out: &SimResult{Problems: []Problem{}, Branches: []Branch{}, Approvals: []string{}, Waves: []Wave{}, Fills: []Fill{}}}
	if prog.Plan.Approve {
		s.out.Approvals = append(s.out.Approvals, "the plan: "+orDefault(prog.Plan.ApproveMessage, "approve the whole plan"))
	}
	s.fills(prog)
	e, makespan, err := s.run(ctx, prog, input, "")
	if err != nil {
		return nil, err
	}
	res := e.result()
	res.Makespan = makespan
	out, oerr := e.output()
	res.Output = out
	switch {
	case ctx.Err() != nil:
		res.Status, res.Err = RunCanceled, ctx.Err()
	case e.stop != nil:
		res.Status, res.Err = RunFailed, e.stop
	case res.Failed > 0:
		res.Status, res.Err = RunPartial, fmt.Errorf("%d step(s) failed", res.Failed)
	default:
		res.Status = RunCompleted
	}
	if oerr != nil {
		s.problem("output", "output-error", oerr.Error())
	}
	s.out.Result = res
	s.out.LevelLatency = prog.Analysis.LevelLatency
	sort.SliceStable(s.out.Waves, func(i, j int) bool { return s.out.Waves[i].At < s.out.Waves[j].At })
	return s.out, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type simulator struct {
	opts SimOptions
	out  *SimResult
}

func (s *simulator) problem(step, code, msg string) {
	s.out.Problems = append(s.out.Problems, Problem{Step: step, Code: code, Message: msg})
}

// finishing is a simulated step in progress.
type finishing struct {
	at  time.Duration
	i   int
	out outcome
}

type finishHeap []finishing

func (h finishHeap) Len() int { return len(h) }
func (h finishHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].i < h[j].i
}
func (h finishHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *finishHeap) Push(x any)   { *h = append(*h, x.(finishing)) }
func (h *finishHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// run simulates one program (the main plan or a sub-plan) in its own
// virtual time and returns its engine and makespan.
func (s *simulator) run(ctx context.Context, prog *compiler.Program, input map[string]any, prefix string) (*engine, time.Duration, error) {
	var now time.Duration
	emit := func(ev Event, _ *StepResult) {
		if s.opts.Observer != nil {
			s.opts.Observer(ev)
		}
	}
	e, err := newEngine(ctx, prog, input, nil, emit, func() (time.Time, time.Duration) { return time.Now(), now }, s.opts.MaxCost)
	if err != nil {
		return nil, 0, err
	}
	e.prefix = prefix
	e.sim = true
	e.fills = simFiller{}
	e.onProblem = s.problem
	e.onUnknown = func(st *compiler.Step) { s.branchOnCondition(e, st) }
	if prefix == "" {
		e.event(Event{Type: PlanStarted, Message: fmt.Sprintf("dry run: %d steps", len(prog.Steps))})
		if s.opts.Symbolic {
			s.errorBranches(prog)
		}
	}
	var running finishHeap
	ready := mergeSorted(nil, e.settle(e.roots()))
	for ctx.Err() == nil {
		for running.Len() < s.opts.MaxParallel && len(ready) > 0 && e.stop == nil {
			i := ready[0]
			ready = ready[1:]
			spec, serr := e.prepare(ctx, i, 0, e.fills, nil)
			if serr != nil {
				ready = mergeSorted(ready, e.settle(e.finish(i, outcome{err: serr, start: now})))
				continue
			}
			st := prog.Steps[i]
			e.event(Event{Type: StepStarted, Step: st.ID, Tool: st.ToolName()})
			if prefix == "" {
				s.wave(now, st.ID)
				if st.Approve {
					s.out.Approvals = append(s.out.Approvals, fmt.Sprintf("step %s: %s", st.ID, orDefault(st.ApproveMessage, "approve before it runs")))
				}
			}
			out, d := s.step(ctx, e, spec, prefix)
			out.start, out.duration = now, d
			heap.Push(&running, finishing{at: now + d, i: i, out: out})
		}
		if running.Len() == 0 {
			break
		}
		f := heap.Pop(&running).(finishing)
		now = f.at
		ready = mergeSorted(ready, e.settle(e.finish(f.i, f.out)))
	}
	if e.replanAt == nil {
		for _, i := range e.undecided() {
			e.skip(i, "the run stopped: "+errText(e.stop))
		}
	}
	for _, r := range e.res {
		if r.Status == StatusFailed && !r.Handled {
			s.problem(prefix+r.ID, r.Error.Code, r.Error.Message)
		}
	}
	if prefix == "" {
		e.event(Event{Type: PlanFinished})
	}
	return e, now, nil
}

func errText(err error) string {
	if err == nil {
		return "canceled"
	}
	return err.Error()
}

func (s *simulator) wave(at time.Duration, step string) {
	for i := range s.out.Waves {
		if s.out.Waves[i].At == at {
			s.out.Waves[i].Steps = append(s.out.Waves[i].Steps, step)
			return
		}
	}
	s.out.Waves = append(s.out.Waves, Wave{At: at, Steps: []string{step}})
}

// step simulates one step: its outcome and how long it takes.
func (s *simulator) step(ctx context.Context, e *engine, spec *callSpec, prefix string) (outcome, time.Duration) {
	st := spec.step
	if spec.hasKnown {
		return outcome{value: spec.known}, 0
	}
	per := e.prog.Analysis.CallLatency[spec.i]
	if st.Task != nil {
		// The model chooses a candidate only when the run gets there:
		// the result is one of the task's type.
		if s.opts.Symbolic {
			return outcome{value: Unknown{}, attempts: 1}, per
		}
		return outcome{value: invent(st.OutType, fmt.Sprintf("%d/%s", s.opts.Seed, prefix+st.ID), prefix+st.ID, 0), attempts: 1}, per
	}
	if st.Each == nil {
		v, d, attempts, serr := s.call(ctx, e, st, spec.args, "", prefix, per)
		retries := attempts - 1
		if serr != nil && len(spec.fallback) > 0 {
			v2, d2, _, serr2 := s.callTool(ctx, e, st, st.Fallback.Tool, spec.fallback[0], "", prefix, per)
			v, d, serr = v2, d+d2, serr2
			attempts++
		}
		return outcome{value: v, err: serr, attempts: attempts, retries: retries}, d
	}
	// A for each: elements in rounds of MaxParallel.
	n := len(spec.elems)
	vals := make([]any, n)
	var total time.Duration
	attempts, retries := 0, 0
	for start := 0; start < n; start += s.opts.MaxParallel {
		var round time.Duration
		for k := start; k < min(n, start+s.opts.MaxParallel); k++ {
			v, d, a, serr := s.call(ctx, e, st, spec.elems[k], fmt.Sprintf("[%d]", k), prefix, per)
			attempts += a
			retries += a - 1
			if serr != nil {
				serr.Message = fmt.Sprintf("element %d: %s", k, serr.Message)
				return outcome{err: serr, attempts: attempts, retries: retries}, total + d
			}
			vals[k] = v
			round = max(round, d)
		}
		total += round
	}
	return outcome{value: vals, attempts: attempts, retries: retries}, total
}

// call simulates a tool call with the step's retries.
func (s *simulator) call(ctx context.Context, e *engine, st *compiler.Step, args map[string]any, elem, prefix string, per time.Duration) (any, time.Duration, int, *StepError) {
	var total time.Duration
	for attempt := 0; ; attempt++ {
		v, d, _, serr := s.callTool(ctx, e, st, st.Tool, args, elem, prefix, per)
		total += d
		if serr == nil || attempt >= st.Retry || notRetryable(serr) {
			return v, total, attempt + 1, serr
		}
		// The expected backoff: three quarters of base·2^attempt.
		base := st.Backoff
		if base <= 0 {
			base = 100 * time.Millisecond
		}
		total += (base << attempt) * 3 / 4
	}
}

// callTool simulates one call of a tool, or runs a sub-plan.
func (s *simulator) callTool(ctx context.Context, e *engine, st *compiler.Step, tool *compiler.Tool, args map[string]any, elem, prefix string, per time.Duration) (any, time.Duration, int, *StepError) {
	id := prefix + st.ID + elem
	if tool.Plan != nil {
		sub := e.prog.Sub[tool.Name]
		se, d, err := s.run(ctx, sub, args, id+"/")
		if err != nil {
			return nil, 0, 1, &StepError{Code: toolkit.CodeInvalidArguments, Message: err.Error(), Tool: tool.Name, Step: st.ID}
		}
		if se.stop != nil {
			return nil, d, 1, &StepError{Code: "sub-plan-failed", Message: fmt.Sprintf("sub-plan %s failed: %v", tool.Name, se.stop), Tool: tool.Name, Step: st.ID}
		}
		out, err := se.output()
		if err != nil {
			return nil, d, 1, &StepError{Code: "sub-plan-failed", Message: err.Error(), Tool: tool.Name, Step: st.ID}
		}
		return out, d, 1, nil
	}
	if d, ok := s.opts.Mocks.Latency(tool.Name); ok {
		per = d
	}
	if v, ok, err := s.opts.Mocks.Answer(tool.Name, args); ok {
		if err != nil {
			return nil, per, 1, toStepError(err, ctx, tool.Name, st.ID, 0)
		}
		return v, per, 1, nil
	}
	if s.opts.Symbolic {
		return Unknown{}, per, 1, nil
	}
	return invent(tool.Result, fmt.Sprintf("%d/%s", s.opts.Seed, id), id, 0), per, 1, nil
}

// fills notes the holes and tasks of a program and its sub-plans, in the
// order of their steps, whether the run reaches them or not; a sub-plan's
// steps are named after it ("draft: write").
func (s *simulator) fills(prog *compiler.Program) {
	note := func(p *compiler.Program, prefix string) {
		for _, st := range p.Steps {
			for _, a := range st.Holes() {
				s.out.Fills = append(s.out.Fills, Fill{Step: prefix + st.ID, Tool: st.ToolName(), Argument: a.Name, Instruction: a.Value.Text, Type: a.Value.Type.String(), Hint: st.Hint})
			}
			if st.Task != nil {
				f := Fill{Step: prefix + st.ID, Instruction: st.Task.Goal, Type: st.OutType.String(), Candidates: []string{}, Hint: st.Hint}
				for _, c := range st.Task.Candidates {
					f.Candidates = append(f.Candidates, c.Name)
				}
				s.out.Fills = append(s.out.Fills, f)
			}
		}
	}
	for name, p := range prog.Programs() {
		prefix := ""
		if name != "" {
			prefix = name + ": "
		}
		note(p, prefix)
	}
}

// invent makes a value of a type, deterministically from key. name seeds
// the text of strings.
func invent(t *compiler.Type, key, name string, depth int) any {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64()
	switch t.Kind {
	case compiler.KindNull:
		return nil
	case compiler.KindBool:
		return x%2 == 0
	case compiler.KindInt:
		return int64(x % 100)
	case compiler.KindNumber:
		return float64(x%10000) / 100
	case compiler.KindString:
		return fmt.Sprintf("%s-%04x", lastName(name), x&0xffff)
	case compiler.KindEnum:
		return t.Values[x%uint64(len(t.Values))]
	case compiler.KindList:
		n := 2
		if depth > 2 {
			n = 1
		}
		out := make([]any, n)
		for i := range out {
			out[i] = invent(t.Elem, fmt.Sprintf("%s[%d]", key, i), name, depth+1)
		}
		return out
	case compiler.KindObject:
		out := map[string]any{}
		if depth > 6 {
			return out
		}
		for _, f := range t.Fields {
			out[f.Name] = invent(f.Type, key+"."+f.Name, f.Name, depth+1)
		}
		return out
	}
	return fmt.Sprintf("%s-%04x", lastName(name), x&0xffff)
}

func lastName(s string) string {
	if i := strings.LastIndexAny(s, "/.#["); i >= 0 && i+1 < len(s) {
		return strings.Trim(s[i+1:], "]")
	}
	return s
}

// branchOnCondition notes a condition that a symbolic run cannot decide.
func (s *simulator) branchOnCondition(e *engine, st *compiler.Step) {
	s.out.Branches = append(s.out.Branches, Branch{
		Step:      e.prefix + st.ID,
		Condition: st.When.Text,
		IfTrue:    st.ID + " runs",
		IfFalse:   st.ID + " is skipped" + dependents(e.prog, st.Index),
	})
}

// errorBranches notes, for a symbolic run, each step with an error
// alternative: what runs if it succeeds and what if it fails.
func (s *simulator) errorBranches(prog *compiler.Program) {
	for i, st := range prog.Steps {
		if st.ErrOut == "" {
			continue
		}
		var onOK, onErr []string
		for _, j := range prog.Succ[i] {
			for _, d := range prog.Steps[j].Deps {
				if d.Step != i {
					continue
				}
				if d.Kind == compiler.DepError {
					onErr = append(onErr, prog.Steps[j].ID)
				} else {
					onOK = append(onOK, prog.Steps[j].ID)
				}
			}
		}
		s.out.Branches = append(s.out.Branches, Branch{
			Step:    st.ID,
			IfTrue:  fmt.Sprintf("%s succeeds: †state.%s is written%s", st.ID, st.Out, runs(onOK)),
			IfFalse: fmt.Sprintf("%s fails: †state.%s is written%s", st.ID, st.ErrOut, runs(onErr)),
		})
	}
}

func runs(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " and " + strings.Join(ids, ", ") + " run"
}

// dependents lists the steps that read a step's results, for messages.
func dependents(prog *compiler.Program, i int) string {
	var ids []string
	for _, j := range prog.Succ[i] {
		ids = append(ids, prog.Steps[j].ID)
	}
	if len(ids) == 0 {
		return ""
	}
	return ", and so may be " + strings.Join(ids, ", ")
}
