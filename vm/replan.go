package vm

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/lang"
)

// replan asks the replanner for the remaining work and builds the program
// that continues the run: the original declarations, the state written so
// far as initial values, and the new steps.
func (r *runner) replan(ctx context.Context, e *engine, attempt int) (*compiler.Program, error) {
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
		return nil, fmt.Errorf("the replanner failed: %w", err)
	}
	if f == nil {
		return nil, errors.New("the replanner returned no plan")
	}
	prog, err := Continuation(e.prog, f, req.State, r.opts.Check)
	if err != nil {
		return nil, err
	}
	r.event(Event{Type: Replanned, Message: fmt.Sprintf("attempt %d: %d new steps", attempt, len(prog.Steps)), Reason: req.Reason})
	return prog, nil
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
	info, diags := compiler.Check(f, cfg)
	if diags.HasErrors() {
		return nil, fmt.Errorf("the new plan does not check:\n%s", errorsOnly(diags))
	}
	return compiler.Compile(info, diags, compiler.Options{})
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
	if diags.HasErrors() {
		return nil, fmt.Errorf("the edited plan does not parse:\n%s", diags)
	}
	info, cd := compiler.Check(f, r.opts.Check)
	if cd.HasErrors() {
		return nil, fmt.Errorf("the edited plan does not check:\n%s", errorsOnly(cd))
	}
	return compiler.Compile(info, cd, compiler.Options{})
}
