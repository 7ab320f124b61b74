package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// exampleProgram compiles an example with its input and mocks.
func exampleProgram(t *testing.T, path string) (*compiler.Program, map[string]any, *toolkit.Mocks) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f *lang.File
	var diags lang.Diagnostics
	if strings.HasSuffix(path, ".json") {
		f, diags = lang.ParseJSON(path, text)
	} else {
		f, diags = lang.Parse(path, text)
	}
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	info, cd := compiler.Check(f, compiler.Config{Imports: compiler.ImportDir(filepath.Dir(path))})
	prog, err := compiler.Compile(info, cd, compiler.Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, cd)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".plan"), ".json")
	var input map[string]any
	if b, err := os.ReadFile(base + ".input.json"); err == nil {
		v, err := toolkit.DecodeJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		input = v.(map[string]any)
	} else if f.InputValues != nil {
		input = f.InputValues
	}
	var mocks *toolkit.Mocks
	if b, err := os.ReadFile(base + ".mocks.json"); err == nil {
		if mocks, err = toolkit.ParseMocks(b); err != nil {
			t.Fatal(err)
		}
	}
	return prog, input, mocks
}

// TestSimulateExamplesRespectDependencies dry-runs every example and
// checks that the schedule starts no step before every step it waits for
// has finished.
func TestSimulateExamplesRespectDependencies(t *testing.T) {
	files, _ := filepath.Glob("../examples/*")
	n := 0
	for _, path := range files {
		base := filepath.Base(path)
		if !strings.HasSuffix(base, ".plan") && !(strings.HasSuffix(base, ".json") && strings.Count(base, ".") == 1) {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			prog, input, mocks := exampleProgram(t, path)
			for _, symbolic := range []bool{false, true} {
				res, err := Simulate(context.Background(), prog, input, SimOptions{Seed: 1, Mocks: mocks, Symbolic: symbolic})
				if err != nil {
					t.Fatal(err)
				}
				checkSchedule(t, prog, res)
			}
		})
	}
	if n < 8 {
		t.Fatalf("only %d examples", n)
	}
}

// checkSchedule checks that each step that ran started after each step it
// depends on finished, and no earlier than the moment its wave says.
func checkSchedule(t *testing.T, prog *compiler.Program, res *SimResult) {
	t.Helper()
	byID := map[string]*StepResult{}
	for _, s := range res.Steps {
		byID[s.ID] = s
	}
	started := map[string]time.Duration{}
	for _, w := range res.Waves {
		for _, id := range w.Steps {
			started[id] = w.At
		}
	}
	for i, st := range prog.Steps {
		r := byID[st.ID]
		if r.Status == StatusSkipped || r.Status == StatusPending {
			continue
		}
		at, ok := started[st.ID]
		if !ok && r.Status != StatusFailed {
			t.Errorf("%s ran but is in no wave", st.ID)
			continue
		}
		for _, p := range prog.Pred[i] {
			dep := byID[prog.Steps[p].ID]
			if end := dep.Start + dep.Duration; ok && at < end {
				t.Errorf("%s starts at %s, before %s finishes at %s", st.ID, at, dep.ID, end)
			}
		}
	}
}

// TestSimulateSkewedMakespan: on a skewed graph with enough parallelism,
// the dataflow schedule finishes at its critical path, while a
// level-by-level one would take much longer. Asserted in virtual time.
func TestSimulateSkewedMakespan(t *testing.T) {
	p := bench.Skewed(10, 20, 1, 50, 7)
	text := strings.Replace(string(p.Text()), "-> int pure", "-> int pure latency 1ms", 1)
	prog := compile(t, text)
	// Declared latencies: each call's ms argument is its latency, so mock
	// the latency per step through a sub-plan-free trick: one tool per
	// speed.
	_ = prog
	slowFast := strings.NewReplacer("work(", "fast(", "-> int pure latency 1ms", "")
	var b strings.Builder
	b.WriteString("tool fast(in0?: any, in1?: any, in2?: any, in3?: any, in4?: any, in5?: any, in6?: any, in7?: any, in8?: any, in9?: any, ms?: int) -> int pure latency 1ms\n")
	b.WriteString("tool slow(in0?: any, in1?: any, in2?: any, in3?: any, in4?: any, in5?: any, in6?: any, in7?: any, in8?: any, in9?: any, ms?: int) -> int pure latency 50ms\n")
	b.WriteString("input {\n  seed: int\n}\n")
	for _, line := range strings.Split(slowFast.Replace(text), "\n") {
		if !strings.HasPrefix(line, "fast(") {
			continue
		}
		if strings.Contains(line, "ms: 50)") {
			line = "slow(" + strings.TrimPrefix(line, "fast(")
		}
		b.WriteString(line + "\n")
	}
	prog = compile(t, b.String())
	res, err := Simulate(context.Background(), prog, map[string]any{"seed": int64(1)}, SimOptions{MaxParallel: 16})
	if err != nil {
		t.Fatal(err)
	}
	cp := time.Duration(p.CriticalPathMs()) * time.Millisecond
	level := time.Duration(p.LevelMs()) * time.Millisecond
	if res.Makespan != cp {
		t.Errorf("makespan %s, want the critical path %s", res.Makespan, cp)
	}
	if prog.Analysis.CriticalLatency != cp || prog.Analysis.LevelLatency != level {
		t.Errorf("analysis: critical %s level %s, want %s and %s", prog.Analysis.CriticalLatency, prog.Analysis.LevelLatency, cp, level)
	}
	if float64(level) < 1.5*float64(cp) {
		t.Errorf("the plan is not skewed enough to tell: level-by-level %s, critical path %s", level, cp)
	}
	t.Logf("dataflow makespan %s = critical path; level by level would take %s (%.2fx)", res.Makespan, level, float64(level)/float64(cp))
}

func TestSimulateSymbolic(t *testing.T) {
	prog := compile(t, `
tool get() -> {n: int} pure
tool pay(amount: int) -> {id: string} idempotent
tool report(e: error) -> string idempotent
get() -> †state.r
pay(amount: †state.r.n) -> †state.receipt || †state.err
  when †state.r.n > 10
report(e: †state.err) -> †state.rep
output {
  id: †state.receipt.id
}
`)
	res, err := Simulate(context.Background(), prog, nil, SimOptions{Symbolic: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.State["r"] != (Unknown{}) || res.State["receipt"] != (Unknown{}) {
		t.Errorf("state %v", res.State)
	}
	var conds, errs int
	for _, b := range res.Branches {
		if b.Condition != "" {
			conds++
			if b.Condition != "†state.r.n > 10" || !strings.Contains(b.IfFalse, "pay is skipped") {
				t.Errorf("branch %+v", b)
			}
		} else {
			errs++
			if !strings.Contains(b.IfFalse, "†state.err is written and report run") {
				t.Errorf("branch %+v", b)
			}
		}
	}
	if conds != 1 || errs != 1 {
		t.Errorf("branches %+v", res.Branches)
	}
}

func TestSimulateProblems(t *testing.T) {
	prog := compile(t, "tool get() -> {n: int} pure\nget() -> †state.r\n  expect †state.r.n > 1000\n")
	res, err := Simulate(context.Background(), prog, nil, SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].Code != toolkit.CodeExpectFailed {
		t.Errorf("problems %+v", res.Problems)
	}
	// The simulated step still completes: its values are invented.
	if res.Steps[0].Status != StatusCompleted {
		t.Errorf("step %+v", res.Steps[0])
	}
}
