package compiler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// schemaTools are an operator's tools whose schemas say more than types.
const schemaTools = `{"tools": [
  {"name": "get-resource-links", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object",
    "properties": {
      "count": {"type": "number", "minimum": 1, "maximum": 10, "default": 3},
      "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "minItems": 1, "maxItems": 3},
      "opts": {"$ref": "#/$defs/Opts"},
      "email": {"type": "string", "format": "email"},
      "name": {"type": "string", "minLength": 2}
    },
    "$defs": {"Opts": {"type": "object", "properties": {"depth": {"type": "integer", "maximum": 3}}}}}},
  {"name": "bad-default", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object",
    "properties": {"n": {"type": "integer", "maximum": 5, "default": 9}}}},
  {"name": "one-of", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}
]}`

// TestSchemaKeywords: check validates constant arguments against the
// tool's JSON Schema with the validator the runtime uses, so that it
// rejects exactly the calls the runtime would reject, at the constant,
// with the runtime's words. Each case is also called through a
// toolkit.Registry with the same definitions.
func TestSchemaKeywords(t *testing.T) {
	decls, diags := lang.ParseTools("tools.json", []byte(schemaTools))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var list struct {
		Tools []toolkit.Definition `json:"tools"`
	}
	if err := json.Unmarshal([]byte(schemaTools), &list); err != nil {
		t.Fatal(err)
	}
	reg := toolkit.NewRegistry()
	for _, d := range list.Tools {
		reg.MustRegister(d, toolkit.ToolFunc(func(context.Context, map[string]any) (any, error) { return 1, nil }))
	}
	for _, tc := range []struct {
		call string
		at   string // where the diagnostic is, "" for none
		msg  string // the validator's words, in the check and in the call
	}{
		{`get-resource-links(count: 20)`, "1:27", "at /count: maximum: got 20, want 10"},
		{`get-resource-links(count: 10)`, "", ""},
		{`get-resource-links(count: 0.5)`, "1:27", "at /count: minimum: got 0.5, want 1"},
		{`get-resource-links(tags: [])`, "1:26", "at /tags: minItems: got 0, want 1"},
		{`get-resource-links(tags: ["a", "b", "c", "d"])`, "1:26", "at /tags: maxItems: got 4, want 3"},
		{`get-resource-links(tags: ["ok", "NOT"])`, "1:26", "at /tags/1: 'NOT' does not match pattern '^[a-z]+$'"},
		{`get-resource-links(opts: {depth: 4})`, "1:26", "at /opts/depth: maximum: got 4, want 3"},
		{`get-resource-links(opts: {depth: 3})`, "", ""},
		{`get-resource-links(name: "x")`, "1:26", "at /name: minLength: got 1, want 2"},
		{`bad-default()`, "1:1", "at /n: maximum: got 9, want 5"},
		{`bad-default(n: 5)`, "", ""},
		{`one-of(a: 1, b: 2)`, "1:1", "at /: 'oneOf' failed, subschemas 0, 1 matched"},
		{`one-of(a: 1)`, "", ""},
	} {
		src := tc.call + " -> †state.r\noutput †state.r\n"
		info, diags := checkSource("p.plan", []byte(src), Config{Tools: decls})
		var got *lang.Diagnostic
		for _, d := range diags {
			if d.Severity == lang.SeverityError {
				got = d
				break
			}
		}
		switch {
		case tc.at == "" && got != nil:
			t.Errorf("%s: %s: %s", tc.call, got.Span.Start, got.Message)
			continue
		case tc.at != "" && got == nil:
			t.Errorf("%s: checks clean, want %q at %s", tc.call, tc.msg, tc.at)
			continue
		case got != nil:
			if got.Span.Start.String() != tc.at || got.Code != lang.TypeMismatch || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("%s: %s: %s [%s], want %q at %s", tc.call, got.Span.Start, got.Message, got.Code, tc.msg, tc.at)
			}
		}
		// The runtime agrees. A call that does not check is made with
		// the constants it was written with.
		f, _ := lang.Parse("p.plan", []byte(src))
		call := f.Items[0].(*lang.Step).Call
		args := map[string]any{}
		for _, a := range call.Args {
			v, ok := constValue(a.Value)
			if !ok {
				t.Fatalf("%s: argument %s is not a constant", tc.call, a.Name.Name)
			}
			args[a.Name.Name] = v
		}
		if info != nil && info.Main != nil && len(info.Main.Steps) == 1 && info.Main.Steps[0].Tool != nil {
			for _, p := range info.Main.Steps[0].Tool.Defaults() {
				if _, ok := args[p.Name]; !ok {
					args[p.Name] = p.Default
				}
			}
		}
		_, err := reg.Call(context.Background(), call.Tool.Name, args)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: checks clean, but the call fails: %v", tc.call, err)
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: the call gives %v, want %q", tc.call, err, tc.msg)
		}
	}
}

