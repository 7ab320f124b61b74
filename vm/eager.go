package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// RunStream runs a plan while it is being written, in eager mode: each
// declaration is kept, and each step is checked against what is known so
// far and dispatched as soon as it is complete and checked, without
// waiting for the rest of the plan. A step that reads a slot no step
// written so far writes is held until one arrives; at the end of the
// stream, a step still held is an error. A step with a given result (the
// _output of seed 003) completes without calling its tool.
//
// RunStream returns the result and the diagnostics of the statements it
// rejected.
func RunStream(ctx context.Context, sp *lang.StreamParser, input map[string]any, opts Options) (*Result, lang.Diagnostics, error) {
	opts.defaults()
	if opts.Tools == nil {
		return nil, nil, errors.New("running a plan: no tools are configured")
	}
	r := &runner{opts: opts, start: time.Now(), emitMu: &sync.Mutex{}, group: newGroupCommit(opts.Journal)}
	defer r.calls.stop()
	defer r.flush()
	ctx, cancel := r.limitTime(ctx)
	defer cancel()
	s := &stream{r: r, input: input, file: &lang.File{Name: sp.Name()}, labels: map[string]bool{}}
	return s.run(ctx, sp)
}

// stream is the state of an eager run.
type stream struct {
	r      *runner
	input  map[string]any
	file   *lang.File // the declarations and the admitted steps, in order
	decls  []lang.Item
	steps  []*lang.Step
	held   []*lang.Step
	labels map[string]bool
	diags  lang.Diagnostics
	// sawStep is set once the stream has given a step, admitted or not.
	sawStep bool
	e       *engine
	// ctx is the run's, which the engine evaluates expressions under.
	ctx context.Context
}

type parsed struct {
	item  lang.Item
	diags lang.Diagnostics
	err   error
}

func (s *stream) run(ctx context.Context, sp *lang.StreamParser) (*Result, lang.Diagnostics, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	calls := s.r.calls.group(ctx)
	defer calls.stop()
	items := make(chan parsed)
	go func() {
		defer close(items)
		for {
			it, diags, err := sp.Next(ctx)
			select {
			case items <- parsed{it, diags, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	r := s.r
	r.event(Event{Type: PlanStarted, Message: "eager mode: steps run as they arrive"})
	done := make(chan completion, r.opts.MaxParallel)
	var ready []int
	running := 0
	streaming := true
	for {
		if s.e != nil {
			// A step starts once what made it ready is written (with a
			// group journal; without one it is already).
			r.sync()
			for running < r.opts.MaxParallel && len(ready) > 0 && s.e.stop == nil && ctx.Err() == nil {
				i := ready[0]
				ready = ready[1:]
				if out, ok := r.restored(s.e, i); ok {
					// It finished in an earlier process of the run.
					ready = mergeSorted(ready, s.e.settle(s.e.finish(i, out)))
					r.sync()
					continue
				}
				spec, serr := s.e.prepare(ctx, i, r.timeout(s.e.prog.Steps[i]))
				if serr != nil {
					ready = mergeSorted(ready, s.e.settle(s.e.finish(i, outcome{err: serr, start: r.elapsed()})))
					r.sync()
					continue
				}
				running++
				s.e.res[i].Status = StatusRunning
				e := s.e
				go func() { done <- completion{i, r.work(calls, e, spec)} }()
			}
		}
		if !streaming && running == 0 {
			break
		}
		var itemsCh chan parsed
		if streaming {
			itemsCh = items
		}
		select {
		case c := <-done:
			running--
			if c.out.waiting {
				// It waits for a decision another process records.
				s.e.res[c.i].Status = StatusWaiting
				s.e.waiting++
				continue
			}
			ready = mergeSorted(ready, s.e.settle(s.e.finish(c.i, c.out)))
		case p, ok := <-itemsCh:
			if !ok {
				streaming = false
				continue
			}
			s.diags = append(s.diags, p.diags...)
			if p.err != nil {
				streaming = false
				if !errors.Is(p.err, io.EOF) {
					s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ParseError, Message: p.err.Error(), File: s.file.Name})
				}
				ready = mergeSorted(ready, s.finishStream())
				continue
			}
			if p.item != nil {
				ready = mergeSorted(ready, s.add(p.item))
			}
		case <-ctx.Done():
			streaming = false
		}
	}
	if s.e == nil {
		// Nothing ran; build an engine over the declarations alone for the
		// output.
		prog, diags, _ := s.compile()
		if prog != nil {
			s.e, _ = newEngine(ctx, prog, s.input, nil, r.emit, r.clock, r.opts.CostLimit)
		}
		for _, d := range diags {
			if d.Code == lang.EmptyPlan && !s.sawStep {
				s.diags = append(s.diags, d) // the stream held no step and no output
			}
		}
	}
	if s.e == nil {
		res := &Result{Status: RunFailed, State: map[string]any{}, Err: errors.New("the plan does not check")}
		r.finishPlan(res)
		s.diags.Sort()
		return res, s.diags, nil
	}
	if s.e.waiting == 0 || s.e.stop != nil || ctx.Err() != nil {
		for _, i := range s.e.undecided() {
			s.e.skip(i, "the run stopped")
		}
	}
	res := r.conclude(ctx, s.e, s.e.result().Steps, 0)
	s.diags.Sort()
	return res, s.diags, nil
}

// add takes one item of the stream and returns the steps it makes ready.
func (s *stream) add(it lang.Item) []int {
	switch d := it.(type) {
	case *lang.ApproveDecl:
		s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.InvalidOption, File: s.file.Name, Span: d.Span,
			Message: "a plan run in eager mode cannot be approved as a whole: its steps run as they arrive; mark the steps that need it with approve, or run the plan in lazy mode"})
		return nil
	case *lang.ModeDecl:
		if d.Mode != nil && d.Mode.Name != "eager" {
			s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.InvalidOption, File: s.file.Name, Span: d.Span,
				Message: fmt.Sprintf("the plan says mode %s, but it is being run in eager mode, statement by statement; run it in lazy mode instead", d.Mode.Name)})
			return nil
		}
	}
	st, ok := it.(*lang.Step)
	if !ok {
		s.decls = append(s.decls, it)
		return s.admitHeld()
	}
	s.sawStep = true
	n := len(s.steps)
	ready := s.offer(st)
	if len(s.steps) > n && len(s.held) > 0 {
		// The new step may write what a held step waits for.
		ready = mergeSorted(ready, s.admitHeld())
	}
	return ready
}

