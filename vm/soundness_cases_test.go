package vm

import (
	"context"
	"errors"
	"strings"
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

// TestNullableCheckedRuns: the checks the checker asks for before a value
// that may be null is used hold at run time: with every such value null,
// the plan runs.
func TestNullableCheckedRuns(t *testing.T) {
	prog := compile(t, `tool g() -> {o: {f: int}?, q: int?, l: [int]?, m: object?, ql: [int?]} pure
tool k(n: int) -> int pure
a: g() -> †state.a
b: k(n: †state.a.o != null ? †state.a.o.f : 0) -> †state.b
c: k(n: †state.a.q == null ? 0 : †state.a.q + 1) -> †state.c
d: for each x in (†state.a.l != null ? †state.a.l : []): k(n: †x) -> †state.d
e: k(n: †state.a.m != null ? size(†state.a.m) : 0) -> †state.e
f: k(n: size(†state.a.ql.filter(v, v != null && v > 1))) -> †state.f
g: k(n: math.greatest(†state.a.ql.filter(v, v != null))) -> †state.g
h: k(n: [†state.a.q, 3].map(v, v != null ? v : 0).sort()[0]) -> †state.h
`)
	tools := newFakeTools().
		on("g", func(context.Context, map[string]any) (any, error) {
			return map[string]any{"o": nil, "q": nil, "l": nil, "m": nil, "ql": []any{nil, int64(2)}}, nil
		}).
		on("k", func(_ context.Context, args map[string]any) (any, error) { return args["n"], nil })
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("run: %v (%v)", res.Err, statuses(res))
	}
	for slot, want := range map[string]int64{"f": 1, "g": 2, "h": 0} {
		if got := res.State[slot]; got != want {
			t.Errorf("%s: %v, want %d", slot, got, want)
		}
	}
}

// TestSubPlanOutputSaysWhatIsMissing: a sub-plan's output that reads
// something missing (here an index past the end of an empty list) fails,
// saying what is missing; it used to say only that null is not of the
// result's type, as if the checker had let a wrong type through.
func TestSubPlanOutputSaysWhatIsMissing(t *testing.T) {
	prog := compile(t, `on failure skip
type Grid [[number]]
plan first(xs: [{v: number}]) -> number {
  output †input.xs[0].v
}
plan grid(o: object) -> Grid {
  output [[†input.o.v], [0.5]]
}
a: first(xs: []) -> †state.a
b: grid(o: {}) -> †state.b
`)
	res, err := Run(context.Background(), prog, nil, opts(newFakeTools(), nil))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"since †input.xs[0].v: index 0 is out of range: †input.xs has 0 elements",
		"the output of sub-plan grid does not match its type Grid: [0][0]: null is not a number, since †input.o.v: †input.o has no field v",
	} {
		if e := res.Steps[i].Error; e == nil || !strings.Contains(e.Message, want) {
			t.Errorf("error: %+v, want %q", e, want)
		}
	}
}

// TestLookupNamesThePart: an error reading a reference into a slot names
// the part of it that is wrong; it used to name the part one field
// short (†state.a for †state.a.items).
func TestLookupNamesThePart(t *testing.T) {
	prog := compile(t, `tool f() -> {items: [{v: int}]} pure
tool g(n: int) -> int pure
a: f() -> †state.a
b: g(n: †state.a.items[0].v) -> †state.b
`)
	tools := newFakeTools().
		on("f", func(context.Context, map[string]any) (any, error) { return map[string]any{"items": []any{}}, nil }).
		on("g", func(context.Context, map[string]any) (any, error) { return int64(1), nil })
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "†state.a.items[0].v: index 0 is out of range: †state.a.items has 0 elements"
	if e := res.Steps[1].Error; e == nil || !strings.Contains(e.Message, want) {
		t.Errorf("error: %+v, want %q", e, want)
	}
}

// TestLenientOutputIndexesNull: an output reads a missing value as null
// also through an index: †state.a.items[0].v is null when items, an
// optional field, is absent. It used to fail ("is not a list").
func TestLenientOutputIndexesNull(t *testing.T) {
	prog := compile(t, `tool f() -> {items?: [{v: string}]} pure
a: f() -> †state.a
output {v: †state.a.items[0].v}
`)
	tools := newFakeTools().on("f", func(context.Context, map[string]any) (any, error) { return map[string]any{}, nil })
	res, err := Run(context.Background(), prog, nil, opts(tools, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("run: %v", res.Err)
	}
	if out, ok := res.Output.(map[string]any); !ok || out["v"] != nil {
		t.Errorf("output: %#v", res.Output)
	}
}
