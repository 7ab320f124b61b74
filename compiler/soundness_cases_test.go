package compiler

import (
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
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

// nullablePlan declares values that may be null: fields of a tool's
// result, an input field, list elements.
const nullablePlan = `tool g() -> {o: {f: int}?, q: int?, s: string?, l: [int]?, m: object?, ll: [{f: int}?], ql: [int?]} pure
tool h(x: any) -> any pure
tool k(n: int) -> int pure
input {
  i: {f: int}?
}
a: g() -> †state.a
`

// TestNullableUseRefused: a value that may be null is not read where a
// value is needed: through a plain reference, by a for each, or in CEL
// without a check. Each of these checked clean and failed at run time on
// null.
func TestNullableUseRefused(t *testing.T) {
	cases := []struct{ step, want string }{
		{"h(x: †state.a.o.f)", "†state.a.o may be null (it is {f: int}?), so †state.a.o.f cannot be read: check it in an expression, as in †state.a.o != null ? †state.a.o.f : …"},
		{"h(x: †input.i.f)", "†input.i may be null"},
		{"h(x: †state.a.ll[0].f)", "†state.a.ll[0] may be null"},
		{"for each x in †state.a.l: k(n: †x)", "for each needs a list, and †state.a.l is [int]?, which may be null: check it first, as in for each x in (†state.a.l != null ? †state.a.l : []): …"},
		{"for each x in †state.a.ll: h(x: †x.f)", "†x may be null"},
		{"h(x: †state.a.q + 1)", "in expression: †state.a.q, a int?, may be null, and is used where a value is needed: check it first, as in †state.a.q != null ? … : …"},
		{"h(x: size(†state.a.s))", "†state.a.s, a string?, may be null"},
		{"h(x: †state.a.s + \"x\")", "†state.a.s, a string?, may be null"},
		{"h(x: size(†state.a.l))", "†state.a.l, a [int]?, may be null"},
		{"h(x: †state.a.o.f + 1)", "†state.a.o, a {f: int}?, may be null"},
		{"h(x: has(†state.a.o.f))", "†state.a.o, a {f: int}?, may be null"},
		{"h(x: †state.a.l.map(v, v + 1))", "†state.a.l, a [int]?, may be null"},
		{"h(x: †state.a.ql.map(v, v + 1))", "in expression: v, a int?, may be null"},
		{"h(x: (true ? †state.a.q : 0) + 1)", "in expression: this value may be null"},
		{"h(x: †state.a.q != null || †state.a.q > 1)", "†state.a.q, a int?, may be null"},
		{"k(n: true ? †state.a.q : 0)", "argument n of k wants int"},
		{"h(x: math.greatest(†state.a.ql))", "in expression: the elements of †state.a.ql may be null, and math.greatest needs values: leave the nulls out first, as in †state.a.ql.filter(v, v != null)"},
		{"h(x: [†state.a.q, 1].sort())", "the elements of this list may be null, and sort needs values"},
		{"h(x: [†state.a.s, \"x\"].join(\",\"))", "the elements of this list may be null, and join needs values"},
		{"h(x: math.least(†state.a.ql.map(v, v)))", "the elements of this list may be null, and math.least needs values"},
		{"h(x: \"%d\".format([†state.a.q]))", "the values of this list may be null, and format needs values"},
		{"h(x: \"%d\".format([†state.a.q != null ? †state.a.q : 0]))", ""},
		{"for each x in ([†state.a.o]): k(n: †x.f)", "†x may be null (it is {f: int}?)"},
		{"for each x in ([†state.a.q, 1]): k(n: †x)", "argument n of k wants int"},
		{"h(x: 1) -> †state.w\n  when †state.a.q > 1\n#", "†state.a.q, a int?, may be null"},
	}
	for _, c := range cases {
		_, diags := checkSource("p.plan", []byte(nullablePlan+c.step+" -> †state.r\n"), Config{})
		if !strings.Contains(diags.Error(), c.want) {
			t.Errorf("%s:\n%s\nwant %q", c.step, diags, c.want)
		}
	}
}

// TestNullableChecked: a value that may be null can be compared with
// null, chosen, put in a list, and read after a check, in either order,
// negated, and in a conjunction.
func TestNullableChecked(t *testing.T) {
	steps := []string{
		"h(x: †state.a.q != null ? †state.a.q + 1 : 0)",
		"h(x: †state.a.q == null ? 0 : †state.a.q + 1)",
		"h(x: null != †state.a.q ? †state.a.q + 1 : 0)",
		"h(x: !(†state.a.q == null) ? †state.a.q + 1 : 0)",
		"h(x: †state.a.q != null && †state.a.q > 1)",
		"h(x: †state.a.q == null || †state.a.q > 1)",
		"h(x: †state.a.l != null && †state.a.o != null ? size(†state.a.l) + †state.a.o.f : 0)",
		"h(x: †state.a.l == null ? 0 : size(†state.a.l))",
		"h(x: †state.a.m != null ? size(†state.a.m) : 0)",
		"h(x: [†state.a.q, †state.a.s, †state.a.l])",
		"h(x: †state.a.q == null)",
		"h(x: dyn(†state.a.q))",
		"h(x: †state.a.ql.map(v, v != null ? v + 1 : 0))",
		"h(x: †state.a.ll.filter(v, v != null && v.f > 0))",
		"h(x: math.greatest(†state.a.ql.filter(v, v != null)))",
		"for each x in ([†state.a.o].filter(v, v != null)): k(n: †x.f)",
		"for each x in (†state.a.ll.filter(v, v != null)): k(n: †x.f)",
		"h(x: [†state.a.q, 3].map(v, v != null ? v : 0).sort())",
		"h(x: [†state.a.s, \"b\"].filter(v, v != null).join(\",\"))",
		"k(n: (†state.a.q != null ? †state.a.q : 0) + 1)",
		"for each x in (†state.a.l != null ? †state.a.l : []): k(n: †x)",
		"for each x in †state.a.ll: h(x: †x != null ? †x.f : 0)",
		"h(x: †input.i != null ? †input.i.f : 0)",
		"h(x: 1) -> †state.w\n  when †state.a.q != null && †state.a.q > 1\n#",
	}
	for _, s := range steps {
		_, diags := checkSource("p.plan", []byte(nullablePlan+s+" -> †state.r\n"), Config{})
		if diags.HasErrors() {
			t.Errorf("%s:\n%s", s, diags)
		}
	}
}

// TestContinueSlotsNullable: under on failure continue, a step that fails
// writes null to its slot and its readers run, so the slot of a step with
// no error slot may be null; it used to keep its writer's type, and a
// reader failed on the null.
func TestContinueSlotsNullable(t *testing.T) {
	const plan = `on failure continue
tool f() -> {items: [int]} pure
tool g(n: int) -> int pure
tool h(x?: any) -> int pure
a: f() -> †state.a
b: f() -> †state.b || †state.err
`
	_, diags := checkSource("p.plan", []byte(plan+"for each x in †state.a.items: g(n: †x) -> †state.r\n"), Config{})
	want := "†state.a may be null (it is {items: [int]}?), so †state.a.items cannot be read: check it in an expression, as in †state.a != null ? †state.a.items : … (under on failure continue, a step that fails writes null to its slot; give it an error slot, -> †state.x || †state.err, to keep null out)"
	if !strings.Contains(diags.Error(), want) {
		t.Errorf("diagnostics:\n%s\nwant %q", diags, want)
	}
	for _, ok := range []string{
		"h(x: †state.a) -> †state.r\n",
		"for each x in (†state.a != null ? †state.a.items : []): g(n: †x) -> †state.r\n",
		"for each x in †state.b.items: g(n: †x) -> †state.r\n",
	} {
		if _, diags := checkSource("p.plan", []byte(plan+ok), Config{}); diags.HasErrors() {
			t.Errorf("%s:\n%s", ok, diags)
		}
	}
}

// TestSubPlanOutputLiteral: a sub-plan's output is checked against its
// declared result as an argument is, by value for a constant: the string
// "red" is one of "red" | "green". It used to be checked by type alone
// ("any string may come").
func TestSubPlanOutputLiteral(t *testing.T) {
	for _, src := range []string{
		"plan p() -> \"red\" | \"green\" {\n  output \"red\"\n}\n",
		"plan p() -> 1 | 2.5 {\n  output 1\n}\n",
		"plan p(x: int) -> {color: \"red\" | \"green\", n: int} {\n  output {color: \"green\", n: †input.x}\n}\n",
		"plan p() -> [\"a\" | \"b\"] {\n  output [\"a\", \"b\"]\n}\n",
	} {
		// The file's own plan has an output, so that it is not empty.
		if _, diags := checkSource("p.plan", []byte(src+"output 0\n"), Config{}); diags.HasErrors() {
			t.Errorf("%s%s", src, diags)
		}
	}
	_, diags := checkSource("p.plan", []byte("plan p() -> \"red\" | \"green\" {\n  output \"blue\"\n}\noutput 0\n"), Config{})
	if !strings.Contains(diags.Error(), `the output of sub-plan p does not match its declared result "red" | "green"`) {
		t.Errorf("blue: %s", diags)
	}
}

// TestClosedSchemaArgument: an argument whose type has a field that the
// parameter's schema closes out (additionalProperties: false) is refused;
// it used to check clean and fail the schema's validation at run time.
// The fields the schema lists pass, and so does a free-form object, whose
// fields are the data's to say.
func TestClosedSchemaArgument(t *testing.T) {
	tools, diags := lang.ParseTools("tools.json", []byte(`[{"name": "put", "annotations": {"readOnlyHint": true},
  "inputSchema": {"type": "object", "required": ["item"], "properties": {
    "item": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "integer"}, "o": {"$ref": "#/$defs/O"}}},
    "open": {"type": "object", "properties": {"a": {"type": "integer"}}},
    "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}}},
  "$defs": {"O": {"anyOf": [{"type": "object", "additionalProperties": false, "properties": {"z": {"type": "string"}}}, {"type": "null"}]}}}}]`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	const plan = "tool g() -> {a: int, b?: string, o: {z: string, y: int}, m: object, l: [{a: int, c: int}]} pure\na: g() -> †state.a\n"
	for step, want := range map[string]string{
		"put(item: †state.a)":                                      "argument item of put: at item the tool's schema takes only the properties it lists (a, o; additionalProperties is false), and the value may have b: pass an object of the fields it takes, as in {a: …}",
		"put(item: {a: †state.a.a, o: †state.a.o})":                "at item.o the tool's schema takes only the properties it lists (z; additionalProperties is false), and the value may have y",
		"put(item: {a: 1}, list: †state.a.l)":                      "at list[] the tool's schema takes only the properties it lists (a; additionalProperties is false), and the value may have c",
		"put(item: {a: †state.a.a})":                               "",
		"put(item: {a: †state.a.a}, open: †state.a)":               "",
		"put(item: †state.a.m)":                                    "",
		"put(item: {a: 1, o: {z: †state.a.o.z}})":                  "",
		"put(item: {a: 1}, list: [{a: †state.a.a}])":               "",
		"put(item: {a: 1}, list: †state.a.l.map(v, {\"a\": v.a}))": "",
	} {
		_, diags := checkSource("p.plan", []byte(plan+step+" -> †state.r\n"), Config{Tools: tools})
		switch {
		case want == "" && diags.HasErrors():
			t.Errorf("%s:\n%s", step, diags)
		case want != "" && !strings.Contains(diags.Error(), want):
			t.Errorf("%s:\n%s\nwant %q", step, diags, want)
		}
	}
}

// TestIntegralFloatIsNumber: a literal float with no fraction, 2.0, is a
// number, as it is a double in CEL; it used to be typed int, so that
// int arithmetic checked over [2.0] and failed at run time.
func TestIntegralFloatIsNumber(t *testing.T) {
	const plan = "tool h(x: any) -> any pure\n"
	for _, ok := range []string{
		"for each x in [2.0]: h(x: †x + 1) -> †state.r\n",
		"for each x in [2.0]: h(x: †x + 1.0) -> †state.r\n",
		"for each x in [2.0, 3]: h(x: †x * 2.0) -> †state.r\n",
	} {
		if _, diags := checkSource("p.plan", []byte(plan+ok), Config{}); diags.HasErrors() {
			t.Errorf("%s%s", ok, diags)
		}
	}
	if got := TypeOfValue(2.0); got.Kind != KindNumber {
		t.Errorf("TypeOfValue(2.0) = %s, want number", got)
	}
}

// TestOptionalFieldRead: a field that may be absent (a?: T, or an
// optional input field without a default) is read only where a check
// proves it present, or through .?field.orValue(…), as CEL fails on an
// absent field; a plain reference cannot check it, and an output reads
// it as null. Each refused case checked clean and failed at run time.
func TestOptionalFieldRead(t *testing.T) {
	const plan = `tool g() -> {a?: int, b: int, o?: {c?: string}, l: [{a?: int}], q: [int?]} pure
tool h(x: any) -> any pure
tool k(n: int) -> int pure
tool ko(n?: int) -> int pure
input {
  i?: int
  j?: int = 3
}
r: g() -> †state.r
`
	cases := []struct{ step, want string }{
		{"h(x: †state.r.a + 1)", "in expression: †state.r.a may be absent (the field a is optional): check it first, as in has(†state.r.a) ? … : …, or read it as †state.r.?a.orValue(…)"},
		{"k(n: †state.r.a)", "†state.r.a may be absent (the field a is optional), so †state.r.a cannot be read without a check"},
		{"ko(n: †state.r.a)", "†state.r.a may be absent"},
		{"h(x: †state.r.o.c)", "†state.r.o may be absent"},
		{"h(x: has(†state.r.o) ? size(†state.r.o.c) : 0)", "†state.r.o.c may be absent"},
		{"h(x: †input.i + 1)", "†input.i may be absent"},
		{"k(n: †input.i)", "†input.i may be absent"},
		{"h(x: †state.r.l.map(v, v.a))", "v.a may be absent"},
		{"h(x: [†state.r].map(v, v.a))", "v.a may be absent"},
		{"h(x: †state.r.l.map(v, v).map(v, v.a))", "v.a may be absent"},
		{"h(x: †state.r.l.filter(v, v.a > 1))", "v.a may be absent"},
		{"h(x: †state.r.l.filter(v, has(v.a)).map(w, w.a + 1))", ""},
		{"h(x: †state.r.l.filter(v, has(v.a) && v.a > 1).map(v, v.a))", ""},
		{"h(x: †state.r.l.map(v, v).filter(v, true).map(v, v.a))", "v.a may be absent"},
		{"h(x: †state.r.q.filter(v, v != null).map(v, v + 1))", ""},
		{"for each e in †state.r.l: k(n: †e.a)", "†e.a may be absent"},
		{"h(x: has(†state.r.a) ? †state.r.a + 1 : 0)", ""},
		{"h(x: †state.r.?a.orValue(0) + 1)", ""},
		{"h(x: has(†state.r.o) && has(†state.r.o.c) ? size(†state.r.o.c) : 0)", ""},
		{"h(x: !has(†state.r.a) || †state.r.a > 1)", ""},
		{"h(x: †state.r.l.filter(v, has(v.a)).map(v, v.a))", ""},
		{"h(x: †input.j + 1)", ""},
		{"k(n: †input.j)", ""},
		{"h(x: has(†input.i) ? †input.i : 0)", ""},
	}
	for _, c := range cases {
		_, diags := checkSource("p.plan", []byte(plan+c.step+" -> †state.x\noutput †state.x\n"), Config{})
		switch {
		case c.want == "" && diags.HasErrors():
			t.Errorf("%s:\n%s", c.step, diags)
		case c.want != "" && !strings.Contains(diags.Error(), c.want):
			t.Errorf("%s:\n%s\nwant %q", c.step, diags, c.want)
		}
	}
	// An output reads what is absent as null, so its type may be null.
	p, diags := checkSource("p.plan", []byte(plan+"output {a: †state.r.a}\n"), Config{})
	if diags.HasErrors() {
		t.Fatalf("output: %s", diags)
	}
	if got := p.Main.OutputType.String(); got != "{a: int?}" {
		t.Errorf("output type %s, want {a: int?}", got)
	}
}

// TestOutputUnwrittenSlot: an output expression reads a slot that may be
// unwritten when the run ends (its step skipped by a condition, or by a
// skipped step it reads, or an error slot) only where has() proves it
// written; it checked clean and failed at run time. !has() of a slot
// written on a step's success proves its failure, and so the error
// slot's side.
func TestOutputUnwrittenSlot(t *testing.T) {
	const plan = `tool get() -> {a: int} pure
tool use(x: any) -> {m: string} pure
input {
  go: bool
}
r: get() -> †state.r
  when †input.go
s: use(x: †state.r.a) -> †state.s
pay: use(x: 1) -> †state.ok || †state.err
confirm: use(x: †state.ok) -> †state.confirmation
report: use(x: †state.err) -> †state.report
v: use(x: 2) -> †state.v
`
	cases := []struct{ output, want string }{
		{"†state.s.m + \"!\"", "†state.s may be unwritten when the run ends"},
		{"†state.r.a + 1", "†state.r may be unwritten"},
		{"†state.err.message + \"!\"", "†state.err may be unwritten"},
		{"has(†state.s.m) ? 1 : 0", "†state.s may be unwritten"},
		{"has(†state.r) ? †state.report.m : \"\"", "†state.report may be unwritten"},
		{"†state.v.m + \"!\"", ""},
		{"{s: †state.s, r: †state.r}", ""},
		{"has(†state.s) ? †state.s.m : \"none\"", ""},
		{"has(†state.confirmation) ? †state.confirmation.m : †state.report.m", ""},
		{"has(†state.err) ? †state.report.m : †state.confirmation.m", ""},
		{"!has(†state.ok) ? †state.err.message : †state.ok.m", ""},
	}
	for _, c := range cases {
		_, diags := checkSource("p.plan", []byte(plan+"output "+c.output+"\n"), Config{})
		switch {
		case c.want == "" && diags.HasErrors():
			t.Errorf("%s:\n%s", c.output, diags)
		case c.want != "" && !strings.Contains(diags.Error(), c.want):
			t.Errorf("%s:\n%s\nwant %q", c.output, diags, c.want)
		}
	}
	// Under on failure skip, any step may be skipped.
	_, diags := checkSource("p.plan", []byte("on failure skip\n"+plan+"output †state.v.m + \"!\"\n"), Config{})
	if !strings.Contains(diags.Error(), "†state.v may be unwritten") {
		t.Errorf("on failure skip: %s", diags)
	}
}
