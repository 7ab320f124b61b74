package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/internal/testsize"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

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

// benchRegistry registers the work tool with the schemas of the plan's
// tools file, so that every call is validated as `obelisk run` validates
// it.
func benchRegistry(b *testing.B, p *bench.Plan) *toolkit.Registry {
	var file struct{ Tools []toolkit.Definition }
	if err := json.Unmarshal(p.ToolsJSON(), &file); err != nil {
		b.Fatal(err)
	}
	reg := toolkit.NewRegistry()
	reg.MustRegister(file.Tools[0], toolkit.ToolFunc(bench.Work))
	return reg
}

// overheadPlans are chains, fan-outs and random layered DAGs of no-op
// calls at 100, 1k, 10k and 100k steps.
func overheadPlans() []bench.Entry { return bench.Shapes(100, 1000, 10000, 100000) }

// runBench runs a program b.N times and reports the time, bytes and
// allocations per step.
func runBench(b *testing.B, prog *compiler.Program, steps int, opts Options) {
	events := 0
	opts.Observer = func(Event) { events++ }
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts)
		if err != nil || res.Status != RunCompleted {
			b.Fatalf("%v %v", err, res.Err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/float64(steps), "us/step")
	// CPU time is less disturbed than wall time by other work on a
	// shared machine (it counts the garbage collector's too).
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N)/float64(steps), "cpu-us/step")
	if events < 2*steps {
		b.Fatalf("%d events for %d steps", events, steps)
	}
}

// BenchmarkRun runs plans of no-op calls through the whole interpreter:
// argument evaluation, the registry's validation of arguments and results
// against the tool's JSON Schemas, result type checks, state, and events
// to an observer; no journal. Compilation is not timed. us/step is the
// overhead per step, the figure compared with the minimal Go executor.
func BenchmarkRun(b *testing.B) {
	for _, e := range overheadPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			runBench(b, benchProgram(b, p), p.Len(), Options{Tools: benchRegistry(b, p), MaxParallel: 64})
		})
	}
}

// BenchmarkRunDirect is BenchmarkRun with the tool called directly,
// without the registry's schema validation: the interpreter's own
// overhead.
func BenchmarkRunDirect(b *testing.B) {
	direct := callerFunc(func(ctx context.Context, _ string, args map[string]any) (any, error) { return bench.Work(ctx, args) })
	for _, e := range overheadPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			runBench(b, benchProgram(b, p), p.Len(), Options{Tools: direct, MaxParallel: 64})
		})
	}
}

// vsMinimalSizes are the sizes of BenchmarkRunVsMinimal's plans: 10k
// steps, and 100k when the full tests run (OBELISK_TEST_FULL=1) or the
// -bench pattern names them (-bench 'RunVsMinimal/chain-100000').
func vsMinimalSizes(b *testing.B) []int {
	if f := flag.Lookup("test.bench"); f != nil && strings.Contains(f.Value.String(), "100000") {
		return []int{10000, 100000}
	}
	return testsize.Pick(b, []int{10000}, []int{10000, 100000})
}

