package lang

import (
	"fmt"
	"strings"
	"testing"
)

// TestDuplicateKeys: a key given twice in any object of a JSON plan is an
// error at its second occurrence, with a note at the first, whether the
// calls are lowered as they are read or from the whole tree.
func TestDuplicateKeys(t *testing.T) {
	tool := `{"type": "tool", "tool": {"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}}`
	// second and first are where the two occurrences start: the text
	// of the second, searched for after the first.
	cases := []struct {
		name, src string
		key       string
		second    string
		first     string
	}{
		{"tool of a call", `[{"_tool": "lookup", "id": 1, "_tool": "delete"}]`, "_tool", `"_tool"`, `"_tool"`},
		{"key spelled with an escape", `[{"_tool": "lookup", "\u005ftool": "delete"}]`, "_tool", `"\u005ftool"`, `"_tool"`},
		{"argument", `[{"_tool": "f", "x": 1, "x": 2}]`, "x", `"x"`, `"x"`},
		{"nested argument", `[{"_tool": "f", "x": {"a": 1, "b": {"c": 1, "c": 2}}}]`, "c", `"c"`, `"c"`},
		{"output path", `[{"_tool": "f", "_outputPath": "†state.a", "_outputPath": "†state.b"}]`, "_outputPath", `"_outputPath"`, `"_outputPath"`},
		{"option", `[{"_tool": "f", "_retry": 1, "_retry": 9}]`, "_retry", `"_retry"`, `"_retry"`},
		{"fallback call", `[{"_tool": "f", "_fallback": {"_tool": "g", "_tool": "h"}}]`, "_tool", `"_tool"`, `{"_tool": "g"`},
		{"tool message", `[{"type": "tool", "tool": "f", "tool": "g"}]`, "tool", `"tool"`, `"tool":`},
		{"message type", `[{"type": "input", "type": "state", "a": 1}]`, "type", `"type"`, `"type"`},
		{"input field", `[{"type": "input", "n": 1, "n": 2}]`, "n", `"n"`, `"n"`},
		{"state slot", `[{"type": "state", "s": 1, "s": 2}]`, "s", `"s"`, `"s"`},
		{"plan message", `[{"type": "plan", "mode": "lazy", "mode": "eager", "plan": []}]`, "mode", `"mode"`, `"mode"`},
		{"schema property", `[{"type": "tool", "tool": {"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}, "x": {"type": "string"}}}}}]`, "x", `"x"`, `"x"`},
		{"schema keyword", `[{"type": "tool", "tool": {"name": "f", "inputSchema": {"type": "object", "type": "array"}}}]`, "type", `"type"`, `{"type": "object"`},
		{"tool definition", `[{"type": "tool", "tool": {"name": "f", "name": "g"}}]`, "name", `"name"`, `"name"`},
		{"solution", `{"calls": [], "calls": [{"_tool": "f"}]}`, "calls", `"calls"`, `"calls"`},
		{"call in a plan message", `[` + tool + `, {"type": "plan", "plan": [{"_tool": "f", "x": 1, "x": 2}]}]`, "x", `"x": 2`, `"x": 1`},
		{"in a comment-laden call", "[\n  // a call\n  {\"_tool\": \"f\", /* x */ \"x\": 1,\n   \"x\": 2,}\n]", "x", `"x"`, `"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{true, false} {
				_, diags := parseJSONPlan("p.json", []byte(tc.src), stream)
				var found *Diagnostic
				for _, d := range diags {
					switch d.Code {
					case DuplicateKey:
						if found != nil {
							t.Errorf("two duplicate-key diagnostics: %v and %v", found, d)
						}
						found = d
					case DuplicateArgument, DuplicateDecl:
						t.Errorf("the duplicate is reported again by the lowering: %v", d)
					}
				}
				if found == nil {
					t.Fatalf("stream=%v: no duplicate-key diagnostic; got:\n%s", stream, diagText(diags))
				}
				if want := fmt.Sprintf("key %q is given twice in one object", tc.key); found.Message != want {
					t.Errorf("message %q, want %q", found.Message, want)
				}
				if found.Severity != SeverityError {
					t.Errorf("severity %s, want error", found.Severity)
				}
				// The key may be given with text around it that makes it
				// unique; it is the first quoted string of that text.
				first := strings.Index(tc.src, tc.first) + strings.Index(tc.first, `"`)
				second := first + 1 + strings.Index(tc.src[first+1:], tc.second)
				if got := found.Span.Start.Offset; got != second {
					t.Errorf("at offset %d, want the second %q at %d", got, tc.key, second)
				}
				if len(found.Related) != 1 || found.Related[0].Span.Start.Offset != first || found.Related[0].Message != "first given here" {
					t.Errorf("related %+v, want \"first given here\" at offset %d", found.Related, first)
				}
				if found.Fix == nil || !strings.Contains(found.Fix.Message, "give the key once") {
					t.Errorf("fix %+v, want one saying to give the key once", found.Fix)
				}
			}
		})
	}
}

