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
