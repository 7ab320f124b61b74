package vm

import (
	"context"
	"strings"
	"testing"
)

// TestRules: a rules file gives each criterion its verdict and note, "*"
// the rest; without "*" an unnamed criterion is an error, never a default
// verdict; a file that is not criteria and verdicts is refused.
func TestRules(t *testing.T) {
	r, err := ParseRules([]byte(`{"A.": "pass", "B.": {"verdict": "fail", "note": "why"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for c, want := range map[string]Verdict{"A.": {Verdict: VerdictPass}, "B.": {Verdict: VerdictFail, Note: "why"}} {
		if got, err := r.Evaluate(context.Background(), EvaluationRequest{Criterion: c}); err != nil || got != want {
			t.Errorf("%s: %+v, %v", c, got, err)
		}
	}
	if _, err := r.Evaluate(context.Background(), EvaluationRequest{Criterion: "C."}); err == nil {
		t.Error("a criterion the rules do not name was judged")
	}
	star, err := ParseRules([]byte(`{"*": "hitl"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := star.Evaluate(context.Background(), EvaluationRequest{Criterion: "C."}); err != nil || got.Verdict != VerdictHITL {
		t.Errorf("*: %+v, %v", got, err)
	}
	for text, want := range map[string]string{
		`["pass"]`:                            "not a JSON object",
		`{"A.": "maybe"}`:                     `"maybe", not pass`,
		`{"A.": {"verdict": "pass", "x": 1}}`: "neither a verdict",
		`{"A.": 3}`:                           "neither a verdict",
		`{"A.": "unjudged"}`:                  "not pass, partial, fail or hitl",
	} {
		if _, err := ParseRules([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
