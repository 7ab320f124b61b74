package compiler

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/lang"
)

// examplePlans returns the example plans (.plan and their JSON forms).
func examplePlans(t *testing.T) []string {
	var out []string
	files, _ := filepath.Glob("../examples/*")
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, ".plan") || strings.HasSuffix(base, ".json") && strings.Count(base, ".") == 1 {
			out = append(out, f)
		}
	}
	if len(out) < 8 {
		t.Fatalf("found %d examples", len(out))
	}
	return out
}

func compileFile(t *testing.T, path string) *Program {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, diags := checkSource(path, text, Config{Imports: ImportDir(filepath.Dir(path))})
	prog, err := Compile(info, diags, Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, diagText(diags))
	}
	return prog
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// TestExamplesGolden compiles every example and compares its compiled
// JSON, DOT and Mermaid drawings with golden files.
func TestExamplesGolden(t *testing.T) {
	for _, path := range examplePlans(t) {
		base := filepath.Base(path)
		t.Run(base, func(t *testing.T) {
			prog := compileFile(t, path)
			js, err := prog.JSON()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, base+".compile.json", js)
			var dot, mmd bytes.Buffer
			if err := prog.WriteDOT(&dot); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".dot", dot.Bytes())
			if err := prog.WriteMermaid(&mmd); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".mmd", mmd.Bytes())
		})
	}
}

// TestCompileDeterministic compiles each example several times, in fresh
// checks, and requires byte-identical output.
func TestCompileDeterministic(t *testing.T) {
	for _, path := range examplePlans(t) {
		first, _ := compileFile(t, path).JSON()
		var firstDOT bytes.Buffer
		compileFile(t, path).WriteDOT(&firstDOT)
		for range 5 {
			again, _ := compileFile(t, path).JSON()
			if !bytes.Equal(first, again) {
				t.Fatalf("%s: compiled JSON differs between runs", path)
			}
			var dot bytes.Buffer
			compileFile(t, path).WriteDOT(&dot)
			if !bytes.Equal(firstDOT.Bytes(), dot.Bytes()) {
				t.Fatalf("%s: DOT differs between runs", path)
			}
		}
	}
}

