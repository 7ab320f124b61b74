package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/vm"
)

// BenchmarkStep measures what the journal adds to a step: a chain of 50
// steps of a tool that returns at once, run without a journal and with
// one (two commits per step, each synced to disk). ns/step is the cost of
// one step.
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
