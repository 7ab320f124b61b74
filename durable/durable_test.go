package durable

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/vm"
)

// callerFunc adapts a function to vm.Caller.
type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

func openStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func compile(t *testing.T, text string, input map[string]any) *Plan {
	t.Helper()
	p, diags, err := Compile(&planfile.Source{Name: "p.plan", Text: text}, input)
	if err != nil {
		t.Fatalf("%v\n%s", err, diags)
	}
	return p
}

// TestNonFiniteResult: a tool whose result holds a number JSON cannot
// hold fails its step, and the run is recorded as failed, not left
// running.
func TestNonFiniteResult(t *testing.T) {
	st := openStore(t)
	r, err := st.Create(compile(t, "tool measure() -> any pure\nmeasure() -> †state.m\noutput †state.m\n", nil), "r", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), ExecOptions{Tools: callerFunc(func(context.Context, string, map[string]any) (any, error) {
		return map[string]any{"x": math.Inf(1)}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Steps[0]
	if res.Status != vm.RunFailed || s.Status != vm.StatusFailed || s.Error.Code != "invalid-output" || !strings.Contains(s.Error.Message, "holds a number JSON cannot hold") {
		t.Fatalf("status %s, step %+v", res.Status, s)
	}
	det, err := st.Show("r")
	if err != nil {
		t.Fatal(err)
	}
	if det.Status != vm.RunFailed || det.Steps[0].Status != vm.StatusFailed {
		t.Errorf("recorded: %s, step %s", det.Status, det.Steps[0].Status)
	}
}
