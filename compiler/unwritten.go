package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/obelisk-plan/obelisk/lang"
)

// A run that completes may leave slots unwritten: a step whose condition
// is false is skipped, and so is every step that reads what a skipped
// step did not write; a step with an error slot (-> †state.a || †state.e)
// writes one of the two; under on failure skip any step may be skipped.
// Steps never read an unwritten slot (they are skipped in turn), but the
// plan's output does. A plain reference in the output reads an unwritten
// slot as null; CEL fails on it, so an expression of the output checks it
// first with has().
//
// Whether a slot is written is a conjunction of conditions: that a step
// ran (its when held, and what it reads was written) and that it
// succeeded, or failed for its error slot. has(†state.a) in the output
// proves a's conditions; !has(†state.a), where a has one condition that
// a step succeeded, proves that it failed, and so that its error slot
// and what follows from it were written, and the other way round:
//
//	has(†state.confirmation) ? †state.confirmation.message : †state.failureReport.message
//
// checks when confirmation follows from the payment's success and
// failureReport from its failure.
//
// A step is due only once every slot it reads is written: the engine
// skips it otherwise, before its condition is evaluated. So in a step's
// when, has(†state.x) of a slot the step reads (and the has() is itself
// such a read) is true, and a condition that holds whenever has() of the
// slots it reads does (guardValue) is no condition: the step is written
// under the conditions of what it reads, as a step without when is.

// maxConditions bounds the conditions kept for a slot; a slot with more
// is proved written only by has() of itself.
const maxConditions = 8

// writtenConditions computes, for every slot that may be unwritten when
// the run ends, the conditions under which it is written: pc.conditions,
// by position in SlotNames, nil for a slot that is always written.
func (pc *planChecker) writtenConditions() {
	p := pc.p
	pc.conditions = make([][]string, len(pc.slots))
	const (
		todo = iota
		busy
		done
	)
	state := make([]int, len(pc.slots))
	index := make(map[*Slot]int, len(pc.slots))
	for i, s := range pc.slots {
		index[s] = i
	}
	var slotConds func(k int) []string
	stepConds := func(s *Step) []string {
		id := strconv.Itoa(s.Index)
		var c []string
		if s.When != nil {
			if holds, known := pc.guardValue(s); !known || !holds {
				c = append(c, "when:"+id)
			}
		}
		if p.Policy.Action == "skip" {
			c = append(c, "run:"+id)
		}
		r := pc.reads(s.Index)
		for _, list := range [][]*RefPath{r.data, r.when, r.expect} {
			for _, rp := range list {
				if rp.state == nil {
					continue
				}
				if name := rp.Slot(); name == s.Out || name == s.ErrOut {
					continue // an expect reads the step's own result
				}
				if k, ok := index[rp.state]; ok {
					c = append(c, slotConds(k)...)
				}
			}
		}
		return c
	}
	slotConds = func(k int) []string {
		switch state[k] {
		case busy:
			return []string{"slot:" + pc.slots[k].Name} // a cycle, reported elsewhere
		case done:
			return pc.conditions[k]
		}
		state[k] = busy
		slot := pc.slots[k]
		var c []string
		switch {
		case slot.HasInitial:
		case len(slot.Writers) == 1 && len(slot.ErrorWriters) == 0:
			w := slot.Writers[0]
			c = stepConds(w)
			if w.ErrOut != "" {
				c = append(c, "ok:"+strconv.Itoa(w.Index))
			}
		case len(slot.Writers) == 0 && len(slot.ErrorWriters) == 1:
			w := slot.ErrorWriters[0]
			c = append(stepConds(w), "fail:"+strconv.Itoa(w.Index))
		default:
			// Written by more than one step: written if any writer
			// surely writes it.
			c = []string{"slot:" + slot.Name}
			for _, w := range slot.Writers {
				if w.ErrOut == "" && len(stepConds(w)) == 0 {
					c = nil
					break
				}
			}
		}
		slices.Sort(c)
		c = slices.Compact(c)
		if len(c) > maxConditions {
			c = []string{"slot:" + slot.Name}
		}
		pc.conditions[k], state[k] = c, done
		return c
	}
	for k := range pc.slots {
		slotConds(k)
	}
}

