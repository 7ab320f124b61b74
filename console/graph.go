package console

import (
	"fmt"
	"sort"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
)

// The graph's geometry, in SVG user units.
const (
	nodeW, nodeH = 172, 60
	colW, rowH   = 216, 76
	margin       = 14
	// maxDrawn is the most steps drawn; a larger plan is listed only.
	maxDrawn = 400
)

// graphView is a plan's graph, laid out: its steps in columns by level
// (the steps a step waits for are to its left), in order within a column
// to keep edges short.
type graphView struct {
	Width, Height int
	Nodes         []*nodeView
	Edges         []edgeView
	// Steps counts the plan's steps; Drawn is false when there are too
	// many to draw.
	Steps int
	Drawn bool
}

// nodeView is a step in the graph.
type nodeView struct {
	X, Y   int
	Index  int
	ID     string
	Label  string
	Tool   string
	Status string
	// Note says more: the elements of a for each that returned, an
	// approval gate.
	Note     string
	Critical bool
	Gate     bool
	// Anchor is the ID of the step's row on the page.
	Anchor                 string
	TextX                  int
	TextY1, TextY2, TextY3 int
}

// edgeView is a dependency: a path from the step waited for to the step
// that waits.
type edgeView struct {
	Path     string
	Kind     string
	Critical bool
}

// stepState is what the graph shows of a step as a run has it.
type stepState struct {
	Status string
	Note   string
}

// layout lays out a program's graph, each step in the state states gives
// it (by index; "pending" when absent), with the steps of path marked as
// the critical path.
func layout(prog *compiler.Program, states func(i int) stepState, path []int32, anchor func(i int) string) *graphView {
	n := len(prog.Steps)
	g := &graphView{Steps: n, Drawn: n > 0 && n <= maxDrawn}
	if !g.Drawn {
		return g
	}
	a := prog.Analysis
	crit := map[int32]bool{}
	critEdge := map[[2]int32]bool{}
	for k, i := range path {
		crit[i] = true
		if k > 0 {
			critEdge[[2]int32{path[k-1], i}] = true
		}
	}
	// Rows: each level in order of the mean row of the steps its steps
	// wait for (the barycenter), which keeps most edges short and few
	// crossing.
	row := make([]float64, n)
	pos := make([]int, n)
	maxRows := 0
	for _, level := range a.Levels {
		order := append([]int32(nil), level...)
		bary := make(map[int32]float64, len(order))
		for _, i := range order {
			if len(prog.Pred[i]) == 0 {
				bary[i] = float64(i) / float64(n) // keep the plan's order
				continue
			}
			sum := 0.0
			for _, p := range prog.Pred[i] {
				sum += row[p]
			}
			bary[i] = sum / float64(len(prog.Pred[i]))
		}
		sort.SliceStable(order, func(x, y int) bool { return bary[order[x]] < bary[order[y]] })
		for r, i := range order {
			row[i], pos[i] = float64(r), r
		}
		maxRows = max(maxRows, len(order))
	}
	levels := len(a.Levels)
	g.Width = 2*margin + (levels-1)*colW + nodeW
	g.Height = 2*margin + (maxRows-1)*rowH + nodeH
	x := func(i int) int { return margin + int(a.Level[i])*colW }
	y := func(i int) int { return margin + pos[i]*rowH }
	for i, s := range prog.Steps {
		st := states(i)
		if st.Status == "" {
			st.Status = "pending"
		}
		tool := cut(s.ToolName(), 23)
		if s.Approve {
			tool = cut(s.ToolName(), 13) // and " · approve"
		}
		nv := &nodeView{X: x(i), Y: y(i), Index: i, ID: s.ID, Label: cut(s.ID, 21), Tool: tool,
			Status: statusClass(st.Status), Note: st.Note, Critical: crit[int32(i)], Gate: s.Approve, Anchor: anchor(i)}
		nv.TextX, nv.TextY1, nv.TextY2, nv.TextY3 = nv.X+12, nv.Y+19, nv.Y+35, nv.Y+51
		g.Nodes = append(g.Nodes, nv)
	}
	for i, s := range prog.Steps {
		seen := map[int]bool{}
		for _, d := range s.Deps {
			if seen[d.Step] {
				continue
			}
			seen[d.Step] = true
			x1, y1 := x(d.Step)+nodeW, y(d.Step)+nodeH/2
			x2, y2 := x(i)-4, y(i)+nodeH/2
			dx := (x2 - x1) / 2
			g.Edges = append(g.Edges, edgeView{
				Path:     fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+dx, y1, x2-dx, y2, x2, y2),
				Kind:     d.Kind.String(),
				Critical: critEdge[[2]int32{int32(d.Step), int32(i)}],
			})
		}
	}
	return g
}

// cut shortens a label to n characters, with "…" where it was cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// pathView is a critical path: its steps and how long it takes.
type pathView struct {
	Steps []string
	Total time.Duration
	// Observed is set for the path the run took (by the times its steps
	// finished), unset for the estimate by the declared latencies.
	Observed bool
}

// estimatedPath is the program's critical path by its declared (or
// estimated) latencies.
func estimatedPath(prog *compiler.Program) pathView {
	p := pathView{Total: prog.Analysis.CriticalLatency}
	for _, i := range prog.Analysis.CriticalPath {
		p.Steps = append(p.Steps, prog.Steps[i].ID)
	}
	return p
}

// observedPath is the path a run took: from the step that finished last,
// back through the step each waited for that finished last. finish gives
// when a step finished (relative to the run's start), ok false when it
// did not. The indexes of the path's steps are returned too.
func observedPath(prog *compiler.Program, finish func(i int) (time.Duration, bool)) (pathView, []int32) {
	last, lastAt := -1, time.Duration(-1)
	for i := range prog.Steps {
		if at, ok := finish(i); ok && at > lastAt {
			last, lastAt = i, at
		}
	}
	if last < 0 {
		return pathView{}, nil
	}
	var idx []int32
	for v := last; v >= 0; {
		idx = append(idx, int32(v))
		next, nextAt := -1, time.Duration(-1)
		for _, u := range prog.Pred[v] {
			if at, ok := finish(int(u)); ok && at > nextAt {
				next, nextAt = int(u), at
			}
		}
		v = next
	}
	for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
		idx[i], idx[j] = idx[j], idx[i]
	}
	p := pathView{Total: lastAt, Observed: true}
	for _, i := range idx {
		p.Steps = append(p.Steps, prog.Steps[i].ID)
	}
	return p, idx
}
