package vm

import (
	"context"
	"reflect"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler"
)

// TestAllocsPerStep bounds the allocations a step of a plain call costs
// the engine, measured as the difference between a plan and one twice its
// size, so that what a run allocates once does not count. A step's
// arguments take a map of their own (two allocations: the map and its
// entries), which the tool and the step's event may keep; its call spec
// comes from a block shared with other steps. One allocation more per
// step (a spec of its own again, an argument map built twice, a closure
// or a boxed value on the way) fails the test.
func TestAllocsPerStep(t *testing.T) {
	// The tool returns a value that needs no allocation, and events go to
	// an observer, so that only the engine's allocations count.
	one := any(int64(1))
	tools := callerFunc(func(context.Context, string, map[string]any) (any, error) { return one, nil })
	for _, shape := range []struct {
		name string
		plan func(n int) *bench.Plan
	}{
		{"chain", func(n int) *bench.Plan { return bench.Chain(n, 0) }},
		{"layered", func(n int) *bench.Plan { return bench.Layered(10, n/10, 0, bench.LayeredSeed(10, n/10)) }},
		{"fanout", func(n int) *bench.Plan { return bench.FanOut(n, 0) }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			const small, large = 500, 1000
			allocs := func(n int) float64 {
				prog := compile(t, string(shape.plan(n).Text()))
				opts := Options{Tools: tools, MaxParallel: 8, Observer: func(Event) {}, RunID: "r"}
				return testing.AllocsPerRun(5, func() {
					res, err := Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts)
					if err != nil || res.Status != RunCompleted {
						t.Fatalf("%v %v", err, res.Err)
					}
				})
			}
			a, b := allocs(small), allocs(large)
			perStep := (b - a) / (large - small)
			t.Logf("%.0f allocations for %d steps, %.0f for %d: %.2f a step", a, small, b, large, perStep)
			if perStep > 2.5 {
				t.Errorf("%.2f allocations a step, want at most 2.5 (the argument map's two, and the step's share of a block of specs)", perStep)
			}
		})
	}
}

// TestStepArgsAsOperands: the arguments a step's call gets from the
// program's flattened arguments are those its operands give, defaults
// added, for constants, slots read whole or in part, the input, lists,
// objects, CEL and a for each's element; and a slot that was not written
// fails the same way.
func TestStepArgsAsOperands(t *testing.T) {
	prog := compile(t, `tool get() -> {a: int, b: [string]} pure
tool use(x?: any, y?: any, z?: any, w?: any, n: int = 7, obj?: {k: int}) -> any pure
input {
  q: string
}
get() -> †state.g
use(x: †state.g, y: †state.g.b, z: "lit", w: [1, †state.g.a], obj: {k: †state.g.a}) -> †state.u1
use(x: †input.q, y: null, z: 2.5, w: true, n: 3) -> †state.u2
use(x: †state.g.a + 1, y: [†state.g], z: {"a": [1]}) -> †state.u3
for each s in †state.g.b max 5: use(x: †s, y: †state.u1) -> †state.u4
`)
	e := &engine{prog: prog, plan: prog.Plan, costLimit: compiler.DefaultMaxCost, ctx: context.Background()}
	e.sc = scope{slots: make([]any, len(prog.Plan.SlotNames)), written: make([]bool, len(prog.Plan.SlotNames)), index: prog.SlotIndex, input: map[string]any{"q": "question"}}
	ctx := context.Background()
	failed := 0
	for i, s := range prog.Steps {
		if s.Each != nil || len(s.Args) == 0 {
			continue
		}
		// Not written yet: both fail alike.
		_, err1 := e.stepArgs(ctx, i, s, &e.sc)
		_, err2 := e.args(ctx, s.Args, s.Tool, &e.sc)
		if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Errorf("%s before its slots are written: %v, want %v", s.ID, err1, err2)
		}
		if err1 != nil {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d steps failed before their slots were written, want 2", failed)
	}
	for i, name := range prog.Plan.SlotNames {
		e.sc.written[i] = true
		switch name {
		case "g":
			e.sc.slots[i] = map[string]any{"a": int64(4), "b": []any{"p", "q"}}
		default:
			e.sc.slots[i] = "slot " + name
		}
	}
	n := 0
	for i, s := range prog.Steps {
		sc := &e.sc
		if s.Each != nil {
			el := *sc
			el.elem, el.elemVal = s.Each.Var, "p"
			sc = &el
		}
		got, err1 := e.stepArgs(ctx, i, s, sc)
		want, err2 := e.args(ctx, s.Args, s.Tool, sc)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", s.ID, err1, err2)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: arguments %v, want %v", s.ID, got, want)
		}
		if len(s.Args) > 0 && s.Tool.Name == "use" {
			n++
			if _, ok := got["n"]; !ok {
				t.Errorf("%s: the default of n is missing: %v", s.ID, got)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d calls of use compared, want 4", n)
	}
}