// conditionFacts returns the facts has(†state.name) proves when it is
// true, or false (when is false).
func (pc *planChecker) conditionFacts(name string, when bool) facts {
	slot := pc.p.Slots[name]
	if slot == nil || slot.index == 0 {
		return nil
	}
	c := pc.conditions[slot.index-1]
	if when {
		f := facts{presentKey("state." + name): true}
		for _, x := range c {
			f["cond:"+x] = true
		}
		return f
	}
	if len(c) != 1 {
		return nil
	}
	switch kind, id, _ := cutCondition(c[0]); kind {
	case "ok":
		return facts{"cond:fail:" + id: true}
	case "fail":
		return facts{"cond:ok:" + id: true}
	}
	return nil
}

// provedWritten reports whether facts prove the slot written.
func (pc *planChecker) provedWritten(name string, f facts) bool {
	slot := pc.p.Slots[name]
	if slot == nil || slot.index == 0 {
		return false
	}
	c := pc.conditions[slot.index-1]
	for _, x := range c {
		if !f["cond:"+x] {
			return false
		}
	}
	return true
}

func cutCondition(c string) (kind, id string, ok bool) {
	for i := 0; i < len(c); i++ {
		if c[i] == ':' {
			return c[:i], c[i+1:], true
		}
	}
	return c, "", false
}

// guardValue returns the value a step's condition has whenever it is
// evaluated, when that is known: a constant, or has(†state.x) of slots
// the step reads (true then, see writtenConditions) joined by &&, || and
// !. known is false for any other condition.
func (pc *planChecker) guardValue(s *Step) (value, known bool) {
	w := s.When
	switch {
	case w == nil:
		return true, true
	case w.IsConst():
		b, ok := w.Const.(bool)
		return b, ok
	case w.Kind != OpCEL || w.expr == nil || w.env == nil || !strings.Contains(w.Text, "has"):
		return false, false
	}
	parsed, iss := parseCEL(w.env, w.expr.CELText())
	if iss.Err() != nil {
		return false, false
	}
	read := map[string]bool{}
	r := pc.reads(s.Index)
	for _, list := range [][]*RefPath{r.data, r.when, r.expect} {
		for _, rp := range list {
			if name := rp.Slot(); rp.state != nil && name != s.Out && name != s.ErrOut {
				read[name] = true
			}
		}
	}
	return guardValue(parsed.NativeRep().Expr(), read)
}

// guardValue is the value of a condition over has() of the slots a step
// reads, which are true: known is false when it depends on anything else.
// Comprehensions, which may name a variable state, are not entered.
func guardValue(e ast.Expr, read map[string]bool) (value, known bool) {
	switch e.Kind() {
	case ast.LiteralKind:
		b, ok := e.AsLiteral().(types.Bool)
		return bool(b), ok
	case ast.SelectKind:
		sel := e.AsSelect()
		op := sel.Operand()
		if sel.IsTestOnly() && op.Kind() == ast.IdentKind && op.AsIdent() == "state" && read[sel.FieldName()] {
			return true, true
		}
	case ast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch fn := call.FunctionName(); {
		case fn == "!_" && len(args) == 1:
			v, ok := guardValue(args[0], read)
			return !v, ok
		case (fn == "_&&_" || fn == "_||_") && len(args) == 2:
			// CEL's && and || are commutative: false && error is false,
			// true || error is true, whichever comes first.
			absorbing := fn == "_||_"
			a, aok := guardValue(args[0], read)
			b, bok := guardValue(args[1], read)
			switch {
			case aok && a == absorbing, bok && b == absorbing:
				return absorbing, true
			case aok && bok:
				return !absorbing, true
			}
		}
	}
	return false, false
}

// unwrittenRead reports, at span, an expression of the output that reads
// the slot name (shown as at) where it may be unwritten: why, from the
// slot's conditions, and how to read it.
func (pc *planChecker) unwrittenRead(span lang.Span, at, name string) {
	why := unwrittenWhy{text: "a step that writes it may be skipped, or write its error slot instead"}
	if slot := pc.p.Slots[name]; slot != nil && slot.index > 0 {
		why = pc.unwrittenWhy(slot)
	}
	d := pc.c.errorf(lang.MaybeUnwritten, span, "in expression: %s may be unwritten when the run ends (%s), so the output cannot read it without a check", at, why.text)
	if why.at.IsValid() {
		related(d, pc.c.file.Name, why.at, "%s", why.related)
	}
	msg := fmt.Sprintf("check it first, as in has(%s) ? … : …, or read it with a plain reference, which gives null", at)
	if why.fix != "" {
		msg += "; " + why.fix
	}
	d.Fix = &lang.Fix{Message: msg}
}

