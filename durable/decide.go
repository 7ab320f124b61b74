package durable

import (
	"errors"
	"fmt"

	"github.com/obelisk-plan/obelisk/vm/journal"
)

// ChoiceError is returned by Choose when the approval asked for is not
// one the run waits for, or when it waits for several and none was named.
type ChoiceError struct {
	Run string
	// Step is the step asked for, "" for none.
	Step string
	// Waiting are the approvals the run waits for: none, or the several
	// to choose from.
	Waiting []*Approval
}

// Error says which.
func (e *ChoiceError) Error() string {
	switch {
	case e.Step != "" && len(e.Waiting) != 1:
		return fmt.Sprintf("run %s has no approval of %s waiting for a decision", e.Run, e.Step)
	case len(e.Waiting) == 0:
		return fmt.Sprintf("run %s waits for no decision", e.Run)
	}
	return fmt.Sprintf("run %s waits for %d decisions: name the step", e.Run, len(e.Waiting))
}

// Choose returns the approval of run id that step names: a step's ID, or
// "plan" for the approval of the whole plan. With step "", the run must
// wait for one approval only, which it returns. Otherwise the error is a
// *ChoiceError.
func (s *Store) Choose(id, step string) (*Approval, error) {
	pending, err := s.db.Pending(id)
	if err != nil {
		return nil, err
	}
	var chosen []*Approval
	for _, p := range pending {
		if step == "" || p.Step == step || (step == "plan" && p.Step == "") {
			chosen = append(chosen, p)
		}
	}
	switch {
	case len(chosen) == 1:
		return chosen[0], nil
	case len(chosen) == 0 && step != "":
		return nil, &ChoiceError{Run: id, Step: step, Waiting: pending}
	}
	return nil, &ChoiceError{Run: id, Waiting: chosen}
}

// Decision is a decision to record on an approval.
type Decision struct {
	Approved bool
	// Note is kept with the decision; a rejected step's error carries it.
	Note string
	// Plan approves, instead of the plan that waits, this plan (plan
	// text, named PlanName in diagnostics): only for an approval of the
	// whole plan. It must check against the tools the run's plan was
	// checked against, so that it cannot give itself more than they do.
	Plan     []byte
	PlanName string
	// By says who or what decided.
	By string
}

// ErrEditStep is returned by Decide for an edited plan given on the
// approval of a step: an edited plan replaces the whole plan.
var ErrEditStep = errors.New("an edited plan replaces the whole plan: it applies to an approval of the plan, not of a step")

// Decide records a decision on an approval of run id (see Choose); the
// run is then resumed to take it. A request decided already keeps its
// first decision. An edited plan that does not check is refused with its
// diagnostics (a lang.Diagnostics, wrapped), and nothing is recorded.
func (s *Store) Decide(id string, ap *Approval, dec Decision) error {
	jd := journal.Decision{Approved: dec.Approved, Note: dec.Note, By: dec.By}
	if dec.Plan != nil {
		if ap.Step != "" || ap.Round != 0 {
			return fmt.Errorf("%w (%s is a step)", ErrEditStep, ap.Step)
		}
		st, err := s.db.Stored(id)
		if err != nil {
			return err
		}
		name := dec.PlanName
		if name == "" {
			name = "edited.plan"
		}
		if _, diags, _ := st.Source.WithText(name, string(dec.Plan)).Compile(); diags.HasErrors() {
			return fmt.Errorf("the edited plan does not check: %w", diags)
		}
		jd.Plan = dec.Plan
	}
	return s.db.Decide(id, ap.Round, ap.Step, jd)
}
