package compiler

import (
	"math"
	"time"
)

// Analysis is what is known of a program before it runs: its parallel
// structure, its critical path and estimates of its cost.
type Analysis struct {
	// Level is each step's as-soon-as-possible level: 0 for steps that
	// wait for nothing, else one more than the highest level it waits for.
	// Levels lists the steps of each level: steps that can run together.
	Level  []int32
	Levels [][]int32
	// Latency is each step's expected duration: its tool's declared
	// latency, or an estimate (Estimated is then set). A for each counts
	// as many rounds as its elements need at the assumed parallelism; a
	// sub-plan takes its own critical path.
	Latency   []time.Duration
	Estimated []bool
	// CallLatency is the expected duration of one tool call of each step
	// (of one element of a for each).
	CallLatency []time.Duration
	// CriticalPath is the heaviest path by latency and CriticalLatency
	// its length: the makespan of ideal dataflow execution.
	CriticalPath    []int32
	CriticalLatency time.Duration
	// SequentialLatency is the sum of all latencies: the makespan of
	// running the calls one after another, as a ReAct-style loop does.
	SequentialLatency time.Duration
	// LevelLatency is the makespan of level-by-level execution: the sum
	// over levels of the slowest step of each.
	LevelLatency time.Duration
	// Depth is the number of steps on the longest path; Width the size of
	// the largest level.
	Depth, Width int
	// Calls and ModelCalls count the tool calls and language-model calls
	// of the whole plan, along the longest path, and along an average
	// source-to-sink path.
	Calls, ModelCalls             PathCount
	Tokens, CriticalTokens        int
	SpeedUp                       float64
	Subgraphs                     []Subgraph
	stepCalls, stepModel, stepTok []float64
}

// PathCount is a count over the whole plan, the longest path and an
// average path.
type PathCount struct {
	Total   float64
	Longest float64
	Average float64
}

// Subgraph is a chain of steps that run one after another with nothing
// joining or forking in between: a unit to dispatch as a whole (the
// SubGraphs of seed 002's optimizer). Deps lists the subgraphs it waits
// for.
type Subgraph struct {
	Steps []int32
	Deps  []int
}

func analyze(p *Program, opts Options) *Analysis {
	n := len(p.Steps)
	a := &Analysis{
		Level:       make([]int32, n),
		Latency:     make([]time.Duration, n),
		Estimated:   make([]bool, n),
		CallLatency: make([]time.Duration, n),
		stepCalls:   make([]float64, n),
		stepModel:   make([]float64, n),
		stepTok:     make([]float64, n),
	}
	for i, s := range p.Steps {
		a.Latency[i], a.CallLatency[i], a.Estimated[i] = stepLatency(p, s, opts)
		calls, model, tok := stepCost(p, s)
		a.stepCalls[i], a.stepModel[i], a.stepTok[i] = calls, model, tok
		a.SequentialLatency += a.Latency[i]
		a.Calls.Total += calls
		a.ModelCalls.Total += model
		a.Tokens += int(tok)
	}
	// One pass in topological order gives levels, the critical path and
	// the longest path by count.
	finish := make([]time.Duration, n)
	via := make([]int32, n)
	count := make([]int32, n)
	for _, v := range p.Order {
		via[v] = -1
		var start time.Duration
		for _, u := range p.Pred[v] {
			a.Level[v] = max(a.Level[v], a.Level[u]+1)
			if finish[u] > start || via[v] < 0 {
				start, via[v] = finish[u], u
			}
			count[v] = max(count[v], count[u])
		}
		finish[v] = start + a.Latency[v]
		count[v]++
		a.Depth = max(a.Depth, int(count[v]))
	}
	last := int32(-1)
	for i := range n {
		if last < 0 || finish[i] > finish[last] {
			last = int32(i)
		}
	}
	for v := last; v >= 0; v = via[v] {
		a.CriticalPath = append(a.CriticalPath, v)
		a.CriticalLatency += a.Latency[v]
		a.CriticalTokens += int(a.stepTok[v])
		a.Calls.Longest += a.stepCalls[v]
		a.ModelCalls.Longest += a.stepModel[v]
	}
	for i, j := 0, len(a.CriticalPath)-1; i < j; i, j = i+1, j-1 {
		a.CriticalPath[i], a.CriticalPath[j] = a.CriticalPath[j], a.CriticalPath[i]
	}
	// Levels, in one piece, and their makespan.
	var width []int32
	for i := range n {
		l := int(a.Level[i])
		for len(width) <= l {
			width = append(width, 0)
		}
		width[l]++
	}
	a.Levels = make([][]int32, len(width))
	levels := make([]int32, n)
	for l, w := range width {
		a.Levels[l] = take(&levels, int(w))[:0]
	}
	for i := range n {
		l := a.Level[i]
		a.Levels[l] = append(a.Levels[l], int32(i))
	}
	for _, lv := range a.Levels {
		var slowest time.Duration
		for _, i := range lv {
			slowest = max(slowest, a.Latency[i])
		}
		a.LevelLatency += slowest
		a.Width = max(a.Width, len(lv))
	}
	if a.CriticalLatency > 0 {
		a.SpeedUp = float64(a.SequentialLatency) / float64(a.CriticalLatency)
	} else if n > 0 {
		a.SpeedUp = 1
	}
	a.Calls.Average, a.ModelCalls.Average = averagePath(p, a)
	a.Subgraphs = chains(p)
	return a
}