// unwrittenWhy is why a slot may be unwritten: an explanation, a fix that
// fits it, and the place of the step it names and what to say there.
type unwrittenWhy struct {
	text, fix string
	at        lang.Span
	related   string
}

// unwrittenWhy explains the condition under which a slot is written that
// tells the most: a step's condition, a failure, an error slot, a failure
// under on failure skip.
func (pc *planChecker) unwrittenWhy(slot *Slot) unwrittenWhy {
	conds := pc.conditions[slot.index-1]
	best, rank := "", 0
	for _, c := range conds {
		kind, _, _ := cutCondition(c)
		if r := strings.Index("slot run ok fail when", kind) + 1; r > rank {
			best, rank = c, r
		}
	}
	def := fmt.Sprintf("or give it a value it keeps when no step writes it: state { %s: %s = … }", slot.Name, slot.Type)
	if pc.c.file.JSON {
		def = fmt.Sprintf("or give it a value it keeps when no step writes it: {\"type\": \"state\", %q: …}", slot.Name)
	}
	kind, id, _ := cutCondition(best)
	i, err := strconv.Atoi(id)
	if kind == "slot" || err != nil || i < 0 || i >= len(pc.p.Steps) {
		return unwrittenWhy{text: "more than one step writes it, and each may be skipped", fix: def}
	}
	s := pc.p.Steps[i]
	who := fmt.Sprintf("step %s, which it waits for,", s.ID)
	if s.Out == slot.Name || s.ErrOut == slot.Name {
		who = fmt.Sprintf("step %s, which writes it,", s.ID)
	}
	// !has() of a slot with one condition, that a step succeeded, proves
	// the step's error slot written.
	failure := ""
	if len(conds) == 1 && s.ErrOut != "" {
		failure = fmt.Sprintf("or read the failure on the other branch: has(†state.%s) ? … : †state.%s.message", slot.Name, s.ErrOut)
	}
	head := s.Node.Head()
	switch kind {
	case "when":
		cond := operandText(s.When)
		return unwrittenWhy{text: fmt.Sprintf("%s runs only when %s", who, cond), fix: def, at: s.When.Span, related: fmt.Sprintf("step %s runs only when %s", s.ID, cond)}
	case "fail":
		failure = ""
		if slot.Name == s.ErrOut && s.Out != "" && len(conds) == 1 {
			failure = fmt.Sprintf("or read it where the step failed: has(†state.%s) ? … : †state.%s.message", s.Out, s.ErrOut)
		}
		text := fmt.Sprintf("%s writes its error slot only when it fails", who)
		if slot.Name == s.ErrOut {
			text = fmt.Sprintf("step %s writes it only when it fails", s.ID)
		}
		return unwrittenWhy{text: text, fix: failure, at: head, related: fmt.Sprintf("step %s writes †state.%s only when it fails", s.ID, s.ErrOut)}
	case "ok":
		return unwrittenWhy{text: fmt.Sprintf("%s writes †state.%s instead when it fails", who, s.ErrOut), fix: failure, at: head, related: fmt.Sprintf("step %s writes †state.%s when it fails", s.ID, s.ErrOut)}
	}
	return unwrittenWhy{text: fmt.Sprintf("under on failure skip, %s is skipped when it fails", who), fix: def, at: head, related: fmt.Sprintf("step %s may fail", s.ID)}
}

// operandText is how a message quotes a step's condition.
func operandText(op *Operand) string {
	switch {
	case op == nil:
		return "its condition holds"
	case op.Text != "":
		return op.Text
	case op.Kind == OpRef && op.Ref != nil:
		return op.Ref.String()
	case op.IsConst():
		return describeValue(op.Const)
	}
	return "its condition holds"
}