// BenchmarkRunVsMinimal runs each 10k-step plan (and 100k, see
// vsMinimalSizes) through vm.Run (as
// BenchmarkRun, with the registry, and as BenchmarkRunDirect, without)
// and through bench.RunMinimal, the least a Go program can do (the
// go-minimal peer), one after the other in the same loop of the same
// process, each from a collected heap, so that both see the same load.
// It reports the median time per step of each (us/step, min-us/step) and
// x-go-minimal, the ratio of the medians: the figure BENCHMARKS.md
// compares; x-go-minimal-cpu is the ratio of the CPU times (both cores,
// the collector included), which the load of others disturbs less.
func BenchmarkRunVsMinimal(b *testing.B) {
	direct := callerFunc(func(ctx context.Context, _ string, args map[string]any) (any, error) { return bench.Work(ctx, args) })
	for _, e := range bench.Shapes(vsMinimalSizes(b)...) {
		p := e.Plan()
		for _, validate := range []bool{true, false} {
			name := e.Name + "/registry"
			var tools Caller = direct
			if validate {
				tools = benchRegistry(b, p)
			} else {
				name = e.Name + "/direct"
			}
			b.Run(name, func(b *testing.B) {
				prog := benchProgram(b, p)
				calls := p.MinimalCalls()
				opts := Options{Tools: tools, MaxParallel: 64, Observer: func(Event) {}}
				ctx := context.Background()
				var ours, floor, oursCPU, floorCPU []time.Duration
				for b.Loop() {
					runtime.GC()
					t0, c0 := time.Now(), cpuTime()
					res, err := Run(ctx, prog, map[string]any{"seed": int64(0)}, opts)
					ours, oursCPU = append(ours, time.Since(t0)), append(oursCPU, cpuTime()-c0)
					if err != nil || res.Status != RunCompleted {
						b.Fatalf("%v %v", err, res.Err)
					}
					runtime.GC()
					t0, c0 = time.Now(), cpuTime()
					if _, err := bench.RunMinimal(ctx, calls); err != nil {
						b.Fatal(err)
					}
					floor, floorCPU = append(floor, time.Since(t0)), append(floorCPU, cpuTime()-c0)
				}
				o, m := median(ours), median(floor)
				oc, mc := median(oursCPU), median(floorCPU)
				b.ReportMetric(float64(o.Nanoseconds())/1e3/float64(p.Len()), "us/step")
				b.ReportMetric(float64(m.Nanoseconds())/1e3/float64(p.Len()), "min-us/step")
				b.ReportMetric(float64(o)/float64(m), "x-go-minimal")
				b.ReportMetric(float64(oc)/float64(mc), "x-go-minimal-cpu")
			})
		}
	}
}

// median returns the median of durations (it sorts them).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// BenchmarkRunLatency runs the catalogue's plans whose calls sleep (1 to
// 50 ms) and reports the makespan over the critical path (x-critical-path)
// : on the skewed DAG a dataflow run finishes near its critical path
// (560 ms), where a level-by-level one takes 1001 ms.
func BenchmarkRunLatency(b *testing.B) {
	for _, e := range bench.Catalogue() {
		if e.Group != "latency" {
			continue
		}
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			prog := benchProgram(b, p)
			cp := time.Duration(p.CriticalPathMs()) * time.Millisecond
			opts := Options{Tools: benchRegistry(b, p), MaxParallel: 256}
			var total time.Duration
			for b.Loop() {
				res, err := Run(context.Background(), prog, map[string]any{"seed": int64(0)}, opts)
				if err != nil || res.Status != RunCompleted {
					b.Fatalf("%v %v", err, res.Err)
				}
				total += res.Makespan
			}
			mean := total / time.Duration(b.N)
			b.ReportMetric(float64(mean)/float64(cp), "x-critical-path")
			b.ReportMetric(float64(mean-cp)/float64(time.Millisecond), "ms-over-critical-path")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type callerFunc func(ctx context.Context, name string, args map[string]any) (any, error)

func (f callerFunc) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	return f(ctx, name, args)
}

// BenchmarkRunStream runs the plans of BenchmarkRun in eager mode, as a
// model's stream would deliver them: each statement is checked against
// what came before it, and dispatched as it arrives. us/step is the
// whole cost per step, checking included, which should not grow with
// the plan's size.
func BenchmarkRunStream(b *testing.B) {
	for _, e := range bench.Shapes(100, 1000, 10000) {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			text := p.Text()
			tools := benchRegistry(b, p)
			b.ReportAllocs()
			for b.Loop() {
				sp := lang.NewStreamParser(p.Name, bytes.NewReader(text))
				res, diags, err := RunStream(context.Background(), sp, map[string]any{"seed": int64(0)}, Options{Tools: tools, MaxParallel: 64})
				if err != nil || diags.HasErrors() || res.Status != RunCompleted {
					b.Fatalf("%v %v %v", err, diags, res.Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/float64(p.Len()), "us/step")
		})
	}
}