// TestAnalysis checks the analysis on a plan whose numbers are known: a
// skewed diamond with declared latencies.
func TestAnalysis(t *testing.T) {
	src := `tool slow(x?: any) -> int pure latency 50ms
tool fast(x?: any) -> int pure latency 1ms
tool llm(x?: any) -> int pure model latency 2s tokens 300
a: fast() -> †state.a
b: slow(x: †state.a) -> †state.b
c: fast(x: †state.a) -> †state.c
d: fast(x: †state.c) -> †state.d
e: fast(x: [†state.b, †state.d]) -> †state.e
f: llm(x: †state.e) -> †state.f
`
	info, diags := checkSource("a.plan", []byte(src), Config{})
	prog, err := Compile(info, diags, Options{})
	if err != nil {
		t.Fatal(err, diags)
	}
	a := prog.Analysis
	ids := func(idx []int32) []string {
		var out []string
		for _, i := range idx {
			out = append(out, prog.Steps[i].ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a", "b", "e", "f"}, ids(a.CriticalPath)); diff != "" {
		t.Errorf("critical path (-want +got):\n%s", diff)
	}
	if got := a.CriticalLatency.String(); got != "2.052s" {
		t.Errorf("critical latency = %s, want 2.052s", got)
	}
	if got := a.SequentialLatency.String(); got != "2.054s" {
		t.Errorf("sequential latency = %s, want 2.054s", got)
	}
	levels := [][]string{}
	for _, l := range a.Levels {
		levels = append(levels, ids(l))
	}
	if diff := cmp.Diff([][]string{{"a"}, {"b", "c"}, {"d"}, {"e"}, {"f"}}, levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	if a.Width != 2 || a.Depth != 5 {
		t.Errorf("width %d depth %d, want 2 and 5", a.Width, a.Depth)
	}
	// Two source-to-sink paths: a b e f (4 calls) and a c d e f (5).
	if a.Calls.Longest != 4 || a.Calls.Average != 4.5 || a.ModelCalls.Average != 1 {
		t.Errorf("calls: longest %v average %v model average %v", a.Calls.Longest, a.Calls.Average, a.ModelCalls.Average)
	}
	if a.Tokens != 300 {
		t.Errorf("tokens %d, want 300", a.Tokens)
	}
	var chains [][]string
	for _, sg := range a.Subgraphs {
		chains = append(chains, ids(sg.Steps))
	}
	if diff := cmp.Diff([][]string{{"a"}, {"b"}, {"c", "d"}, {"e", "f"}}, chains); diff != "" {
		t.Errorf("subgraphs (-want +got):\n%s", diff)
	}
}

// TestProgramShape checks the graph of compiled generated plans against
// its definition: predecessors and successors mirror the dependencies,
// the order is topological, levels are longest distances from a source,
// and subgraphs are the maximal chains, waiting for the chains of their
// first step's predecessors.
func TestProgramShape(t *testing.T) {
	for _, p := range []*bench.Plan{
		bench.Chain(20, 0), bench.FanOut(20, 0), bench.Layered(6, 9, 0, 7), bench.Layered(3, 30, 0, 11),
		bench.Skewed(5, 6, 1, 10, 3),
	} {
		t.Run(p.Name, func(t *testing.T) {
			f, diags := lang.Parse("shape.plan", p.Text())
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			info, cd := Check(f, Config{})
			prog, err := Compile(info, cd, Options{})
			if err != nil {
				t.Fatal(err, cd)
			}
			checkShape(t, prog)
		})
	}
}

func checkShape(t *testing.T, prog *Program) {
	t.Helper()
	n := len(prog.Steps)
	succ := make([][]int32, n)
	for i, s := range prog.Steps {
		var pred []int32
		for _, d := range s.Deps {
			pred = append(pred, int32(d.Step))
			succ[d.Step] = append(succ[d.Step], int32(i))
		}
		if diff := cmp.Diff(pred, prog.Pred[i]); diff != "" {
			t.Errorf("Pred[%d] (-deps +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(succ, prog.Succ); diff != "" {
		t.Errorf("Succ (-deps +got):\n%s", diff)
	}
	pos := make([]int, n)
	for k := range pos {
		pos[k] = -1
	}
	for k, v := range prog.Order {
		pos[v] = k
	}
	for v := range n {
		if pos[v] < 0 {
			t.Fatalf("step %d is not in the order", v)
		}
		for _, u := range prog.Pred[v] {
			if pos[u] > pos[v] {
				t.Errorf("step %d comes before its predecessor %d", v, u)
			}
		}
	}
	a := prog.Analysis
	var levels [][]int32
	for _, v := range prog.Order {
		l := int32(0)
		for _, u := range prog.Pred[v] {
			l = max(l, a.Level[u]+1)
		}
		if a.Level[v] != l {
			t.Errorf("level of %d is %d, want %d", v, a.Level[v], l)
		}
	}
	for v := range n {
		for len(levels) <= int(a.Level[v]) {
			levels = append(levels, nil)
		}
		levels[a.Level[v]] = append(levels[a.Level[v]], int32(v))
	}
	if diff := cmp.Diff(levels, a.Levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	// A step continues its predecessor's chain when it is that
	// predecessor's only successor and has no other predecessor.
	continues := func(v int32) bool { return len(prog.Pred[v]) == 1 && len(prog.Succ[prog.Pred[v][0]]) == 1 }
	chainOf := make([]int, n)
	seen := 0
	for c, sg := range a.Subgraphs {
		for k, v := range sg.Steps {
			chainOf[v] = c
			seen++
			if k == 0 && continues(v) || k > 0 && (!continues(v) || prog.Pred[v][0] != sg.Steps[k-1]) {
				t.Errorf("subgraph %d: step %d (at %d) breaks the chain %v", c, v, k, sg.Steps)
			}
		}
		if c > 0 && pos[sg.Steps[0]] < pos[a.Subgraphs[c-1].Steps[0]] {
			t.Errorf("subgraph %d starts before subgraph %d in the order", c, c-1)
		}
	}
	if seen != n {
		t.Errorf("the subgraphs hold %d steps, not %d", seen, n)
	}
	for c, sg := range a.Subgraphs {
		var deps []int
		for _, u := range prog.Pred[sg.Steps[0]] {
			if !slices.Contains(deps, chainOf[u]) {
				deps = append(deps, chainOf[u])
			}
		}
		if diff := cmp.Diff(deps, sg.Deps); diff != "" {
			t.Errorf("subgraph %d deps (-want +got):\n%s", c, diff)
		}
	}
}

// withSubs returns a program and its sub-plans.
func withSubs(prog *Program) []*Program {
	progs := []*Program{prog}
	for _, sub := range prog.Sub {
		progs = append(progs, sub)
	}
	return progs
}

// TestSlotIndexes: in every compiled example and its sub-plans, each step,
// dependency and †state reference knows the position of the slot it names.
func TestSlotIndexes(t *testing.T) {
	refs := 0
	for _, path := range examplePlans(t) {
		for _, p := range withSubs(compileFile(t, path)) {
			check := func(what, name string, pos int, ok bool) {
				t.Helper()
				if want, has := p.SlotIndex[name]; !ok || !has || pos != want {
					t.Errorf("%s: %s names †state.%s at %d (%v), want %d", path, what, name, pos, ok, want)
				}
			}
			for _, s := range p.Steps {
				if s.Out != "" {
					pos, ok := s.OutIndex()
					check(s.ID+" out", s.Out, pos, ok)
				}
				if s.ErrOut != "" {
					pos, ok := s.ErrOutIndex()
					check(s.ID+" error out", s.ErrOut, pos, ok)
				}
				for _, d := range s.Deps {
					pos, ok := d.SlotIndex()
					check(s.ID+" dependency", d.Slot, pos, ok)
				}
				var ops []*Operand
				for _, a := range s.Args {
					ops = append(ops, a.Value)
				}
				ops = append(append(ops, s.When, s.Result), s.Expects...)
				for _, o := range ops {
					if o == nil {
						continue
					}
					for _, r := range o.AllRefs() {
						if r.Root != "state" {
							continue
						}
						refs++
						pos, ok := r.SlotIndex()
						check(s.ID+" reference "+r.String(), r.Slot(), pos, ok)
					}
				}
			}
		}
	}
	if refs == 0 {
		t.Error("no †state reference was checked")
	}
}

// TestCallArgs: the flattened arguments of every step of the examples
// follow the steps and their arguments in order, and take a constant
// scalar or a slot read whole without their operand, and nothing else.
func TestCallArgs(t *testing.T) {
	kinds := map[CallArgKind]int{}
	for _, path := range examplePlans(t) {
		for _, p := range withSubs(compileFile(t, path)) {
			if len(p.ArgStart) != len(p.Steps)+1 || int(p.ArgStart[len(p.Steps)]) != len(p.CallArgs) {
				t.Fatalf("%s: %d argument starts and %d arguments for %d steps", path, len(p.ArgStart), len(p.CallArgs), len(p.Steps))
			}
			for i, s := range p.Steps {
				got := p.CallArgs[p.ArgStart[i]:p.ArgStart[i+1]]
				if len(got) != len(s.Args) {
					t.Fatalf("%s: step %s has %d arguments, flattened %d", path, s.ID, len(s.Args), len(got))
				}
				for k, a := range s.Args {
					c := got[k]
					kinds[c.Kind]++
					if c.Name != a.Name || c.Value != a.Value {
						t.Errorf("%s: argument %d of %s is %s, flattened %s", path, k, s.ID, a.Name, c.Name)
					}
					v := a.Value
					want := ArgOperand
					switch {
					case v.Kind == OpHole:
						want = ArgHole
					case v.Kind == OpConst && isScalar(v.Const):
						want = ArgConst
					case v.Kind == OpRef && v.Ref.Root == "state" && len(v.Ref.Path) == 1:
						want = ArgSlot
						if pos, _ := v.Ref.SlotIndex(); int(c.Slot) != pos || pos != p.SlotIndex[v.Ref.Slot()] {
							t.Errorf("%s: argument %s of %s reads slot %d, want %d", path, a.Name, s.ID, c.Slot, p.SlotIndex[v.Ref.Slot()])
						}
					}
					if c.Kind != want {
						t.Errorf("%s: argument %s of %s (%s) is of kind %d, want %d", path, a.Name, s.ID, v.Text, c.Kind, want)
					}
					if c.Kind == ArgConst && c.Const != v.Const {
						t.Errorf("%s: argument %s of %s is %v, want %v", path, a.Name, s.ID, c.Const, v.Const)
					}
				}
			}
			for _, pos := range p.Initial {
				if !p.Plan.Slots[p.Plan.SlotNames[pos]].HasInitial {
					t.Errorf("%s: slot %s listed as having an initial value", path, p.Plan.SlotNames[pos])
				}
			}
		}
	}
	for _, k := range []CallArgKind{ArgOperand, ArgConst, ArgSlot} {
		if kinds[k] == 0 {
			t.Errorf("no argument of kind %d among the examples: %v", k, kinds)
		}
	}
}

// TestCalledTools: the tools a program and its sub-plans call, each once
// in the order of their first call, fallbacks included, sub-plans and the
// tools of steps with a known result left out; NamedTools keeps the
// latter.
func TestCalledTools(t *testing.T) {
	src := `tool f(x: int) -> string idempotent
tool g(x: int) -> string idempotent
tool h(x: int) -> string idempotent
tool known(x: int) -> string idempotent
plan sub(x: int) -> string {
  h(x: †input.x) -> †state.out
  output †state.out
}
a: f(x: 1) -> †state.a
  fallback g(x: 1)
b: known(x: 1) -> †state.b
  result "fixed"
c: sub(x: 2) -> †state.c
d: f(x: 3) -> †state.d
`
	info, diags := checkSource("a.plan", []byte(src), Config{})
	prog, err := Compile(info, diags, Options{})
	if err != nil {
		t.Fatal(err, diags)
	}
	names := func(tools []*Tool) string {
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, " ")
	}
	if got := names(prog.CalledTools()); got != "f g h" {
		t.Errorf("CalledTools: %s, want f g h", got)
	}
	if got := names(prog.NamedTools()); got != "f g known h" {
		t.Errorf("NamedTools: %s, want f g known h", got)
	}
	var progs []string
	for name := range prog.Programs() {
		progs = append(progs, fmt.Sprintf("%q", name))
	}
	if got := strings.Join(progs, " "); got != `"" "sub"` {
		t.Errorf("Programs: %s", got)
	}
}
