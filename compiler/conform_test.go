package compiler

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// typeOf reads a type written in plan syntax.
func typeOf(t *testing.T, src string) *Type {
	t.Helper()
	f, diags := lang.Parse("t.plan", []byte("type T "+src+"\noutput null\n")) // a plan of a type alone is empty
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, diags := Check(f, Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	typ := *info.Types["T"]
	typ.Name = "" // messages show the type, not its name
	return &typ
}

// TestConform: the rule for values. A number in a place typed number is a
// float64; in a place typed int an int64, and a float there only when it
// is an integer a float64 holds exactly; any keeps what it holds; lists,
// objects, optional and nullable fields and enums conform through.
func TestConform(t *testing.T) {
	cases := []struct {
		typ  string
		in   any
		want any
		msg  string // what the message holds, when it does not fit
	}{
		{"number", int64(3), 3.0, ""},
		{"number", 3.5, 3.5, ""},
		{"number", int64(1) << 60, float64(int64(1) << 60), ""},
		{"number", math.NaN(), nil, "not a number JSON can hold"},
		{"number", math.Inf(1), nil, "not a number JSON can hold"},
		{"number", "3", nil, `the string "3" is not a number`},
		{"number?", nil, nil, ""},
		{"number", nil, nil, "null is not a number"},
		{"int", int64(3), int64(3), ""},
		{"int", 3.0, int64(3), ""},
		{"int", -4.0, int64(-4), ""},
		{"int", 3.5, nil, "3.5 is not an integer"},
		{"int", 1e17, nil, "beyond 2^53, which may have been rounded"},
		{"int", 1.2345678901234568e29, nil, "beyond the range of an int (64-bit)"},
		{"int", -9.3e18, nil, "beyond the range of an int (64-bit)"},
		{"int", int64(math.MaxInt64), int64(math.MaxInt64), ""},
		{"int", math.NaN(), nil, "is not an integer"},
		{"int", true, nil, "the boolean true is not an int"},
		{"any", int64(3), int64(3), ""},
		{"any", 3.0, 3.0, ""},
		{"any", []any{int64(1), 2.5}, []any{int64(1), 2.5}, ""},
		{"object", map[string]any{"a": int64(1)}, map[string]any{"a": int64(1)}, ""},
		{"[number]", []any{int64(1), 2.5}, []any{1.0, 2.5}, ""},
		{"[int]", []any{int64(1), 2.0}, []any{int64(1), int64(2)}, ""},
		{"[int]", []any{int64(1), 2.5}, nil, "[1]: 2.5 is not an integer"},
		{"[[number]]", []any{[]any{int64(1)}}, []any{[]any{1.0}}, ""},
		{"{v: number}", map[string]any{"v": int64(3)}, map[string]any{"v": 3.0}, ""},
		{"{v: number, extra?: int}", map[string]any{"v": 3.0, "other": int64(1)}, map[string]any{"v": 3.0, "other": int64(1)}, ""},
		{"{v?: number}", map[string]any{}, map[string]any{}, ""},
		{"{v: number?}", map[string]any{"v": nil}, map[string]any{"v": nil}, ""},
		{"{v: number}", map[string]any{}, nil, "missing required field v"},
		{"{a: {b: [{c: number}]}}", map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": int64(2)}}}},
			map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 2.0}}}}, ""},
		{"{a: {b: [{c: int}]}}", map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 2.5}}}},
			nil, "x.a.b[0].c: 2.5 is not an integer"},
		{"{v: any}", map[string]any{"v": int64(3)}, map[string]any{"v": int64(3)}, ""},
		{"1 | 2 | 3", 2.0, int64(2), ""},
		{"1 | 2 | 3", int64(2), int64(2), ""},
		{"1 | 2.5", int64(1), 1.0, ""},
		{"1 | 2.5", int64(3), nil, "the number 3 is not one of 1 | 2.5"},
		{`"a" | 1`, int64(1), int64(1), ""},
		{`"a" | "b"?`, nil, nil, ""},
		{"[number]?", nil, nil, ""},
		{"[number]?", []any{int64(7)}, []any{7.0}, ""},
		{"null", nil, nil, ""},
		{"null", int64(1), nil, "the number 1 is not null"},
	}
	for _, c := range cases {
		typ := typeOf(t, c.typ)
		got, msg := Conform(c.in, typ, "x")
		if c.msg != "" {
			if !strings.Contains(msg, c.msg) {
				t.Errorf("%s %#v: got %q, want a message with %q", c.typ, c.in, msg, c.msg)
			}
			continue
		}
		if msg != "" {
			t.Errorf("%s %#v: %s", c.typ, c.in, msg)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %#v: got %#v, want %#v", c.typ, c.in, got, c.want)
		}
		if CheckValue(c.in, typ, "") != "" {
			t.Errorf("%s %#v: Conform accepts it and CheckValue does not", c.typ, c.in)
		}
	}
}

// TestConformCopies: Conform never changes the value it is given (a tool
// or a mock may share it); it copies what it changes, and returns the
// value itself when nothing changes, without allocating.
func TestConformCopies(t *testing.T) {
	typ := typeOf(t, "{a: [number], b: {c: int}, d: string}")
	in := map[string]any{"a": []any{int64(1), 2.5}, "b": map[string]any{"c": int64(1)}, "d": "x"}
	out, msg := Conform(in, typ, "")
	if msg != "" {
		t.Fatal(msg)
	}
	if in["a"].([]any)[0] != int64(1) {
		t.Error("Conform changed the value it was given")
	}
	if out.(map[string]any)["a"].([]any)[0] != 1.0 {
		t.Errorf("got %#v", out)
	}
	ok := map[string]any{"a": []any{1.0, 2.5}, "b": map[string]any{"c": int64(1)}, "d": "x"}
	if n := testing.AllocsPerRun(100, func() {
		out, _ := Conform(ok, typ, "")
		if reflect.ValueOf(out).UnsafePointer() != reflect.ValueOf(ok).UnsafePointer() {
			t.Fatal("a conforming value was copied")
		}
	}); n != 0 {
		t.Errorf("conforming a value that conforms allocates %v times", n)
	}
}
