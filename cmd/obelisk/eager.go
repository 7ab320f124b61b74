package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/durable"
	"github.com/obelisk-plan/obelisk/lang"
	"github.com/obelisk-plan/obelisk/toolkit"
	"github.com/obelisk-plan/obelisk/vm"
)

// runEager runs a plan in eager mode: statements are read from the file
// (or from standard input, as they arrive) and each step runs as soon as
// it is complete and checked. The run is journaled as its text arrives,
// unless --no-journal.
func runEager(ctx context.Context, e *env, rf *runFlags, xf *execFlags, arg string, opts vm.Options, policy durable.ApprovalPolicy, fs fillSettings) int {
	var r io.Reader = e.stdin
	name := "<stdin>"
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		defer f.Close()
		r, name = f, arg
	}
	reg, err := rf.registry()
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	src := &source{name: name, path: arg}
	if arg == "-" {
		src.path = ""
	}
	cfg, srcs, diags, err := rf.config(src)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	// Tools files given with --tools may bind tools; a streamed plan's
	// imports are read as it arrives, too late to bind theirs.
	bound, bd := bindTools(boundDecls(cfg.Tools), "", rf.grants.httpOptions())
	diags = append(diags, bd...)
	if diags.HasErrors() {
		lang.WriteText(e.stderr, srcs, diags, e.textOptions())
		return exitInput
	}
	if _, err := rf.registerBound(reg, bound); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	var input map[string]any
	if rf.input != "" {
		c := &checked{src: src, file: &lang.File{}}
		if input, err = rf.readInput(c, ""); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
	}
	ts := &toolSettings{MCP: rf.mcp, AllowCommands: rf.allowCommands, Fill: fs}
	var mocks *toolkit.Mocks
	if rf.mocks != "" {
		b, err := os.ReadFile(rf.mocks)
		if err == nil {
			mocks, err = toolkit.ParseMocks(b)
		}
		if err != nil {
			e.errorf("mocks: %v", err)
			return exitUsage
		}
		ts.Mocks, ts.MocksFile = string(b), rf.mocks
	}
	if rf.files != "" {
		if ts.Files, err = filepath.Abs(rf.files); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
	}
	set, err := ts.record(opts, policy)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	set.Limits = rf.limits
	// The plan's source holds what its checking reads; its text is
	// journaled as it arrives.
	ps := &planfile.Source{Name: name, Tools: rf.read.tools, Hints: rf.read.hints, Strict: rf.strict, MaxParallel: rf.maxParallel}
	if src.path != "" {
		ps.Dir = filepath.Dir(src.path)
	}
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
	return xf.execute(ctx, e, run, toolkit.Chain{Mocks: mocks, Registry: reg}, r, fs)
}

// boundDecls returns, as the checker's tools, the declarations of tools
// files that say how a tool is called (an http or command block).
func boundDecls(decls []*lang.ToolDecl) []*compiler.Tool {
	var out []*compiler.Tool
	for _, d := range decls {
		if d.Binding != nil {
			out = append(out, &compiler.Tool{Name: d.Name.Name, Doc: d.Doc(), Decl: d})
		}
	}
	return out
}
