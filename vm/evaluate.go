package vm

import (
	"context"
	"fmt"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/runtime"
)

// Evaluator judges the result of a step against a success criterion
// stated in words (`expect "…"`), as seed 000's step evaluator does. The
// verdict is pass, partial (the run goes on, the note says what is
// missing), fail (the step fails with expect-failed) or hitl (a person
// must judge: the run asks the Approver, and the step waits).
type Evaluator interface {
	Evaluate(ctx context.Context, req EvaluationRequest) (Verdict, error)
}

// EvaluationRequest is one criterion of a step that returned a result.
type EvaluationRequest struct {
	Step, Tool string
	Criterion  string
	Args       map[string]any
	Result     any
}

// The verdicts of an evaluator.
const (
	VerdictPass    = "pass"
	VerdictPartial = "partial"
	VerdictFail    = "fail"
	VerdictHITL    = "hitl"
	// VerdictUnjudged is the verdict of a criterion no one judged: one in
	// words when no evaluator is configured (its note is NoEvaluator), or
	// a condition a dry run cannot decide.
	VerdictUnjudged = "unjudged"
)

// NoEvaluator is the note of a criterion in words that went unjudged
// because the run has no Evaluator, and the reason of its StepVerdict
// event.
const NoEvaluator = "no evaluator is configured: only an evaluator model judges a criterion in words (obelisk agent, or vm.Options.Evaluator)"

// evaluate has the evaluator judge each criterion of a step that returned
// a result. A hitl verdict asks the approver; an approval makes it a pass
// and a rejection a fail, with the person's note. An evaluator error
// fails the step: there is no default verdict.
func (r *runner) evaluate(ctx context.Context, round int, s *compiler.Step, id string, args map[string]any, value any) ([]Verdict, *StepError) {
	if r.opts.Evaluator == nil || len(s.Criteria) == 0 {
		return nil, nil
	}
	tool := s.ToolName()
	var out []Verdict
	for _, c := range s.Criteria {
		v, err := r.opts.Evaluator.Evaluate(ctx, EvaluationRequest{Step: id, Tool: tool, Criterion: c, Args: args, Result: value})
		if err != nil {
			return nil, &StepError{Code: "evaluation-failed", Message: fmt.Sprintf("judging %q: %v", c, err), Tool: tool, Step: s.ID, final: true}
		}
		v.Criterion = c
		switch v.Verdict {
		case VerdictPass, VerdictPartial, VerdictFail:
		case VerdictHITL:
			msg := "a person must judge whether the result meets: " + c
			if v.Note != "" {
				msg += " (" + v.Note + ")"
			}
			dec, err := r.approve(ctx, ApprovalRequest{Round: round, Step: id, Tool: tool, Message: msg, Args: map[string]any{"result": value}})
			switch {
			case err != nil:
				return nil, &StepError{Code: runtime.CodeRejected, Message: fmt.Sprintf("%s: %v", msg, err), Tool: tool, Step: s.ID, final: true}
			case dec.Approved:
				v.Verdict, v.Note = VerdictPass, joinNote("a person approved the result", dec.Note)
			default:
				v.Verdict, v.Note = VerdictFail, joinNote("a person rejected the result", dec.Note)
			}
		default:
			return nil, &StepError{Code: "evaluation-failed", Message: fmt.Sprintf("judging %q: unknown verdict %q", c, v.Verdict), Tool: tool, Step: s.ID, final: true}
		}
		out = append(out, v)
	}
	return out, nil
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// judged adds the evaluator's verdicts to the outcome of a step that
// returned a result.
func (r *runner) judged(ctx context.Context, e *engine, s *compiler.Step, id string, args map[string]any, out outcome) outcome {
	if out.err != nil {
		return out
	}
	verdicts, serr := r.evaluate(ctx, e.round, s, id, args, out.value)
	if serr != nil {
		out.err = serr
	}
	out.verdicts = verdicts
	out.duration = r.elapsed() - out.start
	return out
}