// TestDistinctKeysAccepted: keys that differ, however slightly, are not
// duplicates, nor are equal keys in different objects.
func TestDistinctKeysAccepted(t *testing.T) {
	for _, src := range []string{
		`[{"_tool": "f", "x": {"a": 1}, "y": {"a": 1}}]`,
		`[{"_tool": "f", "x": 1}, {"_tool": "f", "x": 2}]`,
		"[{\"_tool\": \"f\", \"x\": {\"a\": 1, \"A\": 2, \"a \": 3, \"\u00e9\": 4, \"e\u0301\": 5}}]",
		`[{"type": "input", "a": {"type": 1}}]`,
	} {
		_, diags := ParseJSON("p.json", []byte(src))
		for _, d := range diags {
			if d.Code == DuplicateKey {
				t.Errorf("%s: %v", src, d)
			}
		}
	}
}

// TestDuplicateKeysWideObject: in an object of many keys (found through an
// index, not one by one), every repeated key is found, the first member is
// the one kept, and each repeat is reported once.
func TestDuplicateKeysWideObject(t *testing.T) {
	const n = 5000
	var b strings.Builder
	b.WriteString(`[{"type": "input"`)
	for i := range n {
		fmt.Fprintf(&b, `, "k%d": %d`, i, i)
	}
	// Repeats of a key read before the index was built, of one read
	// after, and of the last.
	for _, k := range []int{3, smallObject + 5, n - 1} {
		fmt.Fprintf(&b, `, "k%d": -1`, k)
	}
	b.WriteString(`}]`)
	f, diags := ParseJSON("wide.json", []byte(b.String()))
	var got []string
	for _, d := range diags {
		if d.Code != DuplicateKey {
			t.Errorf("unexpected %v", d)
			continue
		}
		got = append(got, d.Message)
	}
	want := []string{`key "k3" is given twice in one object`, `key "k21" is given twice in one object`, `key "k4999" is given twice in one object`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(f.InputValues) != n {
		t.Errorf("%d input fields, want %d", len(f.InputValues), n)
	}
	if v := f.InputValues["k4999"]; v != int64(4999) {
		t.Errorf("k4999 = %v, want the first value 4999", v)
	}
}

// TestDuplicateKeysInToolsFile: a tools file is refused on a repeated key
// too, with the duplicate-key code (not import-error).
func TestDuplicateKeysInToolsFile(t *testing.T) {
	for _, src := range []string{
		`{"tools": [{"name": "f", "annotations": {"readOnlyHint": false, "readOnlyHint": true}}]}`,
		`{"tools": [{"name": "f", "name": "g"}]}`,
		`[{"name": "send", "http": {"url": "https://api.example.com/a", "url": "https://evil.example.com/b"}}]`,
		`{"tools": [], "tools": [{"name": "f"}]}`,
	} {
		_, diags := ParseTools("tools.json", []byte(src))
		n := 0
		for _, d := range diags {
			if d.Code == DuplicateKey {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d duplicate-key diagnostics, want 1; got:\n%s", src, n, diagText(diags))
		}
	}
}

// TestNonFiniteNumbers: a number beyond the range of a float64 is a parse
// error in the JSON form, in tools files and in .plan text, not an infinity.
func TestNonFiniteNumbers(t *testing.T) {
	long := "1" + strings.Repeat("0", 400)
	for _, src := range []string{
		`[{"_tool": "f", "x": 1e999}]`,
		`[{"_tool": "f", "x": -1e999}]`,
		`[{"_tool": "f", "x": 1.8E+308}]`,
		`[{"_tool": "f", "x": ` + long + `}]`,
		`[{"_tool": "f", "x": -` + long + `.5}]`,
		`[{"type": "input", "n": 1e999}]`,
		`[{"type": "state", "n": [1, 2e400]}]`,
		`[{"_tool": "f", "x": {"_expr": "1e999"}}]`,
	} {
		_, diags := ParseJSON("p.json", []byte(src))
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "out of range") {
			t.Errorf("%.60s: got %v, want an out-of-range error", src, diags)
		}
	}
	_, diags := ParseJSON("p.json", []byte(`[{"_tool": "f", "x": 1e999}]`))
	if want := "p.json:1:22: error: invalid JSON: number 1e999 is out of range: the largest is about 1.8e308 [parse-error]"; diags.Error() != want {
		t.Errorf("got  %s\nwant %s", diags.Error(), want)
	}
	_, diags = ParseJSON("p.json", []byte(`[{"_tool": "f", "x": `+long+`}]`))
	if strings.Contains(diags.Error(), long) {
		t.Errorf("the message quotes the whole number: %s", diags.Error())
	}
	_, diags = ParseTools("tools.json", []byte(`[{"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "maximum": 1e999}}}}]`))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "out of range") {
		t.Errorf("tools file: got %v, want an out-of-range error", diags)
	}
	for _, src := range []string{
		"tool f(x: number) -> number\nf(x: 1e999) -> †state.r\n",
		"tool f(x: number) -> number\nf(x: -1e999) -> †state.r\n",
		"tool f(x: any) -> number\nf(x: [1, {a: 1e400}]) -> †state.r\n",
		"tool f(x: number) -> number\nf(x: 1) -> †state.r\n  when 1e999 > 2.0\n",
		"output 1e999\n",
	} {
		_, diags := Parse("p.plan", []byte(src))
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "out of range") {
			t.Errorf("%q: got %v, want an out-of-range error", src, diags)
		}
	}
	// The largest and the smallest numbers are read; underflow is 0.
	for _, src := range []string{
		`[{"_tool": "f", "x": 1.7976931348623157e308, "y": -1.7976931348623157e308, "z": 1e-999, "w": 5e-324}]`,
		`[{"_tool": "f", "x": ` + strings.Repeat("9", 300) + `.0}]`,
	} {
		if _, diags := ParseJSON("p.json", []byte(src)); len(diags) > 0 {
			t.Errorf("%.60s: %v", src, diags)
		}
	}
	// An integer beyond an int64 is not a double either (see
	// TestIntegersBeyondInt64).
	if _, diags := ParseJSON("p.json", []byte(`[{"_tool": "f", "x": `+strings.Repeat("9", 300)+`}]`)); !strings.Contains(diags.Error(), "beyond the range of an int") {
		t.Errorf("300 nines: got %v, want an int-range error", diags)
	}
}

// BenchmarkParseJSONWideObject reads an input message of n keys: the time
// per key stays the same as n grows, since a wide object's keys are found
// through an index.
func BenchmarkParseJSONWideObject(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		var sb strings.Builder
		sb.WriteString(`[{"type": "input"`)
		for i := range n {
			fmt.Fprintf(&sb, `, "field%d": %d`, i, i)
		}
		sb.WriteString(`}]`)
		src := []byte(sb.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, diags := ParseJSON("wide.json", src); len(diags) > 0 {
					b.Fatal(diags)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
