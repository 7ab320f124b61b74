package vm

import (
	"context"
	"errors"
	"testing"
)

// The cases of this file are failures the generative soundness test
// (soundness_test.go) found: plans that checked clean and failed at run
// time on something the checker could have known.

// TestReadsBothSlotsSkipped: a step that reads a step's slot and its error
// slot is skipped whether the step succeeds or fails; it used to wait for
// one of them only, run, and fail reading the other.
func TestReadsBothSlotsSkipped(t *testing.T) {
	prog := compile(t, `tool f() -> {a: string} pure
tool g(x: string, y: string) -> string pure
a: f() -> †state.ok || †state.err
b: g(x: †state.ok.a, y: †state.err.message) -> †state.r
`)
	for _, fails := range []bool{false, true} {
		tools := newFakeTools().
			on("f", func(context.Context, map[string]any) (any, error) {
				if fails {
					return nil, errors.New("down")
				}
				return map[string]any{"a": "x"}, nil
			}).
			on("g", func(context.Context, map[string]any) (any, error) { return "called", nil })
		res, err := Run(context.Background(), prog, nil, opts(tools, nil))
		if err != nil {
			t.Fatal(err)
		}
		if b := res.Steps[1]; b.Status != StatusSkipped {
			t.Errorf("f fails: %v: b is %s (%v), want skipped", fails, b.Status, b.Error)
		}
		if n := tools.count("g"); n != 0 {
			t.Errorf("f fails: %v: g was called %d times", fails, n)
		}
	}
}
