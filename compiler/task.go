package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/obelisk-plan/obelisk/lang"
)

// Holes and tasks are what a plan leaves to a model to complete when the
// step runs, in the second stage of two-stage planning (seed 002). A hole
// (`? "instruction"`) is an argument: its type is its parameter's, and the
// references its instruction reads are read by the step, like any
// argument's. A task (`task "goal" using [a, b]`) is a step whose tool is
// chosen among candidates, each a tool or sub-plan the checker resolves,
// whose result must fit the task's type: the type the state block
// declares for its slot, else the result type its candidates share.
// What the model answers is checked when the step runs, as a tool's
// result is: a hole's value against its parameter, a task's choice
// against its candidates.

// hole checks a hole: the references its instruction reads. Its type is
// its parameter's (args sets it); elsewhere it is any.
func (pc *planChecker) hole(e *lang.HoleExpr, sc *scope, reads *[]*RefPath) *Operand {
	op := &Operand{Kind: OpHole, Text: e.Instruction.StringValue(), Type: AnyType, Span: e.Span}
	op.Refs = pc.textReads(e.Refs, sc, reads)
	return op
}

// textReads resolves the references of an instruction or a goal and adds
// them to reads. A value that may be null or absent is given to the model
// as it is (null), so neither is an error here.
func (pc *planChecker) textReads(refs []*lang.Ref, sc *scope, reads *[]*RefPath) []*RefPath {
	out := make([]*RefPath, 0, len(refs))
	for _, r := range refs {
		rp, _, ok := pc.ref(r, sc)
		if !ok {
			continue
		}
		*reads = append(*reads, rp)
		out = append(out, rp)
	}
	return out
}

// task checks what a task reads: the references of its goal.
func (pc *planChecker) task(s *Step, n *lang.Step, reads *[]*RefPath) {
	s.Task.Reads = pc.textReads(n.Task.Refs, pc.base, reads)
	if n.Out == nil {
		return
	}
	if slot := pc.p.Slots[s.Out]; slot != nil && slot.Declared != nil {
		return
	}
	if _, why := pc.c.candidatesType(n); why != "" {
		d := pc.c.errorf(lang.TypeMismatch, n.Out.Success.Span, "task %s writes †state.%s, whose type is not declared, and %s: declare the type every candidate's result must fit, state { %s: T }", s.ID, s.Out, why, s.Out)
		if pc.c.file.JSON {
			d.Message = fmt.Sprintf("task %s writes †state.%s, whose type is not declared, and %s: declare the type every candidate's result must fit in a state message's \"schema\"", s.ID, s.Out, why)
		}
	}
}

// candidatesType is the type of a task whose slot declares none: the
// result type its candidates share. why says why there is none.
func (c *checker) candidatesType(n *lang.Step) (*Type, string) {
	var common *Type
	var first string
	for _, name := range c.candidateNames(n) {
		t := c.info.Tools[name]
		if t == nil {
			continue
		}
		switch {
		case common == nil:
			common, first = t.Result, name
		case !sameType(common, t.Result):
			return nil, fmt.Sprintf("its candidates return different types (%s returns %s, %s returns %s)", first, common, name, t.Result)
		}
	}
	if common == nil {
		return nil, "it has no candidate whose result type says it"
	}
	return common, ""
}

// candidateNames are the names of a task's candidates, narrowed by its
// hint as taskCandidates narrows them, without its warnings.
func (c *checker) candidateNames(n *lang.Step) []string {
	var names []string
	for _, u := range n.Task.Using {
		if !slices.Contains(names, u.Name) {
			names = append(names, u.Name)
		}
	}
	h := hintOf(n)
	if h == nil {
		return names
	}
	m := resolveHint(h.Name.Name, c.cfg.Hints)
	if m.name == "" {
		return names
	}
	targets := c.cfg.Hints[m.name].targets()
	if n.Task.Using == nil {
		return targets
	}
	var kept []string
	for _, name := range names {
		if slices.Contains(targets, name) {
			kept = append(kept, name)
		}
	}
	if len(kept) == 0 {
		return names
	}
	return kept
}

