package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

// graph computes each step's dependencies from the slots it reads, reports
// cycles, and returns the steps in a topological order (nil if there is a
// cycle).
func (pc *planChecker) graph() []int {
	c := pc.c
	p := pc.p
	// The dependencies of every step in one piece, sized for one per
	// reference.
	pool := make([]Dep, len(pc.all.data)+len(pc.all.when)+len(pc.all.expect))
	g := depSet{at: make([]int32, len(p.Steps)), atErr: make([]int32, len(p.Steps))}
	// Which step reads which slot, each pair once, to make the lists of
	// readers at the end.
	type slotRead struct {
		slot *Slot
		step *Step
	}
	reading := make([]slotRead, 0, len(pool))
	for _, s := range p.Steps {
		r := pc.reads(s.Index)
		add := func(refs []*RefPath, kind DepKind, allowOwn bool) {
			for _, ref := range refs {
				name := ref.Slot()
				slot := ref.state
				if slot == nil && name != "" {
					slot = p.Slots[name]
				}
				if slot == nil {
					continue
				}
				// Steps are visited in order: s has been counted if it
				// is the last step found reading the slot.
				if slot.readBy != s {
					slot.readBy = s
					slot.readers++
					reading = append(reading, slotRead{slot, s})
				}
				for _, w := range slot.Writers {
					pc.addDep(s, w, name, kind, allowOwn, ref, &g)
				}
				for _, w := range slot.ErrorWriters {
					pc.addDep(s, w, name, DepError, allowOwn, ref, &g)
				}
			}
		}
		add(r.data, DepData, false)
		add(r.when, DepWhen, false)
		add(r.expect, DepWhen, true)
		if len(g.deps) == 0 {
			s.Deps = []Dep{}
			continue
		}
		s.Deps = take(&pool, len(g.deps))
		copy(s.Deps, g.deps)
		slices.SortFunc(s.Deps, func(a, b Dep) int { return a.Step - b.Step })
		// A step that reads both a step's slot and its error slot waits
		// for two slots of which only one is ever written.
		for k := 1; k < len(s.Deps); k++ {
			if d := s.Deps[k]; d.Step == s.Deps[k-1].Step {
				ok, errSlot := s.Deps[k-1].Slot, d.Slot
				if d.Kind != DepError {
					ok, errSlot = errSlot, ok
				}
				c.warnf(lang.Unreachable, s.Node.Head(), "step %s never runs: it reads both †state.%s and †state.%s, and step %s writes only one of them", s.ID, ok, errSlot, p.Steps[d.Step].ID)
			}
		}
		g.reset()
	}
	readers := make([]*Step, len(reading))
	for _, sr := range reading {
		if sr.slot.Readers == nil {
			sr.slot.Readers = take(&readers, int(sr.slot.readers))[:0]
		}
		sr.slot.Readers = append(sr.slot.Readers, sr.step)
	}
	for _, sr := range reading {
		sr.slot.readBy, sr.slot.readers = nil, 0
	}
	order, rest := topoOrder(p.Steps)
	if len(rest) == 0 {
		return order
	}
	for _, i := range rest {
		pc.onCycle[i] = true
	}
	for _, cyc := range findCycles(p.Steps, rest) {
		names := make([]string, 0, len(cyc)+1)
		for _, i := range cyc {
			names = append(names, p.Steps[i].ID)
		}
		names = append(names, p.Steps[cyc[0]].ID)
		first := p.Steps[cyc[0]]
		d := c.errorf(lang.Cycle, calleeSpan(first.Node), "cycle: %s", strings.Join(names, " -> "))
		for k, i := range cyc {
			from := p.Steps[i]
			to := p.Steps[cyc[(k+1)%len(cyc)]]
			slot := ""
			for _, dep := range to.Deps {
				if dep.Step == from.Index {
					slot = dep.Slot
				}
			}
			related(d, c.file.Name, calleeSpan(from.Node), "%s writes †state.%s, which %s reads", from.ID, slot, to.ID)
		}
		d.Fix = &lang.Fix{Message: "a step may not wait, directly or through others, for a slot it writes itself; read a different slot or remove one of the steps"}
	}
	return order
}

