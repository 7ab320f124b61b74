package lang

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/ebnf"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// layoutTypes and layoutFields are what the comparison of the two parsers'
// trees ignores: positions, comments, the source text of literals and the
// one-line or multi-line layout. The reference parser builds none of them.
var (
	layoutTypes  = []any{Span{}, Pos{}, Comments{}, Comment{}, &Comment{}, []Comment(nil), []*Comment(nil)}
	layoutFields = []struct {
		typ   any
		names []string
	}{
		{Literal{}, []string{"Raw"}},
		{Call{}, []string{"Multiline"}},
		{ListExpr{}, []string{"Multiline"}},
		{ObjectExpr{}, []string{"Multiline"}},
		{ObjectType{}, []string{"Multiline"}},
		{ToolDecl{}, []string{"MultilineParams"}},
		{PlanDecl{}, []string{"MultilineParams"}},
	}
)

// referenceOptions compare the tree of the hand-written parser with the
// reference parser's. The slices that nest (list elements, object fields,
// field declarations) are compared as maps from index to element: cmp
// compares each element of a slice twice (to find an edit script, then to
// report), which takes time exponential in the nesting depth.
var referenceOptions = func() cmp.Options {
	opts := cmp.Options{
		cmpopts.IgnoreTypes(layoutTypes...),
		cmp.Transformer("exprs", byIndex[Expr]),
		cmp.Transformer("fields", byIndex[*ObjectField]),
		cmp.Transformer("decls", byIndex[*FieldDecl]),
	}
	for _, f := range layoutFields {
		opts = append(opts, cmpopts.IgnoreFields(f.typ, f.names...))
	}
	return opts
}()

// sameTrees reports whether the trees are equal under referenceOptions, and
// if not, how they differ. It clears what the options ignore, in place, and
// compares with reflect.DeepEqual, in time linear in the size of the trees;
// cmp only describes a difference.
func sameTrees(hand, ref *File) (diff string, same bool) {
	stripLayout(reflect.ValueOf(hand))
	stripLayout(reflect.ValueOf(ref))
	if reflect.DeepEqual(hand, ref) {
		return "", true
	}
	diff = cmp.Diff(hand, ref, referenceOptions)
	return diff, diff == ""
}

// stripLayout clears the values of layoutTypes and layoutFields in the
// tree v points into, and turns empty slices into nil ones.
func stripLayout(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			stripLayout(v.Elem())
		}
	case reflect.Slice:
		if v.Len() == 0 && v.CanSet() {
			v.SetZero()
		}
		for i := range v.Len() {
			stripLayout(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				if isLayout(v.Type(), i) {
					f.SetZero()
				} else {
					stripLayout(f)
				}
			}
		}
	}
}

// isLayout reports whether field i of struct type t is ignored.
func isLayout(t reflect.Type, i int) bool {
	field := t.Field(i)
	for _, x := range layoutTypes {
		if field.Type == reflect.TypeOf(x) {
			return true
		}
	}
	for _, f := range layoutFields {
		if t == reflect.TypeOf(f.typ) && slices.Contains(f.names, field.Name) {
			return true
		}
	}
	return false
}

// byIndex returns the elements of s by index, nil if there are none.
func byIndex[T any](s []T) map[int]T {
	if len(s) == 0 {
		return nil
	}
	m := make(map[int]T, len(s))
	for i, x := range s {
		m[i] = x
	}
	return m
}

