package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"cel.dev/cel-go/cel"
	"google.golang.org/protobuf/proto"

	"github.com/obelisk-plan/obelisk/lang"
)

// celSamples are expressions of every kind CEL has, with the macros,
// literals and syntax where two parsers could disagree.
var celSamples = []string{
	`size(state.hits0.hits) > 0`,
	`state.order.amount * 2.0 > 10.5 && state.order.currency in ["EUR", "USD"]`,
	`a || b || c || d && e && f`,
	`!a ? -b : c.d[0]["k"]`,
	`-1 + -2.5e3 - 0x1F + 3u + 0xFFu`,
	`"esc\"aped\n\t\x41\u00e9\101" + 'single' + r"raw\n" + """tri"ple""" + '''t'''`,
	`b"bytes\xff" == bytes("x")`,
	`{"a": 1, 2: [true, false, null]}.size()`,
	`state.xs.map(x, x * 2).filter(y, y > 1).exists(z, z == 4)`,
	`state.xs.all(x, x > 0) && state.xs.exists_one(x, x == 1)`,
	`has(state.a.b) && state.a.?b.orValue(1) == 1 && state.m[?"k"].hasValue()`,
	`[1, ?optional.of(2)]`,
	`math.greatest(1, 2, 3) + math.least([1, 2])`,
	`"a,b".split(",").join("-").upperAscii().matches("^A")`,
	`google.protobuf.Int64Value{value: 1}`,
	`type(1) == int && dyn(1) == 1.0 && uint(1) == 1u && double("1.5") > 1.0`,
	`duration("1s") < duration("2s") && timestamp("2024-01-01T00:00:00Z").getFullYear() == 2024`,
	`a ? b ? c : d : e`,
	"a\n  && b // a comment\n  && c",
	`((((a))))`,
	`a.b.c.d.e.f.g`,
	`f(g(h(1), 2), x.y(3))`,
	`1 < 2 == true != false`,
	`"héllo ✓" + "日本"`,
	`a % b / c * d`,
	`[].size() == 0 && {}.size() == 0`,
	`x.exists(y, y.exists(z, z > 0))`,
	`x.transformList(i, v, v * 2)`,
	// Not CEL: both parsers must reject these.
	`a +`,
	`(a`,
	`a ? b`,
	`1 +* 2`,
	`"unterminated`,
	`a.`,
	`[1, 2`,
	`{"a" 1}`,
	`in`,
	`a..b`,
	`state.if`,
	`null.x`,
	`'\z'`,
	`0x`,
	`1e`,
	`a[1`,
	`f(,)`,
	`1.2.3`,
	`—`,
	"a\x00b",
	`9223372036854775808`,
	`-9223372036854775808`,
	`18446744073709551616u`,
	// Where the two parsers are known to differ: parseCEL leaves these
	// to the ANTLR parser.
	`.A`,
	`a in .b.c`,
	`0X1F`,
}

// celTexts returns the CEL text of every expression in the examples and
// the conformance files, as the checker gives it to CEL.
func celTexts(t testing.TB) []string {
	var files []string
	for _, glob := range []string{"../examples/*.plan", "../spec/examples/*.plan", "../spec/conformance/*/*.txtar", "testdata/*/*.txtar"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	var out []string
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := lang.Parse(name, src)
		if f == nil {
			continue
		}
		lang.Inspect(f, func(n lang.Node) bool {
			if e, ok := n.(*lang.CELExpr); ok {
				out = append(out, e.CELText())
			}
			return true
		})
	}
	return out
}

// sameParse reports how the hand-written parser and the ANTLR parser of
// cel.Env.Parse differ on text: they must accept the same expressions and
// build the same trees, node ids and positions.
func sameParse(t *testing.T, text string) {
	t.Helper()
	env, err := baseEnv()
	if err != nil {
		t.Fatal(err)
	}
	want, wantIss := env.Parse(text)
	got, gotIss := parseCEL(env, text)
	if (wantIss.Err() == nil) != (gotIss.Err() == nil) {
		t.Fatalf("%q: ANTLR: %v; hand-written: %v", text, wantIss.Err(), gotIss.Err())
	}
	if wantIss.Err() != nil {
		if wantIss.Err().Error() != gotIss.Err().Error() {
			t.Errorf("%q: messages differ:\n%v\n%v", text, wantIss.Err(), gotIss.Err())
		}
		return
	}
	w, err := cel.AstToParsedExpr(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cel.AstToParsedExpr(got)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(w, g) {
		t.Errorf("%q: trees differ:\nANTLR:        %v\nhand-written: %v", text, w, g)
	}
}

func TestParseCELSameAsANTLR(t *testing.T) {
	texts := append(celTexts(t), celSamples...)
	if len(texts) < 60 {
		t.Fatalf("only %d expressions found", len(texts))
	}
	for _, text := range texts {
		sameParse(t, text)
	}
}

func FuzzParseCEL(f *testing.F) {
	for _, s := range celSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sameParse(t, text)
	})
}
