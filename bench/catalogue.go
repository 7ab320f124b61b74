package bench

import (
	"encoding/json"
	"fmt"
)

// Entry is a plan of the catalogue: its name, its group ("overhead": no-op
// calls; "latency": calls that sleep; "scale": no-op calls at 100k, which
// only the Go executors run) and how to build it.
type Entry struct {
	Name        string
	Group       string
	Description string
	Build       func() *Plan
}

// Plan builds the entry's plan under the entry's name.
func (e Entry) Plan() *Plan {
	p := e.Build()
	p.Name = e.Name
	return p
}

// Meta builds the entry's plan and describes it.
func (e Entry) Meta() Meta {
	m := e.Plan().Meta()
	m.Group, m.Description = e.Group, e.Description
	return m
}

// Catalogue lists the benchmark plans, in order. The overhead and latency
// groups are the peer harness's plans, with the same names, shapes and
// seeds; the scale group adds 100k-call plans.
func Catalogue() []Entry {
	var out []Entry
	for _, n := range []int{100, 1000, 10000} {
		out = append(out,
			Entry{fmt.Sprintf("chain-%d", n), "overhead", fmt.Sprintf("chain of %d, ms=0", n), func() *Plan { return Chain(n, 0) }},
			Entry{fmt.Sprintf("fanout-%d", n), "overhead", fmt.Sprintf("%d independent calls + 1 join, ms=0", n-1), func() *Plan { return FanOut(n, 0) }})
	}
	for _, wd := range [][2]int{{10, 10}, {25, 40}, {100, 100}} {
		w, d := wd[0], wd[1]
		out = append(out, Entry{fmt.Sprintf("layered-%dx%d", w, d), "overhead",
			fmt.Sprintf("random layered DAG %d wide x %d deep, 1-3 preds, ms=0", w, d),
			func() *Plan { return Layered(w, d, 0, LayeredSeed(w, d)) }})
	}
	out = append(out,
		Entry{"lat-chain-200-ms1", "latency", "chain of 200, ms=1", func() *Plan { return Chain(200, 1) }},
		Entry{"lat-fanout-200-ms20", "latency", "199 calls of 20 ms + 1 join of 20 ms", func() *Plan { return FanOut(200, 20) }},
		Entry{"lat-layered-10x20-ms10", "latency", "random layered DAG 10x20, every call 10 ms", func() *Plan { return Layered(10, 20, 10, 4242) }},
		Entry{"lat-skewed-10x20", "latency", "10 lanes x 20 levels, calls of 1 or 50 ms, sparse cross-lane reads, + join", func() *Plan { return Skewed(10, 20, 1, 50, 7) }},
		Entry{"chain-100000", "scale", "chain of 100000, ms=0", func() *Plan { return Chain(100000, 0) }},
		Entry{"fanout-100000", "scale", "99999 independent calls + 1 join, ms=0", func() *Plan { return FanOut(100000, 0) }},
		Entry{"layered-100x1000", "scale", "random layered DAG 100 wide x 1000 deep, 1-3 preds, ms=0",
			func() *Plan { return Layered(100, 1000, 0, LayeredSeed(100, 1000)) }},
	)
	return out
}

// Lookup returns the catalogue's entry of that name.
func Lookup(name string) (Entry, bool) {
	for _, e := range Catalogue() {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// LayeredSeed is the seed the catalogue gives a layered plan of that size.
func LayeredSeed(width, depth int) uint64 { return uint64(1000 + width*depth) }

// MetaJSON encodes a plan's description as the peer harness writes
// NAME.meta.json.
func (m Meta) MetaJSON() []byte {
	b, _ := json.MarshalIndent(m, "", " ")
	return append(b, '\n')
}

// Shapes returns a chain, a fan-out and a random layered DAG (100 wide, or
// a tenth of n when that is less) of n no-op calls for each n, built only
// when asked for, so that a benchmark filtered down to one of them does
// not build the others.
func Shapes(ns ...int) []Entry {
	var out []Entry
	for _, n := range ns {
		w := min(100, max(1, n/10))
		out = append(out,
			Entry{fmt.Sprintf("chain-%d", n), "overhead", "", func() *Plan { return Chain(n, 0) }},
			Entry{fmt.Sprintf("fanout-%d", n), "overhead", "", func() *Plan { return FanOut(n, 0) }},
			Entry{fmt.Sprintf("layered-%dx%d", w, n/w), "overhead", "", func() *Plan { return Layered(w, n/w, 0, LayeredSeed(w, n/w)) }})
	}
	return out
}
