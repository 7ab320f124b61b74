package vm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// replanChange is what a replan changes: the diff of the new plan's steps
// against the steps of the old plan that had not completed, and the IDs
// of the new plan's new or changed steps.
type replanChange struct {
	diff string
	ids  []string
}

// replan asks the replanner for the remaining work and builds the program
// that continues the run: the original declarations, the state written so
// far as initial values, and the new steps.
func (r *runner) replan(ctx context.Context, e *engine, attempt int) (*compiler.Program, *replanChange, error) {
	req := &ReplanRequest{
		Attempt: attempt,
		Failed:  e.replanAt,
		Reason:  e.stop.Error(),
		State:   e.state(),
		Program: e.prog,
	}
	for _, s := range e.res {
		if s.Status == StatusCompleted {
			req.Completed = append(req.Completed, s)
		}
	}
	f, err := r.opts.Replanner.Replan(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("the replanner failed: %w", err)
	}
	if f == nil {
		return nil, nil, errors.New("the replanner returned no plan")
	}
	prog, err := Continuation(e.prog, f, req.State, r.opts.Check)
	if err != nil {
		return nil, nil, err
	}
	var old []*compiler.Step
	for i, s := range e.prog.Steps {
		if e.res[i].Status != StatusCompleted {
			old = append(old, s)
		}
	}
	ch := &replanChange{}
	ch.diff, ch.ids = StepDiff(old, prog.Steps, fmt.Sprintf("the plan before replan %d", attempt), fmt.Sprintf("the plan of replan %d", attempt))
	r.event(Event{Type: Replanned, Message: fmt.Sprintf("attempt %d: %d new steps, %d new or changed", attempt, len(prog.Steps), len(ch.ids)), Reason: req.Reason, Diff: ch.diff})
	return prog, ch, nil
}

// StepDiff shows the steps of a new plan against those of an old one, a
// step as a unit: lines of a step kept as it was start with two spaces,
// of a removed step with "- ", of a new or changed step with "+ ". It
// returns the diff, headed by the names of the two plans, and the IDs of
// the new plan's new or changed steps.
func StepDiff(old, next []*compiler.Step, oldName, nextName string) (string, []string) {
	a := make([]string, len(old))
	for i, s := range old {
		a[i] = lang.FormatItem(s.Node)
	}
	b := make([]string, len(next))
	for i, s := range next {
		b[i] = lang.FormatItem(s.Node)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, nextName)
	var changed []string
	put := func(prefix, text string) {
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			out.WriteString(strings.TrimRight(prefix+line, " ") + "\n")
		}
	}
	for _, op := range diffOps(a, b) {
		switch op.kind {
		case ' ':
			put("  ", b[op.j])
		case '-':
			put("- ", a[op.i])
		case '+':
			put("+ ", b[op.j])
			changed = append(changed, next[op.j].ID)
		}
	}
	return out.String(), changed
}

type diffOp struct {
	kind byte // ' ' kept, '-' removed, '+' added
	i, j int
}

// diffOps aligns two sequences on a longest common subsequence. Past
// maxDiffCells cells of the table, it keeps only the elements of b equal
// to one of a, in order, which is cheap and still correct.
func diffOps(a, b []string) []diffOp {
	const maxDiffCells = 4 << 20
	n, m := len(a), len(b)
	var ops []diffOp
	if n*m > maxDiffCells {
		avail := map[string]int{}
		for _, s := range a {
			avail[s]++
		}
		for j, s := range b {
			if avail[s] > 0 {
				avail[s]--
				ops = append(ops, diffOp{kind: ' ', j: j})
			} else {
				ops = append(ops, diffOp{kind: '+', j: j})
			}
		}
		var removed []diffOp
		for i, s := range a {
			if avail[s] > 0 {
				avail[s]--
				removed = append(removed, diffOp{kind: '-', i: i})
			}
		}
		return append(removed, ops...)
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{kind: ' ', i: i, j: j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{kind: '-', i: i})
			i++
		default:
			ops = append(ops, diffOp{kind: '+', j: j})
			j++
		}
	}
	return ops
}

// Continuation builds the program that continues a run with new steps: it
// keeps the declarations of prog's file (tools, types, input, sub-plans,
// settings), turns the state written so far into initial values, and adds
// the steps, output and declarations of next. Steps that already ran are
// not in it, so they never run again.
func Continuation(prog *compiler.Program, next *lang.File, state map[string]any, cfg compiler.Config) (*compiler.Program, error) {
	if prog.Info == nil || prog.Info.File == nil {
		return nil, errors.New("the program keeps no source to continue from")
	}
	f := &lang.File{Name: next.Name, Span: next.Span, InputValues: prog.Info.File.InputValues}
	declared := map[string]bool{}
	for _, it := range next.Items {
		switch d := it.(type) {
		case *lang.ToolDecl:
			declared["tool "+d.Name.Name] = true
		case *lang.TypeDecl:
			declared["type "+d.Name.Name] = true
		case *lang.OutputDecl:
			declared["output"] = true
		}
	}
	for _, it := range prog.Info.File.Items {
		switch d := it.(type) {
		case *lang.Step, *lang.StateDecl:
			continue
		case *lang.OutputDecl:
			if declared["output"] {
				continue
			}
		case *lang.ToolDecl:
			if declared["tool "+d.Name.Name] {
				continue
			}
		case *lang.TypeDecl:
			if declared["type "+d.Name.Name] {
				continue
			}
		}
		f.Items = append(f.Items, it)
	}
	f.Items = append(f.Items, stateDecl(prog.Plan, state))
	for _, it := range next.Items {
		switch it.(type) {
		case *lang.Step, *lang.OutputDecl, *lang.ToolDecl, *lang.TypeDecl, *lang.PlanDecl:
			f.Items = append(f.Items, it)
		}
	}
	c, err := planfile.Build(f, nil, cfg, compiler.Options{})
	if c.Diagnostics.HasErrors() {
		return nil, fmt.Errorf("the new plan does not check:\n%s", errorsOnly(c.Diagnostics))
	}
	return c.Program, err
}

func errorsOnly(diags lang.Diagnostics) lang.Diagnostics {
	var out lang.Diagnostics
	for _, d := range diags {
		if d.Severity == lang.SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// stateDecl declares every slot of the plan, with the values written so
// far as initial values.
func stateDecl(plan *compiler.Plan, state map[string]any) *lang.StateDecl {
	d := &lang.StateDecl{}
	names := make([]string, 0, len(state))
	for n := range state {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var t *compiler.Type = compiler.AnyType
		if s := plan.Slots[n]; s != nil {
			t = s.Type
		}
		d.Fields = append(d.Fields, &lang.FieldDecl{
			Name:    &lang.Ident{Name: n, Quoted: !lang.IsPlainName(n)},
			Type:    t.Expr(),
			Default: lang.ValueExpr(state[n]),
		})
	}
	return d
}

// compileEdit checks and compiles a plan a person edited while approving.
func (r *runner) compileEdit(text []byte) (*compiler.Program, error) {
	f, diags := lang.Parse("edited.plan", text)
	c, err := planfile.Build(f, diags, r.opts.Check, compiler.Options{})
	switch {
	case diags.HasErrors(): // the parser's: Build stopped before the checker
		return nil, fmt.Errorf("the edited plan does not parse:\n%s", diags)
	case c.Diagnostics.HasErrors():
		return nil, fmt.Errorf("the edited plan does not check:\n%s", errorsOnly(c.Diagnostics))
	}
	return c.Program, err
}