// TestSchemaConstantParts: in a list or object that is not all constant,
// the constant elements and fields are validated; a reference is not.
func TestSchemaConstantParts(t *testing.T) {
	decls, _ := lang.ParseTools("tools.json", []byte(schemaTools))
	src := "input {\n  t: string\n  d: int\n}\n" +
		"get-resource-links(tags: [\"ABC\", †input.t]) -> †state.a\n" +
		"get-resource-links(opts: {depth: 4, x: †input.t}) -> †state.b\n" +
		"get-resource-links(opts: {depth: †input.d}) -> †state.c\n" +
		"get-resource-links(tags: [†input.t], count: 11) -> †state.d\n" +
		"output [†state.a, †state.b, †state.c, †state.d]\n"
	_, diags := checkSource("p.plan", []byte(src), Config{Tools: decls})
	want := "5:27: error: argument tags of get-resource-links does not match the tool's schema: at /tags/0: 'ABC' does not match pattern '^[a-z]+$' [type-mismatch]\n" +
		"6:34: error: argument opts of get-resource-links does not match the tool's schema: at /opts/depth: maximum: got 4, want 3 [type-mismatch]\n" +
		"8:45: error: argument count of get-resource-links does not match the tool's schema: at /count: maximum: got 11, want 10 [type-mismatch]\n"
	if got := string(diagText(diags)); got != want {
		t.Errorf("got:\n%swant:\n%s", got, want)
	}
}

// TestForEachKnownLength: a for each over a list whose length is known
// before the run (written in the plan, or lists.range(N)) and longer than
// its max, or than the fan-out limit when it has none, is limit-exceeded
// at check time: the run would refuse it.
func TestForEachKnownLength(t *testing.T) {
	long := "[" + strings.Repeat("1, ", 1000) + "1]"
	for _, tc := range []struct {
		list, max string
		limits    Limits
		want      string // a part of the message, "" for none
	}{
		{long, "", Limits{}, "the list has 1001 elements, more than the limit of 1000 for a for each"},
		{"[1, 2, 3]", "2", Limits{}, "the list has 3 elements, more than the for each's max of 2"},
		{"[1, 2, †input.a]", "2", Limits{}, "the list has 3 elements, more than the for each's max of 2"},
		{"lists.range(5000)", "", Limits{}, "the list has 5000 elements, more than the limit of 1000"},
		{"lists.range(5000)", "", Limits{MaxForEach: 5000}, ""},
		{"lists.range(5)", "3", Limits{}, "more than the for each's max of 3"},
		{"[1, 2, 3]", "3", Limits{}, ""},
		{"[1, 2, 3]", "", Limits{MaxForEach: 2}, "the list has 3 elements, more than the limit of 2"},
		{"†input.xs", "", Limits{}, ""},
	} {
		max := ""
		if tc.max != "" {
			max = " max " + tc.max
		}
		src := "tool f(x: int) -> int idempotent\ninput {\n  a: int\n  xs: [int]\n}\nfor each x in " + tc.list + max + ": f(x: †x)\n"
		_, diags := checkSource("p.plan", []byte(src), Config{Limits: tc.limits})
		var got []string
		for _, d := range diags {
			if d.Code == lang.LimitExceeded {
				if d.Span.Start.String() != "6:15" {
					t.Errorf("%.30s: at %s, want at the list", tc.list, d.Span.Start)
				}
				got = append(got, d.Message)
			}
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%.30s max %q: %q", tc.list, tc.max, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%.30s max %q: %q, want %q", tc.list, tc.max, got, tc.want)
		}
	}
}

