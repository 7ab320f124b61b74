package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
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

// TestRunUnjudged: without an evaluator, a criterion in words is recorded
// as unjudged, with an event that says why (which LogEvents logs as a
// warning), and the result counts it; a CEL condition is judged as usual.
// With an evaluator nothing is unjudged.
func TestRunUnjudged(t *testing.T) {
	const plan = `
tool fetch(x: int) -> {n: int} pure
fetch(x: 1) -> †state.a
  expect †state.a.n > 0
  expect "the count is plausible"
  expect "the count is recent"
output †state.a
`
	tools := newFakeTools().
		on("fetch", func(ctx context.Context, args map[string]any) (any, error) { return map[string]any{"n": int64(3)}, nil })
	rec := &recorder{}
	res, err := Run(context.Background(), compile(t, plan), nil, opts(tools, rec))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || res.Unjudged != 2 {
		t.Fatalf("status %s (%v), unjudged %d, want completed and 2", res.Status, res.Err, res.Unjudged)
	}
	var reasons []string
	for _, e := range rec.events {
		if e.Type == StepVerdict && e.Verdict == VerdictUnjudged {
			reasons = append(reasons, e.Reason)
		}
	}
	if len(reasons) != 2 || reasons[0] != NoEvaluator || !strings.Contains(NoEvaluator, "obelisk agent") {
		t.Errorf("unjudged events' reasons %q", reasons)
	}
	var logged strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})
	for _, e := range rec.events {
		LogEvents(log)(e)
	}
	if n := strings.Count(logged.String(), "[WARN]"); n != 2 || !strings.Contains(logged.String(), "the count is recent") {
		t.Errorf("logged at warning level:\n%s", logged.String())
	}

	o := opts(tools, &recorder{})
	o.Evaluator = &scriptedEvaluator{verdicts: map[string]Verdict{"the count is plausible": {Verdict: "pass"}, "the count is recent": {Verdict: "pass"}}}
	res, err = Run(context.Background(), compile(t, plan), nil, o)
	if err != nil || res.Status != RunCompleted || res.Unjudged != 0 {
		t.Errorf("with an evaluator: status %s (%v, %v), unjudged %d", res.Status, err, res.Err, res.Unjudged)
	}
}

// TestEvaluatorChecksCriteria: a run with an evaluator checks the plans
// it makes (replanned, edited) knowing that their criteria in words will
// be judged.
func TestEvaluatorChecksCriteria(t *testing.T) {
	o := Options{Evaluator: &scriptedEvaluator{}}
	o.defaults()
	if !o.Check.HasEvaluator {
		t.Error("Check.HasEvaluator is not set")
	}
	o = Options{}
	o.defaults()
	if o.Check.HasEvaluator {
		t.Error("Check.HasEvaluator is set without an evaluator")
	}
}