// depSet collects the dependencies of one step: each writer once, or
// twice when the step reads both its slot and its error slot.
type depSet struct {
	deps []Dep
	// at and atErr hold, for each step, 1 + the place in deps of the
	// dependency on its slot and on its error slot, or 0.
	at, atErr []int32
}

func (g *depSet) reset() {
	for _, d := range g.deps {
		g.at[d.Step], g.atErr[d.Step] = 0, 0
	}
	g.deps = g.deps[:0]
}

// addDep records that s waits for writer w through slot name.
func (pc *planChecker) addDep(s, w *Step, name string, kind DepKind, allowOwn bool, ref *RefPath, g *depSet) {
	if w == s {
		if allowOwn {
			return // expect reads the step's own result, after it ran
		}
		d := pc.c.errorf(lang.Cycle, ref.Span, "cycle: step %s reads †state.%s, which it writes itself", s.ID, name)
		d.Fix = &lang.Fix{Message: "a step cannot read its own output; read the slot in a later step"}
		return
	}
	d := Dep{Step: w.Index, Slot: name, Kind: kind}
	at := g.at
	if kind == DepError {
		at = g.atErr
	}
	if k := at[w.Index]; k > 0 {
		if g.deps[k-1].Kind != DepData {
			g.deps[k-1] = d
		}
		return
	}
	g.deps = append(g.deps, d)
	at[w.Index] = int32(len(g.deps))
}

