package compiler

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/lang"
)

// benchPlans are chains, fan-outs and random layered DAGs of 1k, 10k and
// 100k calls, so that each tenfold step in size can be compared.
func benchPlans() []bench.Entry { return bench.Shapes(1000, 10000, 100000) }

func perCall(b *testing.B, calls int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(calls), "ns/call")
}

// workTools declares the plans' tool for their JSON form.
func workTools(b *testing.B, p *bench.Plan) []*lang.ToolDecl {
	decls, diags := lang.ParseTools("tools.json", p.ToolsJSON())
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	return decls
}

// seedInput declares the input the JSON plans read (a bare array of calls
// has no input block).
func seedInput(b *testing.B) []lang.Item {
	f, diags := lang.Parse("input", []byte("input {\n  seed: int\n}\n"))
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	return f.Items
}

// BenchmarkCheck checks generated plans (parsing excluded).
func BenchmarkCheck(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			f, diags := lang.Parse("bench.plan", p.Text())
			if len(diags) > 0 {
				b.Fatal(diags)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, diags := Check(f, Config{}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
			perCall(b, p.Len())
		})
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

// BenchmarkCompile lowers checked plans to programs with their analysis.
func BenchmarkCompile(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			p := e.Plan()
			f, diags := lang.Parse("bench.plan", p.Text())
			if len(diags) > 0 {
				b.Fatal(diags)
			}
			info, cd := Check(f, Config{})
			if cd.HasErrors() {
				b.Fatal(cd)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(info, cd, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			perCall(b, p.Len())
		})
	}
}

// BenchmarkFrontEnd reads plans the way a run does: parse, check and
// compile, from .plan text (plan/…) and from the JSON form (json/…).
// plan/typical-30 is a plan of the size a model writes, which sits inside
// every repair round. Compare json/… with BenchmarkDecodeJSON.
func BenchmarkFrontEnd(b *testing.B) {
	frontEnd := func(b *testing.B, calls int, parse func() (*lang.File, lang.Diagnostics), cfg Config) {
		b.ReportAllocs()
		for b.Loop() {
			f, diags := parse()
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			info, cd := Check(f, cfg)
			if cd.HasErrors() {
				b.Fatal(cd)
			}
			if _, err := Compile(info, cd, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		if calls > 0 {
			perCall(b, calls)
		}
	}
	typical := bench.Typical(30)
	b.Run("plan/typical-30", func(b *testing.B) {
		frontEnd(b, 0, func() (*lang.File, lang.Diagnostics) { return lang.Parse("typical.plan", typical) }, Config{})
	})
	// The same plan with every condition different ("> 1", "> 2", …), so
	// that no expression has the shape of another and each is parsed
	// and checked.
	n := 0
	distinct := regexp.MustCompile(`\) > 0`).ReplaceAllFunc(typical, func([]byte) []byte {
		n++
		return fmt.Appendf(nil, ") > %d", n)
	})
	b.Run("plan/typical-30-distinct", func(b *testing.B) {
		frontEnd(b, 0, func() (*lang.File, lang.Diagnostics) { return lang.Parse("typical.plan", distinct) }, Config{})
	})
	input := seedInput(b)
	for _, e := range benchPlans() {
		b.Run("plan/"+e.Name, func(b *testing.B) {
			p := e.Plan()
			text := p.Text()
			frontEnd(b, p.Len(), func() (*lang.File, lang.Diagnostics) { return lang.Parse("bench.plan", text) }, Config{})
		})
		b.Run("json/"+e.Name, func(b *testing.B) {
			p := e.Plan()
			js := p.JSON()
			frontEnd(b, p.Len(), func() (*lang.File, lang.Diagnostics) {
				f, diags := lang.ParseJSON("bench.json", js)
				f.Items = append(f.Items, input...)
				return f, diags
			}, Config{Tools: workTools(b, p)})
		})
	}
}

// BenchmarkDecodeJSON decodes the JSON form with encoding/json into
// []map[string]any: the floor the JSON front end is measured against.
func BenchmarkDecodeJSON(b *testing.B) {
	for _, e := range benchPlans() {
		b.Run(e.Name, func(b *testing.B) {
			js := e.Plan().JSON()
			p := e.Plan()
			b.ReportAllocs()
			for b.Loop() {
				var calls []map[string]any
				if err := json.Unmarshal(js, &calls); err != nil {
					b.Fatal(err)
				}
			}
			perCall(b, p.Len())
		})
	}
}
