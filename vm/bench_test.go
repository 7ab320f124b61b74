package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/runtime"
)

// workTool is the benchmark tool: it returns 1 + the largest of its
// integer inputs, so the sinks hold the plan's depth.
func workTool(ctx context.Context, args map[string]any) (any, error) {
	best := int64(0)
	for k, v := range args {
		if k == "ms" {
			continue
		}
		if n, ok := v.(int64); ok && n > best {
			best = n
		}
	}
	return best + 1, nil
}

// benchProgram compiles a generated plan.
func benchProgram(b *testing.B, p *bench.Plan) *compiler.Program {
	b.Helper()
	f, diags := lang.Parse(p.Name, p.Text())
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	info, cd := compiler.Check(f, compiler.Config{})
	if cd.HasErrors() {
		b.Fatal(cd)
	}
	prog, err := compiler.Compile(info, cd, compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// BenchmarkRun runs generated plans of no-op calls through the whole
// interpreter: argument evaluation, the tool registry's validation of
// arguments and results against their JSON Schemas, result type checks,
// state, and events to an observer. Compilation is not timed. us/step is
// the overhead per step.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, p := range []*bench.Plan{bench.Chain(n, 0), bench.FanOut(n, 0), bench.Layered(100, n/100, 0, 1)} {
			prog := benchProgram(b, p)
			// The registry validates every call against this schema; the
			// plan declares the tool's inputs in0, in1, … itself.
			reg := runtime.NewRegistry()
			reg.MustRegister(runtime.Definition{
				Name:         "work",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}},"additionalProperties":{"type":"integer"}}`),
				OutputSchema: json.RawMessage(`{"type":"integer"}`),
			}, runtime.ToolFunc(workTool))
			events := 0
			opts := Options{Tools: reg, MaxParallel: 8, Observer: func(Event) { events++ }}
			b.Run(p.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts)
					if err != nil || res.Status != RunCompleted {
						b.Fatalf("%v %v", err, res.Err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(p.Len()), "us/step")
			})
		}
	}
}

// BenchmarkRunNoValidation is BenchmarkRun with the tool called directly,
// without schema validation: the interpreter's own overhead.
func BenchmarkRunNoValidation(b *testing.B) {
	for _, p := range []*bench.Plan{bench.Layered(100, 100, 0, 1)} {
		prog := benchProgram(b, p)
		tools := callerFunc(func(ctx context.Context, name string, args map[string]any) (any, error) { return workTool(ctx, args) })
		opts := Options{Tools: tools, MaxParallel: 8, Observer: func(Event) {}}
		b.Run(p.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts); err != nil || res.Status != RunCompleted {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(p.Len()), "us/step")
		})
	}
}

type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

var _ = fmt.Sprint