// offer checks a new step against what is known so far: it is rejected
// for errors, held while it reads slots nothing writes yet, or admitted.
func (s *stream) offer(st *lang.Step) []int {
	if st.Label == nil {
		st.Label = &lang.Ident{Span: st.Head(), Name: s.freshLabel(st.Callee())}
	} else {
		s.labels[st.Label.Name] = true
	}
	s.steps = append(s.steps, st)
	_, diags, err := s.compile()
	mine := within(diags, st.Span)
	if err == nil && !mine.HasErrors() {
		if conflict := s.alreadyRead(st); conflict != "" {
			s.reject(st, conflict)
			return nil
		}
		return s.admit()
	}
	s.steps = s.steps[:len(s.steps)-1]
	if onlyUnwritten(mine) {
		s.held = append(s.held, st)
		return nil
	}
	for _, d := range mine {
		if d.Severity == lang.SeverityError {
			s.diags = append(s.diags, d)
		}
	}
	if !mine.HasErrors() {
		// The step is fine but the plan around it is not (an earlier
		// declaration): report that.
		s.diags = append(s.diags, errorsOnly(diags)...)
	}
	s.r.event(Event{Type: StepSkipped, Step: st.Label.Name, Tool: st.Callee(), Reason: "rejected: it does not check"})
	return nil
}

func (s *stream) reject(st *lang.Step, why string) {
	s.steps = s.steps[:len(s.steps)-1]
	s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ConflictingSlot, File: s.file.Name, Span: st.Span, Message: why})
	s.r.event(Event{Type: StepSkipped, Step: st.Label.Name, Tool: st.Callee(), Reason: "rejected: " + why})
}

