package compiler

import (
	"fmt"
	"sort"

	"github.com/obelisk-plan/obelisk/lang"
)

// inputProblem is one way an input does not match: the field it is about,
// and what is wrong, in words.
type inputProblem struct{ field, message string }

// inputProblems lists how an input does not match a plan's input type, as
// the run finds before it starts: the fields it lacks that have no
// default, the fields of a wrong type, and the fields the plan does not
// declare.
func inputProblems(plan *Plan, input map[string]any) []inputProblem {
	var problems []inputProblem
	for _, f := range plan.Input.Fields {
		v, ok := input[f.Name]
		if !ok {
			if _, has := plan.InputDefaults[f.Name]; !has && !f.Optional {
				problems = append(problems, inputProblem{f.Name, fmt.Sprintf("field %s (%s) is required", f.Name, f.Type)})
			}
			continue
		}
		if msg := CheckValue(v, f.Type, f.Name); msg != "" {
			problems = append(problems, inputProblem{f.Name, msg})
		}
	}
	extra := make([]string, 0, len(input))
	for k := range input {
		if plan.Input.Field(k) == nil {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		problems = append(problems, inputProblem{"", fmt.Sprintf("field %s is not declared by the plan's input", k)})
	}
	return problems
}

// CheckInput checks the input a plan will run with, when it is known
// before the run: the command line's --input, or the input a JSON plan
// carries. info is what Check returned for the plan, without errors.
//
// The input must match the plan's input type, as the run requires before
// it starts. Then the input fields that arguments and
// for each lists read are values known before the run: each is validated
// against the tool's schema as a constant argument is, and a list a for
// each runs over against its max. A violation would otherwise fail its
// step in the middle of the run, after the steps before it have had their
// effects.
func CheckInput(info *Info, input map[string]any) lang.Diagnostics {
	if info == nil || info.Main == nil {
		return nil
	}
	var diags lang.Diagnostics
	report := func(code lang.Code, span lang.Span, format string, args ...any) {
		diags = append(diags, &lang.Diagnostic{Severity: lang.SeverityError, Code: code, Message: fmt.Sprintf(format, args...), File: info.File.Name, Span: span})
	}
	p := info.Main
	if problems := inputProblems(p, input); len(problems) > 0 {
		spans := inputSpans(info.File)
		for _, pr := range problems {
			span, ok := spans.fields[pr.field]
			if !ok {
				span = spans.block
			}
			report(lang.TypeMismatch, span, "the input does not match the plan: %s", pr.message)
		}
		diags.Sort()
		return diags
	}
	known := make(map[string]any, len(input)+len(p.InputDefaults))
	for k, v := range p.InputDefaults {
		known[k] = v
	}
	for k, v := range input {
		// The run takes each value conformed to its field's type.
		if f := p.Input.Field(k); f != nil {
			if cv, msg := Conform(v, f.Type, ""); msg == "" {
				v = cv
			}
		}
		known[k] = v
	}
	v := argValidator{input: known, report: func(span lang.Span, format string, args ...any) { report(lang.TypeMismatch, span, format, args...) }}
	v.steps(p, func(span lang.Span, format string, args ...any) { report(lang.LimitExceeded, span, format, args...) })
	diags.Sort()
	return diags
}

// fieldSpans are where a plan declares its input fields, to point at.
type fieldSpans struct {
	block  lang.Span
	fields map[string]lang.Span
}

func inputSpans(f *lang.File) fieldSpans {
	out := fieldSpans{block: lang.Span{Start: lang.Pos{Line: 1, Column: 1}, End: lang.Pos{Line: 1, Column: 1}}, fields: map[string]lang.Span{}}
	if f.Span.Start.IsValid() {
		out.block = lang.Span{Start: f.Span.Start, End: f.Span.Start}
	}
	for _, it := range f.Items {
		d, ok := it.(*lang.InputDecl)
		if !ok {
			continue
		}
		out.block = d.Span
		for _, fd := range d.Fields {
			if _, dup := out.fields[fd.Name.Name]; !dup {
				out.fields[fd.Name.Name] = fd.Name.Span
			}
		}
		break
	}
	return out
}
