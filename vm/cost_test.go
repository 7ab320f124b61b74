package vm

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// costPlan declares the values the hostile expressions work on: v holds a
// string of 1 MB (s), 20000 strings of 50 bytes (l), 100000 ints (n) and
// a map of 20000 entries (m), none of whose sizes the checker knows.
const costPlan = `tool get() -> {s: string, l: [string], n: [int], m: any} pure
tool use(x: any) -> any pure
get() -> †state.v
use(x: %s) -> †state.r
`

// costValues is what get returns.
func costValues() map[string]any {
	l := make([]any, 20000)
	for i := range l {
		l[i] = fmt.Sprintf("%050d", i)
	}
	n := make([]any, 100000)
	for i := range n {
		n[i] = int64(i)
	}
	m := make(map[string]any, 20000)
	for i := range 20000 {
		m[fmt.Sprint(i)] = int64(i)
	}
	return map[string]any{"s": strings.Repeat("abcdefgh,", 1<<20/9), "l": l, "n": n, "m": m}
}

// repeated is an expression evaluated four million times: a function whose
// work does not depend on its arguments is counted once a call.
func repeated(e string) string {
	return "lists.range(2000).map(i, lists.range(2000).map(j, " + e + "))"
}

// celAttacks are, for every function a plan can call in CEL (by the name
// of its declaration, operators and macros included), expressions that
// would take much time or memory if the function were not priced. $S is a
// string of 1 MB, $L a list of strings, $N a list of ints, $M a map, $A a
// list that holds $S a thousand times.
var celAttacks = []struct {
	funcs []string
	expr  string
}{
	{[]string{"!_"}, repeated("!(i == j)")},
	{[]string{"-_"}, repeated("-j")},
	{[]string{"@in"}, "$S in $A"},
	{[]string{"@not_strictly_false"}, "lists.range(2000).all(i, lists.range(2000).all(j, j >= 0))"},
	{[]string{"@sortByAssociatedKeys", "sortBy"}, "$A.sortBy(x, x)"},
	{[]string{"_!=_"}, "$A != $A"},
	{[]string{"_%_"}, repeated("j % 7")},
	{[]string{"_&&_"}, repeated("j > 0 && i > 0")},
	{[]string{"_*_"}, repeated("j * 2")},
	{[]string{"_+_"}, "$S + $S + $S + $S + $S + $S + $S + $S + $S + $S + $S + $S"},
	{[]string{"_+_"}, "lists.range(1000).map(i, $S + $S)"},
	{[]string{"_+_"}, "lists.range(1000).map(i, $N + $N)"},
	{[]string{"_-_"}, repeated("j - 1")},
	{[]string{"_/_"}, repeated("j / 1")},
	{[]string{"_<_", "_<=_", "_>_", "_>=_"}, "lists.range(1000).map(i, $S < $S || $S <= $S || $S > $S || $S >= $S)"},
	{[]string{"_==_"}, "$A == $A"},
	{[]string{"_==_"}, "lists.range(1000).map(i, $S == $S)"},
	{[]string{"_?._"}, repeated(`{"a": j}.?a`)},
	{[]string{"_?_:_"}, repeated("j > 0 ? 1 : 2")},
	{[]string{"_[?_]"}, repeated("[j][?0]")},
	{[]string{"_[_]"}, repeated("[j][0]")},
	{[]string{"_||_"}, repeated("j > 0 || i > 0")},
	{[]string{"bool"}, "lists.range(1000).all(i, bool($S) || true)"},
	{[]string{"bytes"}, "lists.range(1000).map(i, bytes($S))"},
	{[]string{"charAt"}, "lists.range(1000).map(i, $S.charAt(i))"},
	{[]string{"contains"}, `lists.range(1000).map(i, $S.contains("zz"))`},
	{[]string{"distinct"}, "$A.distinct()"},
	{[]string{"distinct"}, "$N.distinct()"},
	{[]string{"double"}, "lists.range(1000).all(i, double($S) > 0.0 || true)"},
	{[]string{"duration"}, `lists.range(1000).all(i, duration($S) > duration("1s") || true)`},
	{[]string{"dyn"}, repeated("dyn(j)")},
	{[]string{"endsWith"}, "lists.range(1000).map(i, $S.endsWith($S))"},
	{[]string{"exists", "exists_one", "filter", "map", "all"}, "$N.map(x, $N.filter(y, y == x).exists_one(z, z > 0) || $N.exists(z, z < 0))"},
	{[]string{"first"}, repeated("[j].first().hasValue()")},
	{[]string{"flatten"}, "lists.range(1000).map(i, $N).flatten()"},
	{[]string{"format"}, "'%s'.format([$A])"},
	{[]string{"format"}, "lists.range(1000).map(i, '%s%s'.format([$S, $S]))"},
	{[]string{"getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds"},
		`lists.range(10000).map(i, timestamp(0).getDate("America/New_York") + timestamp(0).getDayOfMonth("UTC") + timestamp(0).getDayOfWeek("UTC") + timestamp(0).getDayOfYear("UTC") + timestamp(0).getFullYear("UTC") + timestamp(0).getHours("UTC") + timestamp(0).getMilliseconds("UTC") + timestamp(0).getMinutes("UTC") + timestamp(0).getMonth("UTC") + timestamp(0).getSeconds("UTC"))`},
	{[]string{"getHours", "getMilliseconds", "getMinutes", "getSeconds"}, repeated(`duration("1s").getHours() + duration("1s").getMilliseconds() + duration("1s").getMinutes() + duration("1s").getSeconds()`)},
	{[]string{"has"}, repeated(`has({"a": j}.a)`)},
	{[]string{"hasAll", "hasAny", "hasExactly", "hasOnly"}, "$A.hasAll($A) || $A.hasAny($A) || $A.hasExactly($A) || $A.hasOnly($A)"},
	{[]string{"hasValue", "optional.of", "optional.none", "optional.ofNonZeroValue", "or", "orValue", "value"},
		repeated("optional.of(j).hasValue() || optional.none().or(optional.ofNonZeroValue(j)).orValue(1) > optional.of(i).value()")},
	{[]string{"indexOf"}, `lists.range(1000).map(i, $S.indexOf("zz"))`},
	{[]string{"int"}, "lists.range(1000).all(i, int($S) > 0 || true)"},
	{[]string{"join"}, "$A.join()"},
	{[]string{"join"}, `$A.join($S)`},
	{[]string{"last"}, repeated("[j].last().hasValue()")},
	{[]string{"lastIndexOf"}, `lists.range(1000).map(i, $S.lastIndexOf("zz"))`},
	{[]string{"lists.range"}, "lists.range(100000000)"},
	{[]string{"lists.range"}, "lists.range(size($N) * 1000)"},
	{[]string{"lowerAscii"}, "lists.range(1000).map(i, $S.lowerAscii())"},
	{[]string{"matches"}, "$S.matches($S)"},
	{[]string{"matches"}, `lists.range(1000).map(i, $S.matches("a+b"))`},
	{[]string{"math.@max", "math.@min", "greatest", "least"}, "lists.range(1000).map(i, math.greatest($N) + math.least($N))"},
	{[]string{"math.@max", "math.@min", "greatest", "least"}, repeated("math.greatest(i, j) + math.least(i, j)")},
	{[]string{"math.abs", "math.bitAnd", "math.bitNot", "math.bitOr", "math.bitShiftLeft", "math.bitShiftRight", "math.bitXor", "math.sign"},
		repeated("math.abs(j) + math.bitAnd(i, j) + math.bitNot(j) + math.bitOr(i, j) + math.bitShiftLeft(j, 1) + math.bitShiftRight(j, 1) + math.bitXor(i, j) + math.sign(j)")},
	{[]string{"math.ceil", "math.floor", "math.isFinite", "math.isInf", "math.isNaN", "math.round", "math.sqrt", "math.trunc"},
		repeated("math.isFinite(math.ceil(1.5) + math.floor(1.5) + math.round(1.5) + math.sqrt(2.0) + math.trunc(1.5)) || math.isInf(1.0) || math.isNaN(1.0)")},
	{[]string{"optional.unwrap", "unwrapOpt"}, "lists.range(1000).map(i, optional.unwrap(lists.range(1000).map(j, optional.of(j))).size() + lists.range(1000).map(j, optional.of(j)).unwrapOpt().size())"},
	{[]string{"optFlatMap", "optMap"}, repeated("optional.of(j).optMap(x, x + 1).optFlatMap(x, optional.of(x)).hasValue()")},
	{[]string{"replace"}, `$S.replace("", $S)`},
	{[]string{"replace"}, `$S.replace(",", $S, 1000)`},
	{[]string{"reverse"}, "lists.range(1000).map(i, $S.reverse())"},
	{[]string{"reverse"}, "lists.range(1000).map(i, $N.reverse())"},
	{[]string{"sets.contains", "sets.equivalent", "sets.intersects"}, "sets.contains($A, $A) || sets.equivalent($A, $A) || sets.intersects($A, $A)"},
	{[]string{"size"}, "lists.range(1000).map(i, size($S) + $S.size())"},
	{[]string{"slice"}, "lists.range(1000).map(i, $N.slice(0, 100000))"},
	{[]string{"sort"}, "$A.sort()"},
	{[]string{"sort"}, "lists.range(1000).map(i, $N.sort())"},
	{[]string{"split"}, `$S.split("")`},
	{[]string{"split"}, `lists.range(1000).map(i, $S.split(","))`},
	{[]string{"startsWith"}, "lists.range(1000).map(i, $S.startsWith($S))"},
	{[]string{"string"}, "lists.range(1000).map(i, string(bytes($S)))"},
	{[]string{"string"}, repeated("string(j)")},
	{[]string{"strings.quote"}, "lists.range(1000).map(i, strings.quote($S))"},
	{[]string{"substring"}, "lists.range(1000).map(i, $S.substring(1))"},
	{[]string{"timestamp"}, "lists.range(1000).all(i, timestamp($S) > timestamp(0) || true)"},
	{[]string{"trim"}, "lists.range(1000).map(i, $S.trim())"},
	{[]string{"type"}, repeated("type(j) == type(1)")},
	{[]string{"uint"}, "lists.range(1000).all(i, uint($S) > 0u || true)"},
	{[]string{"upperAscii"}, "lists.range(1000).map(i, $S.upperAscii())"},
	{[]string{"_[_]", "@in"}, `lists.range(1000).map(i, $S in $M || $M[$S] == 1)`},
	{nil, "lists.range(1000).map(i, $A)"},
	{nil, "lists.range(1000).map(i, $N)"},
}