// TestCheckInput: an input known before the run is checked against the
// plan's input type (at the field it is about), and the fields that
// arguments and for each lists read against the tools' schemas and the
// for each's max; defaults count as the input where it gives no value.
func TestCheckInput(t *testing.T) {
	decls, _ := lang.ParseTools("tools.json", []byte(schemaTools))
	src := "input {\n  count: number = 20\n  tags: [string]\n  opts: {depth: int}\n}\n" +
		"get-resource-links(count: †input.count, opts: {depth: †input.opts.depth}) -> †state.a\n" +
		"for each t in †input.tags max 2: get-resource-links(tags: [†t]) -> †state.b\n" +
		"output [†state.a, †state.b]\n"
	// The default of count is wrong for the tool: an error of the plan.
	_, diags := checkSource("p.plan", []byte(src), Config{Tools: decls})
	want := "6:27: error: argument count of get-resource-links does not match the tool's schema when the input leaves out count, whose default makes †input.count the number 20: at /count: maximum: got 20, want 10: change the default [type-mismatch]\n"
	if got := string(diagText(diags)); got != want {
		t.Errorf("a wrong default:\n%swant:\n%s", got, want)
	}
	src = "input {\n  count: number = 2\n  tags: [string]\n  opts: {depth: int}\n}\n" +
		"get-resource-links(count: †input.count, opts: {depth: †input.opts.depth}) -> †state.a\n" +
		"for each t in †input.tags max 2: get-resource-links(tags: [†t]) -> †state.b\n" +
		"output [†state.a, †state.b]\n"
	info, diags := checkSource("p.plan", []byte(src), Config{Tools: decls})
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	for _, tc := range []struct {
		input string
		want  string
	}{
		{`{"count": 5, "tags": ["a"], "opts": {"depth": 1}}`, ""},
		{`{"tags": ["a"], "opts": {"depth": 1}}`, ""},
		{`{"count": 20, "tags": ["a"], "opts": {"depth": 1}}`,
			"6:27: error: argument count of get-resource-links does not match the tool's schema with this input, where †input.count is the number 20: at /count: maximum: got 20, want 10: give an input that does [type-mismatch]\n"},
		{`{"count": 5, "tags": ["a", "b", "c"], "opts": {"depth": 9}}`,
			"6:55: error: argument opts of get-resource-links does not match the tool's schema with this input, where †input.opts.depth is the number 9: at /opts/depth: maximum: got 9, want 3: give an input that does [type-mismatch]\n" +
				"7:15: error: with this input, the list †input.tags has 3 elements, more than the for each may run (2): give a shorter list [limit-exceeded]\n"},
		{`{"count": "five", "opts": {"depth": 1}, "extra": true}`,
			"1:1: error: the input does not match the plan: field extra is not declared by the plan's input [type-mismatch]\n" +
				"2:3: error: the input does not match the plan: count: the string \"five\" is not a number [type-mismatch]\n" +
				"3:3: error: the input does not match the plan: field tags ([string]) is required [type-mismatch]\n"},
	} {
		var input map[string]any
		if err := json.Unmarshal([]byte(tc.input), &input); err != nil {
			t.Fatal(err)
		}
		input = normalizeInput(t, input)
		if got := string(diagText(CheckInput(info, input))); got != tc.want {
			t.Errorf("input %s:\n%swant:\n%s", tc.input, got, tc.want)
		}
	}
}

// normalizeInput gives an input the JSON shape the command line gives it
// (integers as int64).
func normalizeInput(t *testing.T, in map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(in)
	v, err := toolkit.DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}
