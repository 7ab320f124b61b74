package lang

import (
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
)

// BenchmarkParse parses generated plans; b.SetBytes makes the result read
// in MB/s. The 10k layered plan is the figure the front end is judged by.
func BenchmarkParse(b *testing.B) {
	for _, p := range []*bench.Plan{bench.Chain(1000, 0), bench.Layered(100, 100, 0, 1), bench.Chain(100000, 0)} {
		src := p.Text()
		b.Run(p.Name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, diags := Parse("bench.plan", src); len(diags) > 0 {
					b.Fatal(diags)
				}
			}
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

// BenchmarkParseJSON imports the JSON form of the same plans.
func BenchmarkParseJSON(b *testing.B) {
	for _, p := range []*bench.Plan{bench.Layered(100, 100, 0, 1)} {
		src := p.JSON()
		b.Run(p.Name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, diags := ParseJSON("bench.json", src); len(diags) > 0 {
					b.Fatal(diags)
				}
			}
		})
	}
}
