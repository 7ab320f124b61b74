package lang

import "testing"

// The cases of this file were found by the generative soundness test
// (vm/soundness_test.go).

// TestRefBeforeOptionalSelect: a reference followed by CEL's optional
// selection (.?field) ends before it, as it ends before a method call;
// it used to be a parse error ("expected a field name after '.'").
func TestRefBeforeOptionalSelect(t *testing.T) {
	f, diags := Parse("p.plan", []byte("f(x: †state.a.b.?c.?d.orValue(0) + 1, y: $input.m.?k.hasValue()) -> †state.r\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	args := Steps(f.Items)[0].Call.Args
	for i, want := range []string{"†state.a.b", "$input.m"} {
		e, ok := args[i].Value.(*CELExpr)
		if !ok || len(e.Refs) != 1 || FormatExpr(e.Refs[0]) != want {
			t.Errorf("argument %d: %#v, want CEL reading %s", i, args[i].Value, want)
		}
	}
}

// TestGrammarOptionalSelect: the grammar of the reference (grammar.go)
// reads a reference followed by .?name as the parser does.
func TestGrammarOptionalSelect(t *testing.T) {
	src := "f(x: †state.a.b.?c.orValue(0) + 1) -> †state.r\n"
	if _, err := parseReference("p.plan", []byte(src)); err != nil {
		t.Errorf("grammar: %v", err)
	}
}
