package compiler

import (
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// codes returns the codes of diags, one per diagnostic, joined by spaces.
func codes(diags lang.Diagnostics) string {
	var out []string
	for _, d := range diags {
		out = append(out, string(d.Code))
	}
	return strings.Join(out, " ")
}

// TestEmptyPlan: a plan with no steps and no output does nothing, which is
// an empty-plan error in either form; a plan with steps, or with an output
// alone, is not.
func TestEmptyPlan(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		empty     bool
	}{
		{"p.plan", "", true},
		{"p.plan", "  \n\n", true},
		{"p.plan", "# a comment\n\n# another\n", true},
		{"p.plan", "tool f(x: int) -> int pure\ninput {\n  x: int\n}\n", true},
		{"p.plan", "mode lazy\n", true},
		{"p.json", "[]", true},
		{"p.json", " [ ] \n", true},
		{"p.json", `{"calls": [], "output": null}`, true},
		{"p.json", `[{"type": "plan", "plan": []}]`, true},
		{"p.plan", "output 1\n", false},
		{"p.plan", "tool f(x: int) -> int pure\nf(x: 1) -> †state.r\n", false},
		{"p.json", `[{"_tool": "f", "x": 1}]`, false},
	} {
		_, diags := checkSource(tc.name, []byte(tc.src), Config{})
		got := strings.Contains(codes(diags), string(lang.EmptyPlan))
		if got != tc.empty {
			t.Errorf("%s %q: empty-plan %v, want %v; got:\n%s", tc.name, tc.src, got, tc.empty, diagText(diags))
		}
		if got {
			for _, d := range diags {
				if d.Code == lang.EmptyPlan && (d.Severity != lang.SeverityError || !d.Span.Start.IsValid()) {
					t.Errorf("%s %q: %s at %v, want an error at a valid position", tc.name, tc.src, d.Severity, d.Span.Start)
				}
			}
		}
	}
}

// TestUnusedResultByEffect: a call whose result goes nowhere is reported
// only when it is pure (it then does nothing); a call with an effect is
// made for its effect. An unused slot's fix says to drop the output path
// only for a call with an effect, so that following a fix never leads to
// the other warning.
func TestUnusedResultByEffect(t *testing.T) {
	decls := "tool p() -> int pure\ntool i() -> int idempotent\ntool x() -> int irreversible\ntool n() -> null pure\nplan sub() {\n  p() -> †state.v\n  output †state.v\n}\nplan act() {\n  i() -> †state.v\n  output †state.v\n}\n"
	for _, tc := range []struct {
		step string
		want string // the codes of the warnings, in order
	}{
		{"p()", "unused-result"},
		{"i()", ""},
		{"x()\n  approve", ""},
		{"n()", ""},
		{"sub()", "unused-result"},
		{"act()", ""},
		{"p()\n  result 3", "unused-result"},
		{"p()\n  fallback i()", ""},
		{"p() -> †state.r", "unused-slot"},
		{"i() -> †state.r", "unused-slot"},
	} {
		src := decls + tc.step + "\noutput 1\n"
		_, diags := checkSource("p.plan", []byte(src), Config{})
		if diags.HasErrors() {
			t.Fatalf("%s:\n%s", tc.step, diagText(diags))
		}
		if got := codes(diags); got != tc.want {
			t.Errorf("%s: warnings %q, want %q:\n%s", tc.step, got, tc.want, diagText(diags))
		}
		for _, d := range diags {
			if d.Code != lang.UnusedSlot {
				continue
			}
			drop := strings.Contains(d.Fix.Message, "drop the output path")
			if pure := strings.HasPrefix(tc.step, "p("); drop == pure {
				t.Errorf("%s: fix %q", tc.step, d.Fix.Message)
			}
			// Following the fix that drops the output path checks clean.
			if drop {
				_, again := checkSource("p.plan", []byte(decls+strings.Replace(tc.step, " -> †state.r", "", 1)+"\noutput 1\n"), Config{})
				if len(again) > 0 {
					t.Errorf("%s without its output path:\n%s", tc.step, diagText(again))
				}
			}
		}
	}
}

// TestUnjudgedCriterion: a criterion in words is warned about unless an
// evaluator will judge it; a CEL condition never is.
func TestUnjudgedCriterion(t *testing.T) {
	src := "tool f() -> string pure\nf() -> †state.r\n  expect \"it is polite\"\n  expect size(†state.r) > 0\noutput †state.r\n"
	_, diags := checkSource("p.plan", []byte(src), Config{})
	if got := codes(diags); got != "unjudged-criterion" {
		t.Fatalf("without an evaluator: %q\n%s", got, diagText(diags))
	}
	if d := diags[0]; d.Span.Start.Line != 3 || d.Span.Start.Column != 10 || !strings.Contains(d.Message, "obelisk agent") {
		t.Errorf("%s: %s", d.Span.Start, d.Message)
	}
	if _, diags := checkSource("p.plan", []byte(src), Config{HasEvaluator: true}); len(diags) > 0 {
		t.Errorf("with an evaluator:\n%s", diagText(diags))
	}
	js := `[{"type": "tool", "tool": {"name": "f", "annotations": {"readOnlyHint": true}}}, {"type": "plan", "plan": [{"_tool": "f", "_outputPath": "†state.r", "_criterion": "it is polite"}], "output": "†state.r"}]`
	_, diags = checkSource("p.json", []byte(js), Config{})
	if got := codes(diags); got != "unjudged-criterion" || !strings.Contains(diags[0].Fix.Message, `"_expect"`) {
		t.Errorf("JSON: %q\n%s", got, diagText(diags))
	}
}
