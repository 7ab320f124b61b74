package journal

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/vm"
)

const holed = `
tool inc(x: int) -> int idempotent
tool slow(x: int) -> int idempotent
a: inc(x: ? "a number") -> †state.a
b: slow(x: †state.a) -> †state.b
output †state.b
`

// TestFillsSurviveTheProcess: the answer a model gave for a hole is kept
// with its step-filled event; a run stopped while the step's tool ran,
// and resumed, runs the step again with that answer and does not ask
// again. A refused answer is not kept.
func TestFillsSurviveTheProcess(t *testing.T) {
	d := open(t, Options{})
	src := &planfile.Source{Name: "holed.plan", Text: holed}
	r, err := d.Create(NewRun{ID: "f1", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	filler := vm.FillerFunc(func(_ context.Context, req vm.FillRequest) (any, error) {
		if asked.Add(1) == 1 {
			return "seven", nil // refused: not an int
		}
		return int64(7), nil
	})
	tl := newTools()
	ctx, cancel := context.WithCancel(context.Background())
	tl.fns["inc"] = func(c context.Context, args map[string]any) (any, error) {
		cancel() // the process stops while a's tool runs, after a was filled
		<-c.Done()
		return nil, c.Err()
	}
	res, _ := run(ctx, t, r, src, nil, tl, vm.Options{Filler: filler, RestoreFill: r.RestoreFill})
	if res.Status != vm.RunCanceled || asked.Load() != 2 {
		t.Fatalf("status %s, asked %d", res.Status, asked.Load())
	}
	r2, st, err := d.Resume("f1", false)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := r2.RestoreFill(0, "a", "amount"); ok {
		t.Errorf("a filling of another argument: %v", v)
	}
	if v, ok := r2.RestoreFill(0, "a", "x"); !ok || v != int64(7) {
		t.Fatalf("restored %v %v", v, ok)
	}
	tl2 := newTools()
	tl2.fns["slow"] = func(_ context.Context, args map[string]any) (any, error) { return args["x"].(int64) * 10, nil }
	asked.Store(100)
	res, _ = run(context.Background(), t, r2, st.Source, st.Input, tl2, vm.Options{Filler: filler, RestoreFill: r2.RestoreFill})
	if res.Status != vm.RunCompleted || res.Output != int64(80) || asked.Load() != 100 || tl2.count("inc") != 1 {
		t.Fatalf("resumed: %s %v %v, asked %d", res.Status, res.Output, res.Err, asked.Load()-100)
	}
}
