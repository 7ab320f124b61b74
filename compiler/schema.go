package compiler

import (
	"fmt"
	"math"

	"cel.dev/cel-go/common/ast"

	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
)

// A tool that comes with a JSON Schema (from a tools file, an MCP server,
// a built-in tool or a JSON plan) may say more of its arguments than a
// type can: a maximum, a pattern, a minimum number of items, a format.
// The runtime validates every call's arguments against that schema, so
// the checker validates the constant parts of the arguments with the same
// validator (toolkit.Schema): a constant the check accepts is one the call
// accepts. A violation is a type-mismatch at the constant, with the
// validator's words.

// validateArg validates the constant parts of an argument against the
// schema of its parameter: the whole value when it is a constant, else
// the constant elements and fields of a list or object.
func (pc *planChecker) validateArg(param *Param, op *Operand, tool *Tool) {
	if op == nil {
		return
	}
	sub := tool.paramSchema(param.Name)
	switch {
	case sub == nil, op.Kind == OpRef:
		return // the input is not known while a plan is checked
	case op.Kind == OpConst:
		if err := sub.Validate(op.Const); err != nil {
			pc.c.errorf(lang.TypeMismatch, op.Span, "argument %s of %s does not match the tool's schema: %v", param.Name, tool.Name, err)
		}
		return
	}
	v := argValidator{report: func(span lang.Span, format string, args ...any) {
		pc.c.errorf(lang.TypeMismatch, span, format, args...)
	}}
	v.parts(sub, op, param, tool)
}

// argValidator validates the parts of arguments known before the run:
// constants and, when the input is known, the input fields they read.
type argValidator struct {
	report func(span lang.Span, format string, args ...any)
	// input is the input the plan will run with (its defaults filled),
	// or nil when it is not known; defaults is set when it holds only the
	// defaults of the plan's input block, which apply when the input
	// leaves a field out.
	input    map[string]any
	defaults bool
	// json is set for a JSON plan, whose defaults are its input message.
	json bool
}

// knownValue says, for a message, where the value of an input reference
// comes from.
func (v argValidator) knownValue(r *RefPath, val any) string {
	if v.defaults {
		return fmt.Sprintf("when the input leaves out %s, whose default makes %s %s", r.Path[0].Field, r, describeValue(val))
	}
	return fmt.Sprintf("with this input, where %s is %s", r, describeValue(val))
}

// fix says how to fix a value of the input.
func (v argValidator) fix() string {
	switch {
	case v.defaults && v.json:
		return "change the value in the input message"
	case v.defaults:
		return "change the default"
	}
	return "give an input that does"
}

func (v argValidator) arg(param *Param, op *Operand, tool *Tool) {
	if op == nil {
		return
	}
	if sub := tool.paramSchema(param.Name); sub != nil {
		v.parts(sub, op, param, tool)
	}
}

func (v argValidator) parts(s *toolkit.Schema, op *Operand, param *Param, tool *Tool) {
	switch op.Kind {
	case OpConst:
		if err := s.Validate(op.Const); err != nil {
			v.report(op.Span, "argument %s of %s does not match the tool's schema: %v", param.Name, tool.Name, err)
		}
	case OpRef:
		val, ok := v.inputValue(op.Ref)
		if !ok {
			return
		}
		if err := s.Validate(val); err != nil {
			v.report(op.Span, "argument %s of %s does not match the tool's schema %s: %v: %s", param.Name, tool.Name, v.knownValue(op.Ref, val), err, v.fix())
		}
	case OpList:
		for i, e := range op.Elems {
			if sub, ok := s.Items(i); ok {
				v.parts(sub, e, param, tool)
			}
		}
	case OpObject:
		for i, k := range op.Keys {
			if sub, ok := s.Property(k); ok {
				v.parts(sub, op.Vals[i], param, tool)
			}
		}
	}
}

// steps validates what the steps of a plan pass from the known input:
// the arguments that read it, and the lists of for each.
func (v argValidator) steps(p *Plan, reportEach func(span lang.Span, format string, args ...any)) {
	for _, s := range p.Steps {
		for _, a := range s.Args {
			if a.Param != nil && s.Tool != nil {
				v.arg(a.Param, a.Value, s.Tool)
			}
		}
		if s.Fallback != nil && s.Fallback.Tool != nil {
			for _, a := range s.Fallback.Args {
				if a.Param != nil {
					v.arg(a.Param, a.Value, s.Fallback.Tool)
				}
			}
		}
		if s.Each == nil || s.Each.List == nil || s.Each.List.Kind != OpRef {
			continue
		}
		if val, ok := v.inputValue(s.Each.List.Ref); ok {
			if list, ok := val.([]any); ok && len(list) > s.Each.Max {
				if v.defaults {
					reportEach(s.Each.List.Span, "when the input leaves out %s, its default gives the list %s %d elements, more than the for each may run (%d): %s",
						s.Each.List.Ref.Path[0].Field, s.Each.List.Ref, len(list), s.Each.Max, v.fix())
				} else {
					reportEach(s.Each.List.Span, "with this input, the list %s has %d elements, more than the for each may run (%d): give a shorter list",
						s.Each.List.Ref, len(list), s.Each.Max)
				}
			}
		}
	}
}

