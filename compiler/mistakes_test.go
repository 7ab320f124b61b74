package compiler

import (
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/lang"
)

// mistakeDecls declare what the mistakes below call and read.
const mistakeDecls = "tool f(x: any, y?: any) -> int pure\ntool g(x: int) -> int\ninput {\n  a: int\n  b: int\n  l: [{n: int}]\n  name: string\n}\n"

// TestMistakes is the table of the mistakes a plan's writer (often a
// model) makes, and the message each gets: it names the plan's rule and
// says how to fix it, in one diagnostic, where the first wrong token is
// (or where the fix goes). The line and column count from the first line
// after mistakeDecls. A plan that does not parse stops before the
// checker, as the command line does.
func TestMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		at         string // line:column of the diagnostic, from the plan's first line
		code       lang.Code
		msg        string // a part of the message
		fix        string // a part of the fix's message, if any
	}{
		// Commas.
		{"comma between arguments", "f(x: 1 y: 2) -> †state.r", "1:8", lang.ParseError,
			"a comma is missing before argument y: separate the arguments of a call with commas, as in f(x: …, y: …)", `insert ","`},
		{"comma between arguments on two lines", "f(x: 1\n  y: 2) -> †state.r", "2:3", lang.ParseError,
			"a comma is missing before argument y", `insert ","`},
		{"comma between list elements", "f(x: [1 2]) -> †state.r", "1:9", lang.ParseError,
			"a comma is missing between the elements of a list, before integer 2: [a, b]", `insert ","`},
		{"comma between object fields", "f(x: {a: 1 b: 2}) -> †state.r", "1:12", lang.ParseError,
			"a comma is missing before field b: separate the fields of an object with commas or line breaks", `insert ","`},
		{"comma between a function's arguments", "f(x: †input.name.replace(\"a\" \"b\")) -> †state.r", "1:30", lang.ParseError,
			"a comma is missing between the arguments of a function", `insert ","`},
		{"two values side by side", "f(x: \"a\" \"b\") -> †state.r", "1:10", lang.ParseError,
			"string \"b\" follows a complete value: an operator is missing between them", ""},

		// = and ==, and other languages' operators.
		{"= for == in a condition", "f(x: 1) -> †state.r\n  when †input.a = 1", "2:17", lang.ParseError,
			"'=' is not an operator in an expression: a comparison is written ==", ""},
		{"= for : in an argument", "f(x = 1) -> †state.r", "1:5", lang.ParseError,
			"arguments are written name: value, not name = value", ""},
		{"== for : in an argument", "f(x == 1) -> †state.r", "1:5", lang.ParseError,
			"arguments are written name: value, not name == value", ""},
		{"== for = in a default", "tool h(x: int == 5) -> int pure\nh() -> †state.r", "1:15", lang.ParseError,
			"a default is written with one '=': x: int = value", ""},
		{"===", "f(x: †input.a === 1) -> †state.r", "1:17", lang.ParseError,
			"CEL compares with == and !=, not === or !==", ""},
		{"and for &&", "f(x: †input.a > 1 and †input.b > 1) -> †state.r", "1:19", lang.ParseError,
			"CEL writes and as &&", ""},
		{"or for ||", "f(x: †input.a > 1 or †input.b > 1) -> †state.r", "1:19", lang.ParseError,
			"CEL writes or as ||", ""},
		{"& for &&", "f(x: 1) -> †state.r\n  when †input.a > 1 & †input.b > 1", "2:21", lang.ParseError,
			"unexpected character '&': the logical and is written &&", ""},
		{"| for ||", "f(x: †input.a > 1 | †input.b > 1) -> †state.r", "1:19", lang.ParseError,
			"the logical or is written ||, not |", ""},
		{"a conditional in Python's words", "f(x: 1 if †input.a > 1 else 2) -> †state.r", "1:8", lang.ParseError,
			"CEL writes a conditional as cond ? a : b", ""},
		{"an arrow function", "f(x: †input.l.map(i => i.n)) -> †state.r", "1:21", lang.ParseError,
			"CEL has no arrow functions: a macro takes a variable and an expression, as in list.map(x, x.name)", ""},
		{"True for true", "f(x: True) -> †state.r", "1:6", lang.TypeMismatch,
			"undeclared reference to 'True': CEL spells it true", ""},
		{"None for null", "f(x: †input.a == None) -> †state.r", "1:18", lang.TypeMismatch,
			"undeclared reference to 'None': CEL spells it null", ""},
		{"len for size", "f(x: len(†input.l)) -> †state.r", "1:9", lang.TypeMismatch,
			"CEL measures a list, map or string with size(x)", ""},

		// Brackets.
		{"a call not closed", "f(x: (1 + 2) -> †state.r", "1:14", lang.ParseError,
			"')' missing: the arguments of f( are not closed before '->'", ""},
		{"a list closed by another bracket", "f(x: [1, 2) -> †state.r", "1:11", lang.ParseError,
			"')' closes '[' opened at 9:6: ']' is missing before it", ""},
		{"a bracket too many", "f(x: 1)) -> †state.r", "1:8", lang.ParseError,
			"')' closes no bracket: there is one too many here", ""},
		{"an object not closed", "f(x: 1) -> †state.r\noutput {a: †state.r", "2:8", lang.ParseError,
			"'{' is not closed: close it with '}'", ""},

		// Where expressions end (spec sections 2.10, 7.4 and 7.5).
		{"an object field continued on the next line", "f(x: 1) -> †state.r\noutput {\n  total: †input.a +\n    †input.b\n}", "4:5", lang.ParseError,
			"the value of field total ends at the end of its line, and this line does not start a field: put a value that goes on to the next line in parentheses, total: (… …)", ""},
		{"an object field continued with an operator", "f(x: 1) -> †state.r\noutput {\n  total: †input.a\n    + †input.b\n}", "4:5", lang.ParseError,
			"the value of field total ends at the end of its line", ""},
		{"a default continued on the next line", "tool h(x: int = 1 +\n  2) -> int pure\nh() -> †state.r", "2:3", lang.ParseError,
			"the default of field x ends at the end of its line, and this line does not start a field: put a default that goes on to the next line in parentheses, x: T = (… …)", ""},
		{"a condition continued after an operator", "f(x: 1) -> †state.r\n  when †input.a > 1 &&\n    †input.b > 1", "2:21", lang.ParseError,
			"the line ends with '&&', but an expression of when ends at the end of its line: put the whole expression in parentheses, when (… && …), and a line break inside them does not end it", ""},
		{"a condition continued with an operator", "f(x: 1) -> †state.r\n  when †input.a > 1\n    && †input.b > 1", "3:5", lang.ParseError,
			"a line cannot start with '&&': an expression of when ends at the end of the line before; put the whole expression in parentheses, when (… && …)", ""},
		{"an output continued after an operator", "f(x: 1) -> †state.r\noutput †state.r +\n  1", "2:17", lang.ParseError,
			"the line ends with '+', but the expression of an output ends at the end of its line", ""},
		{"an output that ends with an operator", "f(x: 1) -> †state.r\noutput †state.r +\nf(x: 2) -> †state.s", "2:17", lang.ParseError,
			"the expression ends with '+', with no operand after it: if the operand is on the next line, put the whole expression in parentheses, output (… + …), since an expression of output ends at the end of its line", ""},
		{"an argument that ends with an operator", "f(x: 1 +\n) -> †state.r", "1:8", lang.ParseError,
			"the expression ends with '+': the operand after it is missing", ""},
		{"a tool's result on the next line", "tool h(x: int)\n  -> int pure\nh(x: 1) -> †state.r", "2:3", lang.ParseError,
			"a tool's result and attributes go on the line of its closing ')': tool h(…) -> T pure", ""},
		{"a tool's attribute on the next line", "tool h(x: int) -> int\n  pure\nh(x: 1) -> †state.r", "2:3", lang.ParseError,
			"a tool's result and attributes go on the line of its closing ')'", ""},
		{"an option without indentation", "f(x: 1) -> †state.r\nretry 2", "2:1", lang.ParseError,
			"\"retry\" option without a step", ""},

		// References.
		{"a reference in a string", "f(x: \"Hello $input.name\") -> †state.r", "1:6", lang.ReferenceInString,
			"this string holds $input.name as text, not as a reference", "write it outside the quotes and join the parts with +: \"…\" + †input.name"},
		{"an element reference in a string", "for each e in †input.l: f(x: \"n is †e.n\") -> †state.r", "1:30", lang.ReferenceInString,
			"this string holds †e.n as text", ""},
		{"a reference without †", "f(x: input.a + 1) -> †state.r", "1:6", lang.UndefinedReference,
			"write †input instead of input: a reference starts with †", "add †"},
		{"a reference with a space after †", "f(x: † input.a) -> †state.r", "1:6", lang.ParseError,
			"expected a name right after '†', such as †state.x or †input.x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mistakeDecls + tc.plan + "\noutput 1\n"
			if strings.Contains(tc.plan, "output") {
				src = mistakeDecls + tc.plan + "\n"
			}
			_, diags := checkSource("p.plan", []byte(src), Config{})
			declLines := strings.Count(mistakeDecls, "\n")
			var found *lang.Diagnostic
			for _, d := range diags {
				if d.Code == tc.code && strings.Contains(d.Message, tc.msg) {
					found = d
				}
			}
			if found == nil {
				t.Fatalf("want %s %q; got:\n%s", tc.code, tc.msg, diagText(diags))
			}
			at := lang.Pos{Line: found.Span.Start.Line - declLines, Column: found.Span.Start.Column}
			if at.String() != tc.at {
				t.Errorf("at %s (in the plan), want %s", at, tc.at)
			}
			if tc.fix != "" && (found.Fix == nil || !strings.Contains(found.Fix.Message, tc.fix)) {
				t.Errorf("fix %+v, want %q", found.Fix, tc.fix)
			}
			// One mistake, one error: no error CEL's own parser or a
			// cascade would add.
			errs := 0
			for _, d := range diags {
				if d.Severity == lang.SeverityError {
					errs++
				}
			}
			if found.Severity == lang.SeverityError && errs != 1 {
				t.Errorf("%d errors, want 1:\n%s", errs, diagText(diags))
			}
		})
	}
}