// taskCandidates resolves the candidates of a task: those it lists,
// narrowed to the ones its hint routes to, or those its hint routes to
// when it lists none. Each must be a tool or sub-plan whose result fits
// the task's slot.
func (pc *planChecker) taskCandidates(s *Step, n *lang.Step) {
	c := pc.c
	var names []string
	spans := map[string]lang.Span{}
	for _, u := range n.Task.Using {
		if _, dup := spans[u.Name]; dup {
			d := c.errorf(lang.InvalidOption, u.Span, "candidate %s is listed twice", u.Name)
			related(d, c.file.Name, spans[u.Name], "first listed here")
			continue
		}
		spans[u.Name] = u.Span
		names = append(names, u.Name)
	}
	if s.Hint != "" {
		targets := c.cfg.Hints[s.Hint].targets()
		switch {
		case n.Task.Using == nil:
			names = nil
			for _, t := range targets {
				if c.info.Tools[t] != nil {
					names = append(names, t)
				}
			}
			if len(names) == 0 {
				c.warnf(lang.RoutingHint, hintOf(n).Name.Span, "hint %s routes to %s, none of which this plan can call, so it is dropped", s.Hint, strings.Join(targets, ", "))
				s.Hint = ""
			}
		default:
			var kept []string
			for _, name := range names {
				if slices.Contains(targets, name) {
					kept = append(kept, name)
				}
			}
			if len(kept) == 0 {
				c.warnf(lang.RoutingHint, hintOf(n).Name.Span, "hint %s routes to %s, none of which the task lists, so it is dropped: the task chooses among its candidates", s.Hint, strings.Join(targets, ", "))
				s.Hint = ""
			} else {
				names = kept
			}
		}
	}
	if len(names) == 0 {
		if n.Task.Using == nil {
			c.errorf(lang.InvalidOption, n.Task.Span, "task %s has no candidates: list the tools and sub-plans it may use, task \"…\" using [toolA, toolB], or give it a hint the operator declares", s.ID)
		} else {
			c.errorf(lang.InvalidOption, n.Task.Span, "task %s lists no candidates: name the tools and sub-plans it may use in using […]", s.ID)
		}
		return
	}
	for _, name := range names {
		span, listed := spans[name]
		if !listed {
			span = hintOf(n).Name.Span
		}
		t := pc.lookupTool(&lang.Call{Span: span, Tool: &lang.Ident{Span: span, Name: name}})
		if t == nil {
			continue
		}
		if n.Out != nil && s.OutType.Kind != KindAny {
			if ok, why := Assignable(t.Result, s.OutType); !ok {
				c.errorf(lang.TypeMismatch, span, "candidate %s returns %s, which does not fit †state.%s, of type %s, that task %s writes: %s", name, t.Result, s.Out, s.OutType, s.ID, why)
				continue
			}
		}
		s.Task.Candidates = append(s.Task.Candidates, t)
	}
}

// hint resolves a step's hint against the operator's, with a warning
// when it is not one of them. On a call, a hint that routes elsewhere
// than the call goes is reported: the call is made as written.
func (pc *planChecker) hint(s *Step, o *lang.HintOption) {
	c := pc.c
	m := resolveHint(o.Name.Name, c.cfg.Hints)
	if m.why != "" {
		d := c.warnf(lang.RoutingHint, o.Name.Span, "%s", m.why)
		if m.name != "" {
			replaceFix(d, o.Name.Span, m.name, "name the hint "+m.name)
		} else {
			d.Fix = &lang.Fix{Message: "remove the hint, or name one the operator declares"}
		}
	}
	s.Hint = m.name
	if m.name == "" || s.Node.Call == nil {
		return
	}
	if targets := c.cfg.Hints[m.name].targets(); !slices.Contains(targets, s.ToolName()) {
		c.warnf(lang.RoutingHint, o.Name.Span, "hint %s routes to %s, not to %s: the step calls %s as written; to let the hint choose, make the step a task", m.name, strings.Join(targets, ", "), s.ToolName(), s.ToolName())
	}
}

// callees returns the names a step of a sub-plan may call: its tool, or
// its task's candidates and the sub-plan its hint routes to.
func (c *checker) callees(s *lang.Step) []string {
	if s.Task == nil {
		return []string{s.Call.Tool.Name}
	}
	var out []string
	for _, u := range s.Task.Using {
		out = append(out, u.Name)
	}
	if h := hintOf(s); h != nil {
		if m := resolveHint(h.Name.Name, c.cfg.Hints); m.name != "" {
			out = append(out, c.cfg.Hints[m.name].targets()...)
		}
	}
	return out
}
