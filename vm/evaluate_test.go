package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scriptedEvaluator answers each criterion with a fixed verdict.
type scriptedEvaluator struct {
	verdicts map[string]Verdict
	err      error
	requests []EvaluationRequest
}

func (s *scriptedEvaluator) Evaluate(ctx context.Context, req EvaluationRequest) (Verdict, error) {
	s.requests = append(s.requests, req)
	if s.err != nil {
		return Verdict{}, s.err
	}
	return s.verdicts[req.Criterion], nil
}

func TestRunEvaluator(t *testing.T) {
	const plan = `
tool fetch(x: int) -> {n: int} pure
tool use(n: int) -> int pure
fetch(x: 1) -> †state.a
  expect †state.a.n > 0
  expect "the count is plausible"
use(n: †state.a.n) -> †state.b
`
	tools := newFakeTools().
		on("fetch", func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"n": int64(3)}, nil }).
		on("use", func(ctx context.Context, args map[string]any) (any, error) { return args["n"], nil })
	tests := []struct {
		name     string
		verdict  Verdict
		err      error
		approve  *Decision
		status   RunStatus
		verdicts []Verdict
		code     string
	}{
		{name: "pass", verdict: Verdict{Verdict: "pass"}, status: RunCompleted,
			verdicts: []Verdict{{Criterion: "†state.a.n > 0", Verdict: "pass"}, {Criterion: "the count is plausible", Verdict: "pass"}}},
		{name: "partial", verdict: Verdict{Verdict: "partial", Note: "no unit"}, status: RunCompleted,
			verdicts: []Verdict{{Criterion: "†state.a.n > 0", Verdict: "pass"}, {Criterion: "the count is plausible", Verdict: "partial", Note: "no unit"}}},
		{name: "fail", verdict: Verdict{Verdict: "fail", Note: "too small"}, status: RunFailed, code: "expect-failed",
			verdicts: []Verdict{{Criterion: "†state.a.n > 0", Verdict: "pass"}, {Criterion: "the count is plausible", Verdict: "fail", Note: "too small"}}},
		{name: "hitl approved", verdict: Verdict{Verdict: "hitl", Note: "unsure"}, approve: &Decision{Approved: true, Note: "fine"}, status: RunCompleted,
			verdicts: []Verdict{{Criterion: "†state.a.n > 0", Verdict: "pass"}, {Criterion: "the count is plausible", Verdict: "pass", Note: "a person approved the result: fine"}}},
		{name: "hitl rejected", verdict: Verdict{Verdict: "hitl"}, approve: &Decision{Approved: false}, status: RunFailed, code: "expect-failed",
			verdicts: []Verdict{{Criterion: "†state.a.n > 0", Verdict: "pass"}, {Criterion: "the count is plausible", Verdict: "fail", Note: "a person rejected the result"}}},
		{name: "hitl without approver", verdict: Verdict{Verdict: "hitl"}, status: RunFailed, code: "rejected"},
		{name: "evaluator error", err: errors.New("unparseable answer"), status: RunFailed, code: "evaluation-failed"},
		{name: "unknown verdict", verdict: Verdict{Verdict: "maybe"}, status: RunFailed, code: "evaluation-failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &scriptedEvaluator{verdicts: map[string]Verdict{"the count is plausible": tt.verdict}, err: tt.err}
			rec := &recorder{}
			o := opts(tools, rec)
			o.Evaluator = ev
			var a *approver
			if tt.approve != nil {
				a = &approver{decide: func(ApprovalRequest) Decision { return *tt.approve }}
				o.Approver = a
			}
			res, err := Run(context.Background(), compile(t, plan), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status {
				t.Fatalf("status %s (%v), want %s", res.Status, res.Err, tt.status)
			}
			fetch := res.Steps[0]
			if diff := cmp.Diff(tt.verdicts, fetch.Verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if tt.code != "" && (fetch.Error == nil || fetch.Error.Code != tt.code) {
				t.Errorf("error %+v, want code %s", fetch.Error, tt.code)
			}
			if len(ev.requests) != 1 || ev.requests[0].Step != "fetch" || ev.requests[0].Args["x"] != int64(1) ||
				ev.requests[0].Result.(map[string]any)["n"] != int64(3) {
				t.Errorf("evaluation requests %+v", ev.requests)
			}
			if a != nil {
				if len(a.requests) != 1 || !strings.Contains(a.requests[0].Message, "the count is plausible") || a.requests[0].Args["result"] == nil {
					t.Errorf("approval requests %+v", a.requests)
				}
				// The dependent step waits for the person's decision.
				trace := rec.trace(ApprovalDecided, StepStarted)
				if trace[0] != "step-started fetch" || trace[1] != "approval-decided fetch" {
					t.Errorf("trace %v: the decision must come before anything else starts", trace)
				}
			}
		})
	}
}