// grammarCases are plans that cover every construct of the language. Each
// must parse without diagnostics.
var grammarCases = []struct{ name, src string }{
	{"empty", ""},
	{"holes", "f(a: ? \"the amount from †state.history.\", b: 1)\nf(\n  a:\n    ? 'x $input.y and $5'\n  ,\n)\n"},
	{"tasks", "t: task \"find a hotel in †input.city\" using [findHotel, m.bookHotel, get-x] -> †state.h\n  hint researcher\ntask \"notify\"\ntask \"a\" using []\ntask \"b\" using [\n  x,\n  y\n]\ntask(x: 1)\ntask: f()\n"},
	{"hints", "f()\n  hint \"coder\"\n  hint \"a b\"\nhint(x: 1)\n"},
	{"blank lines", "\n\n;\n"},
	{"mode", "mode eager\nmode lazy\n"},
	{"policy", "on failure abort\non failure skip\non failure continue\non failure replan max 3\non failure replan max -1\n"},
	{"approve decl", "approve\napprove \"Run it?\"\n"},
	{"import", "import \"tools.json\"\n"},
	{"type", "type Color \"red\" | \"green\" | 'blue'\ntype N = int\ntype Opt string?\ntype L [\n  {a: int, b?: [string]}\n]\n"},
	{"enum types", "type E 1 | -2 | 3.5 | -.5 | true | false | null\ntype B true\ntype F 0x1F\ntype O \"a\" | \"b\"?\n"},
	{"null type", "type N null\ntype M null?\ntype E null | \"a\"\n"},
	{"fraction after a name", "type A.5\ntype B-1\noutput.5\nf() when.5\n"},
	{"object type", "type P {\n  # doc\n  name: string\n  \"Content-Type\"?: string = \"json\"\n  tags: [string] = [\"a\"]; n: int = -1,\n}\n"},
	{"tool", "tool search\ntool math.sum(a: int, b: int) -> int pure idempotent\ntool get-weather(\n  # the city\n  city: string\n  days?: int = 3\n) -> {temp: number} irreversible model latency 300ms tokens 1000\n"},
	{"tool no params", "tool f()\ntool g() -> any\ntool a.b.c-d()\n"},
	{"tool keyword names", "tool for\ntool when.x()\ntool on-call(x: int)\n"},
	{"input", "input {\n  city: string\n  days?: int = 3\n  opts: {deep: bool} = {deep: true}\n}\ninput {}\n"},
	{"state", "state {\n  result?: object\n  count: int = 0\n  items: [any] = []\n  m: any = {a: 1, \"b c\": [1, 2]}\n}\n"},
	{"plan decl", "plan sub(x: int, y?: string) -> int {\n  f(a: $x) -> $state.r\n    retry 1\n  output $state.r\n}\nplan empty() {}\nplan one() { output 1 }\n"},
	{"plan body items", "plan p() {\n  state {r: int}\n  mode(x: 1)\n  approve: f()\n  on.x()\n  f(); g()\n  output $state.r\n}\n"},
	{"output", "output $state.result\noutput {status: \"done\", n: 1}\noutput [1, 2]\noutput $state.a + 1\noutput \"x\"\n"},
	{"step basic", "f(a: 1)\nf()\nf(\n)\n"},
	{"step label", "fetch: get(url: \"x\")\nfor: f()\nmode: g()\nwhen: h()\n"},
	{"step tool names", "math.sum(a: 1, b: 2)\nget-weather(city: \"Paris\")\na.b-c.d(x: 1)\nfor(a: 1)\nwhen(x: 1)\noutput(x: 1)\nmode.x(y: 2)\non-call()\nfor.x(a: 1)\nl: for.x()\nfor-each(a: 1)\n"},
	{"quoted args", "f(\"Content-Type\": \"json\", 'x y': 1, for: 2, when: 3)\n"},
	{"outputs", "f() -> $state.a\nf() -> †state.a || †state.b\nf() -> $state[\"a b\"]\nf()\n  -> $state.a\n  || $state.b\nf() -> $state.a\n  || $state.b\n"},
	{"options", "f()\n  when $state.x > 0\n  expect $state.y != ''\n  expect \"the answer is polite\"\n  retry 3 backoff 200ms\n  retry -1\n  timeout 10s\n  fallback g(a: 1)\n  fallback for.x()\n  approve\n  approve \"Send it?\"\n  result {ok: true}\n"},
	{"options same line", "f() -> $state.a when $state.b retry 2 timeout 1s\nf() when (x) expect (y)\nf() when .x\n"},
	{"keyword before space and paren", "output (1 + 2)\nf()\n  when ($state.a)\n  expect (1)\n"},
	{"each", "for each x in ($input.a ? [1] : [2]): f()\nfor each x in $input.xs: f(a: $x)\nfor each x in $input.xs max 5: f(a: $x) -> $state.r\nl: for each item in [1, 2, 3]: g(v: $item)\nfor each x in $input.a + $input.b: h()\nfor each x in a.max, b: h()\nfor each x in $input.xs: for(a: 1)\n"},
	{"values", "f(s: \"str\", t: 'single', e: \"esc\\n\\u00e9\\\"\", i: 42, n: -7, h: 0x1F, o: 017, o8: 08, fl: 3.25, nf: -0.5, d: .5, ex: 1e3, b: true, c: false, z: null)\n"},
	{"lists", "f(a: [], b: [1, 2, 3], c: [\n  1,\n  2,\n], d: [[1], [2, [3]]], e: [1,], f: [$state.a, {x: 1}])\n"},
	{"objects", "f(a: {}, b: {x: 1, y: \"two\"}, c: {\n  x: 1\n  y: 2\n}, d: {\"k v\": 1; z: [1]}, e: {, a: 1,, b: 2,}, f: {when: 1, for: 2})\n"},
	{"refs", "f(a: $input.a, b: †state.x[0], c: $state.m[\"key\"], d: $item, e: $state.a.b.c[1][\"z\"].w, f: $x[007])\n"},
	{"cel args", "f(a: $input.a + 1, b: size($state.items) > 0, c: $state.items.size(), d: [1, 2] + [3], e: {1: 2, a: 3}, ee: {a: 1, r\"b\": 2, 3: 4}, f: -x, g: !$state.ok, h: $state.a[$state.i], k: 5u, l: r\"raw\", m: '''tri''', n: \"a\" + \"b\", o: has($state.x.y) ? 1 : 2, p: x.when)\n"},
	{"cel statements", "f()\n  when $state.n > 0 && $state.m.exists(x, x > 1)\n  expect $state.r.size() == 3 || $state.r[0].ok\n  result {a: $state.a, b: [1, 2].map(x, x * 2)}\noutput $state.a.when.max\noutput x.when\n"},
	{"cel objects", "f(a: {k: 1 2}, b: {1\n+ 2: 3}, c: {a: 1 b: 2}, d: {$state.k: 1}, e: {\"a\\x41\": 1}, g: {k: 1, '\\x41': 2})\n"},
	{"cel multiline", "f(a: $input.a +\n  $input.b,\n  b: (\n    1 + 2\n  ),\n)\nf()\n  when ($state.a &&\n    $state.b)\n"},
	{"comments", "# leading\n// also\nf(a: 1) # trailing\n\n# between\n\ng(\n  # inside\n  a: 1, # after\n  b: 2,\n)\n  # before option\n  retry 2 # trailing option\noutput 1 // end\n"},
	{"comments in cel", "f(a: 1 +\n  # note\n  2, b: ($state.x # c\n  ), c: [1, # one\n  2])\n"},
	{"semicolons", "f(); g(); h() -> $state.a; output 1;\n"},
	{"continuations", "f(a: 1)\n  -> $state.a\n  || $state.b\n  when $state.c\n  retry 2\n\n  timeout 5s\ng()\n-> $state.c\n|| $state.d\n\t# note\n\tapprove\n"},
	{"approve in first column", "f()\napprove \"the whole plan\"\n"},
	{"option keyword as call on next line", "f()\nwhen(x: 1)\nretry.x(y: 2)\nresult: g()\n"},
	{"keyword call after label", "l: tool ()\nm: when (a: 1)\n"},
	{"multi-line call", "search(\n  query: \"x\",\n  limit: 10,\n  filters: {\n    lang: \"en\",\n    tags: [\"a\", \"b\"],\n  },\n) -> $state.results\n"},
	{"arg on next line", "f(a:\n  1)\nf(b:\n  [1,\n  2])\n"},
	{"byte order mark", "\uFEFFf(a: 1)\n  retry 1\n"},
	{"unicode", "f(straße: \"ü\", a: $input.größe) -> †state.ö\n"},
	{"dagger spellings", "f(a: †input.x, b: $input.x) -> †state.x || $state.y\n"},
	{"keywords as field names", "input {mode: int, tool: string, for: bool, when: int}\nf(mode: 1, state: 2)\n"},
	{"negative numbers", "f(a: -1, b: -2.5, c: - 1, d: 1-2, e: [-1, -2])\ntype T -1 | -2\n"},
	{"full", `# A full plan.
import "tools.json"
tool search(query: string, limit?: int = 5) -> [string] pure latency 1s
type Result {title: string, score?: number}
input {
  query: string
  n: int = 3
}
state {
  hits?: [string]
  err?: object
  done: bool = false
}
mode eager
on failure replan max 2
approve "Run the search?"

find: search(query: †input.query, limit: †input.n) -> †state.hits || †state.err
  retry 2 backoff 100ms
  timeout 5s
for each h in †state.hits max 10: summarize(text: †h) -> †state.sums
  when size(†state.hits) > 0
notify(msg: "done") -> †state.done
  fallback log(msg: "failed")
  approve "Notify?"
  expect "the user was told"
plan again(q: string) -> any {
  search(query: †q) -> †state.hits
  output †state.hits
}
output {hits: †state.hits, done: †state.done}
`},
}

