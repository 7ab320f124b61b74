package compiler

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	info, diags := checkSource(path, text, Config{ReadFile: os.ReadFile, Dir: filepath.Dir(path)})
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

// TestSlotIndexes: in every compiled example and its sub-plans, each step,
// dependency and †state reference knows the position of the slot it names.
func TestSlotIndexes(t *testing.T) {
	refs := 0
	for _, path := range examplePlans(t) {
		prog := compileFile(t, path)
		progs := []*Program{prog}
		for _, sub := range prog.Sub {
			progs = append(progs, sub)
		}
		for _, p := range progs {
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
