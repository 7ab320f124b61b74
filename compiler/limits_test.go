package compiler

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/lang"
)

// TestLimits: a plan over each limit for untrusted plans gets one
// limit-exceeded diagnostic, at the place that exceeds it, and the same
// plan under the limit gets none.
func TestLimits(t *testing.T) {
	subPlans := func(n int) string {
		var b strings.Builder
		b.WriteString("tool leaf(x: int) -> int pure\n")
		for i := range n {
			callee := fmt.Sprintf("p%d(x: †input.x)", i+1)
			if i == n-1 {
				callee = "leaf(x: †input.x)"
			}
			fmt.Fprintf(&b, "plan p%d(x: int) -> int {\n  %s -> †state.r\n  output †state.r\n}\n", i, callee)
		}
		b.WriteString("p0(x: 1) -> †state.out\n")
		return b.String()
	}
	cases := []struct {
		name   string
		plan   string
		over   Limits // the plan is over these limits
		under  Limits // and within these
		at     string // line:column of the diagnostic
		reason string // a part of its message
	}{
		{
			name:  "steps",
			plan:  string(bench.Chain(101, 0).Text()),
			over:  Limits{MaxSteps: 100},
			under: Limits{MaxSteps: 101},
			at:    "1:1", reason: "the plan has 101 steps, more than the limit of 100",
		},
		{
			name:  "for each max",
			plan:  "tool f(x: int) -> int pure\ninput {\n  xs: [int]\n}\nfor each x in †input.xs max 500: f(x: †x) -> †state.r\n",
			over:  Limits{MaxForEach: 100},
			under: Limits{MaxForEach: 500},
			at:    "5:29", reason: "max 500 is more than the limit of 100 elements",
		},
		{
			name:  "sub-plan depth",
			plan:  subPlans(4),
			over:  Limits{MaxDepth: 3},
			under: Limits{MaxDepth: 4},
			at:    "14:6", reason: "sub-plans nest more than 3 deep",
		},
		{
			name:  "nesting of values",
			plan:  "tool f(x: any) -> int pure\nf(x: [[[[1]]]]) -> †state.r\n",
			over:  Limits{MaxNesting: 3},
			under: Limits{MaxNesting: 4},
			at:    "2:9", reason: "nest more than 3 levels deep",
		},
		{
			name:  "nesting of types",
			plan:  "tool f(x: [[{a: [int]}]]) -> int pure\nf(x: []) -> †state.r\n",
			over:  Limits{MaxNesting: 3},
			under: Limits{MaxNesting: 4},
			at:    "1:17", reason: "nest more than 3 levels deep",
		},
		{
			name: "expression cost",
			plan: "tool get() -> {items: [{name: string, tags: [string]}]} pure\nget() -> †state.r\nget() -> †state.s\n" +
				"  when †state.r.items.exists(i, i.tags.exists(t, t == i.name))\n",
			over:  Limits{SizeHint: 1000, MaxCost: 100000},
			under: Limits{SizeHint: 10, MaxCost: 100000},
			at:    "4:8", reason: "may cost up to",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, diags := lang.Parse("limits.plan", []byte(c.plan))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, diags = Check(f, Config{Limits: c.over})
			var got []*lang.Diagnostic
			for _, d := range diags {
				if d.Code == lang.LimitExceeded {
					got = append(got, d)
				}
			}
			if len(got) != 1 {
				t.Fatalf("over the limit: %d limit-exceeded diagnostics, want 1:\n%s", len(got), diagText(diags))
			}
			if pos := fmt.Sprintf("%d:%d", got[0].Span.Start.Line, got[0].Span.Start.Column); pos != c.at || !strings.Contains(got[0].Message, c.reason) {
				t.Errorf("got %s: %s\nwant %s: …%s…", pos, got[0].Message, c.at, c.reason)
			}
			if _, diags := Check(f, Config{Limits: c.under}); diags.HasErrors() {
				t.Errorf("under the limit:\n%s", diagText(diags))
			}
		})
	}
}

