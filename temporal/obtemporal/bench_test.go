package obtemporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/temporal/obtemporal"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// benchPlan returns a plan of n steps of the tool inc: a chain (each step
// reads the one before) or n independent steps.
func benchPlan(shape string, n int) string {
	var b strings.Builder
	b.WriteString("tool inc(x: int) -> int pure\n")
	for i := range n {
		switch {
		case shape == "chain" && i > 0:
			fmt.Fprintf(&b, "s%d: inc(x: †state.s%d) -> †state.s%d\n", i, i-1, i)
		default:
			fmt.Fprintf(&b, "s%d: inc(x: %d) -> †state.s%d\n", i, i, i)
		}
	}
	fmt.Fprintf(&b, "output †state.s%d\n", n-1)
	return b.String()
}

func incTools() *toolkit.Registry {
	reg := toolkit.NewRegistry()
	reg.MustRegister(toolkit.Definition{Name: "inc", Annotations: toolkit.Annotations{ReadOnly: true},
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}`),
		OutputSchema: json.RawMessage(`{"type": "integer"}`),
	}, toolkit.ToolFunc(func(_ context.Context, args map[string]any) (any, error) {
		return args["x"].(int64) + 1, nil
	}))
	return reg
}

// BenchmarkPerStep measures what a step costs on Temporal (an in-process
// server on SQLite, one worker) beside a local journaled run of the same
// plan (obelisk run's journal, SQLite), in the same process and run: a
// chain of steps, each waiting for the one before, and as many
// independent steps. It reports each one's time per step and their
// ratio.
func BenchmarkPerStep(b *testing.B) {
	_, c := newServer(b)
	reg := incTools()
	queue := "bench"
	startWorker(b, c, queue, obtemporal.Config{Tools: reg, Check: compiler.Config{}, MaxParallel: 8})
	store, err := durable.Open(b.TempDir(), durable.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	ctx := context.Background()
	for _, shape := range []string{"chain", "parallel"} {
		const n = 20
		text := benchPlan(shape, n)
		b.Run(fmt.Sprintf("%s-%d", shape, n), func(b *testing.B) {
			var local, remote time.Duration
			runs := 0
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				plan, _, err := durable.Compile(&planfile.Source{Name: "bench.plan", Text: text}, nil)
				if err != nil {
					b.Fatal(err)
				}
				r, err := store.Create(plan, fmt.Sprintf("%s-%d-%d", shape, b.N, i), durable.Settings{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := r.Execute(ctx, durable.ExecOptions{Tools: reg})
				if err != nil || res.Status != vm.RunCompleted {
					b.Fatalf("%v %v", err, res.Err)
				}
				t1 := time.Now()
				id, err := obtemporal.StartRun(ctx, c, queue, "", obtemporal.Start{Plan: obtemporal.Plan{Name: "bench.plan", Text: text}}, 0)
				if err != nil {
					b.Fatal(err)
				}
				out, err := obtemporal.Wait(ctx, c, id)
				if err != nil || out.Status != vm.RunCompleted {
					b.Fatalf("%v %+v", err, out)
				}
				local += t1.Sub(t0)
				remote += time.Since(t1)
				runs++
			}
			perLocal := float64(local.Nanoseconds()) / float64(runs*n)
			perRemote := float64(remote.Nanoseconds()) / float64(runs*n)
			b.ReportMetric(perLocal/1e3, "journal-µs/step")
			b.ReportMetric(perRemote/1e3, "temporal-µs/step")
			b.ReportMetric(perRemote/perLocal, "ratio")
		})
	}
}
