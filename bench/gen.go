// Package bench generates plans for benchmarks: chains, fan-outs, random
// layered DAGs and skewed DAGs whose steps have different latencies. Each
// plan can be written as .plan text, as the bare JSON array of calls of
// seed 003 (the format the peer harness reads), and as a tools file
// declaring the one tool they call.
//
// Every call invokes the tool "work": it reads its predecessors' slots as
// arguments in0, in1, … (a root reads †input.seed as in0), sleeps ms
// milliseconds, and writes slot s<i>.
package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Plan is a generated plan: for each call, the calls it reads and its
// simulated latency.
type Plan struct {
	Name  string
	Preds [][]int // Preds[i] lists the calls call i reads, all < i
	Ms    []int   // simulated latency of each call, in milliseconds
}

// Chain is n calls, each reading the one before.
func Chain(n, ms int) *Plan {
	p := &Plan{Name: fmt.Sprintf("chain-%d", n)}
	for i := range n {
		if i == 0 {
			p.add(nil, ms)
		} else {
			p.add([]int{i - 1}, ms)
		}
	}
	return p
}

// FanOut is n-1 independent calls and one call that reads them all.
func FanOut(n, ms int) *Plan {
	p := &Plan{Name: fmt.Sprintf("fanout-%d", n)}
	all := make([]int, 0, n-1)
	for i := range n - 1 {
		p.add(nil, ms)
		all = append(all, i)
	}
	p.add(all, ms)
	return p
}

// Layered is a random layered DAG of depth layers of width calls, each
// call of a layer reading 1 to 3 calls of the layer before. The same seed
// gives the same plan.
func Layered(width, depth, ms int, seed uint64) *Plan {
	p := &Plan{Name: fmt.Sprintf("layered-%dx%d", width, depth)}
	rng := rand.New(rand.NewPCG(seed, 0))
	for d := range depth {
		for range width {
			if d == 0 {
				p.add(nil, ms)
				continue
			}
			k := 1 + rng.IntN(min(3, width))
			perm := rng.Perm(width)[:k]
			preds := make([]int, k)
			for j, w := range perm {
				preds[j] = (d-1)*width + w
			}
			p.add(preds, ms)
		}
	}
	return p
}

// Skewed is lanes parallel lanes of levels calls. Each call reads the call
// before it in its lane and, with probability 0.15, one call of another lane
// at the previous level; it takes slowMs with probability 0.2 (at least one
// per level) and fastMs otherwise. A final call joins the lanes. A
// level-by-level executor waits for the slowest call of every level; a
// dataflow executor only for the slow calls on the critical path.
func Skewed(lanes, levels, fastMs, slowMs int, seed uint64) *Plan {
	p := &Plan{Name: fmt.Sprintf("skewed-%dx%d", lanes, levels)}
	rng := rand.New(rand.NewPCG(seed, 1))
	for l := range levels {
		slowAt := rng.IntN(lanes)
		for lane := range lanes {
			ms := fastMs
			if lane == slowAt || rng.Float64() < 0.2 {
				ms = slowMs
			}
			if l == 0 {
				p.add(nil, ms)
				continue
			}
			preds := []int{(l-1)*lanes + lane}
			if rng.Float64() < 0.15 {
				other := rng.IntN(lanes)
				if other != lane {
					preds = append(preds, (l-1)*lanes+other)
				}
			}
			p.add(preds, ms)
		}
	}
	last := make([]int, lanes)
	for lane := range lanes {
		last[lane] = (levels-1)*lanes + lane
	}
	p.add(last, fastMs)
	return p
}

func (p *Plan) add(preds []int, ms int) {
	p.Preds = append(p.Preds, preds)
	p.Ms = append(p.Ms, ms)
}

// Len is the number of calls.
func (p *Plan) Len() int { return len(p.Preds) }

// MaxInputs is the largest number of slots one call reads (at least 1).
func (p *Plan) MaxInputs() int {
	m := 1
	for _, ps := range p.Preds {
		m = max(m, len(ps))
	}
	return m
}

// CriticalPathMs is the sum of latencies along the heaviest path: the
// makespan of ideal dataflow execution.
func (p *Plan) CriticalPathMs() int {
	finish := make([]int, p.Len())
	best := 0
	for i, ps := range p.Preds {
		start := 0
		for _, q := range ps {
			start = max(start, finish[q])
		}
		finish[i] = start + p.Ms[i]
		best = max(best, finish[i])
	}
	return best
}