// grammarMalformed are inputs that both parsers must reject.
var grammarMalformed = []struct{ name, src string }{
	{"hole in a list", "f(a: [? \"x\"])\n"},
	{"hole in an option", "f() when ? \"x\"\n"},
	{"hole with more", "f(a: ? \"x\" + 1)\n"},
	{"hole without instruction", "f(a: ?)\n"},
	{"hole with a CEL string", "f(a: ? r\"x\")\n"},
	{"task in a for each", "for each x in [1]: task \"a\"\n"},
	{"task using no list", "task \"a\" using x\n"},
	{"hint without name", "f()\n  hint\n"},
	{"hint at an item's start", "hint x\n"},
	{"unknown mode", "mode fast\n"},
	{"policy action", "on failure retry\n"},
	{"policy no failure", "on error abort\n"},
	{"import path", "import tools\n"},
	{"import in plan", "plan p() { import \"x\" }\n"},
	{"tool in plan", "plan p() {\n  tool x\n}\n"},
	{"input in plan", "plan p() {\n  input {a: int}\n}\n"},
	{"nested plan", "plan p() {\n  plan q() {}\n}\n"},
	{"unclosed plan", "plan p() {\n  f()\n"},
	{"tool attr", "tool f() fast\n"},
	{"tool result on next line", "tool f()\n-> int\n"},
	{"plan result on next line", "plan p()\n-> int {}\n"},
	{"enum with named", "type T int | \"a\"\n"},
	{"enum bad value", "type T \"a\" | x\n"},
	{"field without separator", "input {a: int b: int}\n"},
	{"field without type", "input {a}\n"},
	{"option without step", "when $state.x\n"},
	{"option in first column", "f()\nretry 2\n"},
	{"option keyword step", "retry 3\n"},
	{"output path not state", "f() -> $input.a\n"},
	{"output path nested", "f() -> $state.a.b\n"},
	{"output path index", "f() -> $state[0]\n"},
	{"output path bare", "f() -> $state\n"},
	{"or without ref", "f() -> $state.a || x\n"},
	{"outputs after options", "f()\n  retry 2\n  -> $state.a\n"},
	{"or on next line without arrow", "f()\n|| $state.a\n"},
	{"call without parens", "f\n"},
	{"call paren on next line", "f\n(a: 1)\n"},
	{"arg without colon", "f(a)\n"},
	{"arg with equals", "f(a = 1)\n"},
	{"arg missing value", "f(a: )\n"},
	{"arg double comma", "f(a: 1,, b: 2)\n"},
	{"arg leading comma", "f(, a: 1)\n"},
	{"arg semicolon", "f(a: 1; b: 2)\n"},
	{"arg arrow", "f(a: x -> y)\n"},
	{"unclosed call", "f(a: 1\n"},
	{"unbalanced", "f(a: (1)\n"},
	{"mismatched brackets", "f(a: [1))\n"},
	{"stray closer", "f(a: 1])\n"},
	{"list with empty element", "f(a: [1,,2])\n"},
	{"list empty comma", "f(a: [,])\n"},
	{"list arrow", "f(a: [x -> y])\n"},
	{"list arrow after line break", "f(a:\n  [x -> y])\n"},
	{"list semicolon", "f(a: [1; 2])\n"},
	{"object arrow", "f(a: {k: x -> y})\n"},
	{"object empty value", "f(a: {k: })\n"},
	{"object later field not a field", "f(a: {k: 1, 2})\n"},
	{"object later field continues", "f(a: {k: 1\n+ 2})\n"},
	{"object later key without colon", "f(a: {k: 1, j})\n"},
	{"duration value", "f(a: 5s)\n"},
	{"duration in cel", "f(a: g(5s))\n"},
	{"timeout without unit", "f() timeout 5\n"},
	{"timeout bad duration", "f() timeout 5x\n"},
	{"retry duration", "f() retry 2s\n"},
	{"int out of range", "f(a: 99999999999999999999)\n"},
	{"int out of range in cel head", "f(a: 99999999999999999999 + 1)\n"},
	{"float out of range", "f(a: 1e999)\n"},
	{"hex unsigned", "f(a: 0x1u)\n"},
	{"bad escape", "approve \"\\q\"\n"},
	{"raw string arg name", "f(r\"x\": 1)\n"},
	{"unterminated string", "f(a: \"abc)\n"},
	{"illegal character", "f(a: 1 @ 2)\n"},
	{"byte order mark inside", "f(a: 1)\n\uFEFFg()\n"},
	{"ref space", "f(a: $ input.x)\n"},
	{"ref trailing dot", "f(a: $input. x)\n"},
	{"ref fraction", "f(a: $input.x.5)\n"},
	{"ref bad index", "f(a: $input.x[0x1])\n"},
	{"ref bad key", "f(a: $input.x[r\"k\"])\n"},
	{"ref in cel trailing dot", "f(a: 1 + $input.)\n"},
	{"ref named after option", "f() when $when\n"},
	{"ref named max in each", "for each x in $max: f()\n"},
	{"each without in", "for each x of $input.xs: f()\n"},
	{"each without colon", "for each x in $input.xs f()\n"},
	{"each empty list", "for each x in: f()\n"},
	{"for with space", "for (a: 1)\n"},
	{"keyword call with space", "tool ()\n"},
	{"option keyword call with space", "retry (a: 1)\n"},
	{"keyword call with space in plan", "plan p() {\n  state (x: 1)\n}\n"},
	{"label then for label", "l: for: f()\n"},
	{"option as call on same line", "f() when(x)\n"},
	{"option with colon", "f() when: x\n"},
	{"mode with space paren", "mode (eager)\n"},
	{"mode in plan", "plan p() {\n  mode lazy\n}\n"},
	{"policy in plan", "plan p() {\n  on failure skip\n}\n"},
	{"approve in plan", "plan p() {\n  approve\n}\n"},
	{"max without replan", "on failure abort max 3\n"},
	{"conditional each list", "for each x in $input.a ? [1] : [2]: f()\n"},
	{"label with keyword call", "a: b: f()\n"},
	{"two items on a line", "f() g()\n"},
	{"closing brace at top", "f()\n}\n"},
	{"reference as item", "$state.x\n"},
	{"when then arrow", "f() when x -> $state.a\n"},
	{"approve raw string", "f() approve r\"x\"\n"},
	{"statement unbalanced", "output (1\n"},
	{"statement closer", "output 1)\n"},
	{"type pipe after optional", "type T int? | \"a\"\n"},
	{"empty output", "output\n"},
	{"tool name trailing dot", "tool a.\n"},
	{"triple-quoted approve", "approve '''x'''\n"},
}

