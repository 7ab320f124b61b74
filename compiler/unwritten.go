package compiler

import (
	"slices"
	"strconv"
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
			c = append(c, "when:"+id)
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
