package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
)

// Rules is an Evaluator that gives each criterion in words the verdict
// a rules file states for it, calling no model: the operator's fixed
// judgement, for runs that must not depend on a model, and for tests.
// The file is a JSON object from a criterion's exact text to its verdict,
// a string ("pass", "partial", "fail" or "hitl") or an object with a
// verdict and a note; the key "*" gives the verdict of the criteria it
// does not name. A criterion it names nowhere is an error, which fails
// the step: there is no default verdict unless "*" states one.
type Rules struct {
	verdicts map[string]Verdict
}

// ParseRules reads a rules file.
func ParseRules(b []byte) (*Rules, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("the rules are not a JSON object of criteria and verdicts: %w", err)
	}
	r := &Rules{verdicts: make(map[string]Verdict, len(raw))}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var v Verdict
		if err := json.Unmarshal(raw[k], &v.Verdict); err != nil {
			var obj struct {
				Verdict string `json:"verdict"`
				Note    string `json:"note"`
			}
			d := json.NewDecoder(bytes.NewReader(raw[k]))
			d.DisallowUnknownFields()
			if err := d.Decode(&obj); err != nil {
				return nil, fmt.Errorf("the verdict of %q is neither a verdict nor {\"verdict\": …, \"note\": …}: %w", k, err)
			}
			v.Verdict, v.Note = obj.Verdict, obj.Note
		}
		switch v.Verdict {
		case VerdictPass, VerdictPartial, VerdictFail, VerdictHITL:
		default:
			return nil, fmt.Errorf("the verdict of %q is %q, not pass, partial, fail or hitl", k, v.Verdict)
		}
		r.verdicts[k] = v
	}
	return r, nil
}

// Evaluate returns the verdict the rules state for the criterion, or the
// one of "*".
func (r *Rules) Evaluate(_ context.Context, req EvaluationRequest) (Verdict, error) {
	if v, ok := r.verdicts[req.Criterion]; ok {
		return v, nil
	}
	if v, ok := r.verdicts["*"]; ok {
		return v, nil
	}
	return Verdict{}, fmt.Errorf("the rules state no verdict for this criterion, and no \"*\" verdict for the others")
}