// TestReferenceParserAgrees checks that the hand-written parser and the
// reference grammar accept the same plans and build the same trees: for
// every .plan file and conformance input, and for the inline tables.
func TestReferenceParserAgrees(t *testing.T) {
	for _, p := range grammarPlanSources(t) {
		t.Run(p.name, func(t *testing.T) {
			checkReferenceAgrees(t, p.name, p.src)
		})
	}
	for _, c := range grammarCases {
		t.Run("inline/"+c.name, func(t *testing.T) {
			if _, diags := Parse(c.name, []byte(c.src)); len(diags) > 0 {
				t.Fatalf("Parse reports diagnostics for a case meant to be valid:\n%s", grammarDiags(diags))
			}
			checkReferenceAgrees(t, c.name, []byte(c.src))
		})
	}
	for _, c := range grammarMalformed {
		t.Run("malformed/"+c.name, func(t *testing.T) {
			_, diags := Parse(c.name, []byte(c.src))
			_, err := parseReference(c.name, []byte(c.src))
			if len(diags) == 0 {
				t.Errorf("Parse accepts %q", c.src)
			}
			if err == nil {
				t.Errorf("the reference parser accepts %q", c.src)
			}
		})
	}
}

// checkReferenceAgrees parses src with both parsers and reports where they
// disagree.
func checkReferenceAgrees(t *testing.T, name string, src []byte) {
	t.Helper()
	hand, diags := Parse(name, src)
	ref, err := parseReference(name, src)
	switch {
	case len(diags) == 0 && err != nil:
		t.Fatalf("Parse accepts the text, the reference grammar rejects it: %v\ntext:\n%q", err, src)
	case len(diags) > 0 && err == nil:
		t.Fatalf("the reference grammar accepts the text, Parse rejects it:\n%stext:\n%q", grammarDiags(diags), src)
	case err == nil:
		if diff, same := sameTrees(hand, ref); !same {
			t.Fatalf("the trees differ (-Parse +reference):\n%s\ntext:\n%q", diff, src)
		}
	}
}

