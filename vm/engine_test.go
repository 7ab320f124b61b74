package vm

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEngineStatuses: before a step runs it is blocked while a step it
// reads has not finished, and pending once it is ready.
func TestEngineStatuses(t *testing.T) {
	prog := compile(t, "tool f(x?: any) -> int pure\na: f() -> †state.a\nb: f(x: †state.a) -> †state.b\nc: f() -> †state.c\n")
	e, err := newEngine(context.Background(), prog, nil, nil, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := func() map[string]Status {
		m := map[string]Status{}
		for _, r := range e.res {
			m[r.ID] = r.Status
		}
		return m
	}
	if diff := cmp.Diff(map[string]Status{"a": StatusPending, "b": StatusBlocked, "c": StatusPending}, got()); diff != "" {
		t.Errorf("before the run (-want +got):\n%s", diff)
	}
	if ready := e.settle(e.roots()); !cmp.Equal(ready, []int{0, 2}) {
		t.Errorf("ready %v, want [0 2]", ready)
	}
	if diff := cmp.Diff(map[string]Status{"a": StatusPending, "b": StatusBlocked, "c": StatusPending}, got()); diff != "" {
		t.Errorf("after settling the roots (-want +got):\n%s", diff)
	}
}
