package lang

import (
	"math"
	"testing"
)

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

// TestLeastInt: the least int64, which the printer writes for such a
// value (an input value of a JSON plan, say), reads back; it used to be
// "out of range", so the printed plan did not parse.
func TestLeastInt(t *testing.T) {
	text := FormatExpr(ValueExpr(int64(math.MinInt64)))
	for _, src := range []string{text, "-0x8000000000000000"} {
		f, diags := Parse("p.plan", []byte("f(x: "+src+") -> †state.r\n"))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", src, diags)
		}
		l, ok := Steps(f.Items)[0].Call.Args[0].Value.(*Literal)
		if !ok || l.Value != int64(math.MinInt64) {
			t.Errorf("%s: %#v", src, Steps(f.Items)[0].Call.Args[0].Value)
		}
	}
	for _, src := range []string{"-9223372036854775809", "9223372036854775808"} {
		if _, diags := Parse("p.plan", []byte("f(x: "+src+") -> †state.r\n")); !diags.HasErrors() {
			t.Errorf("%s parsed", src)
		}
	}
	if _, err := parseReference("p.plan", []byte("f(x: "+text+") -> †state.r\n")); err != nil {
		t.Errorf("grammar: %v", err)
	}
}