type grammarSource struct {
	name string
	src  []byte
}

// grammarPlanSources returns the .plan files under examples and spec, and
// the plan inputs of the conformance files (their input.plan sections).
// Missing directories are skipped.
func grammarPlanSources(t testing.TB) []grammarSource {
	t.Helper()
	var out []grammarSource
	for _, dir := range []string{"../examples", "../spec"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return filepath.SkipDir
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			switch filepath.Ext(path) {
			case ".plan":
				out = append(out, grammarSource{filepath.ToSlash(path), readGrammarSource(t, path)})
			case ".txtar":
				if src, ok := txtarSection(readGrammarSource(t, path), "input.plan"); ok {
					out = append(out, grammarSource{filepath.ToSlash(path) + "/input.plan", src})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", dir, err)
		}
	}
	return out
}

func readGrammarSource(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// grammarDiags formats diagnostics one per line.
func grammarDiags(diags Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%s: %s\n", d.Span.Start, d.Message)
	}
	return b.String()
}

// txtarSection returns the content of the named file of a txtar archive.
func txtarSection(archive []byte, name string) ([]byte, bool) {
	marker := []byte("-- " + name + " --\n")
	i := bytes.Index(archive, marker)
	if i < 0 || (i > 0 && archive[i-1] != '\n') {
		return nil, false
	}
	rest := archive[i+len(marker):]
	if j := bytes.Index(rest, []byte("\n-- ")); j >= 0 {
		rest = rest[:j+1]
	}
	return rest, true
}

// TestGrammarEBNF checks that spec/grammar.ebnf holds the grammar;
// go test ./lang -run TestGrammarEBNF -update rewrites it.
func TestGrammarEBNF(t *testing.T) {
	const path = "../spec/grammar.ebnf"
	want := grammarEBNFHeader + Grammar() + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lang -run TestGrammarEBNF -update to create it)", err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is out of date; run go test ./lang -run TestGrammarEBNF -update (-want +got):\n%s", path, diff)
	}
	if _, err := ebnf.ParseString(want); err != nil {
		t.Errorf("the grammar is not well-formed EBNF: %v", err)
	}
}