// alreadyRead reports a new step that writes a slot an earlier step has
// already read, which the earlier step can no longer wait for.
func (s *stream) alreadyRead(st *lang.Step) string {
	if s.e == nil || st.Out == nil {
		return ""
	}
	slots := []string{st.Out.Success.Slot()}
	if st.Out.Error != nil {
		slots = append(slots, st.Out.Error.Slot())
	}
	for i, es := range s.e.prog.Steps {
		if !s.e.decided[i] {
			continue
		}
		for _, d := range es.Deps {
			for _, slot := range slots {
				if d.Slot == slot {
					return fmt.Sprintf("step %s writes †state.%s, which step %s has already read: it came too late for eager mode", st.Label.Name, slot, es.ID)
				}
			}
		}
		for _, r := range readsOf(es) {
			for _, slot := range slots {
				if r == slot {
					return fmt.Sprintf("step %s writes †state.%s, which step %s has already read: it came too late for eager mode", st.Label.Name, slot, es.ID)
				}
			}
		}
	}
	return ""
}

func readsOf(s *compiler.Step) []string {
	var out []string
	add := func(o *compiler.Operand) {
		for _, r := range o.AllRefs() {
			if slot := r.Slot(); slot != "" {
				out = append(out, slot)
			}
		}
	}
	for _, a := range s.Args {
		add(a.Value)
	}
	if s.When != nil {
		add(s.When)
	}
	if s.Each != nil {
		add(s.Each.List)
	}
	return out
}

func (s *stream) freshLabel(tool string) string {
	base := tool
	if i := strings.LastIndexAny(base, ".-"); i >= 0 {
		base = base[i+1:]
	}
	name := base
	for k := 2; s.labels[name]; k++ {
		name = fmt.Sprintf("%s%d", base, k)
	}
	s.labels[name] = true
	return name
}

// admitHeld retries the held steps after a new item.
func (s *stream) admitHeld() []int {
	if len(s.held) == 0 {
		_, _, err := s.compile()
		if err == nil && s.e != nil {
			return s.admit()
		}
		return nil
	}
	held := s.held
	s.held = nil
	var ready []int
	for _, st := range held {
		ready = mergeSorted(ready, s.offer(st))
	}
	return ready
}

// compile checks and compiles the declarations and admitted steps.
func (s *stream) compile() (*compiler.Program, lang.Diagnostics, error) {
	f := &lang.File{Name: s.file.Name}
	f.Items = append(f.Items, s.decls...)
	for _, st := range s.steps {
		f.Items = append(f.Items, st)
	}
	info, diags := compiler.Check(f, s.r.opts.Check)
	if diags.HasErrors() {
		return nil, diags, errors.New("the plan does not check")
	}
	prog, err := compiler.Compile(info, diags, compiler.Options{MaxParallel: s.r.opts.MaxParallel})
	return prog, diags, err
}

// admit moves the engine to the program with the newly admitted steps and
// returns the steps now ready.
func (s *stream) admit() []int {
	prog, _, err := s.compile()
	if err != nil {
		return nil
	}
	if s.e == nil {
		e, err := newEngine(s.ctx, prog, s.input, nil, s.r.emit, s.r.clock, s.r.opts.CostLimit)
		if err != nil {
			s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.TypeMismatch, File: s.file.Name, Message: err.Error()})
			return nil
		}
		e.fills = modelFiller{s.r}
		s.e = e
		return e.settle(e.roots())
	}
	return s.e.settle(s.e.extend(prog))
}

// finishStream reports the steps still held when the stream ends.
func (s *stream) finishStream() []int {
	for _, st := range s.held {
		s.steps = append(s.steps, st)
		_, diags, _ := s.compile()
		s.steps = s.steps[:len(s.steps)-1]
		for _, d := range within(diags, st.Span) {
			if d.Severity == lang.SeverityError {
				s.diags = append(s.diags, d)
			}
		}
	}
	s.held = nil
	return nil
}

// within returns the diagnostics inside a span.
func within(diags lang.Diagnostics, span lang.Span) lang.Diagnostics {
	var out lang.Diagnostics
	for _, d := range diags {
		if d.Span.Start.Offset >= span.Start.Offset && d.Span.End.Offset <= span.End.Offset {
			out = append(out, d)
		}
	}
	return out
}

// onlyUnwritten reports whether every error is a read of a state slot that
// nothing writes yet.
func onlyUnwritten(diags lang.Diagnostics) bool {
	n := 0
	for _, d := range diags {
		if d.Severity != lang.SeverityError {
			continue
		}
		if d.Code != lang.UndefinedReference || !strings.Contains(d.Message, "†state.") {
			return false
		}
		n++
	}
	return n > 0
}
