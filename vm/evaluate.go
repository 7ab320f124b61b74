package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit"
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
//
// prior are the verdicts an earlier process of the run recorded for the
// step while it waited for a person: a criterion judged there is not
// judged again, and one judged hitl goes to the approver, which gives the
// decision recorded since. When the approver says the decision is to be
// recorded by another process (ErrWaiting), evaluate returns the verdicts
// so far and waits set: the step waits, its result and those verdicts
// recorded with it.
func (r *runner) evaluate(ctx context.Context, round int, s *compiler.Step, id string, args map[string]any, value any, prior []Verdict) (out []Verdict, waits bool, serr *StepError) {
	if r.opts.Evaluator == nil && len(prior) == 0 || len(s.Criteria) == 0 {
		return nil, false, nil
	}
	tool := s.ToolName()
	for _, c := range s.Criteria {
		v, judged := priorVerdict(prior, c)
		if !judged {
			if r.opts.Evaluator == nil {
				return nil, false, &StepError{Code: "evaluation-failed", Message: fmt.Sprintf("judging %q: no evaluator is configured", c), Tool: tool, Step: s.ID, final: true}
			}
			var err error
			v, err = r.opts.Evaluator.Evaluate(ctx, EvaluationRequest{Step: id, Tool: tool, Criterion: c, Args: args, Result: value})
			if err != nil {
				return nil, false, &StepError{Code: "evaluation-failed", Message: fmt.Sprintf("judging %q: %v", c, err), Tool: tool, Step: s.ID, final: true}
			}
		}
		v.Criterion = c
		switch v.Verdict {
		case VerdictPass, VerdictPartial, VerdictFail:
		case VerdictHITL:
			msg := "a person must judge whether the result meets: " + c
			if v.Note != "" {
				msg += " (" + v.Note + ")"
			}
			waiting := &StepResult{ID: id, Tool: tool, Status: StatusWaiting, Result: value, Verdicts: append(append([]Verdict(nil), out...), v), Round: round}
			dec, err := r.approve(ctx, ApprovalRequest{Round: round, Step: id, Tool: tool, Message: msg, Args: map[string]any{"result": value}}, waiting)
			switch {
			case errors.Is(err, ErrWaiting):
				return out, true, nil
			case err != nil:
				return nil, false, &StepError{Code: toolkit.CodeRejected, Message: fmt.Sprintf("%s: %v", msg, err), Tool: tool, Step: s.ID, final: true}
			case dec.Approved:
				v.Verdict, v.Note = VerdictPass, joinNote("a person approved the result", dec.Note)
			default:
				v.Verdict, v.Note = VerdictFail, joinNote("a person rejected the result", dec.Note)
			}
		default:
			return nil, false, &StepError{Code: "evaluation-failed", Message: fmt.Sprintf("judging %q: unknown verdict %q", c, v.Verdict), Tool: tool, Step: s.ID, final: true}
		}
		out = append(out, v)
	}
	return out, false, nil
}

// priorVerdict returns the verdict recorded before for a criterion.
func priorVerdict(prior []Verdict, criterion string) (Verdict, bool) {
	for _, v := range prior {
		if v.Criterion == criterion {
			return v, true
		}
	}
	return Verdict{}, false
}

// hasHITL reports whether verdicts hold one that waits for a person.
func hasHITL(verdicts []Verdict) bool {
	for _, v := range verdicts {
		if v.Verdict == VerdictHITL {
			return true
		}
	}
	return false
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// judged adds the evaluator's verdicts to the outcome of a step that
// returned a result; prior are the verdicts recorded while it waited for
// a person (see evaluate).
func (r *runner) judged(ctx context.Context, e *engine, s *compiler.Step, id string, args map[string]any, out outcome, prior []Verdict) outcome {
	if out.err != nil {
		return out
	}
	verdicts, waits, serr := r.evaluate(ctx, e.round, s, id, args, out.value, prior)
	if serr != nil {
		out.err = serr
	}
	if waits {
		return outcome{waiting: true, start: out.start}
	}
	out.verdicts = verdicts
	out.duration = r.elapsed() - out.start
	return out
}
