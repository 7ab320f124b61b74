package durable

import (
	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/lang"
)

// Plan is a program to run, with the source it was compiled from (which a
// journaled run records, to build the same program again when it is
// resumed) and its input.
type Plan struct {
	Source *planfile.Source
	// Program is the compiled plan; nil for a plan that arrives as a
	// stream (eager mode), whose Source holds what its checking reads
	// (the tools files, the directory of its imports) and no text:
	// Run.ExecuteStream reads the text as it arrives, and a journaled run
	// records it as it is read.
	Program *compiler.Program
	Input   map[string]any
	// Check configures the checking of the plans the run makes later:
	// replans and edited plans. Zero takes the source's configuration.
	Check compiler.Config
	// Hash is the content hash of the planfile the plan was applied
	// from, or "". Applying a planfile approves its plan as a whole: a
	// plan-level approval is granted, recorded as approved by the
	// planfile.
	Hash string
}

// Compile checks and compiles a source. The diagnostics are the
// checker's findings (warnings when the plan compiles); err is set when
// the plan does not compile, and the diagnostics say why.
func Compile(src *planfile.Source, input map[string]any) (*Plan, lang.Diagnostics, error) {
	prog, diags, err := src.Compile()
	if err != nil {
		return nil, diags, err
	}
	return &Plan{Source: src, Program: prog, Input: input}, diags, nil
}

// FromPlanfile compiles the plan of a planfile, checking that it gives
// the program the planfile holds. It does not check that the tools are
// as they were when it was made: see planfile.Planfile.Stale.
func FromPlanfile(pf *planfile.Planfile) (*Plan, lang.Diagnostics, error) {
	prog, diags, err := pf.Compile()
	if err != nil {
		return nil, diags, err
	}
	return &Plan{Source: &pf.Source, Program: prog, Input: pf.Input, Hash: pf.Hash}, diags, nil
}

// check returns the configuration of the run's later plans, within
// limits.
func (p *Plan) check(limits compiler.Limits) compiler.Config {
	if p.Check.Tools != nil || p.Check.Imports != nil {
		return p.Check
	}
	cfg, _ := p.Source.Config()
	cfg.Limits = limits
	return cfg
}
