package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// BenchmarkStep measures what the journal adds to a step: a chain of 50
// steps of a tool that returns at once, run without a journal and with
// one. ns/step is the cost of one step.
func BenchmarkStep(b *testing.B) {
	const n = 50
	var text strings.Builder
	text.WriteString("tool inc(x: int) -> int idempotent\ninc(x: 0) -> †state.s0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&text, "inc(x: †state.s%d) -> †state.s%d\n", i-1, i)
	}
	src := &planfile.Source{Name: "chain.plan", Text: text.String()}
	prog, _, err := src.Compile()
	if err != nil {
		b.Fatal(err)
	}
	tl := newTools()
	for _, journaled := range []bool{false, true} {
		name := "none"
		if journaled {
			name = "sqlite"
		}
		b.Run(name, func(b *testing.B) {
			d := open(b, Options{})
			i := 0
			for b.Loop() {
				o := vm.Options{Tools: tl}
				if journaled {
					r, err := d.Create(NewRun{ID: fmt.Sprintf("r%d", i), Source: src})
					if err != nil {
						b.Fatal(err)
					}
					o.Journal, o.RunID = r, r.ID
				}
				i++
				res, err := vm.Run(context.Background(), prog, nil, o)
				if err != nil || res.Status != vm.RunCompleted {
					b.Fatalf("%v %v", err, res.Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkJournal runs generated plans of no-op calls, as `obelisk run`
// does (the tool behind a registry that checks its schemas, at most 8
// steps at once, an observer), without a journal and with one, one after
// the other in the same loop, each from a collected heap, so that both
// see the same load on a shared machine. It reports the medians: steps/s
// and us/step of the journaled run, none-us/step of the other, and
// x-unjournaled, the journaled time over the other; cpu-us/step and
// none-cpu-us/step are the CPU time of each (both cores, the collector
// included), which the load of others disturbs less; commits/run counts
// the transactions of a journaled run. NAME/mocks answers the calls from
// mocks, whose answers the journaled run records, as `obelisk run`
// does with a mocks file.
func BenchmarkJournal(b *testing.B) {
	layered := bench.Layered(100, 100, 0, bench.LayeredSeed(100, 100))
	plans := []*bench.Plan{layered, bench.FanOut(10000, 0), bench.Chain(1000, 0), layered}
	for k, p := range plans {
		mocked := k == len(plans)-1
		name := p.Name
		if mocked {
			name += "/mocks"
		}
		b.Run(name, func(b *testing.B) {
			src := &planfile.Source{Name: p.Name + ".plan", Text: string(p.Text())}
			prog, _, err := src.Compile()
			if err != nil {
				b.Fatal(err)
			}
			var file struct{ Tools []toolkit.Definition }
			if err := json.Unmarshal(p.ToolsJSON(), &file); err != nil {
				b.Fatal(err)
			}
			reg := toolkit.NewRegistry()
			reg.MustRegister(file.Tools[0], toolkit.ToolFunc(bench.Work))
			var tools vm.Caller = reg
			mocks, err := toolkit.ParseMocks([]byte(`{"work": {"result": 1}}`))
			if err != nil {
				b.Fatal(err)
			}
			if mocked {
				tools = toolkit.Chain{Mocks: mocks, Registry: reg}
			}
			d := open(b, Options{})
			commits := 0
			d.committed = func([]record) { commits++ }
			input := map[string]any{"seed": int64(0)}
			run := func(o vm.Options) (wall, cpu time.Duration) {
				o.Tools, o.MaxParallel, o.Observer = tools, 8, func(vm.Event) {}
				runtime.GC()
				t0, c0 := time.Now(), cpuTime()
				res, err := vm.Run(context.Background(), prog, input, o)
				wall, cpu = time.Since(t0), cpuTime()-c0
				if err != nil || res.Status != vm.RunCompleted {
					b.Fatalf("%v %v", err, res.Err)
				}
				return wall, cpu
			}
			var plain, journaled, plainCPU, journaledCPU []time.Duration
			i := 0
			for b.Loop() {
				mocks.OnAnswer(nil)
				w, c := run(vm.Options{})
				plain, plainCPU = append(plain, w), append(plainCPU, c)
				r, err := d.Create(NewRun{ID: fmt.Sprintf("r%d", i), Source: src, Input: input})
				if err != nil {
					b.Fatal(err)
				}
				mocks.OnAnswer(r.RecordMockCall)
				i++
				w, c = run(vm.Options{Journal: r, RunID: r.ID, Restore: r.Restore})
				journaled, journaledCPU = append(journaled, w), append(journaledCPU, c)
			}
			pm, jm := median(plain), median(journaled)
			steps := float64(p.Len())
			b.ReportMetric(float64(median(journaledCPU).Nanoseconds())/1e3/steps, "cpu-us/step")
			b.ReportMetric(float64(median(plainCPU).Nanoseconds())/1e3/steps, "none-cpu-us/step")
			b.ReportMetric(steps/jm.Seconds(), "steps/s")
			b.ReportMetric(float64(jm.Nanoseconds())/1e3/steps, "us/step")
			b.ReportMetric(float64(pm.Nanoseconds())/1e3/steps, "none-us/step")
			b.ReportMetric(float64(jm)/float64(pm), "x-unjournaled")
			b.ReportMetric(float64(commits)/float64(b.N), "commits/run")
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

// median returns the median of durations (it sorts them).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}