// checkDefaults validates what the steps of the main plan pass from the
// defaults of its input block (or of a JSON plan's input message), which
// are the input when the input leaves a field out.
func (pc *planChecker) checkDefaults() {
	if pc.p.Name != "" || len(pc.p.InputDefaults) == 0 {
		return
	}
	v := argValidator{input: pc.p.InputDefaults, defaults: true, json: pc.c.file.JSON, report: func(span lang.Span, format string, args ...any) {
		pc.c.errorf(lang.TypeMismatch, span, format, args...)
	}}
	v.steps(pc.p, func(span lang.Span, format string, args ...any) {
		pc.c.errorf(lang.LimitExceeded, span, format, args...)
	})
}

// inputValue returns the value a reference to the input reads, when the
// input is known and has it.
func (v argValidator) inputValue(r *RefPath) (any, bool) {
	if v.input == nil || r == nil || r.Root != "input" || len(r.Path) == 0 {
		return nil, false
	}
	var val any = v.input
	for _, e := range r.Path {
		switch x := val.(type) {
		case map[string]any:
			var ok bool
			if e.IsIndex {
				return nil, false
			}
			if val, ok = x[e.Field]; !ok {
				return nil, false
			}
		case []any:
			if !e.IsIndex || e.Index < 0 || e.Index >= len(x) {
				return nil, false
			}
			val = x[e.Index]
		default:
			return nil, false
		}
	}
	return val, true
}

// validateCall validates what a call passes as a whole, once its
// arguments have passed one by one (bad is set when one did not): the
// default of each parameter it omits, which the call then passes, and,
// when every argument is a constant, the whole object of arguments, which
// the schema may constrain beyond each one (oneOf, dependentRequired,
// minProperties…).
func (pc *planChecker) validateCall(call *lang.Call, args []*Arg, tool *Tool, bad bool) {
	s := tool.argSchema()
	if s == nil || bad {
		return
	}
	defaults := tool.Defaults()
	var names map[string]bool // for a call of many arguments
	if len(args) > argMapMin && len(defaults) > 0 {
		names = make(map[string]bool, len(args))
		for _, a := range args {
			names[a.Name] = true
		}
	}
	passed := func(name string) bool {
		if names != nil {
			return names[name]
		}
		for _, a := range args {
			if a.Name == name {
				return true
			}
		}
		return false
	}
	allConst := len(call.Args) == len(args)
	for _, a := range args {
		allConst = allConst && a.Value.IsConst()
	}
	for _, p := range defaults {
		if passed(p.Name) {
			continue
		}
		if err := tool.defaultError(p); err != nil {
			pc.c.errorf(lang.TypeMismatch, call.Tool.Span, "%s is called without %s, so with its default %s, which does not match the tool's schema: %v: pass %s", tool.Name, p.Name, describeValue(p.Default), err, p.Name)
			return
		}
	}
	if !allConst {
		return
	}
	given := make(map[string]any, len(args)+len(defaults))
	for _, p := range defaults {
		given[p.Name] = p.Default
	}
	for _, a := range args {
		given[a.Name] = a.Value.Const
	}
	if err := s.Validate(given); err != nil {
		pc.c.errorf(lang.TypeMismatch, call.Tool.Span, "the arguments of %s do not match the tool's schema: %v", tool.Name, err)
	}
}

// eachSize reports a for each whose list is known before the run (a list
// written in the plan, or lists.range(N)) and has more elements than the
// for each may run: its max, or the limit of one without max. The run
// would refuse it before calling anything.
func (pc *planChecker) eachSize(s *Step, each *lang.Each) {
	n, ok := knownLength(s.Each.List)
	if !ok || n <= s.Each.Max {
		return
	}
	if each.Max != nil && int(each.Max.IntValue()) == s.Each.Max {
		pc.c.errorf(lang.LimitExceeded, each.List.Range(), "the list has %d elements, more than the for each's max of %d: raise max, or split the list", n, s.Each.Max)
		return
	}
	pc.c.errorf(lang.LimitExceeded, each.List.Range(), "the list has %d elements, more than the limit of %d for a for each: split the list into several steps, or raise the limit (compiler.Limits.MaxForEach) if the plan is trusted", n, s.Each.Max)
}

// knownLength returns the number of elements of a list operand whose
// length is known before the run: a constant list, a list written
// element by element, or lists.range(N) with a constant N.
func knownLength(op *Operand) (int, bool) {
	if op == nil {
		return 0, false
	}
	switch op.Kind {
	case OpConst:
		l, ok := op.Const.([]any)
		return len(l), ok
	case OpList:
		return len(op.Elems), true
	case OpCEL:
		if op.checked == nil {
			return 0, false
		}
		e := op.checked.NativeRep().Expr()
		if e.Kind() != ast.CallKind {
			return 0, false
		}
		call := e.AsCall()
		if call.FunctionName() != "lists.range" || len(call.Args()) != 1 || call.Args()[0].Kind() != ast.LiteralKind {
			return 0, false
		}
		if n, ok := call.Args()[0].AsLiteral().Value().(int64); ok && n >= 0 && n <= math.MaxInt32 {
			return int(n), true
		}
	}
	return 0, false
}
