package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// TestReplanRepeatsRanSteps: a replanned plan that writes again the steps
// that completed (as a model usually does) does not call them again: the
// irreversible payment is made once, and its step in the new plan says
// which step it is. A replanned plan that changes the payment is refused
// with changed-irreversible-step, and the payment is not made again.
func TestReplanRepeatsRanSteps(t *testing.T) {
	const plan = `on failure replan max 1
tool charge(amount: number) -> string irreversible
tool flaky() -> string idempotent
tool steady() -> string idempotent
pay: charge(amount: 5) -> †state.receipt
  approve "Charge?"
note: flaky() -> †state.note
  when †state.receipt != ""
`
	for _, tc := range []struct {
		name, replan string
		status       RunStatus // partial: the failure replanned stays in the steps
	}{
		{"same", "pay: charge(amount: 5) -> †state.receipt\nnote: steady() -> †state.note\n  when †state.receipt != \"\"\n", RunPartial},
		{"changed", "pay: charge(amount: 6) -> †state.receipt\nnote: steady() -> †state.note\n  when †state.receipt != \"\"\n", RunFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := newFakeTools().
				on("charge", func(context.Context, map[string]any) (any, error) { return "R-1", nil }).
				on("flaky", func(context.Context, map[string]any) (any, error) { return nil, errors.New("down") }).
				on("steady", func(context.Context, map[string]any) (any, error) { return "ok", nil })
			o := opts(tools, nil)
			o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Approved: true}, nil })
			o.Replanner = &goReplanner{plan: tc.replan}
			res, err := Run(context.Background(), compile(t, plan), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || tools.count("charge") != 1 {
				t.Fatalf("status %s (%v), charge called %d times", res.Status, res.Err, tools.count("charge"))
			}
			var again *StepResult
			for _, s := range res.Steps {
				if s.ID == "pay" && s.Round == 1 {
					again = s
				}
			}
			switch {
			case again == nil:
				t.Fatalf("no step pay in round 1: %+v", res.Steps)
			case tc.status == RunPartial && (again.Status != StatusCompleted || again.Result != "R-1" || again.Repeats == nil || *again.Repeats != (StepRef{Step: "pay"})):
				t.Errorf("the repeated payment: %+v", again)
			case tc.status == RunFailed && (again.Error == nil || again.Error.Code != string(lang.ChangedIrreversible) || !strings.Contains(again.Error.Message, "would change step pay of the plan as it started")):
				t.Errorf("the changed payment: %+v", again)
			}
		})
	}
}

// TestResumedFillUnknown: a run resumed from a journal that has the
// outcome of an irreversible step with a hole but not the model's answer
// for it (a Restore without RestoreFill) cannot know that step's call
// again. The model is not asked for it; a later turn's step that writes
// its slot is refused, as it might be the same call, and the payment is
// not made again.
func TestResumedFillUnknown(t *testing.T) {
	const plan = `tool charge(amount: number) -> string irreversible
pay: charge(amount: ? "the amount owed") -> †state.receipt
  approve "Charge?"
output †state.receipt
`
	tools := newFakeTools().on("charge", func(context.Context, map[string]any) (any, error) { return "R-2", nil })
	asked := 0
	filler := FillerFunc(func(context.Context, FillRequest) (any, error) { asked++; return 5.0, nil })
	yes := ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Approved: true}, nil })
	h := NewHistory()

	o := opts(tools, nil)
	o.Approver, o.Filler, o.History = yes, filler, h.Turn(1)
	o.Restore = func(_ int, step string) (*StepResult, bool) {
		if step != "pay" {
			return nil, false
		}
		return &StepResult{ID: "pay", Tool: "charge", Status: StatusCompleted, Result: "R-1", Attempts: 1}, true
	}
	res, err := Run(context.Background(), compile(t, plan), nil, o)
	if err != nil || res.Status != RunCompleted || res.Output != "R-1" || asked != 0 || tools.count("charge") != 0 {
		t.Fatalf("the restored turn: %v %v %v, asked %d, charged %d", res.Status, res.Err, res.Output, asked, tools.count("charge"))
	}

	o = opts(tools, nil)
	o.Approver, o.Filler, o.History = yes, filler, h.Turn(2)
	res, err = Run(context.Background(), compile(t, plan), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if tools.count("charge") != 0 {
		t.Fatalf("the payment was made again: %v", res.Steps)
	}
	s := res.Steps[0]
	if s.Error == nil || s.Error.Code != string(lang.ChangedIrreversible) || !strings.Contains(s.Error.Message, "cannot be known again after the run was resumed") {
		t.Errorf("the repeated payment: %+v", s)
	}
}

// TestReplanRepeatsFilledStep: a replanned plan that writes again a step
// whose amount a model filled asks the same question of the same values:
// it takes the answer given, so the model is not asked again, and the step
// is the one that ran: the payment is made once.
func TestReplanRepeatsFilledStep(t *testing.T) {
	const plan = `on failure replan max 1
tool charge(amount: number) -> string irreversible
tool flaky() -> string idempotent
tool steady() -> string idempotent
pay: charge(amount: ? "the amount owed") -> †state.receipt
  approve "Charge?"
note: flaky() -> †state.note
  when †state.receipt != ""
`
	const replan = "pay: charge(amount: ? \"the amount owed\") -> †state.receipt\nnote: steady() -> †state.note\n  when †state.receipt != \"\"\n"
	tools := newFakeTools().
		on("charge", func(context.Context, map[string]any) (any, error) { return "R-1", nil }).
		on("flaky", func(context.Context, map[string]any) (any, error) { return nil, errors.New("down") }).
		on("steady", func(context.Context, map[string]any) (any, error) { return "ok", nil })
	asked := 0
	o := opts(tools, nil)
	o.Filler = FillerFunc(func(context.Context, FillRequest) (any, error) { asked++; return float64(4 + asked), nil })
	o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Approved: true}, nil })
	o.Replanner = &goReplanner{plan: replan}
	res, err := Run(context.Background(), compile(t, plan), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunPartial || tools.count("charge") != 1 || asked != 1 {
		t.Fatalf("status %s (%v), charge called %d times, the model asked %d times", res.Status, res.Err, tools.count("charge"), asked)
	}
	for _, s := range res.Steps {
		if s.ID == "pay" && s.Round == 1 && (s.Status != StatusCompleted || s.Repeats == nil || *s.Repeats != (StepRef{Step: "pay"})) {
			t.Errorf("the repeated payment: %+v", s)
		}
	}
}