// expand writes the shorthands of celAttacks as references.
func expand(e string) string {
	return strings.NewReplacer(
		"$S", "†state.v.s", "$L", "†state.v.l", "$N", "†state.v.n", "$M", "†state.v.m",
		"$A", "lists.range(1000).map(k, †state.v.s)",
	).Replace(e)
}

// TestCELFunctionsPriced: an expression that would make a CEL function do
// much more work than it is charged for is refused: when the plan is
// checked, with a limit-exceeded diagnostic, or when it runs, with a step
// error of code limit-exceeded, before the work is done (the test
// bounds the memory each run allocates).
func TestCELFunctionsPriced(t *testing.T) {
	values := costValues()
	for _, a := range celAttacks {
		expr := expand(a.expr)
		t.Run(a.expr, func(t *testing.T) {
			src := fmt.Sprintf(costPlan, expr)
			f, diags := lang.Parse("cost.plan", []byte(src))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			info, diags := compiler.Check(f, compiler.Config{})
			if diags.HasErrors() {
				for _, d := range diags {
					if d.Code == lang.LimitExceeded && strings.Contains(d.Message, "may cost up to") {
						return // refused when checked
					}
				}
				t.Fatalf("the plan does not check, but not for its cost:\n%s", diags)
			}
			prog, err := compiler.Compile(info, diags, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tools := newFakeTools().
				on("get", func(context.Context, map[string]any) (any, error) { return values, nil }).
				on("use", echoTool)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err := Run(context.Background(), prog, nil, opts(tools, nil))
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			use := res.Steps[1]
			if use.Status != StatusFailed || use.Error == nil || use.Error.Code != "limit-exceeded" {
				t.Fatalf("the step ran: %s %+v", use.Status, use.Error)
			}
			if tools.count("use") != 0 {
				t.Error("the tool was called")
			}
			if !strings.Contains(use.Error.Message, "raise the limit") {
				t.Errorf("the message does not say what to do: %s", use.Error.Message)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
				t.Errorf("the run allocated %d MB", n>>20)
			}
		})
	}
}

// TestCELFunctionsListed: every function of the CEL environment has an
// attack in celAttacks, so that a function added to it is priced (or
// left out) on purpose.
func TestCELFunctionsListed(t *testing.T) {
	prog := compile(t, "tool use(x: any) -> any pure\nuse(x: 1) -> †state.r\n")
	covered := map[string]bool{}
	for _, a := range celAttacks {
		for _, f := range a.funcs {
			covered[f] = true
		}
	}
	var missing []string
	for name := range prog.Plan.Env.Functions() {
		switch name {
		case "in", "_in_", "__not_strictly_false__":
			continue // older names of @in and @not_strictly_false, which no expression reaches
		}
		if !covered[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("functions with no attack in celAttacks: %s", strings.Join(missing, ", "))
	}
}

// TestCELLargeButLegitimate: expressions over large values that stay
// under the limits still run, with the functions priced before they run.
func TestCELLargeButLegitimate(t *testing.T) {
	values := costValues()
	cases := []struct {
		expr string
		want any
	}{
		{"'%s has %d names; the first are %s'.format(['v', size($L), $L.slice(0, 3).join(', ')])",
			"v has 20000 names; the first are 00000000000000000000000000000000000000000000000000, 00000000000000000000000000000000000000000000000001, 00000000000000000000000000000000000000000000000002"},
		{"size($S.split(','))", int64(1<<20/9 + 1)},
		{"size($S)", int64(1 << 20 / 9 * 9)},
		{"$N.filter(x, x % 1000 == 0).size()", int64(100)},
		{"size($L.slice(0, 500).join(','))", int64(500*51 - 1)},
		{"'%s'.format([$N.slice(0, 1000)]).size() > 4000", true},
		{"$N.slice(0, 200) == $N.slice(0, 200) && 5 in $N && $L[0] in $L", true},
		{"$S.replace('abc', 'x').size()", int64(1 << 20 / 9 * 7)},
		{"size($N.slice(0, 300).map(i, [i]).flatten())", int64(300)},
		{"size(lists.range(500).map(i, $L[i]).sort())", int64(500)},
		{"sets.contains($N.slice(0, 100), [1, 2, 3])", true},
		{"size($N.slice(0, 300).distinct())", int64(300)},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			prog := compile(t, fmt.Sprintf(costPlan, expand(c.expr)))
			tools := newFakeTools().
				on("get", func(context.Context, map[string]any) (any, error) { return values, nil }).
				on("use", echoTool)
			res, err := Run(context.Background(), prog, nil, opts(tools, nil))
			if err != nil {
				t.Fatal(err)
			}
			use := res.Steps[1]
			if use.Status != StatusCompleted {
				t.Fatalf("%s: %+v", use.Status, use.Error)
			}
			if got := res.State["r"]; got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
