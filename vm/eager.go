package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
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
	r := &runner{opts: opts, start: time.Now(), emitMu: &sync.Mutex{}, group: newGroupCommit(opts.Journal), history: opts.History}
	defer r.calls.stop()
	defer r.flush()
	ctx, cancel := r.limitTime(ctx)
	defer cancel()
	s := &stream{r: r, input: input, file: &lang.File{Name: sp.Name()}, labels: map[string]bool{}, numbered: map[string]int{}}
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
	// readers are the engine's steps that read each slot, of its first
	// indexed steps (see alreadyRead).
	readers map[string][]int
	indexed int
	// numbered is the next number to try for a fresh label, by its base.
	numbered map[string]int
	diags    lang.Diagnostics
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
	// The parser runs ahead of the checking, so that statements that
	// arrive together are checked together (see offerAll).
	items := make(chan parsed, streamAhead)
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
				spec, out, decided := r.begin(ctx, s.e, i, nil)
				if decided {
					// It already ran, or cannot run.
					ready = mergeSorted(ready, s.e.settle(s.e.finish(i, out)))
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
			// Take the items that have arrived with it too.
			batch := []parsed{p}
			for p.err == nil && len(batch) < streamAhead {
				var more bool
				select {
				case p, more = <-items:
				default:
				}
				if !more {
					break
				}
				batch = append(batch, p)
			}
			var steps []*lang.Step
			for _, p := range batch {
				s.diags = append(s.diags, p.diags...)
				if st, ok := p.item.(*lang.Step); ok {
					steps = append(steps, st)
					continue
				}
				ready = mergeSorted(ready, s.offerAll(steps))
				steps = nil
				if p.err != nil {
					streaming = false
					if !errors.Is(p.err, io.EOF) {
						s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.ParseError, Message: p.err.Error(), File: s.file.Name})
					}
					ready = mergeSorted(ready, s.finishStream())
					break
				}
				if p.item != nil {
					ready = mergeSorted(ready, s.add(p.item))
				}
			}
			ready = mergeSorted(ready, s.offerAll(steps))
		case <-ctx.Done():
			streaming = false
		}
	}
	if s.e == nil {
		// Nothing ran; build an engine over the declarations alone for the
		// output.
		prog, diags, _ := s.compile()
		if prog != nil {
			s.e, _ = newEngine(ctx, prog, s.input, nil, r.emit, r.clock, r.opts.MaxCost)
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

// streamAhead bounds the items the parser of a stream reads ahead of the
// checking, and the steps checked together.
const streamAhead = 4096

// offerAll offers steps that arrived together, in order, and returns the
// steps they make ready. It is offer for each in turn, with the same
// outcome, but checks them together while they check clean together: so
// a stream whose text arrives faster than it can be checked statement by
// statement (a plan read from a file) is checked once for each batch,
// not once for each statement, whose cost would grow with the square of
// the plan's length. A batch that does not check is split in halves
// until the steps at fault are offered alone.
func (s *stream) offerAll(sts []*lang.Step) []int {
	if len(sts) == 0 {
		return nil
	}
	if len(sts) == 1 {
		return s.add(sts[0])
	}
	s.sawStep = true
	for _, st := range sts {
		s.label(st)
	}
	n := len(s.steps)
	s.steps = append(s.steps, sts...)
	prog, _, err := s.compile()
	if err == nil && s.inOrder(prog, n) && !s.letsInHeld() {
		for _, st := range sts {
			if s.alreadyRead(st) != "" {
				err = errors.New("a step came too late")
				break
			}
		}
		if err == nil {
			ready := s.admit(prog)
			if len(s.held) > 0 {
				ready = mergeSorted(ready, s.admitHeld())
			}
			return ready
		}
	}
	s.steps = s.steps[:n]
	half := len(sts) / 2
	return mergeSorted(s.offerAll(sts[:half]), s.offerAll(sts[half:]))
}

// inOrder reports whether each step of prog from the n-th on (a batch)
// reads only what steps before it write, as it must to be admitted on
// its arrival: a step that reads what a later step of the batch writes
// would have been held until that step came.
func (s *stream) inOrder(prog *compiler.Program, n int) bool {
	pos := make(map[string]int, len(s.steps))
	for k, st := range s.steps {
		pos[st.Label.Name] = k
	}
	for _, cs := range prog.Steps {
		k, ok := pos[cs.ID]
		if !ok || k < n {
			continue
		}
		for _, d := range cs.Deps {
			if w := prog.Steps[d.Step]; pos[w.ID] > k {
				return false
			}
		}
	}
	return true
}

// letsInHeld reports whether the steps offered so far let a held step
// in: it is then admitted after the step that writes what it waited for,
// not after all of them.
func (s *stream) letsInHeld() bool {
	for _, h := range s.held {
		s.steps = append(s.steps, h)
		_, diags, _ := s.compile()
		s.steps = s.steps[:len(s.steps)-1]
		if !within(diags, h.Span).HasErrors() {
			return true
		}
	}
	return false
}

// label gives a step without a label a fresh one, and takes the label of
// one that has it.
func (s *stream) label(st *lang.Step) {
	if st.Label == nil {
		st.Label = &lang.Ident{Span: st.Head(), Name: s.freshLabel(st.Callee())}
	} else {
		s.labels[st.Label.Name] = true
	}
}

// offer checks a new step against what is known so far: it is rejected
// for errors, held while it reads slots nothing writes yet, or admitted.
func (s *stream) offer(st *lang.Step) []int {
	s.label(st)
	s.steps = append(s.steps, st)
	prog, diags, err := s.compile()
	mine := within(diags, st.Span)
	if err == nil && !mine.HasErrors() {
		if conflict := s.alreadyRead(st); conflict != "" {
			s.reject(st, conflict)
			return nil
		}
		return s.admit(prog)
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
	// The readers of each slot, of the steps admitted since the last call.
	if s.readers == nil {
		s.readers = map[string][]int{}
	}
	for ; s.indexed < len(s.e.prog.Steps); s.indexed++ {
		es := s.e.prog.Steps[s.indexed]
		seen := map[string]bool{}
		for _, d := range es.Deps {
			seen[d.Slot] = true
		}
		for _, r := range readsOf(es) {
			seen[r] = true
		}
		for slot := range seen {
			s.readers[slot] = append(s.readers[slot], s.indexed)
		}
	}
	first := -1
	for _, slot := range slots {
		for _, i := range s.readers[slot] {
			if s.e.decided[i] && (first < 0 || i < first) {
				first = i
				break
			}
		}
	}
	if first < 0 {
		return ""
	}
	es := s.e.prog.Steps[first]
	for _, slot := range slots {
		if slices.Contains(s.readers[slot], first) {
			return fmt.Sprintf("step %s writes †state.%s, which step %s has already read: it came too late for eager mode", st.Label.Name, slot, es.ID)
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
	if s.labels[name] {
		// Labels are never taken back, so the numbers below the last one
		// given for base are taken.
		k := max(2, s.numbered[base])
		for s.labels[base+strconv.Itoa(k)] {
			k++
		}
		name = base + strconv.Itoa(k)
		s.numbered[base] = k + 1
	}
	s.labels[name] = true
	return name
}

// admitHeld retries the held steps after a new item.
func (s *stream) admitHeld() []int {
	if len(s.held) == 0 {
		prog, _, err := s.compile()
		if err == nil && s.e != nil {
			return s.admit(prog)
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
	c, err := planfile.Build(f, nil, s.r.opts.Check, compiler.Options{MaxParallel: s.r.opts.MaxParallel})
	if c.Diagnostics.HasErrors() {
		return nil, c.Diagnostics, errors.New("the plan does not check")
	}
	return c.Program, c.Diagnostics, err
}

// admit moves the engine to prog, the program compiled with the newly
// admitted steps, and returns the steps now ready.
func (s *stream) admit(prog *compiler.Program) []int {
	if s.e == nil {
		e, err := newEngine(s.ctx, prog, s.input, nil, s.r.emit, s.r.clock, s.r.opts.MaxCost)
		if err != nil {
			s.diags = append(s.diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: lang.TypeMismatch, File: s.file.Name, Message: err.Error()})
			return nil
		}
		e.fills = modelFiller{r: s.r}
		e.history = s.r.history
		s.e = e
		return slices.Clone(e.settle(e.roots()))
	}
	// A copy: settle's list holds only until the next settle, and the
	// caller may admit more before it dispatches these.
	return slices.Clone(s.e.settle(s.e.extend(prog)))
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