// TestForEachDefaultBound: a for each without max is bounded by
// Limits.MaxForEach, which the interpreter enforces on the list.
func TestForEachDefaultBound(t *testing.T) {
	f, _ := lang.Parse("each.plan", []byte("tool f(x: int) -> int pure\ninput {\n  xs: [int]\n}\nfor each x in †input.xs: f(x: †x) -> †state.r\n"))
	info, diags := Check(f, Config{Limits: Limits{MaxForEach: 7}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	prog, err := Compile(info, diags, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := prog.Steps[0].Each.Max; got != 7 {
		t.Errorf("the for each is bounded by %d, want 7", got)
	}
}

// TestDeepNestingMemory: a plan nested far past the limit, in either
// form and in each kind of nesting, is refused with a diagnostic while
// checking it allocates a small multiple of its size: the parsers refuse
// the depth where they meet it instead of building the rest.
func TestDeepNestingMemory(t *testing.T) {
	const n = 200_000
	deep := func(open, middle, close string) string {
		return strings.Repeat(open, n) + middle + strings.Repeat(close, n)
	}
	cases := []struct {
		name         string
		json, stream bool
		src          string
	}{
		{"list", false, false, "tool f(x: any) -> int pure\nf(x: " + deep("[", "", "]") + ") -> †state.r\n"},
		{"object", false, false, "tool f(x: any) -> int pure\nf(x: " + deep("{a: ", "1", "}") + ") -> †state.r\n"},
		{"CEL parentheses", false, false, "tool f(x: any) -> int pure\nf(x: 1 + " + deep("(", "1", ")") + ") -> †state.r\n"},
		{"CEL in a condition", false, false, "tool f(x: any) -> int pure\nf(x: 1) -> †state.r\n  when " + deep("(", "true", ")") + "\n"},
		{"type", false, false, "tool f(x: " + deep("[", "int", "]") + ") -> int pure\nf(x: 1) -> †state.r\n"},
		{"type of a field", false, false, "type T {\n  a: " + deep("{b: ", "int", "}") + "\n}\ntool f(x: T) -> int pure\nf(x: 1) -> †state.r\n"},
		{"JSON list", true, false, `[{"_tool":"f","x":` + deep("[", "", "]") + `,"_output":"r"}]`},
		{"JSON object", true, false, `[{"_tool":"f","x":` + deep(`{"a":`, "1", "}") + `,"_output":"r"}]`},
		{"JSON expression", true, false, `[{"_tool":"f","x":{"_expr":"1 + ` + deep("(", "1", ")") + `"},"_output":"r"}]`},
		{"JSON schema", true, false, `[{"type":"tool","name":"f","inputSchema":{"type":"object","properties":{"x":` + deep(`{"type":"array","items":`, `{"type":"string"}`, "}") + `}}}]`},
		{"stream of a list", false, true, "tool f(x: any) -> int pure\nf(x: " + deep("[", "", "]") + ") -> †state.r\n"},
		{"stream of an object", false, true, "tool f(x: any) -> int pure\nf(x: " + deep("{a: ", "1", "}") + ") -> †state.r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var diags lang.Diagnostics
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var f *lang.File
			switch {
			case c.stream:
				sp := lang.NewStreamParser("deep.plan", strings.NewReader(c.src))
				for {
					_, ds, err := sp.Next(context.Background())
					if err != nil {
						break
					}
					diags = append(diags, ds...)
				}
			case c.json:
				f, diags = lang.ParseJSON("deep.json", []byte(c.src))
			default:
				f, diags = lang.Parse("deep.plan", []byte(c.src))
			}
			if f != nil && !diags.HasErrors() {
				_, diags = Check(f, Config{})
			}
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			if !strings.Contains(string(diagText(diags)), "nest") {
				t.Errorf("no diagnostic about nesting:\n%.500s", diagText(diags))
			}
			if limit := uint64(8 * len(c.src)); allocated > limit {
				t.Errorf("checking %d bytes allocated %d bytes, more than %d", len(c.src), allocated, limit)
			}
			t.Logf("%d bytes of input, %d bytes allocated (%.1f per byte)", len(c.src), allocated, float64(allocated)/float64(len(c.src)))
		})
	}
}