// stepLatency is the expected duration of a step and of one of its calls.
func stepLatency(p *Program, s *Step, opts Options) (step, call time.Duration, estimated bool) {
	if s.Result != nil {
		return 0, 0, false
	}
	if s.Task != nil {
		// The model's choice, then the slowest candidate.
		per := opts.DefaultModelLatency
		var slowest time.Duration
		for _, t := range s.Task.Candidates {
			d, _ := toolLatency(p, t, opts)
			slowest = max(slowest, d)
		}
		return per + slowest, per + slowest, true
	}
	if s.Tool == nil {
		return 0, 0, false
	}
	per, estimated := toolLatency(p, s.Tool, opts)
	if n := len(s.Holes()); n > 0 {
		// Each hole is filled by a model before the call.
		per += time.Duration(n) * opts.DefaultModelLatency
		estimated = true
	}
	if s.Each != nil {
		rounds := (eachCount(s) + opts.MaxParallel - 1) / opts.MaxParallel
		return per * time.Duration(max(rounds, 1)), per, estimated
	}
	return per, per, estimated
}

// toolLatency is the expected duration of one call of a tool or sub-plan.
func toolLatency(p *Program, t *Tool, opts Options) (per time.Duration, estimated bool) {
	switch {
	case t.Plan != nil:
		if sub := p.Sub[t.Name]; sub != nil {
			return sub.Analysis.CriticalLatency, anyEstimated(sub.Analysis.Estimated)
		}
		return 0, false
	case t.Latency > 0:
		return t.Latency, false
	case t.Model:
		return opts.DefaultModelLatency, true
	}
	return opts.DefaultLatency, true
}

func anyEstimated(es []bool) bool {
	for _, e := range es {
		if e {
			return true
		}
	}
	return false
}

// eachCount is the number of elements a for each is expected to have.
func eachCount(s *Step) int { return s.Each.Count() }

// Count is the number of elements a for each is expected to have, each a
// call: the length of its list when it is known before the run (a
// constant list, a list written element by element, lists.range(N)), at
// most its max; else its max.
func (e *Each) Count() int {
	if n, ok := knownLength(e.List); ok {
		return min(n, e.Max)
	}
	return e.Max
}