// topoOrder is Kahn's algorithm: the steps in an order where each comes
// after those it depends on, and the steps left over, which are on or
// behind a cycle. It is linear in steps and dependencies.
func topoOrder(steps []*Step) (order, rest []int) {
	n := len(steps)
	indeg := make([]int32, n)
	// The steps that wait for step i are succ[start[i]:start[i+1]].
	start := make([]int32, n+1)
	for _, s := range steps {
		for _, d := range s.Deps {
			if d.Step == s.Index {
				continue
			}
			indeg[s.Index]++
			start[d.Step+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i]
	}
	succ := make([]int32, start[n])
	next := slices.Clone(start[:n])
	for _, s := range steps {
		for _, d := range s.Deps {
			if d.Step != s.Index {
				succ[next[d.Step]] = int32(s.Index)
				next[d.Step]++
			}
		}
	}
	order = make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		v := order[k]
		for _, j := range succ[start[v]:start[v+1]] {
			indeg[j]--
			if indeg[j] == 0 {
				order = append(order, int(j))
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	for i := range n {
		if indeg[i] > 0 {
			rest = append(rest, i)
		}
	}
	return order, rest
}

// findCycles returns one cycle through each group of steps that wait on
// each other (each strongly connected component among rest), as step
// indexes in dependency order, starting from the lowest index.
func findCycles(steps []*Step, rest []int) [][]int {
	in := make(map[int]bool, len(rest))
	for _, i := range rest {
		in[i] = true
	}
	// Tarjan's algorithm over the leftover steps, iterative so that long
	// cycles cannot overflow the stack.
	index := map[int]int{}
	low := map[int]int{}
	onStack := map[int]bool{}
	var stack []int
	var comps [][]int
	next := 0
	type frame struct{ v, i int }
	for _, root := range rest {
		if _, seen := index[root]; seen {
			continue
		}
		work := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(work) > 0 {
			f := &work[len(work)-1]
			deps := steps[f.v].Deps
			if f.i < len(deps) {
				w := deps[f.i].Step
				f.i++
				if !in[w] {
					continue
				}
				if _, seen := index[w]; !seen {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					work = append(work, frame{w, 0})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			work = work[:len(work)-1]
			if len(work) > 0 {
				u := work[len(work)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				if len(comp) > 1 {
					comps = append(comps, comp)
				}
			}
		}
	}
	var out [][]int
	for _, comp := range comps {
		slices.Sort(comp)
		out = append(out, cycleIn(steps, comp))
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// cycleIn finds a cycle within one strongly connected component, starting
// at its lowest step and following writers in dependency order: the cycle
// a -> b means b reads a slot a writes.
func cycleIn(steps []*Step, comp []int) []int {
	in := map[int]bool{}
	for _, i := range comp {
		in[i] = true
	}
	start := comp[0]
	// Breadth-first search over "is read by" edges back to start gives a
	// shortest cycle.
	readers := map[int][]int{}
	for _, i := range comp {
		for _, d := range steps[i].Deps {
			if in[d.Step] {
				readers[d.Step] = append(readers[d.Step], i)
			}
		}
	}
	prev := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range readers[v] {
			if w == start {
				path := []int{}
				for x := v; x != -1; x = prev[x] {
					path = append(path, x)
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return comp
}

// gates marks the steps that an approval comes before: the plan's, the
// step's own, or one on a step it depends on. order holds the steps that
// are not on or behind a cycle.
func (pc *planChecker) gates(order []int) {
	p := pc.p
	for _, i := range order {
		s := p.Steps[i]
		s.Gated = p.Approve || s.Approve
		for _, d := range s.Deps {
			if p.Steps[d.Step].Gated {
				s.Gated = true
			}
		}
	}
}

// warnings reports what is legal but likely a mistake.
func (pc *planChecker) warnings() {
	c := pc.c
	p := pc.p
	for _, s := range p.Steps {
		n := s.Node
		if s.When.IsConst() {
			if b, ok := s.When.Const.(bool); ok && !b {
				c.warnf(lang.Unreachable, s.When.Span, "step %s never runs: its condition is false", s.ID)
			}
		} else if holds, known := pc.guardValue(s); known && !holds {
			d := c.warnf(lang.Unreachable, s.When.Span, "step %s never runs: its condition is false whenever it is evaluated, since a step is due only once every slot it reads is written, and has() of each is then true", s.ID)
			d.Fix = &lang.Fix{Message: "to run a step when another fails, read that step's error slot (-> †state.ok || †state.err); to run it when another is skipped, give it the opposite of that step's condition"}
		}
		// A call with an effect is made for its effect: its result may go
		// unused. A pure call whose result goes nowhere does nothing.
		if n.Out == nil && s.Tool != nil && stepEffect(s) == Pure && s.Tool.Result.Kind != KindNull {
			d := c.warnf(lang.UnusedResult, n.Call.Span, "the result of %s (%s) is not written anywhere, and %s is pure, so the step does nothing", s.ID, s.Tool.Result, s.Tool.Name)
			slot := "†state." + suggestSlot(s, p)
			if c.file.JSON {
				d.Fix = &lang.Fix{Message: fmt.Sprintf("write the result to a slot that something reads: add \"_outputPath\": %q to the call; or remove the call", slot)}
			} else {
				d.Fix = &lang.Fix{Message: "write the result to a slot that something reads (-> †state.NAME), or remove the step", Edits: []lang.Edit{{File: c.file.Name, Span: lang.Span{Start: n.Call.Span.End, End: n.Call.Span.End}, NewText: " -> " + slot}}}
			}
		}
		// A step that only reads error slots of steps that cannot fail
		// (their result is given) never runs.
		if len(s.Deps) > 0 {
			allDead := true
			for _, d := range s.Deps {
				if d.Kind != DepError || p.Steps[d.Step].Result == nil {
					allDead = false
				}
			}
			if allDead {
				c.warnf(lang.Unreachable, n.Head(), "step %s never runs: it reads only the error slot of a step whose result is given", s.ID)
			}
		}
		if p.Name == "" && stepEffect(s) == Irreversible && (s.Tool != nil || s.Task != nil) && !s.Gated && !pc.onCycle[s.Index] {
			sev := lang.SeverityWarning
			if c.cfg.Strict {
				sev = lang.SeverityError
			}
			var d *lang.Diagnostic
			switch {
			case s.Task != nil:
				var irreversible []string
				for _, t := range s.Task.Candidates {
					if t.Effect == Irreversible {
						irreversible = append(irreversible, t.Name)
					}
				}
				d = c.report(sev, lang.UnapprovedEffect, "", n.Task.Span, "task %s may choose %s, which is irreversible, and no approval comes before it; an approval of the task is asked once the model has chosen, and shows the choice", s.ID, strings.Join(irreversible, " or "))
			default:
				what := "is irreversible"
				if s.Tool.Plan != nil {
					what = "runs irreversible steps"
				} else if s.Tool.Effect != Irreversible && s.Fallback != nil {
					what = "falls back to an irreversible tool"
				}
				d = c.report(sev, lang.UnapprovedEffect, "", n.Call.Tool.Span, "%s %s, and no approval comes before it", s.Tool.Name, what)
			}
			if s.Tool != nil && s.Tool.Plan != nil {
				for _, inner := range s.Tool.Plan.Steps {
					if stepEffect(inner) == Irreversible && !inner.Approve {
						related(d, c.file.Name, calleeSpan(inner.Node), "%s in sub-plan %s is irreversible", inner.ToolName(), s.Tool.Name)
					}
				}
			}
			if c.file.JSON {
				d.Fix = &lang.Fix{Message: "add \"_approve\": true to the call (or \"approve\": true to the plan message)"}
			} else {
				end := n.Span.End
				d.Fix = &lang.Fix{
					Message: "add `approve` to the step (or `approve` to the plan)",
					Edits:   []lang.Edit{{File: c.file.Name, Span: lang.Span{Start: end, End: end}, NewText: "\n  approve"}},
				}
			}
		}
	}
	for i, name := range p.SlotNames {
		slot := pc.slots[i]
		read := len(slot.Readers) > 0 || slot.ReadByOutput || pc.misread[name]
		for _, w := range slot.ErrorWriters {
			if !read {
				d := c.warnf(lang.UnhandledError, w.Node.Out.Error.Span, "the error slot †state.%s of step %s is never read, so a failure would pass unnoticed", name, w.ID)
				d.Fix = &lang.Fix{Message: "read †state." + name + " (report or recover from the failure), or drop the `|| †state." + name + "` alternative"}
			}
		}
		if !read && p.Output != nil && len(slot.Writers) > 0 {
			w := slot.Writers[0]
			d := c.warnf(lang.UnusedSlot, w.Node.Out.Success.Span, "†state.%s is written by %s but never read", name, w.ID)
			if stepEffect(w) == Pure {
				d.Fix = &lang.Fix{Message: "read the slot in a step or in the output, or remove the step: a pure call whose result nobody reads does nothing"}
			} else {
				d.Fix = &lang.Fix{Message: "read the slot in a step or in the output, or drop the output path: the call still runs for its effect"}
			}
		}
		var a, b *Step // the first two writers without a condition
		for _, w := range slot.Writers {
			switch {
			case w.When != nil:
			case a == nil:
				a = w
			case b == nil:
				b = w
			}
		}
		if b != nil {
			d := c.warnf(lang.MultipleWriters, b.Node.Out.Success.Span, "†state.%s is written by %s and %s, both unconditionally: its value depends on which finishes last", name, a.ID, b.ID)
			related(d, c.file.Name, a.Node.Out.Success.Span, "%s writes it here", a.ID)
		}
	}
}

// calleeSpan is where a step names what it calls: its tool, or its task.
func calleeSpan(n *lang.Step) lang.Span {
	if n.Task != nil {
		return n.Task.Span
	}
	return n.Call.Tool.Span
}

// suggestSlot proposes a slot name for a step's result.
func suggestSlot(s *Step, p *Plan) string {
	base := s.Node.Callee()
	if i := strings.LastIndexAny(base, ".-"); i >= 0 {
		base = base[i+1:]
	}
	if s.Node.Label != nil {
		base = s.Node.Label.Name
	}
	name := base
	for k := 2; p.Slots[name] != nil; k++ {
		name = fmt.Sprintf("%s%d", base, k)
	}
	return name
}
