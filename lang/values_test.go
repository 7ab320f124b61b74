package lang

import (
	"strings"
	"testing"
)

// TestIntegersBeyondInt64: an integer literal beyond the range of an
// int64 is an error that says how to write it, in .plan text and in the
// JSON form (arguments, input and initial values); it is never taken as
// a double that is not the number written. A JSON Schema keyword of a
// tool is not a plan value and is left alone, and the extremes of int64
// are read exactly.
func TestIntegersBeyondInt64(t *testing.T) {
	const big = "123456789012345678901234567890"
	const want = `integer 123456789012345678901234567890 is beyond the range of an int (64-bit integers): write it as a number, 1.2345678901234568e+29, or as a string, "123456789012345678901234567890"`
	for _, src := range []string{
		"tool f(x: any) -> any\nf(x: " + big + ") -> †state.r\n",
		"tool f(x: any) -> any\nf(x: [1, {a: -" + big + "}]) -> †state.r\n",
		"input {\n  n: any = " + big + "\n}\n",
		"state {\n  n: any = " + big + "\n}\n",
	} {
		_, diags := Parse("p.plan", []byte(src))
		if !strings.Contains(diags.Error(), "is beyond the range of an int (64-bit integers): write it as a number, ") {
			t.Errorf("%q: got %v, want %s", src, diags, want)
		}
	}
	_, diags := Parse("p.plan", []byte("tool f(x: any) -> any\nf(x: "+big+") -> †state.r\n"))
	if len(diags) != 1 || diags[0].Message != want {
		t.Errorf("got %v\nwant %s", diags, want)
	}
	for _, src := range []string{
		`[{"type": "plan", "plan": [{"_tool": "f", "x": ` + big + `}]}]`,
		`[{"type": "plan", "plan": [{"_tool": "f", "x": [1, {"a": -` + big + `}]}]}]`,
		`[{"type": "input", "n": ` + big + `}]`,
		`[{"type": "state", "n": [` + big + `]}]`,
	} {
		_, diags := ParseJSON("p.json", []byte(src))
		if !strings.Contains(diags.Error(), "is beyond the range of an int (64-bit integers): write it as a number, ") {
			t.Errorf("%s: got %v, want an int-range error", src, diags)
		}
	}
	for _, src := range []string{
		`[{"type": "tool", "tool": {"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer", "maximum": 18446744073709551615}}}}},
		  {"type": "plan", "plan": [{"_tool": "f", "x": 9223372036854775807, "y": -9223372036854775808, "z": 1.2345678901234567e29}]}]`,
	} {
		f, diags := ParseJSON("p.json", []byte(src))
		if len(diags) > 0 {
			t.Fatalf("%v", diags)
		}
		args := firstStep(t, f).Call.Args
		if got := args[1].Value.(*Literal).Value; got != int64(-9223372036854775808) {
			t.Errorf("the smallest int64 is read as %v (%T)", got, got)
		}
	}
	f, diags := Parse("p.plan", []byte("tool f(x: any, y: any) -> any\nf(x: 9223372036854775807, y: -9223372036854775808) -> †state.r\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	args := firstStep(t, f).Call.Args
	if x, y := args[0].Value.(*Literal).Value, args[1].Value.(*Literal).Value; x != int64(9223372036854775807) || y != int64(-9223372036854775808) {
		t.Errorf("the extremes of int64 are read as %v and %v", x, y)
	}
}

// TestLoneSurrogates: a \u escape of half a surrogate pair is an error, in
// .plan text (in a value, a name or inside CEL) and in the JSON form; it
// never takes the character after it as its other half. Pairs are joined.
func TestLoneSurrogates(t *testing.T) {
	for _, src := range []string{
		`tool f(x: any) -> any` + "\n" + `f(x: "\ud800\u0041") -> †state.r` + "\n",
		`tool f(x: any) -> any` + "\n" + `f(x: "a\udc00") -> †state.r` + "\n",
		`tool f(x: any) -> any` + "\n" + `f(x: "\ud800") -> †state.r` + "\n",
		`tool f(x: any) -> any` + "\n" + `f(x: "\ud800" + "x") -> †state.r` + "\n",
		`tool f(x: any) -> any` + "\n" + `f(x: {"\udfff": 1}) -> †state.r` + "\n",
		`tool f(x: any) -> any` + "\n" + `f(x: '\uD83D\u0041') -> †state.r` + "\n",
	} {
		_, diags := Parse("p.plan", []byte(src))
		if !strings.Contains(diags.Error(), "lone surrogate") || !strings.Contains(diags.Error(), "write the character itself") {
			t.Errorf("%q: got %v, want a lone-surrogate error", src, diags)
		}
	}
	_, diags := Parse("p.plan", []byte(`tool f(x: any) -> any`+"\n"+`f(x: "\U0000DC00") -> †state.r`+"\n"))
	if !strings.Contains(diags.Error(), `\U0000DC00 in string is not a character`) {
		t.Errorf("got %v, want a surrogate error", diags)
	}
	for _, src := range []string{
		`[{"type": "plan", "plan": [{"_tool": "f", "x": "\ud800\u0041"}]}]`,
		`[{"type": "plan", "plan": [{"_tool": "f", "x": "\udc00"}]}]`,
		`[{"type": "plan", "plan": [{"_tool": "f", "x": "\ud800"}]}]`,
		`[{"type": "input", "\ud83d": 1}]`,
	} {
		_, diags := ParseJSON("p.json", []byte(src))
		if !strings.Contains(diags.Error(), "lone surrogate") {
			t.Errorf("%s: got %v, want a lone-surrogate error", src, diags)
		}
	}
	// A pair is one character, in both forms.
	f, diags := Parse("p.plan", []byte(`tool f(x: any) -> any`+"\n"+`f(x: "\ud83d\ude00A") -> †state.r`+"\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if got := firstStep(t, f).Call.Args[0].Value.(*Literal).Value; got != "😀A" {
		t.Errorf("plan text: got %q", got)
	}
	f, diags = ParseJSON("p.json", []byte(`[{"type": "plan", "plan": [{"_tool": "f", "x": "\ud83d\ude00A"}]}]`))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if got := firstStep(t, f).Call.Args[0].Value.(*Literal).Value; got != "😀A" {
		t.Errorf("JSON: got %q", got)
	}
}

// firstStep returns the first step of a file.
func firstStep(t *testing.T, f *File) *Step {
	t.Helper()
	for _, it := range f.Items {
		if s, ok := it.(*Step); ok {
			return s
		}
	}
	t.Fatal("no step")
	return nil
}