const grammarEBNFHeader = `// The reference grammar of Obelisk .plan text, generated by lang.Grammar()
// from the participle grammar in lang/grammar.go, which the hand-written
// parser is tested against. Do not edit: run
// go test ./lang -run TestGrammarEBNF -update
//
// <x> is a token class of the lexer (see lang/grammar.go), "x" a token
// with that text, and "\n\t" a line break before an indented line.
// Alternatives are tried in order and the first that matches is taken, as
// in a PEG; (?= X) and (?! X) look ahead without consuming, and ~X matches
// any one token that does not start X.

`

// FuzzReferenceParser checks that the hand-written parser and the reference
// grammar accept the same inputs and build the same trees.
func FuzzReferenceParser(f *testing.F) {
	for _, p := range grammarPlanSources(f) {
		f.Add(p.src)
	}
	for _, c := range grammarCases {
		f.Add([]byte(c.src))
	}
	for _, c := range grammarMalformed {
		f.Add([]byte(c.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if bracketDepth(src) > maxNesting-10 {
			t.Skip("nests near the parser's limit, which the reference grammar does not have")
		}
		hand, diags := Parse("fuzz.plan", src)
		ref, err := parseReference("fuzz.plan", src)
		if len(diags) == 0 && err != nil {
			t.Fatalf("Parse accepts the text, the reference grammar rejects it: %v\ntext: %q", err, src)
		}
		if len(diags) > 0 && err == nil {
			t.Fatalf("the reference grammar accepts the text, Parse rejects it:\n%stext: %q", grammarDiags(diags), src)
		}
		if err == nil {
			if diff, same := sameTrees(hand, ref); !same {
				t.Fatalf("the trees differ (-Parse +reference):\n%s\ntext: %q", diff, src)
			}
		}
	})
}

// bracketDepth is the deepest nesting of brackets in src's tokens.
func bracketDepth(src []byte) int {
	depth, deepest := 0, 0
	for _, t := range scanAll(src) {
		depth += bracketDelta(t.Kind)
		deepest = max(deepest, depth)
	}
	return deepest
}
