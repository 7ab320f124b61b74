package lang

import (
	"encoding/json"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
)

// benchPlans are the generated plans the front-end benchmarks read: a
// chain, a fan-out and a random layered DAG at 1k, 10k and 100k calls, so
// that each tenfold step in size can be compared.
func benchPlans() []bench.Entry { return bench.Shapes(1000, 10000, 100000) }

// perCall reports ns per call of the plan.
func perCall(b *testing.B, calls int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(calls), "ns/call")
}

// BenchmarkParse parses generated plans as .plan text; b.SetBytes makes
// the result read in MB/s. typical-30 is a plan of the size and shape a
// model writes.
func BenchmarkParse(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			src := p.Text()
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, diags := Parse("bench.plan", src); len(diags) > 0 {
					b.Fatal(diags)
				}
			}
			perCall(b, p.Len())
		})
	}
	src := bench.Typical(30)
	b.Run("typical-30", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			if _, diags := Parse("bench.plan", src); len(diags) > 0 {
				b.Fatal(diags)
			}
		}
	})
}

// BenchmarkParseJSON imports the JSON form of the same plans (the bare
// array of calls of seed 003).
func BenchmarkParseJSON(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			src := p.JSON()
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, diags := ParseJSON("bench.json", src); len(diags) > 0 {
					b.Fatal(diags)
				}
			}
			perCall(b, p.Len())
		})
	}
}

// BenchmarkDecodeJSON decodes the same JSON with encoding/json into
// []map[string]any: the practical floor for reading a plan in Go, which
// the JSON front end (parse, check and compile) is measured against.
func BenchmarkDecodeJSON(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			src := p.JSON()
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				var calls []map[string]any
				if err := json.Unmarshal(src, &calls); err != nil {
					b.Fatal(err)
				}
			}
			perCall(b, p.Len())
		})
	}
}