// LevelMs is the makespan of level-by-level execution: the sum over the
// as-soon-as-possible levels of the slowest call of each level.
func (p *Plan) LevelMs() int {
	level := make([]int, p.Len())
	slowest := map[int]int{}
	top := 0
	for i, ps := range p.Preds {
		for _, q := range ps {
			level[i] = max(level[i], level[q]+1)
		}
		slowest[level[i]] = max(slowest[level[i]], p.Ms[i])
		top = max(top, level[i])
	}
	total := 0
	for l := 0; l <= top; l++ {
		total += slowest[l]
	}
	return total
}

// Text returns the plan as .plan text, declaring the tool "work".
func (p *Plan) Text() []byte {
	var b strings.Builder
	b.Grow(p.Len() * 64)
	b.WriteString("tool work(")
	for k := range p.MaxInputs() {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "in%d?: any", k)
	}
	b.WriteString(", ms?: int) -> int pure\n\ninput {\n  seed: int\n}\n\n")
	for i, ps := range p.Preds {
		b.WriteString("work(")
		if len(ps) == 0 {
			b.WriteString("in0: †input.seed")
		}
		for k, q := range ps {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString("in")
			b.WriteString(strconv.Itoa(k))
			b.WriteString(": †state.s")
			b.WriteString(strconv.Itoa(q))
		}
		b.WriteString(", ms: ")
		b.WriteString(strconv.Itoa(p.Ms[i]))
		b.WriteString(") -> †state.s")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// JSON returns the plan as the bare JSON array of calls of seed 003, in the
// format of the peer benchmark harness.
func (p *Plan) JSON() []byte {
	var b strings.Builder
	b.Grow(p.Len() * 80)
	b.WriteString("[\n")
	for i, ps := range p.Preds {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`{"_tool": "work", "ms": `)
		b.WriteString(strconv.Itoa(p.Ms[i]))
		if len(ps) == 0 {
			b.WriteString(`, "in0": "†input.seed"`)
		}
		for k, q := range ps {
			fmt.Fprintf(&b, `, "in%d": "†state.s%d"`, k, q)
		}
		fmt.Fprintf(&b, `, "_outputPath": "†state.s%d"}`, i)
	}
	b.WriteString("\n]\n")
	return []byte(b.String())
}

// ToolsJSON returns an MCP tools file declaring "work" with enough inputs
// for the plan.
func (p *Plan) ToolsJSON() []byte {
	props := map[string]any{"ms": map[string]any{"type": "integer"}}
	for k := range p.MaxInputs() {
		props["in"+strconv.Itoa(k)] = map[string]any{}
	}
	tools := map[string]any{"tools": []any{map[string]any{
		"name":         "work",
		"description":  "Waits ms milliseconds and returns 1 + the largest of its integer inputs.",
		"inputSchema":  map[string]any{"type": "object", "properties": props},
		"outputSchema": map[string]any{"type": "integer"},
		"annotations":  map[string]any{"readOnlyHint": true},
	}}}
	b, _ := json.MarshalIndent(tools, "", "  ")
	return append(b, '\n')
}

// Typical returns a plan of about n calls shaped like one a model writes:
// a few fetches, transformations that read them, and a join, with CEL
// conditions and error slots here and there.
func Typical(n int) []byte {
	var b strings.Builder
	b.WriteString(`mode lazy

input {
  query: string
  limit: int = 5
}

tool search(query: string, limit?: int) -> {hits: [{title: string, url: string, score: number}]} pure latency 300ms
tool fetch(url: string) -> {status: int, body: string} idempotent latency 500ms
tool summarize(text: string, maxWords?: int) -> string model tokens 600 latency 2s
tool report(parts: [string], title: string) -> {id: string} irreversible

`)
	for i := 0; i < n-1; i += 3 {
		fmt.Fprintf(&b, "s%d: search(query: †input.query, limit: †input.limit) -> †state.hits%d\n", i, i)
		fmt.Fprintf(&b, "f%d: fetch(url: †state.hits%d.hits[0].url) -> †state.page%d || †state.err%d\n", i, i, i, i)
		fmt.Fprintf(&b, "  retry 2 backoff 200ms\n  when size(†state.hits%d.hits) > 0\n", i)
		fmt.Fprintf(&b, "m%d: summarize(text: †state.page%d.body, maxWords: 120) -> †state.sum%d\n  expect size(†state.sum%d) > 0\n", i, i, i, i)
	}
	b.WriteString("report(parts: [")
	for i := 0; i < n-1; i += 3 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "†state.sum%d", i)
	}
	b.WriteString("], title: \"Findings\") -> †state.report\n  approve \"Publish the report?\"\n\noutput {\n  id: †state.report.id\n}\n")
	return []byte(b.String())
}
