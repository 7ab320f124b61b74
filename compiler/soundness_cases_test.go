package compiler

import (
	"strings"
	"testing"
)

// The cases of this file are failures the generative soundness test
// (vm/soundness_test.go) found: plans that checked clean and failed at run
// time on something the checker could have known.

// TestDepsOnBothSlots: a step that reads both a step's slot and its error
// slot depends on both, so that the interpreter waits for both and skips
// the step, and the checker says it never runs.
func TestDepsOnBothSlots(t *testing.T) {
	src := `tool f() -> {a: string} pure
tool g(x: string, y: string) -> string pure
a: f() -> †state.ok || †state.err
b: g(x: †state.ok.a, y: †state.err.message) -> †state.r
c: g(x: "1", y: "2") -> †state.s
  when †state.ok.a == †state.err.code
`
	info, diags := checkSource("p.plan", []byte(src), Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, id := range []string{"b", "c"} {
		var s *Step
		for _, x := range info.Main.Steps {
			if x.ID == id {
				s = x
			}
		}
		var kinds []string
		for _, d := range s.Deps {
			kinds = append(kinds, d.Slot+":"+d.Kind.String())
		}
		if len(s.Deps) != 2 || s.Deps[1].Kind != DepError && s.Deps[0].Kind != DepError {
			t.Errorf("step %s: deps %v, want one on ok and one on err", id, kinds)
		}
		want := "step " + id + " never runs: it reads both †state.ok and †state.err, and step a writes only one of them"
		if !strings.Contains(diags.Error(), want) {
			t.Errorf("diagnostics:\n%s\nwant %q", diags, want)
		}
	}
	prog, err := Compile(info, diags, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if got := prog.Pred[i]; len(got) != 1 || got[0] != 0 {
			t.Errorf("Pred[%d] = %v, want [0] (one edge)", i, got)
		}
	}
	if got := prog.Succ[0]; len(got) != 2 {
		t.Errorf("Succ[0] = %v, want [1 2]", got)
	}
}