// stepCost counts a step's tool calls, model calls and tokens.
func stepCost(p *Program, s *Step) (calls, model, tokens float64) {
	if s.Result != nil {
		return 0, 0, 0
	}
	if s.Task != nil {
		// The model's choice, and one call of the candidate it chooses.
		return 1, 1, 0
	}
	if s.Tool == nil {
		return 0, 0, 0
	}
	model = float64(len(s.Holes()))
	times := 1.0
	if s.Each != nil {
		times = float64(eachCount(s))
	}
	if s.Tool.Plan != nil {
		if sub := p.Sub[s.Tool.Name]; sub != nil {
			sa := sub.Analysis
			return times * sa.Calls.Total, times * sa.ModelCalls.Total, times * float64(sa.Tokens)
		}
		return 0, 0, 0
	}
	calls = times
	model *= times
	if s.Tool.Model {
		model += times
	}
	return calls, model, times * float64(s.Tool.Tokens)
}

// averagePath returns the tool and model calls of an average path from a
// step that waits for nothing to one nothing waits for, every such path
// counted once. Path counts grow exponentially, so they are kept as
// logarithms.
func averagePath(p *Program, a *Analysis) (calls, model float64) {
	n := len(p.Steps)
	if n == 0 {
		return 0, 0
	}
	logPaths := make([]float64, n)
	avgCalls := make([]float64, n)
	avgModel := make([]float64, n)
	for _, v := range p.Order {
		switch len(p.Pred[v]) {
		case 0:
			logPaths[v] = 0
		case 1: // what the sums below give for one predecessor, exactly
			u := p.Pred[v][0]
			logPaths[v] = logPaths[u]
			avgCalls[v], avgModel[v] = avgCalls[u], avgModel[u]
		default:
			m := math.Inf(-1)
			for _, u := range p.Pred[v] {
				m = max(m, logPaths[u])
			}
			sum := 0.0
			for _, u := range p.Pred[v] {
				sum += math.Exp(logPaths[u] - m)
			}
			logPaths[v] = m + math.Log(sum)
			for _, u := range p.Pred[v] {
				w := math.Exp(logPaths[u] - logPaths[v])
				avgCalls[v] += w * avgCalls[u]
				avgModel[v] += w * avgModel[u]
			}
		}
		avgCalls[v] += a.stepCalls[v]
		avgModel[v] += a.stepModel[v]
	}
	m := math.Inf(-1)
	for v := range n {
		if len(p.Succ[v]) == 0 {
			m = max(m, logPaths[v])
		}
	}
	total := 0.0
	for v := range n {
		if len(p.Succ[v]) == 0 {
			w := math.Exp(logPaths[v] - m)
			total += w
			calls += w * avgCalls[v]
			model += w * avgModel[v]
		}
	}
	return calls / total, model / total
}

// chains groups the steps into subgraphs: a step joins its predecessor's
// chain when it is that predecessor's only successor and has no other
// predecessor.
func chains(p *Program) []Subgraph {
	n := len(p.Steps)
	// First which chain each step joins, and how long each chain is.
	of := make([]int32, n)
	var size []int32
	heads := 0
	for _, v := range p.Order {
		if len(p.Pred[v]) == 1 && len(p.Succ[p.Pred[v][0]]) == 1 {
			c := of[p.Pred[v][0]]
			of[v] = c
			size[c]++
			continue
		}
		of[v] = int32(len(size))
		size = append(size, 1)
		heads += len(p.Pred[v])
	}
	// Then the chains, their steps in one piece and the chains they wait
	// for in another.
	out := make([]Subgraph, len(size))
	steps := make([]int32, n)
	for c, k := range size {
		out[c].Steps = take(&steps, int(k))[:0]
	}
	deps := make([]int, 0, heads)
	seen := make([]int32, len(size)) // 1 + the chain that last saw it
	for _, v := range p.Order {
		c := of[v]
		if len(out[c].Steps) == 0 {
			start := len(deps)
			for _, u := range p.Pred[v] {
				if d := of[u]; seen[d] != c+1 {
					seen[d] = c + 1
					deps = append(deps, int(d))
				}
			}
			if len(deps) > start {
				out[c].Deps = deps[start:len(deps):len(deps)]
			}
		}
		out[c].Steps = append(out[c].Steps, v)
	}
	return out
}
