package compiler

import (
	"fmt"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/lang"
)

// BenchmarkCheck checks generated plans of 1k, 10k and 100k calls (parsing
// excluded); ns/op divided by the number of calls is the cost per call.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, p := range []*bench.Plan{bench.Chain(n, 0), bench.Layered(100, n/100, 0, 1)} {
			f, diags := lang.Parse("bench.plan", p.Text())
			if len(diags) > 0 {
				b.Fatal(diags)
			}
			b.Run(fmt.Sprintf("%s", p.Name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, diags := Check(f, Config{}); diags.HasErrors() {
						b.Fatal(diags)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Len()), "ns/call")
			})
		}
	}
}

// BenchmarkCheckTypical checks a plan of the size a model writes (30
// calls), with CEL conditions and criteria.
func BenchmarkCheckTypical(b *testing.B) {
	f, diags := lang.Parse("typical.plan", bench.Typical(30))
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Check(f, Config{}); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}

// BenchmarkCompile lowers checked plans of 1k, 10k and 100k calls (chain,
// wide fan-out, random layered DAG) to programs with their analysis;
// ns/call must stay flat as plans grow.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, p := range []*bench.Plan{bench.Chain(n, 0), bench.FanOut(n, 0), bench.Layered(100, n/100, 0, 1)} {
			f, diags := lang.Parse("bench.plan", p.Text())
			if len(diags) > 0 {
				b.Fatal(diags)
			}
			info, cd := Check(f, Config{})
			if cd.HasErrors() {
				b.Fatal(cd)
			}
			b.Run(p.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Compile(info, cd, Options{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Len()), "ns/call")
			})
		}
	}
}
