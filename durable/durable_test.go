package durable

import (
	"context"
	"math"
	"os"
	"path/filepath"
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

// TestStreamImportsRecorded: a streamed plan's imports are recorded as
// they are read, and a resumed run reads them from the journal, not from
// the files as they are now.
func TestStreamImportsRecorded(t *testing.T) {
	dir := t.TempDir()
	tools := `{"tools": [{"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "outputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}}]}`
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	plan := &Plan{Source: &planfile.Source{Name: "s.plan", Dir: dir}}
	r, err := st.Create(plan, "s", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	lookup := callerFunc(func(context.Context, string, map[string]any) (any, error) { calls++; return "found", nil })
	text := "import \"tools.json\"\n\nlookup(id: \"x\") -> †state.found\n  approve\n\noutput †state.found\n"
	res, rejected, err := r.ExecuteStream(context.Background(), strings.NewReader(text), ExecOptions{Tools: lookup})
	if err != nil || rejected.HasErrors() || res.Status != vm.RunWaiting {
		t.Fatalf("the stream: %v %v %v", res, rejected, err)
	}
	// The tools file changes: the run goes on with the one it read.
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{"tools": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ap, err := st.Choose("s", "")
	if err == nil {
		err = st.Decide("s", ap, Decision{Approved: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err = st.Resume("s", false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Streamed() {
		t.Fatal("the resumed run is not streamed")
	}
	res, rejected, err = r.ExecuteStream(context.Background(), nil, ExecOptions{Tools: lookup})
	if err != nil || rejected.HasErrors() || res.Status != vm.RunCompleted || res.Output != "found" || calls != 1 {
		t.Fatalf("resumed: %v %v %v, %d calls", res, rejected, err, calls)
	}
	if string(r.Text()) != text {
		t.Errorf("the text read again: %q", r.Text())
	}
}
