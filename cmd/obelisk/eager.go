package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// runEager runs a plan in eager mode: statements are read from the file
// (or from standard input, as they arrive) and each step runs as soon as
// it is complete and checked. The run is journaled as its text arrives,
// unless --no-journal.
func runEager(ctx context.Context, e *env, rf *runFlags, xf *execFlags, arg string, opts vm.Options, policy durable.ApprovalPolicy, fs fill.Settings) int {
	var r io.Reader = e.Stdin
	name := "<stdin>"
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			e.Errorf("%v", err)
			return exitUsage
		}
		defer f.Close()
		r, name = f, arg
	}
	src := &planfile.Source{Name: name}
	if arg != "-" {
		src.Dir = filepath.Dir(arg)
	}
	cfg, srcs, diags, err := rf.config(src)
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	// Tools files given with --tools may bind tools; a streamed plan's
	// imports are read as it arrives, too late to bind theirs.
	diags = append(diags, rf.set.BindDiagnostics()...)
	if diags.HasErrors() {
		lang.WriteText(e.Stderr, srcs, diags, e.textOptions())
		return exitInput
	}
	var input map[string]any
	if rf.input != "" {
		c := &checked{src: src, file: &lang.File{}}
		if input, err = rf.readInput(c); err != nil {
			e.Errorf("%v", err)
			return exitUsage
		}
	}
	tools, err := rf.set.Caller()
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	ts := &toolSettings{Config: rf.set.Config(), Fill: fs}
	set, err := ts.record(opts, policy)
	if err != nil {
		e.Errorf("%v", err)
		return exitUsage
	}
	set.Limits = rf.limits
	// The plan's source holds what its checking reads; its text is
	// journaled as it arrives.
	ps := &planfile.Source{Name: name, Tools: rf.read.tools, Hints: rf.read.hints, Strict: rf.strict, MaxParallel: rf.maxParallel}
	ps.Dir = src.Dir
	if wd, err := os.Getwd(); err == nil {
		ps.WorkDir = wd
	}
	run, store, status := xf.create(e, &durable.Plan{Source: ps, Input: input, Check: cfg}, set)
	if run == nil {
		return status
	}
	if store != nil {
		defer store.Close()
	}
	return xf.execute(ctx, e, run, tools, r, fs)
}
