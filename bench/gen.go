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
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plan is a generated plan: for each call, the calls it reads and its
// simulated latency.
type Plan struct {
	Name  string
	Preds [][]int // Preds[i] lists the calls call i reads, all < i, ascending
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
// call of a layer after the first reading 1 to 3 distinct calls of the
// layer before. It draws from the seed as the peer harness's generator
// does (Python's random.Random), so the same seed gives the same plan in
// both.
func Layered(width, depth, ms int, seed uint64) *Plan {
	p := &Plan{Name: fmt.Sprintf("layered-%dx%d", width, depth)}
	rng := newPyRandom(seed)
	for d := range depth {
		for range width {
			if d == 0 {
				p.add(nil, ms)
				continue
			}
			k := rng.randint(1, min(3, width))
			preds := rng.sample(width, k)
			for j := range preds {
				preds[j] += (d - 1) * width
			}
			slices.Sort(preds)
			p.add(preds, ms)
		}
	}
	return p
}

// Skewed is lanes parallel lanes of levels calls. Each call reads the call
// before it in its lane and, with probability 0.15, the call of one other
// lane at the previous level; it takes slowMs with probability 0.2 (at
// least one per level) and fastMs otherwise. A final call of fastMs joins
// the lanes. A level-by-level executor waits for the slowest call of every
// level; a dataflow executor only for the slow calls on the critical path.
// It draws from the seed as the peer harness's generator does.
func Skewed(lanes, levels, fastMs, slowMs int, seed uint64) *Plan {
	p := &Plan{Name: fmt.Sprintf("skewed-%dx%d", lanes, levels)}
	rng := newPyRandom(seed)
	for l := range levels {
		levelMs := make([]int, lanes)
		hasSlow := false
		for lane := range levelMs {
			levelMs[lane] = fastMs
			if rng.random() < 0.2 {
				levelMs[lane], hasSlow = slowMs, true
			}
		}
		if !hasSlow {
			levelMs[rng.below(lanes)] = slowMs
		}
		for lane := range lanes {
			if l == 0 {
				p.add(nil, levelMs[lane])
				continue
			}
			preds := []int{(l-1)*lanes + lane}
			if lanes > 1 && rng.random() < 0.15 {
				other := rng.below(lanes - 1) // a lane other than this one
				if other >= lane {
					other++
				}
				preds = append(preds, (l-1)*lanes+other)
				slices.Sort(preds)
			}
			p.add(preds, levelMs[lane])
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

// Meta describes a plan's shape, with the fields and the meaning of the
// peer harness's NAME.meta.json.
type Meta struct {
	Plan        string `json:"plan"`
	Group       string `json:"group"`
	Description string `json:"description"`
	Nodes       int    `json:"nodes"`
	Edges       int    `json:"edges"`
	// Depth is the number of calls on the longest path.
	Depth       int `json:"depth"`
	Levels      int `json:"levels"`
	MaxIndegree int `json:"max_indegree"`
	// CriticalPathMs is the makespan of ideal dataflow execution: the sum
	// of latencies along the heaviest path.
	CriticalPathMs int `json:"critical_path_ms"`
	// SuperstepMs is the makespan of ideal level-by-level execution: the
	// sum over the as-soon-as-possible levels of each level's slowest call.
	SuperstepMs int `json:"superstep_ms"`
	TotalWorkMs int `json:"total_work_ms"`
}

// Meta measures the plan.
func (p *Plan) Meta() Meta {
	n := p.Len()
	m := Meta{Plan: p.Name, Nodes: n}
	finish := make([]int, n)
	level := make([]int, n)
	hops := make([]int, n)
	for i, ps := range p.Preds {
		start, lv, hp := 0, 0, 0
		for _, q := range ps {
			start = max(start, finish[q])
			lv = max(lv, level[q]+1)
			hp = max(hp, hops[q])
		}
		finish[i], level[i], hops[i] = start+p.Ms[i], lv, hp+1
		m.Edges += len(ps)
		m.MaxIndegree = max(m.MaxIndegree, len(ps))
		m.CriticalPathMs = max(m.CriticalPathMs, finish[i])
		m.Depth = max(m.Depth, hops[i])
		m.Levels = max(m.Levels, lv+1)
		m.TotalWorkMs += p.Ms[i]
	}
	slowest := make([]int, m.Levels)
	for i := range n {
		slowest[level[i]] = max(slowest[level[i]], p.Ms[i])
	}
	for _, ms := range slowest {
		m.SuperstepMs += ms
	}
	return m
}

// CriticalPathMs is the sum of latencies along the heaviest path: the
// makespan of ideal dataflow execution.
func (p *Plan) CriticalPathMs() int { return p.Meta().CriticalPathMs }

// LevelMs is the makespan of level-by-level execution: the sum over the
// as-soon-as-possible levels of the slowest call of each level.
func (p *Plan) LevelMs() int { return p.Meta().SuperstepMs }

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

// JSON returns the plan as the bare JSON array of calls of seed 003, byte
// for byte as the peer harness's generator writes it: one line, no spaces.
func (p *Plan) JSON() []byte {
	b := make([]byte, 0, p.Len()*80)
	b = append(b, '[')
	for i, ps := range p.Preds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"_tool":"work","ms":`...)
		b = strconv.AppendInt(b, int64(p.Ms[i]), 10)
		if len(ps) == 0 {
			b = append(b, `,"in0":"†input.seed"`...)
		}
		for k, q := range ps {
			b = append(b, `,"in`...)
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, `":"†state.s`...)
			b = strconv.AppendInt(b, int64(q), 10)
			b = append(b, '"')
		}
		b = append(b, `,"_outputPath":"†state.s`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `"}`...)
	}
	return append(b, "]\n"...)
}

// ToolsJSON returns an MCP tools file declaring "work" with enough inputs
// for the plan.
func (p *Plan) ToolsJSON() []byte { return WorkToolsJSON(p.MaxInputs()) }

// WorkToolsJSON returns an MCP tools file declaring "work" with inputs
// in0 … in<inputs-1> of any type and an integer ms.
func WorkToolsJSON(inputs int) []byte {
	props := map[string]any{"ms": map[string]any{"type": "integer"}}
	for k := range max(1, inputs) {
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

// Work is the "work" tool of the generated plans: it sleeps for its "ms"
// argument, then returns 1 + the largest of its integer inputs, so that
// the sinks of a plan hold its depth when the data really flowed. Inputs
// are int64 (Obelisk's JSON shape) or float64 (encoding/json's).
func Work(ctx context.Context, args map[string]any) (any, error) {
	best := int64(0)
	for k, v := range args {
		switch n := v.(type) {
		case int64:
			if k == "ms" {
				if err := sleep(ctx, time.Duration(n)*time.Millisecond); err != nil {
					return nil, err
				}
				continue
			}
			best = max(best, n)
		case float64:
			if k == "ms" {
				if err := sleep(ctx, time.Duration(n)*time.Millisecond); err != nil {
					return nil, err
				}
				continue
			}
			best = max(best, int64(n))
		}
	}
	return best + 1, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
